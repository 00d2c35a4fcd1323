/**
 * GitHub's request budget (issue 34), end to end with a real `mainline serve` against the fake
 * GitHub: the realistic scenario of `bench:github-queue` (test/helpers/github-budget.ts), smaller,
 * with comments and status checks on — good pull requests, a breaking one, a conflicting pair, a
 * stacked pair, a flaky one resubmitted with `/trunk merge`, commands in comments, a commit status
 * that goes `pending` then concludes on every test branch. Every request Mainline makes to GitHub
 * from the first submission is counted, by operation: the required checks' sources read once, no
 * read for a `pending` status, one read of a pull request per submission, no request for a
 * branch never made, the comment and check run made once; and the requests per merged pull
 * request, serial and batching, under a bound.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";
import {
  prepareBudgetRepository,
  runBudgetScenario,
  type BudgetPr,
} from "../helpers/github-budget.js";
import { startServer, stopAllProcesses, type RunningServer } from "../helpers/process.js";
import { post } from "../cli/support.js";

const OWNER = "acme-gh";
const NAME = "widgets";
const QUEUE = { repo: { host: "github.com", owner: OWNER, name: NAME }, targetBranch: "main" };
/**
 * What a merged pull request may cost here. The bar is 12, which the benchmark's ten pull
 * requests meet serially and in batches of 4 (docs/benchmarks.md); in this smaller scenario the
 * fixed costs (the repository's first reads, two failed pull requests) fall on six merges, so
 * these pin what it costs now with a request's margin per merge (11.5 serial, 12.7 batching,
 * 2026-12-07), under what it cost before issue 34 (23.2 and 21.5).
 */
const SERIAL_BOUND = 12.5;
const BATCHING_BOUND = 13.5;

/** Seven of the ten: every kind, a third by comment. */
const PRS: readonly BudgetPr[] = [
  { kind: "good", byComment: false },
  { kind: "breaking", byComment: true },
  { kind: "conflict-a", byComment: false },
  { kind: "stack-a", byComment: false },
  { kind: "stack-b", byComment: false },
  { kind: "conflict-b", byComment: false },
  { kind: "flaky", byComment: true },
  { kind: "good", byComment: false },
];

let world: GitHubWorld | undefined;
let database: TestDatabase | undefined;
let server: RunningServer | undefined;

