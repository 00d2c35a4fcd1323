import { access, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { FreshCheckouts, type CheckoutFunction } from "../../src/providers/local/ci/checkouts.js";
import type { CiRunRecord } from "../../src/mergequeue/ci-run-records.js";
import {
  LocalCiRunner,
  type LocalCiRunnerOptions,
  type TestResultsInput,
} from "../../src/providers/local/ci/runner.js";
import {
  judgeChecks,
  type CiRunRequest,
  type CiRunResult,
} from "../../src/mergequeue/providers.js";
import type { FailedTestCase } from "../../src/testhealth/records.js";
import { createRepository, expectGone, type TestRepository } from "../helpers/ci-git.js";
import { InMemoryCiRunRecords } from "../helpers/ci-run-records.js";

let root: string;
let dataDir: string;
/** Outside the checkout (which is removed): where checks leave traces for the test to read. */
let traces: string;
let repo: TestRepository;
let records: InMemoryCiRunRecords;
const runners: LocalCiRunner[] = [];
const REPO = { organizationId: "org-1", host: "local", owner: "acme", name: "app" };

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "mainline-ci-"));
  dataDir = path.join(root, "data");
  traces = path.join(root, "traces");
  await mkdir(traces);
  repo = await createRepository(dataDir);
  records = new InMemoryCiRunRecords();
});

afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
  await rm(root, { recursive: true, force: true });
});

function createRunner(
  options: Partial<LocalCiRunnerOptions> & { checkout?: CheckoutFunction } = {},
): LocalCiRunner {
  const defaultCheckout: CheckoutFunction = (_repo, sha, dir) => repo.checkout(sha, dir);
  const { checkout = defaultCheckout, ...rest } = options;
  const runner = new LocalCiRunner({
    dataDir,
    records,
    readFile: (_repo, sha, file) => repo.readFile(sha, file),
    workspaces: new FreshCheckouts(path.join(dataDir, "ci", "work"), checkout),
    ...rest,
  });
  runners.push(runner);
  return runner;
}

type Check = { name: string; run: string; timeout_minutes?: number; junit_paths?: string[] };

/** Commits a `.mainline.yml` with these checks (and other files); answers the commit. */
function commitChecks(
  checks: Check[],
  extra: { requiredStatuses?: string[]; files?: Record<string, string> } = {},
): Promise<string> {
  const config = {
    ...(extra.requiredStatuses ? { merge: { required_statuses: extra.requiredStatuses } } : {}),
    ci: { checks },
  };
  return repo.commit({ ".mainline.yml": stringify(config), ...extra.files });
}

function request(sha: string, overrides: Partial<CiRunRequest> = {}): CiRunRequest {
  return {
    repo: REPO,
    queueId: "q1",
    runId: "r1",
    targetBranch: "main",
    testBranch: "mainline-merge/main/r1",
    sha,
    prNumbers: [3, 5],
    requiredStatuses: null,
    ...overrides,
  };
}

function nextResult(runner: LocalCiRunner, runId = "r1"): Promise<CiRunResult> {
  return new Promise((resolve) => {
    const off = runner.onResult((result) => {
      if (result.runId !== runId) return;
      off();
      resolve(result);
    });
  });
}

/** Starts a run and waits for its result, and for the run to be recorded as finished. */
async function runToEnd(runner: LocalCiRunner, req: CiRunRequest): Promise<CiRunResult> {
  const result = nextResult(runner, req.runId);
  await runner.start(req);
  const answered = await result;
  await waitFor(async () => (await records.get(req.queueId, req.runId))?.finishedAt != null);
  return answered;
}

async function stored(runId = "r1"): Promise<CiRunRecord> {
  const record = await records.get("q1", runId);
  if (record === undefined) throw new Error(`run ${runId} was not recorded`);
  return record;
}

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

async function logOf(runner: LocalCiRunner, check: string, runId = "r1"): Promise<string> {
  return (await runner.readLog("q1", runId, check)) ?? "";
}

