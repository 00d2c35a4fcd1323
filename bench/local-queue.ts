/**
 * Local merge-queue benchmark (issue: local merge queue): the real service (`mainline serve`, its
 * defaults) with its local git host and built-in CI runner, on a repository of 10,000 files and
 * 5,000 commits whose only check is `true`. Target: the queue's overhead per merged PR (everything
 * but the checks' own run time) under 1 s.
 *
 * For each database and each queue setting (concurrency 1 and 4, no batching): a fresh data
 * directory, the generated repository pushed to a new local repository, N pull requests (each
 * changing a different file) opened through the API and submitted one after another. Measured:
 * wall time from the first submit to the last merge (the `merged` transitions' times), the checks'
 * own durations (from the CI run records), and per run where the time between `testing` and
 * `merged` goes (test branch, checkout, check, reporting and merging).
 *
 * Then a micro-section times the git operations of one run directly on the generated repository.
 *
 * Usage: npm run bench:local-queue
 *   BENCH_PRS (30)            pull requests per scenario (at most 100)
 *   BENCH_FILES (10000)       files in the repository
 *   BENCH_COMMITS (5000)      commits on main
 *   BENCH_CONCURRENCY (1,4)   queue concurrencies to measure
 *   BENCH_DB (both)           sqlite or postgres only
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { git as runGit } from "../src/providers/local/git/git.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { FastImportStream } from "./support/fast-import.js";
import { machineInfo } from "./support/machine.js";
import {
  ROOT,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
  type RunningServer,
} from "./support/server.js";
import { formatTable } from "./support/table.js";
import { Api } from "./support/api.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "local-queue.json");
const PRS = integerFromEnv("BENCH_PRS", 30, 1, 100);
const FILES = integerFromEnv("BENCH_FILES", 10_000, 100, 1_000_000);
const COMMITS = integerFromEnv("BENCH_COMMITS", 5000, 1, 1_000_000);
const CONCURRENCIES = listFromEnv("BENCH_CONCURRENCY", "1,4").map((item) => {
  const n = Number(item);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    throw new Error(`BENCH_CONCURRENCY takes whole numbers from 1 to 100 (got "${item}").`);
  }
  return n;
});
const TARGET_OVERHEAD_MS = 1000;
/** A scenario that has not finished by then is reported as such. */
const SCENARIO_TIMEOUT_MS = 240_000;

