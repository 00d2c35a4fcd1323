/**
 * Trunk's merge, bazel and nx actions upload a pull request's impacted targets
 * (`setImpactedTargets`, `pr.number` as a string, a list or `"ALL"`) whether or not the queue's
 * git host answers. Real `mainline serve` processes on one database: one whose GitHub (the fake)
 * answers 502 to everything, and one with no GitHub App at all. Targets are answered at once and
 * kept; the commands whose callers wait are refused at once, with a reason; the queue says once in
 * its log that GitHub does not answer, shows it in getQueue, and when GitHub answers again it
 * tests the pull request with the targets it kept. (GitHub's client retries a request, then none
 * while GitHub seems down, so the queue's first attempt on a GitHub answering 502 takes well under a minute
 * to fail: the requests are answered long before.)
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";

const OWNER = "acme-gh";
const NAME = "widgets";
const FULL = `${OWNER}/${NAME}`;
const REPO = { host: "github.com", owner: OWNER, name: NAME };
const QUEUE = { repo: REPO, targetBranch: "main" };
const TARGETS = ["//app:widgets", "//lib:core"];

let world: GitHubWorld | undefined;
let database: TestDatabase | undefined;
const servers: RunningServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop("SIGKILL")));
  await world?.gh.close();
  world = undefined;
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfter: string | null;
  ms: number;
}

async function send(url: string, operation: string, body: unknown, token: string) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/${operation}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-token": token },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
    retryAfter: response.headers.get("retry-after"),
    ms: performance.now() - started,
  } satisfies Answer;
}

async function call(url: string, operation: string, body: unknown, token: string) {
  const answer = await send(url, operation, body, token);
  expect(answer.status, `${operation}: ${JSON.stringify(answer.body)}`).toBe(200);
  return answer.body;
}

/** The body the action's "Upload Impacted Targets" step posts (jq --arg: strings). */
function upload(number: number, sha: string, targets: string[] | "ALL", targetBranch = "main") {
  return {
    repo: REPO,
    pr: { number: String(number), sha },
    targetBranch,
    impactedTargets: targets,
  };
}

interface Prepared {
  world: GitHubWorld;
  env: Record<string, string>;
  token: string;
  /** `waiting`: submitted, waits for its targets; `later`: targets first, submitted afterwards. */
  prs: { waiting: { number: number; sha: string }; later: { number: number; sha: string } };
}

/**
 * The fake GitHub with the App, a repository whose CI passes every test branch, and two pull
 * requests; a server links the installation and creates a parallel queue (pull requests wait for
 * their targets), to which the first pull request is submitted. That server is then stopped.
 */
async function prepare(): Promise<Prepared> {
  world = await startGitHubWorld({ mergeabilityDelayMs: 50 });
  database = await createTestDatabase();
  const { gh, app } = world;
  gh.createOrganization(OWNER);
  gh.createUser("alice");
  gh.addOrgMember(OWNER, "alice", "admin");
  await gh.createRepository({ owner: OWNER, name: NAME, files: { "README.md": "widgets\n" } });
  gh.configureCi(FULL, [
    {
      name: "test",
      on: { push: { branches: ["trunk-merge/**"] } },
      checks: [{ name: "ci", run: () => Promise.resolve(true) }],
    },
  ]);
  const open = async (branch: string) => {
    const sha = await gh.commit(FULL, {
      branch,
      from: "main",
      files: { [`${branch}.txt`]: `${branch}\n` },
      by: "alice",
    });
    return { number: await gh.openPullRequest(FULL, { head: branch, by: "alice" }), sha };
  };
  const waiting = await open("waiting");
  const later = await open("later");
  const token = randomBytes(32).toString("hex");
  const env = {
    ...database.env,
    ...world.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
    // The client's retries of a 502 at once, not after 1, 4 and 9 s: the outage shows sooner.
    MAINLINE_GITHUB_RETRY_BASE_MS: "0",
  };

  const server = await startServer(env);
  gh.setWebhookUrls(app.id, [`${server.url}/webhooks/github`]);
  const installationId = gh.installApp(app.id, { account: OWNER, repositories: [NAME] }).id;
  await gh.settleWebhooks();
  await call(
    server.url,
    "github/linkInstallation",
    { installationId, githubToken: gh.createUserToken("alice") },
    token,
  );
  await call(server.url, "createQueue", QUEUE, token);
  await call(
    server.url,
    "updateQueue",
    { ...QUEUE, mode: "parallel", requiredStatuses: ["ci"], mergeMethod: "merge_commit" },
    token,
  );
  await call(server.url, "submitPullRequest", { ...QUEUE, pr: { number: waiting.number } }, token);
  await waitFor(
    async () => (await state(server.url, token, waiting.number)) === "not_ready",
    "the pull request waits for its targets",
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  await server.stop();
  return { world, env, token, prs: { waiting, later } };
}

async function state(url: string, token: string, number: number): Promise<string> {
  const body = await call(url, "getSubmittedPullRequest", { ...QUEUE, pr: { number } }, token);
  return body.state as string;
}

async function hostOf(url: string, token: string) {
  return (await call(url, "getQueue", QUEUE, token)).host as {
    state: string;
    since?: string;
    message?: string;
    retryAt?: string;
  };
}

/** The impacted targets kept in the queue's inbox, not applied yet, by pull request. */
async function keptTargets(): Promise<Map<number, unknown>> {
  if (!database) throw new Error("no database");
  const rows = await database.handle.db
    .selectFrom("mqCommands")
    .select(["payload", "appliedAt"])
    .execute();
  const kept = new Map<number, unknown>();
  for (const row of rows) {
    const payload = JSON.parse(row.payload) as { type: string; prNumber: number; targets: unknown };
    if (payload.type === "set_impacted_targets" && row.appliedAt === null) {
      kept.set(payload.prNumber, payload.targets);
    }
  }
  return kept;
}

/** The server's log lines (pino's JSON) whose message matches. */
function logLines(server: RunningServer, pattern: RegExp): { level: number; msg: string }[] {
  return server.stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => pattern.test(line.msg));
}

