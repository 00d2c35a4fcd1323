/**
 * An OAuth connection under real processes: two `mainline serve` processes on one database, both
 * working the organization's GitLab queue, with access tokens that last seconds. GitLab revokes
 * the previous pair the moment it issues a new one, so two processes renewing the same grant would
 * break it: they must renew under the lease, each renewal once. The queue merges every merge
 * request in order across the renewals, GitLab refuses no renewal, and no token or secret reaches
 * either process's log.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  GITLAB_HOST,
  startGitLabWorld,
  type GitLabWorld,
  testBranchPipeline,
  approveOnGitLab,
  createMainlineOAuthApp,
} from "../helpers/gitlab.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";
import { postOk } from "../cli/support.js";

const PROJECT = "acme-gl/oauth";
const REPO = { host: GITLAB_HOST, owner: "acme-gl", name: "oauth" };
const QUEUE = { repo: REPO, targetBranch: "main" };
// Each pipeline takes a second or two: the queue outlives several tokens.
const CI = testBranchPipeline("sleep 1", `"! grep -rq BROKEN --include='*.txt' ."`);
const TTL_SECONDS = 4;

let world: GitLabWorld | undefined;
let database: TestDatabase | undefined;
const servers: RunningServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await world?.gl.close();
  world = undefined;
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

describe("an OAuth connection under two real processes", () => {
  it("renews each token once, under the lease, while the queue merges in order", async () => {
    world = await startGitLabWorld({ oauthTokenTtlSeconds: TTL_SECONDS });
    database = await createTestDatabase();
    const { gl } = world;
    gl.createUser("alice");
    gl.createUser("mainline-bot");
    await gl.createProject({ path: PROJECT, files: { "README.md": "x\n", ".gitlab-ci.yml": CI } });
    gl.addMember(PROJECT, "alice", 30);
    gl.addMember(PROJECT, "mainline-bot", 40);
    const app = createMainlineOAuthApp(gl);
    const order: number[] = [];
    for (const name of ["one", "two", "three", "four"]) {
      await gl.commit(PROJECT, name, { [`${name}.txt`]: `${name}\n` }, { author: "alice" });
      order.push(
        (
          await gl.createMergeRequest({
            project: PROJECT,
            sourceBranch: name,
            title: name,
            author: "alice",
          })
        ).iid,
      );
    }
    const token = randomBytes(32).toString("hex");
    const env = {
      ...database.env,
      ...world.env,
      MAINLINE_GITLAB_OAUTH_CLIENT_ID: app.applicationId,
      MAINLINE_GITLAB_OAUTH_CLIENT_SECRET: app.secret,
      MAINLINE_BOOTSTRAP_ORG: "acme",
      MAINLINE_BOOTSTRAP_TOKEN: token,
    };
    const first = await startServer(env);
    servers.push(first);
    const second = await startServer(env);
    servers.push(second);

    // An admin authorizes through the first process, as a browser signed in to GitLab.
    gl.setOAuthRedirectUri(app.applicationId, `${first.url}/gitlab/oauth/callback`);
    const started = await postOk(first.url, "gitlab/authorize", {}, token);
    const callback = await approveOnGitLab(gl, started.url as string);
    const back = await fetch(callback, { redirect: "manual" });
    expect(back.status, await back.text()).toBe(200);

    const connected = await postOk(second.url, "gitlab/getConnection", {}, token);
    const view = connected.connection as {
      method: string;
      webhook: { path: string; secret: string };
    };
    expect(view.method).toBe("oauth");
    // Deliveries alternate between the processes, as behind a load balancer.
    gl.addHook(PROJECT, { url: `${first.url}${view.webhook.path}`, token: view.webhook.secret });
    gl.addHook(PROJECT, { url: `${second.url}${view.webhook.path}`, token: view.webhook.secret });
    await postOk(second.url, "createQueue", QUEUE, token);
    const renewalsBefore = gl.oauthGrants.filter((g) => g.grantType === "refresh_token").length;
    for (const [i, number] of order.entries()) {
      const url = i % 2 === 0 ? first.url : second.url;
      await postOk(url, "submitPullRequest", { ...QUEUE, pr: { number } }, token);
    }
    let final: Record<number, string> = {};
    await waitFor(
      async () => {
        const body = await postOk(
          first.url,
          "getSubmittedPullRequests",
          { ...QUEUE, prs: order.map((number) => ({ number })) },
          token,
        );
        const list = body.pullRequests as { prNumber: number; state: string }[];
        final = Object.fromEntries(list.map((pr) => [pr.prNumber, pr.state]));
        return list.every((pr) => ["merged", "failed"].includes(pr.state));
      },
      "every merge request concluded",
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    expect(final).toEqual(Object.fromEntries(order.map((number) => [number, "merged"])));
    const landed = order.map((number) => gl.mergeRequest(PROJECT, number).mergedAt);
    expect([...landed].sort()).toEqual(landed);

    // Tokens came and went while it ran; GitLab refused no renewal (none asked twice).
    const renewals = gl.oauthGrants.filter((g) => g.grantType === "refresh_token").length;
    expect(renewals).toBeGreaterThan(renewalsBefore);
    const refused = gl.requestLog.filter((r) => r.path === "/oauth/token" && r.status !== 200);
    expect(refused).toEqual([]);
    const after = await postOk(first.url, "gitlab/getConnection", {}, token);
    expect((after.connection as { problem: string | null }).problem).toBeNull();

    for (const server of [first, second]) {
      const output = server.stdout + server.stderr;
      expect(output).not.toContain(app.secret);
      for (const access of gl.oauthAccessTokens()) expect(output).not.toContain(access);
    }
  }, 180_000);
});