const REPO = { host: "local", owner: "bench", name: "big" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CHECK_CONFIG = ["ci:", "  checks:", "    - name: check", '      run: "true"', ""].join("\n");

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const round = (value: number, digits = 0): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
const mean = (values: readonly number[]): number =>
  values.length === 0 ? 0 : sum(values) / values.length;
const ms = (iso: string | null | undefined): number | null =>
  iso === null || iso === undefined ? null : Date.parse(iso);

// ---------------------------------------------------------------------------------------------
// git

interface Run {
  stdout: string;
  ms: number;
}

/** Runs git as the service does (no user or system configuration), timed; throws on failure. */
async function git(args: string[], options: { cwd?: string; input?: string } = {}): Promise<Run> {
  const started = performance.now();
  const { stdout } = await runGit(args, options);
  return { stdout: stdout.trim(), ms: performance.now() - started };
}

/** The path of generated file `i`: 100 top directories, 10 below each, files spread over them. */
function filePath(i: number): string {
  return `src/d${String(i % 100)}/s${String(Math.floor(i / 100) % 10)}/f${String(i)}.txt`;
}

/** The file pull request `k` changes: a different one for every k ≤ 100. */
const prFile = (k: number): number => (k * 97) % FILES;

/**
 * A `git fast-import` stream: one commit adding every file and `.mainline.yml`, then commits
 * changing one to three files each, then a branch `pr-k` off main's tip for each pull request.
 */
function fastImportStream(): string {
  const stream = new FastImportStream(60);
  const commit = stream.commit.bind(stream);
  const modify = stream.modify.bind(stream);
  commit("refs/heads/main", 1, null, "Start the project");
  modify(".mainline.yml", CHECK_CONFIG);
  for (let i = 0; i < FILES; i++) modify(filePath(i), `file ${String(i)}\nversion 0\n`);
  for (let c = 2; c <= COMMITS; c++) {
    commit("refs/heads/main", c, c - 1, `Change ${String(c)}`);
    for (let j = 0; j < 1 + (c % 3); j++) {
      const i = (c * 7919 + j * 104_729) % FILES;
      modify(filePath(i), `file ${String(i)}\nversion ${String(c)}\n`);
    }
  }
  for (let k = 1; k <= PRS; k++) {
    commit(`refs/heads/pr-${String(k)}`, COMMITS + k, COMMITS, `Change by PR ${String(k)}`);
    const i = prFile(k);
    modify(filePath(i), `file ${String(i)}\nchanged by pull request ${String(k)}\n`);
  }
  return stream.text();
}

async function generateRepository(dir: string): Promise<{ ms: number }> {
  const started = performance.now();
  await git(["init", "--quiet", "--bare", "--initial-branch=main", dir]);
  await git(["fast-import", "--quiet", "--done"], { cwd: dir, input: fastImportStream() });
  await git(["gc", "--quiet"], { cwd: dir });
  return { ms: performance.now() - started };
}

// ---------------------------------------------------------------------------------------------
// the API

interface TimelineItem {
  at: string;
  toState: string;
  testRunId: string | null;
}

interface SubmittedPr {
  prNumber: number;
  state: string;
  timeline?: TimelineItem[];
}

interface CiRun {
  runId: string;
  status: string;
  prNumbers: number[];
  checks: { name: string; status: string; startedAt: string | null; finishedAt: string | null }[];
  createdAt: string;
  finishedAt: string | null;
}

// ---------------------------------------------------------------------------------------------
// one scenario

interface Breakdown {
  /** `testing` transition → CI run recorded: the test branch (merge-tree, commit, ref). */
  testBranchMs: number;
  /** CI run recorded → check started: the run's records, `.mainline.yml`, the checkout. */
  checkoutMs: number;
  /** The check itself. */
  checkMs: number;
  /** Check finished → `merged`: removing the checkout, the result, the driver's step, the merge. */
  reportAndMergeMs: number;
}

interface ScenarioResult {
  database: string;
  concurrency: number;
  prs: number;
  merged: number;
  failed: number;
  ciRuns: number;
  pushMs: number;
  submitMs: number;
  wallMs: number;
  checkMs: number;
  overheadPerMergedMs: number | null;
  wallPerMergedMs: number | null;
  /** Means over the runs that merged their PR. */
  breakdown: Breakdown | null;
  /** Wall time outside every PR's `testing` → `merged` (concurrency 1: the gaps between runs). */
  outsideRunsMs: number | null;
  finished: boolean;
}

async function scenario(
  database: string,
  databaseUrl: string | undefined,
  template: string,
  concurrency: number,
): Promise<ScenarioResult> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-local-"));
  const token = randomBytes(24).toString("hex");
  let server: RunningServer | undefined;
  try {
    server = await startServer({ token, dataDir, databaseUrl });
    const api = new Api(server.baseUrl, token);
    const { remoteUrl } = await api.call<{ remoteUrl: string }>("local/createRepository", {
      repo: REPO,
    });
    const push = await git(["push", "--quiet", remoteUrl, "refs/heads/*:refs/heads/*"], {
      cwd: template,
    });
    await api.call("createQueue", QUEUE);
    await api.call("updateQueue", {
      ...QUEUE,
      concurrency,
      batch: false,
      testingTimeoutMinutes: 0,
    });
    const numbers: number[] = [];
    for (let k = 1; k <= PRS; k++) {
      const { number } = await api.call<{ number: number }>("local/openPullRequest", {
        repo: REPO,
        head: `pr-${String(k)}`,
        base: "main",
        title: `Change ${String(k)}`,
        author: "bench",
      });
      numbers.push(number);
    }

    const firstSubmit = Date.now();
    for (const number of numbers) {
      await api.call("submitPullRequest", { ...QUEUE, pr: { number } });
    }
    const submitMs = Date.now() - firstSubmit;
    const prs = numbers.map((number) => ({ number }));
    const read = () =>
      api.call<{ pullRequests: SubmittedPr[] }>("getSubmittedPullRequests", {
        ...QUEUE,
        prs,
        includeTimeline: true,
      });
    let states = await read();
    let finished = false;
    while (Date.now() - firstSubmit < SCENARIO_TIMEOUT_MS) {
      states = await read();
      if (states.pullRequests.every((pr) => ["merged", "failed", "cancelled"].includes(pr.state))) {
        finished = true;
        break;
      }
      await delay(500);
    }
    const { runs } = await api.call<{ runs: CiRun[] }>("local/listCiRuns", { ...QUEUE, take: 100 });
    showServerOutput(`(${database}, concurrency ${String(concurrency)})`, server.takeOutput());
    return analyse({
      database,
      concurrency,
      pushMs: push.ms,
      submitMs,
      firstSubmit,
      prs: states.pullRequests,
      runs,
      finished,
    });
  } finally {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function analyse(input: {
  database: string;
  concurrency: number;
  pushMs: number;
  submitMs: number;
  firstSubmit: number;
  prs: SubmittedPr[];
  runs: CiRun[];
  finished: boolean;
}): ScenarioResult {
  const { prs, runs, firstSubmit } = input;
  const merged = prs.filter((pr) => pr.state === "merged");
  const mergedAt = (pr: SubmittedPr) =>
    ms(pr.timeline?.findLast((t) => t.toState === "merged")?.at) ?? firstSubmit;
  const lastMerge = Math.max(firstSubmit, ...merged.map(mergedAt));
  const wallMs = lastMerge - firstSubmit;
  const checkMs = sum(
    runs.flatMap((run) =>
      run.checks.map((c) => (ms(c.finishedAt) ?? 0) - (ms(c.startedAt) ?? ms(c.finishedAt) ?? 0)),
    ),
  );
  const runsById = new Map(runs.map((run) => [run.runId, run]));
  const parts: Breakdown[] = [];
  const intervals: [number, number][] = [];
  for (const pr of merged) {
    const testing = pr.timeline?.findLast((t) => t.toState === "testing");
    const run = testing?.testRunId == null ? undefined : runsById.get(testing.testRunId);
    const check = run?.checks[0];
    const testingAt = ms(testing?.at);
    const createdAt = ms(run?.createdAt);
    const startedAt = ms(check?.startedAt);
    const finishedAt = ms(check?.finishedAt);
    if (testingAt === null || createdAt === null || startedAt === null || finishedAt === null) {
      continue;
    }
    intervals.push([testingAt, mergedAt(pr)]);
    parts.push({
      testBranchMs: createdAt - testingAt,
      checkoutMs: startedAt - createdAt,
      checkMs: finishedAt - startedAt,
      reportAndMergeMs: mergedAt(pr) - finishedAt,
    });
  }
  // The wall time covered by no PR's testing → merged interval.
  intervals.sort((a, b) => a[0] - b[0]);
  let covered = 0;
  let reach = firstSubmit;
  for (const [start, end] of intervals) {
    const from = Math.max(start, reach);
    if (end > from) covered += end - from;
    reach = Math.max(reach, end);
  }
  const breakdown: Breakdown | null =
    parts.length === 0
      ? null
      : {
          testBranchMs: round(mean(parts.map((p) => p.testBranchMs))),
          checkoutMs: round(mean(parts.map((p) => p.checkoutMs))),
          checkMs: round(mean(parts.map((p) => p.checkMs))),
          reportAndMergeMs: round(mean(parts.map((p) => p.reportAndMergeMs))),
        };
  return {
    database: input.database,
    concurrency: input.concurrency,
    prs: prs.length,
    merged: merged.length,
    failed: prs.filter((pr) => pr.state !== "merged").length,
    ciRuns: runs.length,
    pushMs: round(input.pushMs),
    submitMs: input.submitMs,
    wallMs,
    checkMs,
    overheadPerMergedMs: merged.length === 0 ? null : round((wallMs - checkMs) / merged.length),
    wallPerMergedMs: merged.length === 0 ? null : round(wallMs / merged.length),
    breakdown,
    outsideRunsMs: intervals.length === 0 ? null : wallMs - covered,
    finished: input.finished,
  };
}

// ---------------------------------------------------------------------------------------------
// the git operations of one run, timed directly

interface MicroResult {
  operation: string;
  medianMs: number;
}

async function micro(template: string): Promise<MicroResult[]> {
  const work = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-git-"));
  const times = new Map<string, number[]>();
  const time = async (operation: string, action: () => Promise<unknown>) => {
    const started = performance.now();
    await action();
    const list = times.get(operation) ?? [];
    list.push(performance.now() - started);
    times.set(operation, list);
  };
  try {
    const main = (await git(["rev-parse", "main"], { cwd: template })).stdout;
    for (let k = 1; k < Math.min(PRS, 6); k++) {
      const head = (await git(["rev-parse", `pr-${String(k)}`], { cwd: template })).stdout;
      const dir = path.join(work, `run-${String(k)}`);
      let tree = "";
      await time("merge-tree (test branch)", async () => {
        tree = (await git(["merge-tree", "--write-tree", main, head], { cwd: template })).stdout;
      });
      await time("commit-tree (test branch)", () =>
        git(["commit-tree", tree, "-p", main, "-p", head, "-m", "bench"], { cwd: template }),
      );
      await time("cat-file .mainline.yml", () =>
        git(["cat-file", "blob", `${head}:.mainline.yml`], { cwd: template }),
      );
      await time("clone --shared --no-checkout", () =>
        git(["clone", "--quiet", "--shared", "--no-checkout", template, dir]),
      );
      await time("checkout (10,000 files)", () =>
        git(["checkout", "--quiet", "--detach", head], { cwd: dir }),
      );
      // What the service does instead (src/providers/local/ci/checkouts.ts): reuse the checkout of the run
      // before, brought to the next commit.
      const next = (await git(["rev-parse", `pr-${String(k + 1)}`], { cwd: template })).stdout;
      await time("reused checkout: checkout --force + clean", async () => {
        await git(["checkout", "--quiet", "--force", "--detach", next], { cwd: dir });
        await git(["clean", "-ffdxq"], { cwd: dir });
      });
      await time("rm -r checkout", () => rm(dir, { recursive: true, force: true }));
      await git(["clone", "--quiet", "--shared", "--no-checkout", template, dir]);
      await time("checkout, checkout.workers=0 (service)", () =>
        git(["-c", "checkout.workers=0", "checkout", "--quiet", "--detach", head], { cwd: dir }),
      );
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return [...times.entries()].map(([operation, list]) => {
    const sorted = [...list].sort((a, b) => a - b);
    return { operation, medianMs: round(sorted[Math.floor(sorted.length / 2)] ?? 0, 1) };
  });
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const loadAverageBefore = os.loadavg()[0] ?? 0;
  say(
    `local-queue benchmark: ${String(FILES)} files, ${String(COMMITS)} commits, ${String(PRS)} PRs, ` +
      `concurrency ${CONCURRENCIES.join(" and ")}, no batching`,
  );
  const work = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-repo-"));
  const template = path.join(work, "template.git");
  try {
    await mkdir(work, { recursive: true });
    const generated = await generateRepository(template);
    const packSize = (await git(["count-objects", "-vH"], { cwd: template })).stdout
      .split("\n")
      .find((line) => line.startsWith("size-pack"));
    say(`  repository generated in ${String(round(generated.ms))} ms (${packSize ?? "?"})`);

    const results: ScenarioResult[] = [];
    const only = process.env.BENCH_DB;
    const databases = ["sqlite", "postgresql"].filter(
      (d) => only === undefined || d.startsWith(only),
    );
    for (const database of databases) {
      for (const concurrency of CONCURRENCIES) {
        // A database of its own for every scenario: a fresh queue, repository and history.
        const result =
          database === "sqlite"
            ? await scenario(database, undefined, template, concurrency)
            : await withThrowawayPostgres((url) => scenario(database, url, template, concurrency));
        say(
          `  ${database} concurrency ${String(concurrency)}: ${String(result.merged)}/${String(result.prs)} merged in ` +
            `${String(result.wallMs)} ms, checks ${String(result.checkMs)} ms, overhead ` +
            `${String(result.overheadPerMergedMs ?? "-")} ms/PR${result.finished ? "" : " (timed out)"}`,
        );
        results.push(result);
      }
    }
    const micros = await micro(template);

    const table = formatTable(
      [
        "database",
        "C",
        "merged",
        "wall s",
        "Σ checks ms",
        "overhead ms/PR",
        "wall ms/PR",
        "branch",
        "checkout",
        "check",
        "report+merge",
        "between runs ms",
        "result",
      ],
      results.map((r) => [
        r.database,
        String(r.concurrency),
        `${String(r.merged)}/${String(r.prs)}`,
        String(round(r.wallMs / 1000, 1)),
        String(r.checkMs),
        String(r.overheadPerMergedMs ?? "-"),
        String(r.wallPerMergedMs ?? "-"),
        String(r.breakdown?.testBranchMs ?? "-"),
        String(r.breakdown?.checkoutMs ?? "-"),
        String(r.breakdown?.checkMs ?? "-"),
        String(r.breakdown?.reportAndMergeMs ?? "-"),
        String(r.outsideRunsMs ?? "-"),
        r.finished && r.failed === 0 && (r.overheadPerMergedMs ?? Infinity) < TARGET_OVERHEAD_MS
          ? "PASS"
          : "FAIL",
      ]),
      [0, 12],
    );
    const microTable = formatTable(
      ["git operation (one run, direct)", "median ms"],
      micros.map((m) => [m.operation, String(m.medianMs)]),
      [0],
    );
    say(`\n${table}\n\n${microTable}`);
    const json = {
      measuredAt: new Date().toISOString(),
      machine: machineInfo(loadAverageBefore),
      node: process.version,
      git: (await git(["--version"])).stdout,
      settings: { files: FILES, commits: COMMITS, prs: PRS, concurrencies: CONCURRENCIES },
      targetOverheadMs: TARGET_OVERHEAD_MS,
      repositoryGeneratedMs: round(generated.ms),
      results,
      gitOperations: micros,
    };
    await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
    await writeFile(RESULTS_FILE, `${JSON.stringify(json, null, 2)}\n`);
    say(`\nWrote ${path.relative(ROOT, RESULTS_FILE)}`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `bench:local-queue failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
