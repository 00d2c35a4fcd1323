/**
 * GitHub API cost of the merge queue (docs/benchmarks.md, "GitHub: API requests per merged PR"):
 * a real `mainline serve` with the GitHub App configured against the fake GitHub (real git
 * underneath, its Actions-like CI testing every push to `trunk-merge/**`), a queue with comments
 * and status checks on. Two workloads, each serial (concurrency 1, no batching) then batching
 * (batches of BATCH):
 *
 * - realistic (issue 34): ten pull requests, good, breaking, a conflicting pair, a stacked pair,
 *   a flaky one (resubmitted once it failed), half submitted with `/trunk merge` comments, the
 *   required checks from a ruleset, a check run and a commit status (`pending`, then its
 *   conclusion) on every test branch (`test/helpers/github-budget.ts`);
 * - good: PRS pull requests that each change their own file, submitted at once, the queue's
 *   `requiredStatuses: ["ci"]`.
 *
 * Counted: every request Mainline made to GitHub from the first submit until the last PR ended
 * and its comment and check were final, per merged PR, by operation; 304s (a conditional GET that
 * found nothing new: free of rate limit) apart.
 *
 * The count does not depend on the database; SQLite is used.
 *
 * Usage: npm run bench:github-queue   (BENCH_PRS=<2..60>, default 12; BENCH_BATCH=<2..20>,
 *                                      default 4; BENCH_GOOD=0 to skip the good workload;
 *                                      BENCH_DUMP=<path prefix>: every request counted, one a
 *                                      line, to <prefix>-<scenario>.txt)
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { FakeGitHub } from "../test/helpers/fake-github/index.js";
import {
  REALISTIC_PRS,
  countRequests,
  prepareBudgetRepository,
  runBudgetScenario,
  type BudgetOutcome,
} from "../test/helpers/github-budget.js";
import { integerFromEnv } from "./support/env.js";
import { formatTable } from "./support/table.js";
import { ROOT, showServerOutput } from "./support/server.js";
import type { Api } from "./support/api.js";
import {
  NAME,
  OWNER,
  QUEUE,
  openGoodPullRequests,
  prepareRepository,
  startLinkedServer,
} from "./support/github.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "github-queue.json");
const PRS = integerFromEnv("BENCH_PRS", 12, 2, 60);
const BATCH = integerFromEnv("BENCH_BATCH", 4, 2, 20);
const GOOD = integerFromEnv("BENCH_GOOD", 1, 0, 1) === 1;
/** The issue's bar: serial and batching, comments and status checks on. */
const TARGET_PER_MERGED_PR = 12;
const SCENARIO_TIMEOUT_MS = 10 * 60_000;

interface Scenario {
  name: string;
  workload: "realistic" | "good";
  settings: Record<string, unknown>;
}

interface ScenarioResult {
  name: string;
  workload: Scenario["workload"];
  merged: number;
  failed: number;
  requests: number;
  notModified: number;
  perMergedPr: number | null;
  byOperation: Record<string, number>;
  /** The pull requests that did not merge, by kind. */
  notMerged: string[];
  wallMs: number;
}

/** The good workload: PRS pull requests of their own file, opened; their numbers. */
async function prepareGood(gh: FakeGitHub): Promise<number[]> {
  await prepareRepository(gh);
  return openGoodPullRequests(gh, PRS);
}

