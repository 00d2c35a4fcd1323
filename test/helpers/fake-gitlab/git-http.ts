import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import type { Auth } from "./auth.js";
import type { Faults } from "./faults.js";
import type { RefUpdate } from "./git.js";
import type { FakeResponse } from "./http.js";
import type { Project, User } from "./model.js";
import type { Pushes } from "./pushes.js";
import type { World } from "./world.js";

/**
 * Git's smart HTTP protocol, served by the real `git http-backend` as a CGI: `<path>.git/info/refs`,
 * `git-upload-pack`, `git-receive-pack`. Authentication is HTTP Basic with any user name and a
 * token as the password (401 with `WWW-Authenticate: Basic realm="GitLab"` without one). Pushing
 * needs Developer and `write_repository` (or `api`); protected branches are enforced by the
 * repository's pre-receive hook from rules computed for the pusher; what a push changed comes
 * back from the post-receive hook and is processed as GitLab's PostReceive does.
 */

const BACKEND = "/usr/lib/git-core/git-http-backend";
const PATH = /^\/(.+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

export class GitHttp {
  private sequence = 0;

  constructor(
    private readonly world: World,
    private readonly auth: Auth,
    private readonly pushes: Pushes,
    private readonly faults: Faults,
    private readonly observe: (
      method: string,
      path: string,
      status: number,
      user: User | null,
      fault: string | undefined,
    ) => void,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const m = PATH.exec(url.pathname);
    if (m === null) return false;
    const method = (req.method ?? "GET").toUpperCase();
    const fault = await this.faults.apply(method, url.pathname);
    if (fault.instead !== undefined) {
      req.resume();
      this.answer(res, fault.instead);
      this.observe(method, url.pathname, fault.instead.status, null, fault.name);
      return true;
    }
    const action = m[2] ?? "";
    const service = action === "info/refs" ? url.searchParams.get("service") : action;
    const decision = this.admit(req, m[1] ?? "", service);
    if ("response" in decision) {
      req.resume();
      this.answer(res, decision.response);
      this.observe(method, url.pathname, decision.response.status, decision.user, fault.name);
      return true;
    }
    const { project, user } = decision;
    const pushing = service === "git-receive-pack" && action !== "info/refs";
    const log = pushing
      ? join(this.world.tmpDir, `push-${process.pid}-${++this.sequence}.log`)
      : "";
    const status = await this.cgi(req, res, url, project, user, action, log);
    this.observe(method, url.pathname, status, user, fault.name);
    if (pushing && user !== null) {
      const updates = readUpdates(log);
      rmSync(log, { force: true });
      if (updates.length > 0) this.pushes.schedule(project, user, updates);
    }
    return true;
  }

  private admit(
    req: IncomingMessage,
    path: string,
    service: string | null,
  ): { project: Project; user: User | null } | { response: FakeResponse; user: User | null } {
    const text = (
      status: number,
      body: string,
      headers: Record<string, string> = {},
    ): FakeResponse => ({
      status,
      headers,
      raw: { contentType: "text/plain; charset=utf-8", text: `${body}\n` },
    });
    if (service !== "git-upload-pack" && service !== "git-receive-pack") {
      return { response: text(403, "Service not allowed"), user: null };
    }
    const denied = text(
      401,
      "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was incorrect or you're required to use a token instead of a password.",
      { "www-authenticate": 'Basic realm="GitLab"' },
    );
    const credential = this.auth.gitCredential(req);
    if (credential.kind === "rejected") return { response: denied, user: null };
    const user = credential.kind === "token" ? credential.user : null;
    const write = service === "git-receive-pack";
    const project = this.find(path);
    if (user === null && (project === null || write || project.visibility !== "public")) {
      return { response: denied, user };
    }
    if (project === null || !this.world.canSee(project, user)) {
      return {
        response: text(
          404,
          "The project you were looking for could not be found or you don't have permission to view it.",
        ),
        user,
      };
    }
    if (credential.kind === "token") {
      const scopes = credential.token.scopes;
      const needed = write
        ? ["api", "write_repository"]
        : ["api", "read_repository", "write_repository"];
      const level = this.world.effectiveLevel(project, credential.user);
      if (write && (!needed.some((s) => scopes.includes(s)) || level < 30)) {
        return { response: text(403, "You are not allowed to push code to this project."), user };
      }
      if (
        !write &&
        (!needed.some((s) => scopes.includes(s)) ||
          (level < 20 && project.visibility === "private"))
      ) {
        return {
          response: text(403, "You are not allowed to download code from this project."),
          user,
        };
      }
    }
    return { project, user };
  }

  private find(path: string): Project | null {
    try {
      return this.world.project(path);
    } catch {
      return null;
    }
  }

  private answer(res: ServerResponse, response: FakeResponse): void {
    const text =
      response.raw?.text ?? (response.body === undefined ? "" : JSON.stringify(response.body));
    res.writeHead(response.status, {
      "content-type": response.raw?.contentType ?? "application/json",
      ...response.headers,
    });
    res.end(text);
  }

  /** The protected-branch rules for the pre-receive hook, as this user may act on them. */
  private rules(project: Project, user: User | null): string {
    const level = user === null ? 0 : this.world.effectiveLevel(project, user);
    return project.protectedBranches
      .map((p) => {
        const push = p.pushAccessLevel !== 0 && level >= p.pushAccessLevel;
        return `${p.name}\t${push ? 1 : 0}\t${push && p.allowForcePush ? 1 : 0}`;
      })
      .join("\n");
  }

  /** Runs `git http-backend` for the request; resolves with the status it answered. */
  private cgi(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    project: Project,
    user: User | null,
    action: string,
    log: string,
  ): Promise<number> {
    const header = (name: string): string => {
      const value = req.headers[name];
      return typeof value === "string" ? value : "";
    };
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: this.world.tmpDir,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_PROJECT_ROOT: this.world.reposDir,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: `/${project.pathWithNamespace}.git/${action}`,
      REQUEST_METHOD: (req.method ?? "GET").toUpperCase(),
      QUERY_STRING: url.search.replace(/^\?/, ""),
      CONTENT_TYPE: header("content-type"),
      REMOTE_USER: user?.username ?? "",
      REMOTE_ADDR: "127.0.0.1",
      FAKE_GITLAB_PROTECTED: this.rules(project, user),
      FAKE_GITLAB_PUSH_LOG: log,
    };
    if (header("content-length") !== "") env.CONTENT_LENGTH = header("content-length");
    if (header("git-protocol") !== "") env.HTTP_GIT_PROTOCOL = header("git-protocol");
    if (header("content-encoding") !== "") env.HTTP_CONTENT_ENCODING = header("content-encoding");
    return new Promise((resolve) => {
      const child = spawn(BACKEND, [], { env, stdio: ["pipe", "pipe", "pipe"] });
      let head = Buffer.alloc(0);
      let status = 200;
      let started = false;
      child.stdout.on("data", (chunk: Buffer) => {
        if (started) {
          res.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        const headers: Record<string, string> = {};
        for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
          const colon = line.indexOf(":");
          const name = line.slice(0, colon).trim().toLowerCase();
          const value = line.slice(colon + 1).trim();
          if (name === "status") status = Number.parseInt(value, 10) || 200;
          else if (name !== "") headers[name] = value;
        }
        res.writeHead(status, headers);
        started = true;
        const rest = head.subarray(end + 4);
        if (rest.length > 0) res.write(rest);
      });
      child.stderr.on("data", () => undefined);
      child.stdin.on("error", () => undefined);
      req.pipe(child.stdin);
      child.on("close", () => {
        if (!started) {
          status = 500;
          res.writeHead(500, { "content-type": "text/plain" });
        }
        res.end();
        resolve(status);
      });
    });
  }
}

function readUpdates(log: string): RefUpdate[] {
  let text: string;
  try {
    text = readFileSync(log, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .map((line) => line.trim().split(" "))
    .filter((parts) => parts.length === 3)
    .map(([before = "", after = "", ref = ""]) => ({ ref, before, after }));
}