/**
 * The uploads and commands while the host does not answer: every answer under a second and
 * never a 5xx but the refusals' 503; targets answered 200 and kept, an empty target branch a 400.
 */
async function whileUnreachable(
  url: string,
  prepared: Prepared,
  refusal: { status: number; code: string },
): Promise<void> {
  const { token, prs } = prepared;
  const answers: Answer[] = [];
  answers.push(
    await send(
      url,
      "setImpactedTargets",
      upload(prs.waiting.number, prs.waiting.sha, TARGETS),
      token,
    ),
  );
  answers.push(
    await send(url, "setImpactedTargets", upload(prs.later.number, prs.later.sha, "ALL"), token),
  );
  for (const answer of answers)
    expect(answer, JSON.stringify(answer.body)).toMatchObject({ status: 200, body: {} });
  // The action sends what it was given: an empty target branch names no queue.
  const empty = await send(
    url,
    "setImpactedTargets",
    upload(prs.later.number, prs.later.sha, "ALL", ""),
    token,
  );
  expect(empty.status).toBe(400);
  answers.push(empty);

  await waitFor(
    async () => (await hostOf(url, token)).state === "unreachable",
    "getQueue shows the host unreachable",
    {
      timeoutMs: 240_000,
      intervalMs: 100,
    },
  );
  const host = await hostOf(url, token);
  expect(Date.parse(host.since ?? "")).not.toBeNaN();
  expect(Date.parse(host.retryAt ?? "")).not.toBeNaN();
  expect(host.message).not.toBe("");

  // The targets are kept, not applied, and the pull request still waits for them.
  expect(await keptTargets()).toEqual(
    new Map<number, unknown>([
      [prs.waiting.number, TARGETS],
      [prs.later.number, "ALL"],
    ]),
  );
  expect(await state(url, token, prs.waiting.number)).toBe("not_ready");

  // Commands whose callers wait are refused at once, naming the cause, and change nothing.
  for (const operation of ["cancelPullRequest", "restartTestsOnPullRequest"]) {
    const answer = await send(
      url,
      operation,
      { ...QUEUE, pr: { number: prs.waiting.number } },
      token,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(refusal.status);
    expect(answer.body).toMatchObject({ error: { code: refusal.code } });
    if (refusal.status === 503) expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    answers.push(answer);
  }
  // A submission too: the pull request is not read from a host known not to answer.
  const submit = await send(
    url,
    "submitPullRequest",
    { ...QUEUE, pr: { number: prs.later.number } },
    token,
  );
  expect(submit.status, JSON.stringify(submit.body)).toBe(refusal.status);
  expect(submit.body).toMatchObject({ error: { code: refusal.code } });
  answers.push(submit);
  // Uploads go on being answered, again and again, as CI reruns.
  for (let i = 0; i < 3; i++) {
    const again = await send(
      url,
      "setImpactedTargets",
      upload(prs.waiting.number, prs.waiting.sha, TARGETS),
      token,
    );
    expect(again.status).toBe(200);
    answers.push(again);
  }
  expect(await state(url, token, prs.waiting.number)).toBe("not_ready");
  for (const answer of answers) {
    expect(answer.ms, JSON.stringify(answer.body)).toBeLessThan(1_000);
    if (answer.status >= 500)
      expect(answer).toMatchObject({ status: 503, body: { error: { code: "unavailable" } } });
  }
}

/** Once the host answers: the kept targets are the ones the queue tests and merges with. */
async function afterRecovery(url: string, prepared: Prepared): Promise<void> {
  const {
    token,
    prs,
    world: { gh },
  } = prepared;
  await waitFor(
    async () => (await hostOf(url, token)).state === "ok",
    "getQueue shows the host ok",
    {
      timeoutMs: 90_000,
      intervalMs: 200,
    },
  );
  await waitFor(
    async () =>
      gh.pullRequest(FULL, prs.waiting.number).mergedAt !== null &&
      (await state(url, token, prs.waiting.number)) === "merged",
    "the waiting pull request merged",
    {
      timeoutMs: 60_000,
      intervalMs: 200,
    },
  );
  expect((await keptTargets()).size).toBe(0);
  // Tested on a test branch of the queue with its targets: it had none but those uploaded.
  const tested = await call(
    url,
    "getSubmittedPullRequest",
    { ...QUEUE, pr: { number: prs.waiting.number }, includeTimeline: true },
    token,
  );
  expect(tested).toMatchObject({ state: "merged", readiness: { hasImpactedTargets: true } });
  const run = (tested.timeline as { toState: string; testRunId: string | null }[]).find(
    (t) => t.toState === "testing",
  );
  expect(run?.testRunId).toBeTruthy();
  const details = await call(
    url,
    "getMergeQueueTestingDetails",
    { ...QUEUE, testRunId: run?.testRunId },
    token,
  );
  expect(details.testBranch).toMatch(/^trunk-merge\//);
  // Targets uploaded before the pull request was submitted are its targets once it is.
  await call(url, "submitPullRequest", { ...QUEUE, pr: { number: prs.later.number } }, token);
  const later = await call(
    url,
    "getSubmittedPullRequest",
    { ...QUEUE, pr: { number: prs.later.number } },
    token,
  );
  expect(later).toMatchObject({ readiness: { hasImpactedTargets: true } });
}

describe("impacted targets and commands while GitHub does not answer, real processes", () => {
  it("GitHub answering 502 to everything: targets kept and answered at once, used once it answers again", async () => {
    const prepared = await prepare();
    const { gh } = prepared.world;
    const server = await startServer(prepared.env, { logLevel: "info" });
    servers.push(server);
    gh.setWebhookUrls(prepared.world.app.id, [`${server.url}/webhooks/github`]);
    const outage = gh.faults.add(gh.fault.serverError("*", 502, { times: Infinity }));

    await whileUnreachable(server.url, prepared, { status: 503, code: "unavailable" });
    // One line in the log, at warn level, and no step failing at error level (the engine's
    // backoff itself: test/mergequeue/engine-host-trouble.test.ts).
    expect(logLines(server, /does not answer/)).toHaveLength(1);
    expect(logLines(server, /does not answer/)[0]?.level).toBe(40);
    expect(logLines(server, /step failed/)).toEqual([]);
    // The refusals are answers, not server faults.
    expect(logLines(server, /request failed/)).toEqual([]);

    gh.faults.remove(outage);
    await afterRecovery(server.url, prepared);
    expect(logLines(server, /answers again/)).toHaveLength(1);
    expect(logLines(server, /does not answer/)).toHaveLength(1);
  }, 600_000);

  it("no GitHub App configured: targets kept and answered at once, used once the App is", async () => {
    const prepared = await prepare();
    const withoutApp = Object.fromEntries(
      Object.entries(prepared.env).filter(([key]) => !key.startsWith("MAINLINE_GITHUB_")),
    );
    const bare = await startServer(withoutApp, { logLevel: "info" });
    servers.push(bare);

    await whileUnreachable(bare.url, prepared, { status: 409, code: "host_not_connected" });
    expect((await hostOf(bare.url, prepared.token)).message).toMatch(
      /no provider for host github\.com/,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(logLines(bare, /does not answer/)).toHaveLength(1);
    expect(logLines(bare, /step failed/)).toEqual([]);
    await bare.stop();
    servers.splice(servers.indexOf(bare), 1);

    const server = await startServer(prepared.env, { logLevel: "info" });
    servers.push(server);
    prepared.world.gh.setWebhookUrls(prepared.world.app.id, [`${server.url}/webhooks/github`]);
    await afterRecovery(server.url, prepared);
    expect(logLines(server, /answers again/)).toHaveLength(1);
  }, 240_000);
});
