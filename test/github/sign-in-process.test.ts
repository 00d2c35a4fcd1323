/**
 * "Sign in with GitHub" against a real `mainline serve` process logging at trace level: a sign-in
 * that works and one whose code is replayed, then the whole log is searched for the App's client
 * secret, the user's token and the codes (ADR 0029: the user token is used during the callback
 * only; the secret never logged).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";
import {
  runCliInProcess,
  startServer,
  stopAllProcesses,
  type RunningServer,
} from "../helpers/process.js";

let database: TestDatabase;
let world: GitHubWorld;
let server: RunningServer | undefined;
const codes: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  world = await startGitHubWorld();
  const env = {
    ...database.env,
    ...world.env,
    MAINLINE_GITHUB_CLIENT_ID: world.app.clientId,
    MAINLINE_GITHUB_CLIENT_SECRET: world.app.clientSecret,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: `mlt_${randomBytes(32).toString("base64url")}`,
  };
  world.gh.createOrganization("acme-gh");
  world.gh.createUser("alice");
  world.gh.addOrgMember("acme-gh", "alice", "admin");
  const { id } = world.gh.installApp(world.app.id, { account: "acme-gh" });
  server = await startServer(env, { logLevel: "trace", timeoutMs: 60_000 });
  const linked = await runCliInProcess(
    ["github", "link", "--installation", String(id), "--org", "acme"],
    env,
  );
  expect(linked.stderr).toContain("Linked installation");
}, 90_000);

afterAll(async () => {
  await server?.stop();
  await stopAllProcesses();
  await world.gh.close();
  await database.cleanup();
});

async function step(url: string, cookie?: string) {
  const response = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
  await response.text();
  const cookies = response.headers.getSetCookie().map((c) => c.split(";")[0] ?? "");
  return { status: response.status, location: response.headers.get("location") ?? "", cookies };
}

describe("sign in with GitHub, in a real process", () => {
  it("signs in, refuses a replayed code, and logs no secret", async () => {
    if (!server) throw new Error("the server did not start");
    world.gh.authorizeAs("alice");
    const start = await step(`${server.url}/sign-in/github`);
    expect(start.status).toBe(303);
    const state = start.cookies.find((c) => c.startsWith("mainline_github_state="));
    const github = await step(start.location);
    codes.push(new URL(github.location).searchParams.get("code") ?? "");
    const landed = await step(github.location, state);
    expect(landed.status).toBe(303);
    expect(landed.location).toBe("/acme");
    const session = landed.cookies.find((c) => c.startsWith("mainline_session="));
    expect((await step(`${server.url}/acme`, session)).status).toBe(200);
    expect((await step(github.location, state)).status).toBe(403);

    await server.stop();
    const log = server.stdout + server.stderr;
    expect(log).toContain("/sign-in/github/callback");
    expect(log).not.toContain(world.app.clientSecret);
    for (const token of world.gh.world.userTokens.keys()) expect(log).not.toContain(token);
    expect(log).not.toMatch(/\bghu_[A-Za-z0-9]{10,}/);
    for (const code of codes) {
      expect(code).not.toBe("");
      expect(log).not.toContain(code);
    }
  });
});
