import { createPublicKey, generateKeyPairSync, verify } from "node:crypto";
import {
  badCredentials,
  GitHubError,
  notAccessible,
  notFound,
  pageOf,
  validationFailed,
  type Credential,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import type { Account, FakeApp, Installation, PermissionSet, Repository } from "./model.js";
import * as objects from "./objects.js";
import type { Actor, World } from "./world.js";

/**
 * GitHub App authentication: the App's RS256 JWT (iat/exp checked against the fake's clock, with
 * GitHub's messages, which `@octokit/auth-app` keys its clock-drift retry on), installation tokens
 * (one hour, optionally narrowed to repositories and permissions), user tokens, the primary rate
 * limit per credential, and the App and installation endpoints.
 */

/** What Mainline's App asks for (the permissions Trunk's App asks for); tests may narrow it. */
export const DEFAULT_APP_PERMISSIONS: PermissionSet = {
  actions: "write",
  administration: "read",
  checks: "write",
  contents: "write",
  issues: "write",
  metadata: "read",
  pull_requests: "write",
  statuses: "write",
  workflows: "write",
  members: "read",
};

export const DEFAULT_APP_EVENTS = [
  "check_run",
  "check_suite",
  "issue_comment",
  "pull_request",
  "pull_request_review",
  "push",
  "status",
  "workflow_run",
  "repository",
  "branch_protection_rule",
];

const JWT_DECODE = "A JSON web token could not be decoded";
const IAT_INVALID =
  "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
const EXP_INVALID =
  "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
const EXP_TOO_FAR = "'Expiration time' claim ('exp') is too far in the future";

export function generateAppKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

function base64urlJson(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export class AppAuth {
  private readonly buckets = new Map<string, { used: number; resetSec: number }>();

  constructor(private readonly world: World) {}

  /** Judges an `Authorization` header (never throws: the route decides what it needs). */
  authenticate(authorization: string | undefined): Credential {
    if (authorization === undefined || authorization.trim() === "") return { kind: "none" };
    const m = /^(bearer|token)\s+(\S+)$/i.exec(authorization.trim());
    if (m === null) return { kind: "rejected", reason: "malformed", message: "Bad credentials" };
    const secret = m[2] ?? "";
    if (secret.split(".").length === 3) return this.verifyJwt(secret);
    const token = this.world.tokens.get(secret);
    if (token !== undefined) {
      if (token.expiresAtMs <= this.world.now()) {
        return { kind: "rejected", reason: "expired", message: "Bad credentials" };
      }
      if (!this.world.installations.has(token.installation.id)) {
        return { kind: "rejected", reason: "unknown", message: "Bad credentials" };
      }
      return {
        kind: "installation",
        installationId: token.installation.id,
        appId: token.installation.app.id,
        token: secret,
        createdAtMs: token.createdAtMs,
      };
    }
    const user = this.world.userTokens.get(secret);
    if (user !== undefined) return { kind: "user", login: user.login };
    return { kind: "rejected", reason: "unknown", message: "Bad credentials" };
  }

  private verifyJwt(jwt: string): Credential {
    const [h = "", p = "", s = ""] = jwt.split(".");
    const header = base64urlJson(h);
    const claims = base64urlJson(p);
    const reject = (message: string): Credential => ({ kind: "rejected", reason: "jwt", message });
    if (header === null || claims === null || header.alg !== "RS256") return reject(JWT_DECODE);
    const iss = claims.iss;
    const app = [...this.world.apps.values()].find(
      (a) => a.publicKey !== null && (String(a.id) === String(iss) || a.clientId === iss),
    );
    if (app?.publicKey == null) return reject(JWT_DECODE);
    const signed = verify(
      "RSA-SHA256",
      Buffer.from(`${h}.${p}`),
      app.publicKey,
      Buffer.from(s, "base64url"),
    );
    if (!signed) return reject(JWT_DECODE);
    const nowSec = Math.floor(this.world.now() / 1000);
    const { iat, exp } = claims;
    if (typeof iat !== "number" || !Number.isInteger(iat) || iat > nowSec)
      return reject(IAT_INVALID);
    if (typeof exp !== "number" || exp <= nowSec) return reject(EXP_INVALID);
    if (exp > nowSec + 600) return reject(EXP_TOO_FAR);
    return { kind: "app", appId: app.id };
  }

  /** Enforces a route's credential kind, as GitHub answers a wrong one. */
  authorize(ctx: RequestContext): void {
    const need = ctx.route.auth;
    const cred = ctx.credential;
    if (need === "none") return;
    if (cred.kind === "rejected") throw new GitHubError(401, cred.message);
    if (need === "app") {
      if (cred.kind !== "app") throw new GitHubError(401, JWT_DECODE);
      return;
    }
    if (cred.kind === "none") throw new GitHubError(401, "Requires authentication");
    if (cred.kind === "app") throw new GitHubError(401, "Bad credentials");
    if (need === "installation" && cred.kind !== "installation") {
      throw new GitHubError(403, "You must authenticate with an installation access token.");
    }
    if (need === "user" && cred.kind !== "user") throw notAccessible();
  }

  /**
   * The caller's right to `repo` for a permission (`["pull_requests", "write"]`): 404 when the
   * repository is outside its reach, 403 "Resource not accessible by integration" when the
   * permission is missing. Returns who acts.
   */
  repoAccess(ctx: RequestContext, repo: Repository, permission: [string, "read" | "write"]): Actor {
    const cred = ctx.credential;
    if (cred.kind === "installation") {
      const token = this.world.tokens.get(cred.token);
      const inst = this.world.installations.get(cred.installationId);
      if (token === undefined || inst === undefined) throw badCredentials();
      const reaches =
        inst.account.id === repo.owner.id &&
        (inst.repositorySelection === "all" || inst.repositoryIds.has(repo.id)) &&
        (token.repositoryIds === null || token.repositoryIds.has(repo.id));
      if (!reaches) throw notFound();
      const [name, level] = permission;
      const granted = token.permissions[name];
      if (granted === undefined || (level === "write" && granted === "read")) throw notAccessible();
      return { kind: "app", app: inst.app, installation: inst };
    }
    if (cred.kind === "user") {
      const account = this.world.account(cred.login);
      const role = this.world.roleOf(repo, account);
      if (role === undefined && repo.private) throw notFound();
      const writes = role === "admin" || role === "maintain" || role === "write";
      if (permission[1] === "write" && !writes && permission[0] !== "issues") {
        throw new GitHubError(403, "Must have push access to repository");
      }
      return { kind: "user", account };
    }
    throw new GitHubError(401, "Requires authentication");
  }

  /** Whether the token behind `actor` holds `workflows: write` (pushing workflow files). */
  canWriteWorkflows(ctx: RequestContext): boolean {
    const cred = ctx.credential;
    if (cred.kind !== "installation") return true;
    return this.world.tokens.get(cred.token)?.permissions.workflows === "write";
  }

  /** Primary rate limit headers for the caller; `counts` uses one request. */
  rateLimit(
    ctx: RequestContext,
    counts: boolean,
  ): { headers: Record<string, string>; exceeded: GitHubError | null } {
    const cred = ctx.credential;
    const key =
      cred.kind === "installation"
        ? `installation ID ${cred.installationId}`
        : cred.kind === "user"
          ? `user ID ${this.world.findAccount(cred.login)?.id ?? 0}`
          : cred.kind === "app"
            ? `app ID ${cred.appId}`
            : "anonymous";
    const limit =
      cred.kind === "none" || cred.kind === "rejected" ? 60 : this.world.options.rateLimit;
    const nowSec = Math.floor(this.world.now() / 1000);
    let bucket = this.buckets.get(key);
    if (bucket === undefined || bucket.resetSec <= nowSec) {
      bucket = { used: 0, resetSec: nowSec + 3600 };
      this.buckets.set(key, bucket);
    }
    const free = ctx.route.operationId === "rate-limit/get";
    if (counts && !free) bucket.used++;
    const headers = {
      "x-ratelimit-limit": String(limit),
      "x-ratelimit-remaining": String(Math.max(limit - bucket.used, 0)),
      "x-ratelimit-reset": String(bucket.resetSec),
      "x-ratelimit-used": String(bucket.used),
      "x-ratelimit-resource": "core",
    };
    const exceeded =
      !free && bucket.used >= limit
        ? new GitHubError(
            403,
            `API rate limit exceeded for ${key}.`,
            {},
            { ...headers, "x-ratelimit-remaining": "0" },
          )
        : null;
    return { headers, exceeded };
  }

  /** Spends a credential's primary budget (the fault layer's "rate limit exhausted"). */
  exhaust(key: string, resetInSec: number): void {
    const nowSec = Math.floor(this.world.now() / 1000);
    this.buckets.set(key, { used: this.world.options.rateLimit, resetSec: nowSec + resetInSec });
  }

  bucketKey(ctx: RequestContext): string {
    const cred = ctx.credential;
    if (cred.kind === "installation") return `installation ID ${cred.installationId}`;
    if (cred.kind === "user") return `user ID ${this.world.findAccount(cred.login)?.id ?? 0}`;
    if (cred.kind === "app") return `app ID ${cred.appId}`;
    return "anonymous";
  }

  mintToken(
    inst: Installation,
    request: {
      repositories?: string[];
      repositoryIds?: number[];
      permissions?: PermissionSet;
    } = {},
  ): {
    token: string;
    expiresAtMs: number;
    permissions: PermissionSet;
    repositories: Repository[] | null;
  } {
    let permissions = { ...inst.permissions };
    if (request.permissions !== undefined) {
      for (const [name, level] of Object.entries(request.permissions)) {
        const granted = inst.permissions[name];
        const rank = { read: 1, write: 2, admin: 3 };
        if (granted === undefined || rank[level] > rank[granted]) {
          throw validationFailed("The permissions requested are not granted to this installation.");
        }
      }
      permissions = { ...request.permissions };
    }
    let repositories: Repository[] | null = null;
    if (request.repositories !== undefined || request.repositoryIds !== undefined) {
      repositories = [];
      for (const name of request.repositories ?? []) {
        const repo = this.world.repos.get(`${inst.account.login}/${name}`.toLowerCase());
        if (repo === undefined || !this.installationReaches(inst, repo)) {
          throw validationFailed(
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
          );
        }
        repositories.push(repo);
      }
      for (const id of request.repositoryIds ?? []) {
        const repo = [...this.world.repos.values()].find((r) => r.id === id);
        if (repo === undefined || !this.installationReaches(inst, repo)) {
          throw validationFailed(
            "There is at least one repository that does not exist or is not accessible to the parent installation.",
          );
        }
        repositories.push(repo);
      }
    }
    const token = `ghs_${this.world.random.alphanumeric(36)}`;
    const createdAtMs = this.world.now();
    const expiresAtMs = createdAtMs + this.world.options.tokenLifetimeMs;
    this.world.tokens.set(token, {
      token,
      installation: inst,
      createdAtMs,
      expiresAtMs,
      permissions,
      repositoryIds: repositories === null ? null : new Set(repositories.map((r) => r.id)),
    });
    return { token, expiresAtMs, permissions, repositories };
  }

  installationReaches(inst: Installation, repo: Repository): boolean {
    return (
      inst.account.id === repo.owner.id &&
      (inst.repositorySelection === "all" || inst.repositoryIds.has(repo.id))
    );
  }

  /** Repositories an installation (or a narrowed token) can reach, by id. */
  reachable(inst: Installation, repositoryIds: Set<number> | null): Repository[] {
    return [...this.world.repos.values()]
      .filter(
        (r) =>
          this.installationReaches(inst, r) && (repositoryIds === null || repositoryIds.has(r.id)),
      )
      .sort((a, b) => a.id - b.id);
  }

  appOf(ctx: RequestContext): FakeApp {
    const cred = ctx.credential;
    if (cred.kind !== "app") throw new GitHubError(401, JWT_DECODE);
    return this.world.app(cred.appId);
  }

  userOf(ctx: RequestContext): Account {
    const cred = ctx.credential;
    if (cred.kind !== "user") throw notAccessible();
    return this.world.account(cred.login);
  }

  register(server: HttpServer): void {
    const world = this.world;
    const urls = (): objects.Urls => world.urls;
    const ownInstallation = (ctx: RequestContext): Installation => {
      const app = this.appOf(ctx);
      const inst = world.installations.get(Number(ctx.params.installation_id));
      if (inst?.app.id !== app.id) throw notFound();
      return inst;
    };

    server.add({
      method: "GET",
      path: "/app",
      operationId: "apps/get-authenticated",
      auth: "app",
      handler: (ctx) => ({ status: 200, body: objects.integration(urls(), this.appOf(ctx)) }),
    });
    server.add({
      method: "GET",
      path: "/app/installations",
      operationId: "apps/list-installations",
      auth: "app",
      handler: (ctx) => {
        const app = this.appOf(ctx);
        const all = [...world.installations.values()]
          .filter((i) => i.app.id === app.id)
          .sort((a, b) => a.id - b.id);
        const page = pageOf(ctx, all, world.urls.api);
        return {
          status: 200,
          body: page.items.map((i) => objects.installation(urls(), i)),
          headers: page.headers,
        };
      },
    });
    server.add({
      method: "GET",
      path: "/app/installations/{installation_id}",
      operationId: "apps/get-installation",
      auth: "app",
      handler: (ctx) => ({ status: 200, body: objects.installation(urls(), ownInstallation(ctx)) }),
    });
    server.add({
      method: "POST",
      path: "/app/installations/{installation_id}/access_tokens",
      operationId: "apps/create-installation-access-token",
      auth: "app",
      handler: (ctx) => {
        const inst = ownInstallation(ctx);
        if (inst.suspendedAt !== null)
          throw new GitHubError(403, "This installation has been suspended");
        const body = ctx.body;
        const list = (field: string): unknown[] | undefined => {
          const value = body[field];
          if (value === undefined) return undefined;
          if (!Array.isArray(value))
            throw validationFailed(`Invalid request.\n\nInvalid type for "${field}".`);
          return value as unknown[];
        };
        const minted = this.mintToken(inst, {
          ...(list("repositories") !== undefined
            ? { repositories: list("repositories")?.map(String) ?? [] }
            : {}),
          ...(list("repository_ids") !== undefined
            ? { repositoryIds: list("repository_ids")?.map(Number) ?? [] }
            : {}),
          ...(typeof body.permissions === "object" && body.permissions !== null
            ? { permissions: body.permissions as PermissionSet }
            : {}),
        });
        const repos =
          minted.repositories ??
          (inst.repositorySelection === "selected" ? this.reachable(inst, null) : null);
        return {
          status: 201,
          body: {
            token: minted.token,
            expires_at: objects.iso(minted.expiresAtMs),
            permissions: minted.permissions,
            repository_selection:
              minted.repositories !== null ? "selected" : inst.repositorySelection,
            ...(repos !== null
              ? { repositories: repos.map((r) => objects.repositoryShort(urls(), r)) }
              : {}),
          },
        };
      },
    });
    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/installation",
      operationId: "apps/get-repo-installation",
      auth: "app",
      handler: (ctx) => {
        const app = this.appOf(ctx);
        const repo = world.repoOf(ctx.params);
        const inst = [...world.installations.values()].find(
          (i) => i.app.id === app.id && this.installationReaches(i, repo),
        );
        if (inst === undefined) throw notFound();
        return { status: 200, body: objects.installation(urls(), inst) };
      },
    });
    server.add({
      method: "GET",
      path: "/installation/repositories",
      operationId: "apps/list-repos-accessible-to-installation",
      auth: "installation",
      handler: (ctx) => {
        const cred = ctx.credential;
        if (cred.kind !== "installation") throw notAccessible();
        const token = world.tokens.get(cred.token);
        const inst = world.installation(cred.installationId);
        const repos = this.reachable(inst, token?.repositoryIds ?? null);
        const page = pageOf(ctx, repos, world.urls.api);
        return {
          status: 200,
          body: {
            total_count: repos.length,
            repository_selection: inst.repositorySelection,
            repositories: page.items.map((r) => objects.repositoryShort(urls(), r)),
          },
          headers: page.headers,
        };
      },
    });
    server.add({
      method: "GET",
      path: "/user",
      operationId: "users/get-authenticated",
      auth: "user",
      handler: (ctx) => ({ status: 200, body: objects.privateUser(urls(), this.userOf(ctx)) }),
    });
    server.add({
      method: "GET",
      path: "/user/memberships/orgs/{org}",
      operationId: "orgs/get-membership-for-authenticated-user",
      auth: "user",
      handler: (ctx) => {
        const user = this.userOf(ctx);
        const org = world.findAccount(ctx.params.org ?? "");
        const role = org?.type === "Organization" ? org.members.get(user.login) : undefined;
        if (org === undefined || role === undefined) throw notFound();
        return {
          status: 200,
          body: {
            url: `${world.urls.api}/orgs/${org.login}/memberships/${user.login}`,
            state: "active",
            role,
            organization_url: `${world.urls.api}/orgs/${org.login}`,
            organization: objects.organizationSimple(urls(), org),
            user: objects.simpleUser(urls(), user),
          },
        };
      },
    });
    server.add({
      method: "GET",
      path: "/rate_limit",
      operationId: "rate-limit/get",
      auth: "token",
      handler: (ctx) => {
        const h = this.rateLimit(ctx, false).headers;
        const core = {
          limit: Number(h["x-ratelimit-limit"]),
          remaining: Number(h["x-ratelimit-remaining"]),
          reset: Number(h["x-ratelimit-reset"]),
          used: Number(h["x-ratelimit-used"]),
        };
        return {
          status: 200,
          body: {
            resources: { core, search: { ...core, limit: 30, remaining: 30, used: 0 } },
            rate: core,
          },
        };
      },
    });
  }
}

/** Reads the public key out of an App's private key (control API: "createApp"). */
export function publicKeyOf(privateKeyPem: string): ReturnType<typeof createPublicKey> {
  return createPublicKey(privateKeyPem);
}
