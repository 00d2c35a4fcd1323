/**
 * Connecting an organization through an OAuth application, end to end: a real Mainline server,
 * the fake GitLab's `/oauth/authorize` (a signed-in browser, modelled by its session cookie) and
 * `/oauth/token`, the callback page; then the queue working on the grant across its renewals, and
 * the failure paths: a denial, a replayed or unknown state, GitLab failing the exchange, a renewal
 * GitLab carried out but answered 502 (the grant is lost: recorded, said, reconnected), a renewal
 * GitLab failed without doing it (tried again), and two processes on one database renewing once.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GitLabConnectionStore } from "../../src/db/stores/gitlab-connections.js";
import { GitLabOAuthStateStore } from "../../src/db/stores/gitlab-oauth-states.js";
import { systemClock } from "../../src/lib/clock.js";
import { GitLabConnections } from "../../src/providers/gitlab/connections.js";
import { GitLabOAuthApp } from "../../src/providers/gitlab/oauth-app.js";
import { GitLabOAuthGrants } from "../../src/providers/gitlab/oauth-grants.js";
import { fault } from "../helpers/fake-gitlab/index.js";
import {
  GITLAB_HOST,
  mergeRequestsOf,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  testBranchPipeline,
  FAILS_ON_BAD,
  approveOnGitLab,
  createMainlineOAuthApp,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const PROJECT = "platform/oauth-app";
const REPO = { host: GITLAB_HOST, owner: "platform", name: "oauth-app" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CI = testBranchPipeline(FAILS_ON_BAD);
/** GitLab's tokens last two hours; these, four seconds (renewed in their last second). */
const TTL_SECONDS = 4;

let world: GitLabWorld;
let server: TestServer;
let app: { applicationId: string; secret: string };

vi.setConfig({ testTimeout: 120_000 });

/** The fake GitLab with the project, the OAuth application, and a server that knows it. */
async function startOAuthWorld(
  options: Parameters<typeof startGitLabWorld>[0] = {},
): Promise<{ world: GitLabWorld; server: TestServer; app: typeof app }> {
  const world = await startGitLabWorld({ oauthTokenTtlSeconds: TTL_SECONDS, ...options });
  const { gl } = world;
  gl.createUser("alice");
  gl.createUser("mainline-bot");
  await gl.createProject({ path: PROJECT, files: { "README.md": "app\n", ".gitlab-ci.yml": CI } });
  gl.addMember(PROJECT, "alice", 30);
  gl.addMember(PROJECT, "mainline-bot", 40);
  const app = createMainlineOAuthApp(gl);
  const oauth = { clientId: app.applicationId, clientSecret: app.secret };
  world.config = { ...world.config, oauth };
  const server = await startGitLabServer(world);
  // The server's address is known once it listens: the admin registers it then.
  gl.setOAuthRedirectUri(app.applicationId, `${server.url}/gitlab/oauth/callback`);
  return { world, server, app };
}