afterEach(async () => {
  await server?.stop("SIGKILL");
  server = undefined;
  await world?.gh.close();
  world = undefined;
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

async function budget(settings: Record<string, unknown>) {
  world = await startGitHubWorld({ mergeabilityDelayMs: 50 });
  database = await createTestDatabase();
  const { gh, app } = world;
  const numbers = await prepareBudgetRepository(gh, app, { owner: OWNER, name: NAME }, PRS);
  const token = randomBytes(32).toString("hex");
  server = await startServer({
    ...database.env,
    ...world.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
    // A batch that cannot fill (the resubmitted pull request, alone) starts after seconds, not
    // the queue's minute: what is counted is the requests, not that wait.
    MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "5",
  });
  const url = server.url;
  const call = async (operation: string, body: unknown): Promise<unknown> => {
    const answer = await post(url, operation, body, token);
    if (answer.status !== 200) {
      throw new Error(`${operation}: ${String(answer.status)} ${JSON.stringify(answer.body)}`);
    }
    return answer.body;
  };
  gh.setWebhookUrls(app.id, [`${url}/webhooks/github`]);
  const installationId = gh.installApp(app.id, { account: OWNER, repositories: [NAME] }).id;
  await gh.settleWebhooks();
  await call("github/linkInstallation", {
    installationId,
    githubToken: gh.createUserToken("alice"),
  });
  await call("createQueue", QUEUE);
  await call("updateQueue", {
    ...QUEUE,
    commentsEnabled: true,
    statusCheckEnabled: true,
    testingTimeoutMinutes: 0,
    ...settings,
  });
  const before = gh.requests.mark();
  const outcome = await runBudgetScenario({
    gh,
    repo: { owner: OWNER, name: NAME },
    prs: PRS,
    numbers,
    call,
    // Batching: the last pull request may wait for a batch to fill (5 s here).
    timeoutMs: 110_000,
    // Counted once every pull request's check run is made (when its submission concludes) and
    // GitHub then heard nothing for 1.5 s: the server's writes are not spaced here (the fake).
    settled: {
      shown: () => gh.requests.count({ operationId: "checks/create", since: before }) >= PRS.length,
      quietMs: 1500,
    },
  });
  const state = (kind: string) => outcome.states.filter((s) => s.kind === kind).map((s) => s.state);
  // What the scenario is: the breaking and the second of the conflicting pair fail, the stacked
  // pair and the first of the conflicting pair merge.
  expect(state("breaking")).toEqual(["failed"]);
  expect(state("conflict-b")).toEqual(["failed"]);
  expect([...state("stack-a"), ...state("stack-b"), ...state("conflict-a")]).toEqual([
    "merged",
    "merged",
    "merged",
  ]);
  const count = (operation: string) => outcome.byOperation[operation] ?? 0;
  const runs = gh.ci.runs.filter((r) => r.check === "ci" && r.startedAtMs >= outcome.startedAt);
  const statusDeliveries = gh
    .deliveries("status")
    .filter((d) => d.emittedAtMs >= outcome.startedAt);
  const shown = `${String(outcome.requests)} requests for ${String(outcome.merged)} merged: ${JSON.stringify(outcome.byOperation)}`;
  // A `pending` status was sent on every test branch, and read nothing: the statuses are read
  // at most once per status that concluded.
  expect(
    statusDeliveries.some((d) => d.payload.state === "pending"),
    shown,
  ).toBe(true);
  const concluded = statusDeliveries.filter((d) => d.payload.state !== "pending").length;
  expect(count("repos/get-combined-status-for-ref"), shown).toBeLessThanOrEqual(concluded);
  // The required checks' sources (two files, protection, rulesets) read once, not per run.
  expect(runs.length).toBeGreaterThanOrEqual(4);
  expect(count("repos/get-content"), shown).toBeLessThanOrEqual(2);
  // Protection and rulesets: one read serves the pull requests' readiness and the runs' checks.
  expect(count("repos/get-status-checks-protection"), shown).toBe(0);
  expect(count("repos/get-branch-protection"), shown).toBeLessThanOrEqual(1);
  expect(count("repos/get-branch-rules"), shown).toBeLessThanOrEqual(1);
  // The queue's comment answers a command: no reaction beside it.
  expect(count("reactions/create-for-issue-comment"), shown).toBe(0);
  // A merge takes its base from the flowing webhooks (the push of the merge before it): the
  // base is read at the start and seldom after, not before every merge.
  expect(count("git/get-ref"), shown).toBeLessThanOrEqual(3);
  // The scratch branch is not moved back onto a base that squashed the merge it holds: at most
  // one move per run and one for the slot's branch, fewer than two per run.
  expect(count("git/update-ref"), shown).toBeLessThan(2 * runs.length);
  // One read of the pull request per submission (and a few while GitHub computes mergeability):
  // a command's pull request read is the read its submission's check makes again, a free 304.
  expect(count("pulls/get"), shown).toBeLessThanOrEqual(outcome.submissions + 2);
  // It is free when the pull request did not change in between; GitHub computing its
  // mergeability in between (the fake does it lazily, as GitHub) makes it a 200 now and then, so
  // only the mechanism is asserted here, the count above bounds the reads.
  const pullsNotModified = outcome.lines.filter((l) =>
    /^304 GET \/repos\/[^/]+\/[^/]+\/pulls\/\d+$/.test(l),
  );
  expect(pullsNotModified.length, shown).toBeGreaterThanOrEqual(1);
  // No request for a branch never made (the conflict's probe).
  expect(
    outcome.lines.filter((l) => / DELETE /.test(l) && !l.startsWith("2")),
    shown,
  ).toEqual([]);
  // The comment and the check run: made once each per pull request, edits coalesced; beside
  // the comment, the check run is written once, made when its submission concludes.
  expect(count("issues/create-comment"), shown).toBeLessThanOrEqual(PRS.length);
  expect(count("checks/create"), shown).toBeLessThanOrEqual(outcome.submissions);
  expect(count("checks/update"), shown).toBe(0);
  // A completed check run is taken from its webhook, not read (the poll reads, rarely); what
  // a run's pull requests change is told by its test branch's merges, not compared.
  expect(count("checks/list-for-ref"), shown).toBeLessThanOrEqual(2);
  expect(count("repos/compare-commits-with-basehead"), shown).toBeLessThanOrEqual(2);
  return { outcome, shown };
}

describe("GitHub requests per merged pull request, a real server against the fake GitHub", () => {
  it("serial", async () => {
    const { outcome, shown } = await budget({ mode: "single", concurrency: 1, batch: false });
    expect(outcome.merged).toBe(6);
    expect(outcome.perMergedPr, shown).toBeLessThanOrEqual(SERIAL_BOUND);
  }, 120_000);

  it("batching", async () => {
    const { outcome, shown } = await budget({
      mode: "single",
      concurrency: 1,
      batch: true,
      batchingMinSize: 2,
      batchingMaxWaitTimeMinutes: 1,
    });
    // Every good one: the flaky one's batch failed, and the pull request behind it in the batch
    // was tested once more before anyone was failed on that run alone.
    expect(outcome.merged, shown).toBe(6);
    expect(outcome.perMergedPr, shown).toBeLessThanOrEqual(BATCHING_BOUND);
  }, 180_000);
});
