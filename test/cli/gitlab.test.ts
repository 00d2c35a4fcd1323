/**
 * `mainline gitlab` against a server that knows the fake GitLab: connect with a token from a file
 * or GITLAB_TOKEN (a refused token changes nothing), status with its expiry warning and the
 * webhook secret only when asked, authorize through the OAuth application, disconnect. No token
 * is ever printed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GitLabConnectionView } from "../../src/cli/commands/gitlab.js";
import {
  approveOnGitLab,
  createMainlineOAuthApp,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
} from "../helpers/gitlab.js";
import { runCliInProcess } from "../helpers/process.js";
import type { TestServer } from "../helpers/server.js";
import { failed, succeeded } from "./support.js";
import { DAY_MS } from "../../src/lib/time.js";

const PROJECT = "platform/app";

let world: GitLabWorld;
let server: TestServer;
let dir: string;

beforeAll(async () => {
  world = await startGitLabWorld();
  const { gl } = world;
  gl.createUser("mainline-bot");
  await gl.createProject({ path: PROJECT, files: { "README.md": "app\n" } });
  gl.addMember(PROJECT, "mainline-bot", 40);
  const app = createMainlineOAuthApp(gl);
  world.config = {
    ...world.config,
    oauth: { clientId: app.applicationId, clientSecret: app.secret },
  };
  server = await startGitLabServer(world);
  gl.setOAuthRedirectUri(app.applicationId, `${server.url}/gitlab/oauth/callback`);
  dir = mkdtempSync(path.join(tmpdir(), "mainline-gitlab-cli-"));
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
  rmSync(dir, { recursive: true, force: true });
});

const gitlab = (args: string[], env: Record<string, string> = {}) =>
  runCliInProcess(["gitlab", ...args, "--url", server.url, "--token", server.token], env);

/** A token in a file, as an admin keeps it. */
function tokenFile(token: string): string {
  const file = path.join(dir, `token-${String(Math.random()).slice(2)}`);
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return file;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** `status --json --show-secret`: the connection as the CLI prints it. */
async function shownConnection(): Promise<GitLabConnectionView> {
  const shown = succeeded(await gitlab(["status", "--json", "--show-secret"]));
  return (JSON.parse(shown.stdout) as { connection: GitLabConnectionView }).connection;
}

describe("mainline gitlab", () => {
  it("says what is missing before anything is connected, and refuses a token GitLab refuses", async () => {
    expect(failed(await gitlab(["status"]))).toContain(
      "This organization is not connected to GitLab.",
    );
    expect(failed(await gitlab(["connect"], { GITLAB_TOKEN: "" }))).toContain(
      "No GitLab token: pass --token-file <file> or set GITLAB_TOKEN",
    );
    expect(failed(await gitlab(["connect", "--token-file", path.join(dir, "absent")]))).toMatch(
      /Cannot read the token file .*absent: ENOENT/,
    );
    const refused = failed(await gitlab(["connect", "--token-file", tokenFile("glpat-unknown")]));
    expect(refused).toMatch(/GitLab/);
    expect(refused).not.toContain("glpat-unknown");
    expect(failed(await gitlab(["status"]))).toContain("not connected");
  });

  it("connects with a token from a file, warns that it expires soon, and shows the connection", async () => {
    const expires = isoDay(Date.now() + 5 * DAY_MS);
    const made = world.gl.createProjectToken(PROJECT, { accessLevel: 40, expiresAt: expires });
    const connected = succeeded(await gitlab(["connect", "--token-file", tokenFile(made.token)]));
    expect(connected.stdout).toContain(`Mainline acts on GitLab as @${made.user.username}`);
    expect(connected.stdout).toContain(`the token expires on ${expires}`);
    expect(connected.stderr).toMatch(
      new RegExp(`mainline: warning: The GitLab token expires on ${expires}, in [45] days`),
    );

    const status = succeeded(await gitlab(["status"]));
    expect(status.stdout).toMatch(/^method\s+access token$/m);
    expect(status.stdout).toMatch(new RegExp(`^user\\s+@${made.user.username}$`, "m"));
    expect(status.stdout).toMatch(/^scopes\s+api, write_repository$/m);
    expect(status.stdout).toMatch(/^webhook\s+\/webhooks\/gitlab\/\S+ on this server's public/m);
    expect(status.stdout).toMatch(/^secret\s+\(hidden: --show-secret prints it\)$/m);
    expect(status.stderr).toContain("create a new one and run `mainline gitlab connect`");

    const answer = await server.call<{ connection: { webhook: { secret: string } } }>(
      "gitlab/getConnection",
      {},
    );
    const secret = answer.body.connection.webhook.secret;
    expect(status.stdout).not.toContain(secret);
    const shown = succeeded(await gitlab(["status", "--show-secret"]));
    expect(shown.stdout).toMatch(new RegExp(`^secret\\s+${secret}$`, "m"));
    const json = JSON.parse(succeeded(await gitlab(["status", "--json"])).stdout) as {
      connection: GitLabConnectionView;
    };
    expect(json.connection.username).toBe(made.user.username);
    expect(json.connection.webhook.secret).toBeUndefined();
    for (const output of [connected, status, shown]) {
      expect(output.stdout + output.stderr).not.toContain(made.token);
    }
  });

  it("replaces the token from GITLAB_TOKEN, keeping the webhook; no warning for a lasting token", async () => {
    const before = await shownConnection();
    const made = world.gl.createProjectToken(PROJECT, { accessLevel: 40, name: "rotated" });
    const rotated = succeeded(await gitlab(["connect"], { GITLAB_TOKEN: made.token }));
    expect(rotated.stdout).toContain(`as @${made.user.username}`);
    expect(rotated.stderr).toBe("");
    const after = await shownConnection();
    expect(after.webhook).toEqual(before.webhook);
    expect(after.expiresAt).toBeNull();
  });

  it("authorizes through the OAuth application, then disconnects", async () => {
    const started = succeeded(await gitlab(["authorize"]));
    const url = /^(http\S+\/oauth\/authorize\?\S+)$/m.exec(started.stdout)?.[1] ?? "";
    expect(url).not.toBe("");
    expect(started.stdout).toContain(
      `redirect URI must be exactly ${server.url}/gitlab/oauth/callback`,
    );
    const callback = await approveOnGitLab(world.gl, url, { as: "mainline-bot" });
    expect((await fetch(callback)).status).toBe(200);
    const status = succeeded(await gitlab(["status"]));
    expect(status.stdout).toMatch(/^method\s+OAuth application \(Mainline renews the grant\)$/m);
    expect(status.stdout).toMatch(/^user\s+@mainline-bot$/m);
    // Its two-hour token is renewed by Mainline: nothing to warn about.
    expect(status.stderr).toBe("");

    const tokens = world.gl.oauthAccessTokens();
    const gone = succeeded(await gitlab(["disconnect"]));
    expect(gone.stdout).toContain("Disconnected from GitLab");
    const user = await fetch(`${world.gl.apiUrl}/user`, {
      headers: { authorization: `Bearer ${tokens[tokens.length - 1] ?? ""}` },
    });
    expect(user.status).toBe(401);
    expect(failed(await gitlab(["status"]))).toContain("not connected");
    expect(failed(await gitlab(["disconnect"]))).toContain("not connected");
  });
});