beforeAll(async () => {
  ({ world, server, app } = await startOAuthWorld());
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

/** Follows an authorize address as a signed-in browser does, to Mainline's callback page. */
async function approve(
  url: string,
  options: { as?: string; deny?: boolean } = {},
): Promise<{ status: number; page: string; callback: string }> {
  const callback = await approveOnGitLab(world.gl, url, options);
  expect(callback.startsWith(`${server.url}/gitlab/oauth/callback?`)).toBe(true);
  const back = await fetch(callback, { redirect: "manual" });
  return { status: back.status, page: await back.text(), callback };
}

async function authorize(): Promise<{ url: string; redirectUri: string }> {
  const answer = await server.call<{ url: string; redirectUri: string }>("gitlab/authorize", {});
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

interface ConnectionView {
  method: string;
  username: string;
  scopes: string[];
  problem: string | null;
  webhook: { path: string; secret: string };
}

async function connection(): Promise<ConnectionView | undefined> {
  const answer = await server.call<{ connection: ConnectionView }>("gitlab/getConnection", {});
  return answer.status === 200 ? answer.body.connection : undefined;
}

function refreshes(): number {
  return world.gl.oauthGrants.filter((grant) => grant.grantType === "refresh_token").length;
}

/** The project's webhook to the server (as a Maintainer adds it) and its queue. */
async function hookAndQueue(): Promise<void> {
  const view = await connection();
  if (!view) throw new Error("not connected");
  world.gl.addHook(PROJECT, {
    url: `${server.url}${view.webhook.path}`,
    token: view.webhook.secret,
    events: ["push", "merge_requests", "note", "pipeline"],
  });
  expect((await server.call("createQueue", QUEUE)).status).toBe(200);
}

/**
 * What another server process on the same database holds: its own connections and grants (its own
 * memory), the same rows.
 */
function anotherProcess(
  options: { leaseMs?: number; clientSecret?: string } = {},
): GitLabConnections {
  const { clientSecret = app.secret, ...grantOptions } = options;
  const handle = server.database.handle;
  const records = new GitLabConnectionStore(handle.db);
  const grants = new GitLabOAuthGrants({
    app: new GitLabOAuthApp({
      url: world.gl.url,
      clientId: app.applicationId,
      clientSecret,
      userAgent: "test",
      retryBaseMs: 0,
    }),
    records,
    states: new GitLabOAuthStateStore(handle.db),
    clock: systemClock,
    pollMs: 20,
    ...grantOptions,
  });
  return new GitLabConnections({
    records,
    clock: systemClock,
    url: world.gl.url,
    userAgent: "test",
    retryBaseMs: 0,
    oauth: grants,
  });
}

const mrs = mergeRequestsOf(() => ({ world, server }), PROJECT, QUEUE, "oauth");

describe("connecting through GitLab's OAuth application", () => {
  it("refuses what does not finish an authorization, and changes nothing", async () => {
    // No state, an unknown one: a page saying so, nothing connected.
    const unknown = await fetch(`${server.url}/gitlab/oauth/callback?code=abc&state=forged`);
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toMatch(/unknown, was used already or has expired/);
    expect(unknown.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(await connection()).toBeUndefined();

    // The person denies it on GitLab.
    const denied = await approve((await authorize()).url, { deny: true });
    expect(denied.status).toBe(400);
    expect(denied.page).toMatch(/denied on GitLab: nothing changed/);
    expect(await connection()).toBeUndefined();

    // GitLab fails the code's exchange: the code is not sent twice; the page says start again.
    world.gl.faults.add(fault.serverError(502, { method: "POST", path: "/oauth/token" }));
    const failed = await approve((await authorize()).url);
    expect(failed.status).toBe(503);
    expect(failed.page).toMatch(/502.*start the authorization again/);
    expect(await connection()).toBeUndefined();

    // A proxy in front of GitLab answers 200 with a page of its own: never a 500.
    world.gl.faults.add({
      method: "POST",
      path: "/oauth/token",
      effect: {
        kind: "respond",
        response: { status: 200, raw: { contentType: "text/html", text: "<html>portal</html>" } },
      },
    });
    const mangled = await approve((await authorize()).url);
    expect(mangled.status).toBe(503);
    expect(mangled.page).toMatch(/without a token pair.*start the authorization again/);
    expect(await connection()).toBeUndefined();
  });

  it("connects as the account that approved, once per authorization", async () => {
    const started = await authorize();
    expect(started.redirectUri).toBe(`${server.url}/gitlab/oauth/callback`);
    const url = new URL(started.url);
    expect(url.origin + url.pathname).toBe(`${world.gl.url}/oauth/authorize`);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("scope")).toBe("api write_repository");

    const done = await approve(started.url);
    expect(done.status, done.page).toBe(200);
    expect(done.page).toMatch(/GitLab connected/);
    expect(done.page).toMatch(/@mainline-bot/);
    // No token on the page.
    for (const token of world.gl.oauthAccessTokens()) expect(done.page).not.toContain(token);
    expect(await connection()).toMatchObject({
      method: "oauth",
      username: "mainline-bot",
      scopes: ["api", "write_repository"],
      problem: null,
    });

    // The same callback again (a reload, a replay): refused, the connection stays.
    const replay = await fetch(done.callback);
    expect(replay.status).toBe(400);
    expect((await connection())?.username).toBe("mainline-bot");
  });

  it("runs the queue on the grant across its renewals, renewing each once", async () => {
    await hookAndQueue();
    const before = refreshes();
    const first = await mrs.open({ "one.txt": "good\n" });
    await mrs.submit(first);
    expect((await mrs.settled(first)).state).toBe("merged");
    // Past a token's life: the next one is renewed before it is used.
    await new Promise((resolve) => setTimeout(resolve, TTL_SECONDS * 1000));
    const second = await mrs.open({ "two.txt": "good\n" });
    await mrs.submit(second);
    expect((await mrs.settled(second)).state).toBe("merged");
    expect(refreshes()).toBeGreaterThan(before);
    expect((await connection())?.problem).toBeNull();
  });

  it("tries a renewal GitLab failed without doing again, and goes on", async () => {
    world.gl.expireOAuthTokens("mainline-bot");
    const failure = world.gl.faults.add(
      fault.serverError(503, { method: "POST", path: "/oauth/token" }),
    );
    const before = refreshes();
    const mr = await mrs.open({ "three.txt": "good\n" });
    await mrs.submit(mr);
    expect((await mrs.settled(mr)).state).toBe("merged");
    expect(world.gl.faults.fired(failure)).toBe(1);
    expect(refreshes()).toBeGreaterThan(before);
    expect((await connection())?.problem).toBeNull();
  });

  it("records a renewal GitLab did but answered 502 as lost, says so, and connects again", async () => {
    world.gl.expireOAuthTokens("mainline-bot");
    world.gl.faults.add(fault.didThen5xx({ method: "POST", path: "/oauth/token" }));
    const mr = await mrs.open({ "four.txt": "good\n" });
    const submitted = await server.call<{ error: { code: string; message: string } }>(
      "submitPullRequest",
      { ...QUEUE, pr: { number: mr } },
    );
    // Never a 500: the queue cannot reach GitLab as the organization until someone authorizes.
    expect(submitted.status).toBe(409);
    expect(submitted.body.error.message).toMatch(/answer was lost.*connects it again/s);
    const broken = await connection();
    expect(broken?.problem).toMatch(/GitLab renewed the OAuth grant but its answer was lost/);

    // An admin authorizes again: the problem is gone and the merge request goes through.
    expect((await approve((await authorize()).url)).status).toBe(200);
    expect((await connection())?.problem).toBeNull();
    await mrs.submit(mr);
    expect((await mrs.settled(mr)).state).toBe("merged");
  });

  it("renews once when two processes on one database find the token due together", async () => {
    const a = anotherProcess();
    const b = anotherProcess();
    // Both read the connection while its token works.
    const [first, second] = await Promise.all([
      a.access(server.organizationId),
      b.access(server.organizationId),
    ]);
    expect((await first.client.get<{ username: string }>("/user")).data.username).toBe(
      "mainline-bot",
    );
    // Past its life, both need it at once: one renews, the other waits and reads it.
    await new Promise((resolve) => setTimeout(resolve, TTL_SECONDS * 1000));
    const before = refreshes();
    const users = await Promise.all([
      first.client.get<{ username: string }>("/user"),
      second.client.get<{ username: string }>("/user"),
      a.access(server.organizationId).then((x) => x.client.get<{ username: string }>("/user")),
      b.access(server.organizationId).then((x) => x.client.get<{ username: string }>("/user")),
    ]);
    expect(users.map((u) => u.data.username)).toEqual(Array(4).fill("mainline-bot"));
    expect(refreshes()).toBe(before + 1);

    // GitLab revokes the old token with a renewal: a client still holding it (another process
    // renewed meanwhile) is refused once, reads the renewed token and goes on.
    world.gl.expireOAuthTokens("mainline-bot");
    const again = refreshes();
    expect((await first.client.get<{ username: string }>("/user")).status).toBe(200);
    expect(refreshes()).toBe(again + 1);
    expect((await second.client.get<{ username: string }>("/user")).status).toBe(200);
    expect(refreshes()).toBe(again + 1);
  });

  it("takes over a renewal whose process stopped holding the lease", async () => {
    const records = new GitLabConnectionStore(server.database.handle.db);
    const held = await records.get(server.organizationId);
    if (!held?.oauth) throw new Error("not an OAuth connection");
    // A process took the lease and died before it asked GitLab.
    const now = Date.now();
    expect(
      await records.claimRefresh(held.organizationId, held.oauth.refreshToken, now, now + 600),
    ).toBe(true);
    world.gl.expireOAuthTokens("mainline-bot");
    const survivor = anotherProcess({ leaseMs: 600 });
    const before = refreshes();
    const { client } = await survivor.access(server.organizationId);
    const began = Date.now();
    expect((await client.get<{ username: string }>("/user")).data.username).toBe("mainline-bot");
    expect(Date.now() - began).toBeGreaterThanOrEqual(400);
    expect(refreshes()).toBe(before + 1);
    expect((await connection())?.problem).toBeNull();
  });

  it("finds the renewal another process made after this one's lease ran out", async () => {
    const slow = anotherProcess({ leaseMs: 300 });
    const quick = anotherProcess({ leaseMs: 300 });
    const [a, b] = [
      await slow.access(server.organizationId),
      await quick.access(server.organizationId),
    ];
    // The first renewal GitLab gets is held up past its lease; another process takes over.
    const held = world.gl.faults.add(
      world.gl.fault.delay(1_000, { method: "POST", path: "/oauth/token" }),
    );
    world.gl.expireOAuthTokens("mainline-bot");
    const first = a.client.get<{ username: string }>("/user");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = b.client.get<{ username: string }>("/user");
    const users = await Promise.all([first, second]);
    expect(users.map((user) => user.data.username)).toEqual(["mainline-bot", "mainline-bot"]);
    expect(world.gl.faults.fired(held)).toBe(1);
    // The held-up renewal was refused (its refresh token was spent): not a problem of the grant.
    expect((await connection())?.problem).toBeNull();
  });

  it("revokes the grant when the organization disconnects", async () => {
    const tokens = world.gl.oauthAccessTokens();
    expect((await server.call("gitlab/disconnect", {})).status).toBe(200);
    const user = await fetch(`${world.gl.apiUrl}/user`, {
      headers: { authorization: `Bearer ${tokens[tokens.length - 1] ?? ""}` },
    });
    expect(user.status).toBe(401);
  });
});

describe("on a GitLab that keeps the previous pair until the new token is used", () => {
  beforeAll(async () => {
    await server.close();
    await world.gl.close();
    ({ world, server, app } = await startOAuthWorld({ oauthRefreshRevokes: "on-first-use" }));
  }, 60_000);

  it("recovers a renewal whose answer was lost by asking again", async () => {
    expect((await approve((await authorize()).url)).status).toBe(200);
    await hookAndQueue();
    world.gl.expireOAuthTokens("mainline-bot");
    const lost = world.gl.faults.add(fault.didThen5xx({ method: "POST", path: "/oauth/token" }));
    const before = refreshes();
    const mr = await mrs.open({ "five.txt": "good\n" });
    await mrs.submit(mr);
    expect((await mrs.settled(mr)).state).toBe("merged");
    // The pair issued under the 502 was never used; the one asked for again is.
    expect(world.gl.faults.fired(lost)).toBe(1);
    expect(refreshes()).toBeGreaterThanOrEqual(before + 2);
    expect((await connection())?.problem).toBeNull();
  });

  it("keeps the grant when GitLab refuses the application's secret, until the operator fixes it", async () => {
    // An admin renewed the application's secret in GitLab; this server still has the old one.
    const secret = world.gl.renewOAuthSecret(app.applicationId);
    world.gl.expireOAuthTokens("mainline-bot");
    const stale = anotherProcess();
    const { client } = await stale.access(server.organizationId);
    const refused = await client.get("/user").catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "unavailable" });
    expect(String(refused)).toMatch(/MAINLINE_GITLAB_OAUTH_CLIENT_SECRET/);
    // Not the grant's fault: nothing is recorded against it, and the lease is free again.
    expect((await connection())?.problem).toBeNull();
    // With the new secret (the operator's fix, then a restart), the same grant renews.
    const fixed = anotherProcess({ clientSecret: secret });
    const user = await (
      await fixed.access(server.organizationId)
    ).client.get<{
      username: string;
    }>("/user");
    expect(user.data.username).toBe("mainline-bot");
  });
});