async function scenario(spec: Scenario): Promise<ScenarioResult> {
  const gh = await FakeGitHub.start({ seed: 3, validate: false });
  const app = gh.createApp({ slug: "mainline-bench" });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-gh-"));
  const token = randomBytes(24).toString("hex");
  try {
    const realistic = spec.workload === "realistic";
    const numbers = realistic
      ? await prepareBudgetRepository(gh, app, { owner: OWNER, name: NAME }, REALISTIC_PRS)
      : await prepareGood(gh);
    const { server, api } = await startLinkedServer({
      gh,
      app,
      token,
      dataDir,
      settings: { ...(realistic ? {} : { requiredStatuses: ["ci"] }), ...spec.settings },
    });
    try {
      const outcome: BudgetOutcome = realistic
        ? await runBudgetScenario({
            gh,
            repo: { owner: OWNER, name: NAME },
            prs: REALISTIC_PRS,
            numbers,
            call: (operation, body) => api.call(operation, body),
            timeoutMs: SCENARIO_TIMEOUT_MS,
          })
        : await runGood(gh, api, numbers);
      if (process.env.BENCH_DUMP) {
        await writeFile(
          `${process.env.BENCH_DUMP}-${spec.name.replaceAll(" ", "-").replaceAll(",", "")}.txt`,
          outcome.lines.join("\n"),
        );
      }
      showServerOutput(`(${spec.name})`, server.takeOutput());
      return {
        name: spec.name,
        workload: spec.workload,
        merged: outcome.merged,
        failed: outcome.failed,
        requests: outcome.requests,
        notModified: outcome.notModified,
        perMergedPr: outcome.perMergedPr,
        byOperation: outcome.byOperation,
        notMerged: outcome.states
          .filter((s) => s.state !== "merged")
          .map((s) => `${s.kind} #${String(s.number)}: ${s.state}`),
        wallMs: outcome.wallMs,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await gh.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The good workload: every pull request submitted at once, then counted as the realistic one. */
async function runGood(gh: FakeGitHub, api: Api, numbers: number[]): Promise<BudgetOutcome> {
  const mark = gh.requests.mark();
  const started = Date.now();
  for (const number of numbers) {
    await api.call("submitPullRequest", { ...QUEUE, pr: { number } });
  }
  let states: { number: number; state: string }[] = [];
  while (Date.now() - started < SCENARIO_TIMEOUT_MS) {
    const answer = await api.call<{
      pullRequests: { prNumber: number; state: string }[];
    }>("getSubmittedPullRequests", { ...QUEUE, prs: numbers.map((number) => ({ number })) });
    states = answer.pullRequests.map((p) => ({ number: p.prNumber, state: p.state }));
    if (states.every((s) => ["merged", "failed", "cancelled"].includes(s.state))) break;
    await delay(250);
  }
  const wallMs = Date.now() - started;
  // Each concluded pull request's check run is made when it concludes: the last of them may
  // wait for GitHub's budget of writes a minute.
  const counted = await countRequests(
    gh,
    mark,
    () => gh.requests.count({ operationId: "checks/create", since: mark }) >= states.length,
  );
  const merged = states.filter((s) => s.state === "merged").length;
  return {
    merged,
    failed: states.length - merged,
    states: states.map((s) => ({ ...s, kind: "good" })),
    ...counted,
    perMergedPr: merged > 0 ? Math.round((counted.requests / merged) * 10) / 10 : null,
    submissions: numbers.length,
    startedAt: started,
    wallMs,
  };
}

const SERIAL = { mode: "single", concurrency: 1, batch: false };
const BATCHING = {
  mode: "single",
  concurrency: 1,
  batch: true,
  batchingMinSize: BATCH,
  batchingMaxWaitTimeMinutes: 1,
};
const specs: Scenario[] = [
  { name: "realistic, serial", workload: "realistic", settings: SERIAL },
  { name: `realistic, batches of ${String(BATCH)}`, workload: "realistic", settings: BATCHING },
  ...(GOOD
    ? [
        { name: `${String(PRS)} good, serial`, workload: "good" as const, settings: SERIAL },
        {
          name: `${String(PRS)} good, batches of ${String(BATCH)}`,
          workload: "good" as const,
          settings: BATCHING,
        },
      ]
    : []),
];

const loadAverage = os.loadavg()[0] ?? 0;
const results: ScenarioResult[] = [];
for (const spec of specs) {
  process.stdout.write(`${spec.name}…\n`);
  results.push(await scenario(spec));
}
process.stdout.write(
  `${formatTable(
    ["scenario", "merged", "failed", "requests", "per merged PR", "304s", "wall s"],
    results.map((r) => [
      r.name,
      String(r.merged),
      String(r.failed),
      String(r.requests),
      r.perMergedPr === null ? "-" : String(r.perMergedPr),
      String(r.notModified),
      (r.wallMs / 1000).toFixed(1),
    ]),
    [0],
  )}\n`,
);
for (const r of results) {
  const ops = Object.entries(r.byOperation).sort((a, b) => b[1] - a[1]);
  process.stdout.write(`${r.name}: ${ops.map(([op, n]) => `${op} ${String(n)}`).join(", ")}\n`);
  if (r.notMerged.length > 0) process.stdout.write(`  not merged: ${r.notMerged.join(", ")}\n`);
}
const pass = results.every((r) => r.perMergedPr !== null && r.perMergedPr <= TARGET_PER_MERGED_PR);
process.stdout.write(
  `comments and status checks on: at most ${String(TARGET_PER_MERGED_PR)} requests per merged PR in every scenario: ${pass ? "yes" : "no"}\n`,
);
await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
await writeFile(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      prs: { realistic: REALISTIC_PRS.length, good: PRS },
      loadAverageBefore: Math.round(loadAverage * 10) / 10,
      targetPerMergedPr: TARGET_PER_MERGED_PR,
      pass,
      results,
    },
    null,
    2,
  )}\n`,
);