describe("LocalCiRunner", () => {
  it("runs every check, reports their conclusions and keeps their logs", async () => {
    const sha = await commitChecks(
      [
        { name: "unit", run: "echo unit-passed" },
        { name: "lint/style", run: "echo lint-broke >&2; exit 3" },
      ],
      { requiredStatuses: ["unit"] },
    );
    const runner = createRunner();
    const result = await runToEnd(runner, request(sha));
    expect(result).toEqual({
      queueId: "q1",
      runId: "r1",
      checks: [
        { name: "unit", conclusion: "success" },
        { name: "lint/style", conclusion: "failure" },
      ],
      requiredStatuses: { statuses: ["unit"], source: "mainline_config" },
    });
    const record = await stored();
    // `lint/style` is not required: the run passes.
    expect(record).toMatchObject({ status: "passed", error: null, flakyOnly: false });
    expect(record.checks.map((c) => [c.name, c.status, c.exitCode, c.logPath])).toEqual([
      ["unit", "success", 0, "ci/logs/q1/r1/1-unit.log"],
      ["lint/style", "failure", 3, "ci/logs/q1/r1/2-lint_style.log"],
    ]);
    expect(record.finishedAt).not.toBeNull();
    expect(await logOf(runner, "unit")).toMatch(/^unit-passed\n\n\[mainline\] exited with code 0/);
    expect(await logOf(runner, "lint/style")).toContain("lint-broke\n");
    expect(await runner.logPath("q1", "r1", "unit")).toBe(
      path.join(dataDir, "ci/logs/q1/r1/1-unit.log"),
    );
    expect(await readdir(path.join(dataDir, "ci", "work"))).toEqual([]);
  });

  it("gives a check its environment in a checkout of the tested commit", async () => {
    const sha = await commitChecks([
      {
        name: "env",
        run: "env | grep -E '^(CI|MAINLINE[A-Z_]*)=' | LC_ALL=C sort; git rev-parse HEAD",
      },
    ]);
    process.env.MAINLINE_BOOTSTRAP_TOKEN = "server-secret";
    try {
      const runner = createRunner();
      await runToEnd(runner, request(sha));
      const lines = (await logOf(runner, "env")).split("\n");
      expect(lines.slice(0, 11)).toEqual([
        "CI=true",
        "MAINLINE=true",
        "MAINLINE_CHECK=env",
        `MAINLINE_COMMIT=${sha}`,
        "MAINLINE_PR_NUMBERS=3,5",
        "MAINLINE_QUEUE_ID=q1",
        "MAINLINE_RUN_ID=r1",
        "MAINLINE_TARGET_BRANCH=main",
        "MAINLINE_TEST_BRANCH=mainline-merge/main/r1",
        sha,
        "",
      ]);
    } finally {
      Reflect.deleteProperty(process.env, "MAINLINE_BOOTSTRAP_TOKEN");
    }
  });

  it("times a hanging check out and kills everything it started", async () => {
    const sha = await commitChecks([
      { name: "hang", run: 'sleep 1000 & echo "bg=$!"; sleep 1000', timeout_minutes: 0.02 },
    ]);
    const runner = createRunner();
    const result = await runToEnd(runner, request(sha));
    expect(result.checks).toEqual([{ name: "hang", conclusion: "timed_out" }]);
    const log = await logOf(runner, "hang");
    expect(log).toMatch(/\[mainline\] timed out after .* \(limit 1\.2 s\)/);
    const pid = Number(/bg=(\d+)/.exec(log)?.[1]);
    expect(pid).toBeGreaterThan(0);
    await expectGone(pid);
    expect((await stored()).status).toBe("failed");
  });

  it("cancels a run: its checks are killed, it is recorded cancelled and reports nothing", async () => {
    const sha = await commitChecks([
      { name: "slow", run: 'sleep 1000 & echo "bg=$!"; wait' },
      { name: "quick", run: "true" },
    ]);
    const runner = createRunner({ parallelism: 1 });
    const results: CiRunResult[] = [];
    runner.onResult((result) => {
      results.push(result);
    });
    await runner.start(request(sha));
    await waitFor(async () => (await logOf(runner, "slow")).includes("bg="));
    await runner.cancel("q1", "r1");
    const record = await stored();
    expect(record.status).toBe("cancelled");
    // `quick` was waiting for the only slot and never started.
    expect(record.checks.map((c) => [c.name, c.status, c.startedAt === null])).toEqual([
      ["slow", "cancelled", false],
      ["quick", "cancelled", true],
    ]);
    const pid = Number(/bg=(\d+)/.exec(await logOf(runner, "slow"))?.[1]);
    await expectGone(pid);
    expect(results).toEqual([]);
    await runner.cancel("q1", "r1");
    await runner.cancel("q1", "unknown");
    expect((await stored()).status).toBe("cancelled");
  });

  it("never runs more checks at once than its parallelism", async () => {
    const names = ["a", "b", "c", "d"];
    const sha = await commitChecks(
      names.map((name) => ({
        name,
        run: `s=$(date +%s%N); sleep 0.2; echo "$s $(date +%s%N)" > ${traces}/${name}`,
      })),
    );
    const runner = createRunner({ parallelism: 2 });
    const result = await runToEnd(runner, request(sha));
    expect(result.checks.every((c) => c.conclusion === "success")).toBe(true);
    const intervals = await Promise.all(
      names.map(async (name) =>
        (await readFile(path.join(traces, name), "utf8")).trim().split(" ").map(BigInt),
      ),
    );
    const overlapping = (at: bigint): number =>
      intervals.filter(([start = 0n, end = 0n]) => start <= at && at < end).length;
    const mostAtOnce = Math.max(...intervals.map(([start = 0n]) => overlapping(start)));
    expect(mostAtOnce).toBe(2);
  });

  it("starts a run once, however often it is asked", async () => {
    const sha = await commitChecks([
      { name: "count", run: `echo "$MAINLINE_RUN_ID" >> ${traces}/runs` },
    ]);
    const runner = createRunner();
    const results: CiRunResult[] = [];
    runner.onResult((result) => {
      results.push(result);
    });
    const first = nextResult(runner);
    await Promise.all([runner.start(request(sha)), runner.start(request(sha))]);
    await first;
    await runner.start(request(sha));
    // A later run that finishes shows that nothing more came of the repeated starts.
    await runToEnd(runner, request(sha, { runId: "r2" }));
    expect(await readFile(path.join(traces, "runs"), "utf8")).toBe("r1\nr2\n");
    expect(results.map((r) => r.runId)).toEqual(["r1", "r2"]);
  });

  it("fails every check when the checkout cannot be made, so that nothing passes untested", async () => {
    const sha = await commitChecks([
      { name: "a", run: "true" },
      { name: "b", run: "true" },
    ]);
    const runner = createRunner({ checkout: () => Promise.reject(new Error("disk full")) });
    const result = await runToEnd(runner, request(sha));
    expect(result.checks).toEqual([
      { name: "a", conclusion: "failure" },
      { name: "b", conclusion: "failure" },
    ]);
    expect(await stored()).toMatchObject({
      status: "error",
      error: { reason: "runner_failure", message: "disk full" },
    });
  });

  it("fails a run whose .mainline.yml is missing or invalid, with the reason", async () => {
    const empty = await repo.commit({ "README.md": "no config\n" });
    const runner = createRunner();
    let result = await runToEnd(runner, request(empty));
    expect(result).toEqual({
      queueId: "q1",
      runId: "r1",
      checks: [],
      error: { reason: "config_parsing_failure", message: `no .mainline.yml at ${empty}` },
    });
    expect(await stored()).toMatchObject({ status: "error", checks: [] });

    const invalid = await repo.commit({
      ".mainline.yml": "ci:\n  checks:\n    - {name: t, run: x, timout: 3}\n",
    });
    result = await runToEnd(runner, request(invalid, { runId: "r2" }));
    expect(result.error).toEqual({
      reason: "config_parsing_failure",
      message: "ci.checks[0].timout: unknown key",
    });
  });

  it("takes the required statuses from the request, .mainline.yml or .trunk/trunk.yaml", async () => {
    const checks = [
      { name: "ok", run: "true" },
      { name: "bad", run: "false" },
    ];
    const runner = createRunner();
    const statusOf = async (runId: string, sha: string, required: string[] | null = null) => {
      const result = await runToEnd(runner, request(sha, { runId, requiredStatuses: required }));
      return { result, status: (await stored(runId)).status };
    };
    const plain = await commitChecks(checks);
    expect((await statusOf("every-check", plain)).status).toBe("failed");
    expect((await statusOf("override", plain, ["ok"])).status).toBe("passed");
    const trunk = await commitChecks(checks, {
      files: { ".trunk/trunk.yaml": "version: 0.1\nmerge:\n  required_statuses: [ok]\n" },
    });
    const fromTrunk = await statusOf("trunk", trunk);
    expect(fromTrunk.status).toBe("passed");
    expect(fromTrunk.result.requiredStatuses).toEqual({
      statuses: ["ok"],
      source: "trunk_config",
    });
    expect((await statusOf("empty-override", plain, [])).result.error).toMatchObject({
      reason: "no_required_statuses",
    });
    const none = await commitChecks(checks, { requiredStatuses: [] });
    expect((await statusOf("none", none)).result.error).toEqual({
      reason: "no_required_statuses",
      message: "merge.required_statuses in .mainline.yml is an empty list",
    });
  });

  it("hands JUnit reports to test health and follows its flaky verdict", async () => {
    const report = "mkdir -p out/unit && echo '<testsuite/>' > out/unit/report.xml";
    const sha = await commitChecks([
      { name: "unit", run: `${report}; exit 1`, junit_paths: ["out/**/*.xml", "missing/*.xml"] },
      { name: "plain", run: "echo '<x/>' > report.xml", junit_paths: ["*.json"] },
    ]);
    const seen: { check: string; runId: string; files: string[]; contents: string[] }[] = [];
    let verdict = true;
    const runner = createRunner({
      testResults: async ({ check, request: req, files }: TestResultsInput) => {
        const contents = await Promise.all(files.map((file) => readFile(file, "utf8")));
        seen.push({ check, runId: req.runId, files, contents });
        return { flakyOnly: verdict };
      },
    });
    let result = await runToEnd(runner, request(sha));
    expect(result.flakyOnly).toBe(true);
    expect((await stored()).flakyOnly).toBe(true);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.check).toBe("unit");
    expect(seen[0]?.files.map((file) => path.isAbsolute(file))).toEqual([true]);
    expect(seen[0]?.files[0]?.endsWith("/out/unit/report.xml")).toBe(true);
    expect(seen[0]?.contents).toEqual(["<testsuite/>\n"]);

    verdict = false;
    result = await runToEnd(runner, request(sha, { runId: "r2" }));
    expect(result.flakyOnly).toBeUndefined();
  });

  it("is not flaky-only when a failing required check has no JUnit reports", async () => {
    // `build` fails first and decides the run; `unit`, flaky-only but later, is stopped.
    const sha = await commitChecks([
      { name: "unit", run: "echo '<testsuite/>' > r.xml; sleep 5; exit 1", junit_paths: ["r.xml"] },
      { name: "build", run: "exit 1" },
    ]);
    const runner = createRunner({ testResults: () => Promise.resolve({ flakyOnly: true }) });
    const result = await runToEnd(runner, request(sha));
    expect(result.checks.map((c) => c.conclusion)).toEqual(["cancelled", "failure"]);
    expect(result.flakyOnly).toBeUndefined();
    expect((await stored()).flakyOnly).toBe(false);
  });

  it("decides a run as soon as a required check fails: the other checks stop, unstarted ones never start", async () => {
    const e2e = path.join(traces, "e2e");
    const sha = await commitChecks(
      [
        // Not required: its failure decides nothing.
        { name: "style", run: "exit 1" },
        { name: "unit", run: "sleep 0.5; exit 2" },
        { name: "e2e", run: `echo started > ${e2e}; sleep 30; echo finished >> ${e2e}` },
        { name: "docs", run: `echo ran > ${path.join(traces, "docs")}` },
      ],
      { requiredStatuses: ["unit", "e2e", "docs"] },
    );
    // Two slots: `docs` waits for one while `unit` and `e2e` run.
    const runner = createRunner({ parallelism: 2 });
    const started = Date.now();
    const result = await runToEnd(runner, request(sha));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.checks).toEqual([
      { name: "style", conclusion: "failure" },
      { name: "unit", conclusion: "failure" },
      { name: "e2e", conclusion: "cancelled" },
      { name: "docs", conclusion: "cancelled" },
    ]);
    // The queue's verdict names the check that failed, not those it stopped.
    expect(judgeChecks(["unit", "e2e", "docs"], result.checks)).toEqual({
      passed: false,
      failing: ["unit"],
    });
    // Nothing failed: a required check stopped or never reported is what fails the run.
    expect(
      judgeChecks(
        ["unit", "e2e", "docs"],
        [
          { name: "unit", conclusion: "success" },
          { name: "e2e", conclusion: "cancelled" },
        ],
      ),
    ).toEqual({ passed: false, failing: ["e2e", "docs"] });
    const record = await stored();
    expect(record.status).toBe("failed");
    expect(record.checks.map((c) => [c.name, c.exitCode, c.startedAt === null])).toEqual([
      ["style", 1, false],
      ["unit", 2, false],
      ["e2e", null, false],
      ["docs", null, true],
    ]);
    expect(await logOf(runner, "e2e")).toContain(
      '[mainline] stopped: the required check "unit" failed, which decided the run',
    );
    expect(await readFile(e2e, "utf8")).toBe("started\n");
    await expect(access(path.join(traces, "docs"))).rejects.toThrow();
  });

  it("runs a localization run's failing checks first, with the batch run's failed tests in a file", async () => {
    const order = path.join(traces, "order");
    const record = (name: string) =>
      `echo ${name} >> ${order}; env | grep '^MAINLINE_FAIL' | LC_ALL=C sort > ${path.join(traces, `${name}.env`)}; cp "$MAINLINE_FAILED_TESTS_FILE" ${path.join(traces, `${name}.tsv`)}`;
    const sha = await commitChecks([
      { name: "lint", run: record("lint") },
      { name: "unit", run: record("unit") },
    ]);
    const asked: unknown[] = [];
    const failed: FailedTestCase[] = [
      { id: "id-2", name: "totals\tthe items", classname: "price", parent: "p", file: "test/b.js" },
      { id: "id-1", name: "discounts", classname: "", parent: "", file: null },
    ];
    // The batch run's uploads are still being processed the first two times it asks.
    const runner = createRunner({
      parallelism: 1,
      failedTests: {
        failedTests: (question, limit) => {
          asked.push({ ...question, limit });
          const waiting = asked.length < 3;
          return Promise.resolve({
            waiting,
            uploads: 1,
            tests: waiting ? failed.slice(0, 1) : failed,
            truncated: false,
          });
        },
      },
    });
    const failFirst = {
      fromRunId: "r1",
      checks: ["unit"],
      sha: "f".repeat(40),
      testBranch: "mainline-merge/main/r1",
      since: 100_000,
    };
    await runToEnd(runner, request(sha, { runId: "r2", failFirst }));
    expect(await readFile(order, "utf8")).toBe("unit\nlint\n");
    expect(asked).toHaveLength(3);
    expect(asked[0]).toEqual({ repo: REPO, sha: "f".repeat(40), since: 40_000, limit: 1000 });
    const file = path.join(dataDir, "ci/logs/q1/r2/failed-tests.tsv");
    for (const check of ["unit", "lint"]) {
      expect(await readFile(path.join(traces, `${check}.env`), "utf8")).toBe(
        `MAINLINE_FAILED_TESTS_FILE=${file}\nMAINLINE_FAIL_FIRST_CHECKS=unit\n`,
      );
    }
    expect(await readFile(path.join(traces, "unit.tsv"), "utf8")).toBe(
      "id-1\tdiscounts\t\t\tdiscounts\t\n" +
        "id-2\tprice.totals the items\ttest/b.js\tprice\ttotals the items\tp\n",
    );
  });

  it("gives a localization run an empty failed-tests file when nothing is known, and runs it all the same", async () => {
    const sha = await commitChecks([
      {
        name: "unit",
        run: `test -f "$MAINLINE_FAILED_TESTS_FILE" && wc -c < "$MAINLINE_FAILED_TESTS_FILE" >> ${path.join(traces, "sizes")}`,
      },
    ]);
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message), error: () => undefined };
    const failFirst = { fromRunId: "r1", checks: ["unit"], sha: "f".repeat(40), testBranch: null };
    // No test results at all (no test health).
    const runner = createRunner({ logger });
    let result = await runToEnd(
      runner,
      request(sha, { runId: "r2", failFirst: { ...failFirst, since: 0 } }),
    );
    expect(result.checks).toEqual([{ name: "unit", conclusion: "success" }]);
    // Its uploads never processed in time: what is known (nothing), and a warning.
    const busy = createRunner({
      logger,
      failedTestsWaitMs: 300,
      failedTests: {
        failedTests: () =>
          Promise.resolve({ waiting: true, uploads: 0, tests: [], truncated: false }),
      },
    });
    result = await runToEnd(
      busy,
      request(sha, { runId: "r3", failFirst: { ...failFirst, since: 0 } }),
    );
    expect(result.checks).toEqual([{ name: "unit", conclusion: "success" }]);
    // Test health failing: a warning, an empty file.
    const broken = createRunner({
      logger,
      failedTests: { failedTests: () => Promise.reject(new Error("no database")) },
    });
    result = await runToEnd(
      broken,
      request(sha, { runId: "r4", failFirst: { ...failFirst, since: 0 } }),
    );
    expect(result.checks).toEqual([{ name: "unit", conclusion: "success" }]);
    expect(
      (await readFile(path.join(traces, "sizes"), "utf8")).split(/\s+/).filter(Boolean),
    ).toEqual(["0", "0", "0"]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /r3: uploads of run r1's time are still being processed after 300 ms; its checks start with the 0 failed tests known/,
      ),
      expect.stringMatching(
        /r4: the failed tests of run r1 could not be read \(no database\); its failed-tests file is empty/,
      ),
    ]);
  });

  it("leaves a stopped run unfinished, and resume() runs it again to the end", async () => {
    const flag = path.join(traces, "second-attempt");
    const sha = await commitChecks([
      {
        name: "once",
        run: `if [ -e ${flag} ]; then echo resumed; else touch ${flag}; exec sleep 1000; fi`,
      },
    ]);
    const first = createRunner();
    const results: CiRunResult[] = [];
    first.onResult((result) => {
      results.push(result);
    });
    await first.start(request(sha));
    await waitFor(() =>
      access(flag).then(
        () => true,
        () => false,
      ),
    );
    await first.stop();
    expect((await stored()).status).toBe("running");
    expect(results).toEqual([]);

    const second = createRunner();
    const result = nextResult(second);
    await second.resume();
    expect(await result).toEqual({
      queueId: "q1",
      runId: "r1",
      checks: [{ name: "once", conclusion: "success" }],
      requiredStatuses: { statuses: ["once"], source: "mainline_checks" },
    });
    await waitFor(async () => (await stored()).finishedAt !== null);
    expect(await stored()).toMatchObject({ status: "passed", error: null });
    expect(await logOf(second, "once")).toMatch(/^resumed\n/);
  });

  it("leaves a run to the runner that holds it, and takes it over once that runner stops renewing", async () => {
    const starts = path.join(dataDir, "starts.txt");
    const sha = await commitChecks([
      { name: "slow", run: `echo started >> ${starts}; sleep 1000` },
    ]);
    const startCount = async () =>
      (await readFile(starts, "utf8").catch(() => "")).split("\n").filter(Boolean).length;
    // Long enough that a loaded machine still renews in time (every third of it).
    const leaseMs = 1_500;
    // A live runner: its lease is renewed while it works.
    const live = createRunner({ owner: "live", leaseMs });
    await live.resume();
    await live.start(request(sha));
    await waitFor(async () => (await startCount()) === 1);
    const other = createRunner({ owner: "other", leaseMs });
    await other.resume();
    await new Promise((resolve) => setTimeout(resolve, leaseMs * 2));
    expect(await startCount()).toBe(1);
    expect(await stored()).toMatchObject({ owner: "live", status: "running" });

    // A runner that stopped renewing (hung, or its process died): another takes the run over.
    const hung = createRunner({ owner: "hung", leaseMs });
    await hung.start(request(sha, { runId: "r2" }));
    await waitFor(async () => (await startCount()) === 2);
    // Either live runner may take it (both sweep for runs whose lease ran out).
    await waitFor(async () => ["live", "other"].includes((await stored("r2")).owner ?? ""));
    await waitFor(async () => (await startCount()) === 3);
    expect(await stored()).toMatchObject({ owner: "live" });
    expect(await startCount()).toBe(3);
  });

  it("records a run cancelled while no runner had it, so that resume() leaves it", async () => {
    const sha = await commitChecks([{ name: "t", run: "true" }]);
    await records.create({
      queueId: "q1",
      runId: "r1",
      request: request(sha),
      status: "running",
      checks: [],
      error: null,
      flakyOnly: false,
      createdAt: 1,
      finishedAt: null,
      owner: "gone",
      leaseUntil: 0,
    });
    const runner = createRunner();
    await runner.cancel("q1", "r1");
    expect((await stored()).status).toBe("cancelled");
    expect(await records.unfinished()).toEqual([]);
  });
});
