/**
 * Fail first (docs/fail-first.md), with real git, the built-in runner's real processes and real
 * HTTP: a batch fails; its localization runs get the failed tests of the batch run (written
 * once test health has processed its reports, which it waits for) and the failed checks; a batch
 * that failed on a check without JUnit gives an empty file. `getFailFirstTests` answers the same
 * to a CI elsewhere, refuses bad questions with a 4xx and says when reports are still being
 * processed; `mainline test` hands the list to the command it wraps, and runs it all the same
 * when the server cannot be reached.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_FILES } from "../helpers/local-project.js";
import {
  LOCAL,
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  submit,
  timeline,
  type Call,
} from "../helpers/local-queue.js";
import { freePort, runCliInProcess, waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle } from "../helpers/uploads.js";

/** What every check records of what it was given, as `<runId>.<check>.env` and `<runId>.tsv`. */
function record(traces: string, check: string): string {
  return [
    `env | grep '^MAINLINE_FAIL' | LC_ALL=C sort > ${traces}/"$MAINLINE_RUN_ID.${check}.env"`,
    `if [ -n "$MAINLINE_FAILED_TESTS_FILE" ]; then cp "$MAINLINE_FAILED_TESTS_FILE" ${traces}/"$MAINLINE_RUN_ID.tsv"; fi`,
  ].join("\n");
}

/** `test`: JUnit of two tests, `numbers are whole` failing when a number is not. */
function testScript(traces: string): string {
  return [
    "#!/bin/sh",
    record(traces, "test"),
    "mkdir -p reports",
    "ok=pass",
    "for f in numbers/*.txt; do",
    '  case "$(cat "$f")" in',
    "    ''|*[!0-9]*) ok=fail;;",
    "  esac",
    "done",
    'failure() { [ "$ok" = pass ] || echo "<failure message=\\"not a whole number\\"/>"; }',
    "{",
    '  echo "<testsuite name=\\"shop\\">"',
    '  echo "<testcase classname=\\"shop.numbers\\" name=\\"numbers are whole\\" file=\\"test.sh\\">$(failure)</testcase>"',
    '  echo "<testcase classname=\\"shop\\" name=\\"always passes\\"/>"',
    '  echo "</testsuite>"',
    "} > reports/junit.xml",
    '[ "$ok" = pass ]',
    "",
  ].join("\n");
}

/** `lint`: no JUnit; fails when `lint-error` exists. */
function lintScript(traces: string): string {
  return ["#!/bin/sh", record(traces, "lint"), "! [ -e lint-error ]", ""].join("\n");
}

const NUMBERS_TEST = "numbers are whole";

let server: TestServer;
let call: Call;
let traces: string;
/** The batch run that failed on `test`, a localization run of it, and one of the lint batch. */
let batchRun: string;
let localization: string;
let lintLocalization: string;

interface CiRunRow {
  runId: string;
  status: string;
  request: { prNumbers: number[]; failFirst?: { fromRunId: string; checks: string[] } };
}

async function ciRuns(): Promise<CiRunRow[]> {
  const rows = await server.database.handle.db
    .selectFrom("ciRuns")
    .select(["runId", "status", "request"])
    .orderBy("createdAt")
    .execute();
  return rows.map((r) => ({ ...r, request: JSON.parse(r.request) as CiRunRow["request"] }));
}

/** Submits `changes` as pull requests to the paused queue, runs it until all concluded. */
async function runBatch(first: number, changes: Record<string, string>[]): Promise<number[]> {
  const numbers: number[] = [];
  for (const [i, files] of changes.entries()) {
    numbers.push(await openPullRequest(call, projectRef(), first + i, files));
  }
  for (const number of numbers) await submit(call, number);
  await ok(call, "updateQueue", { ...QUEUE, state: "running" });
  return numbers;
}

let project: Awaited<ReturnType<typeof createRepositoryAndQueue>>;
const projectRef = () => project;

beforeAll(async () => {
  // Test health processes nothing until the batch has failed: the localization runs wait.
  server = await startTestServer({ startWorker: false, ciParallelism: 2 });
  call = (operation, body) => server.call(operation, body);
  traces = await mkdtemp(path.join(tmpdir(), "mainline-fail-first-"));
  project = await createRepositoryAndQueue(
    call,
    {
      testingTimeoutMinutes: 0,
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 1,
      concurrency: 1,
      bisectionConcurrency: 2,
      state: "paused",
    },
    {
      ...PROJECT_FILES,
      ".mainline.yml": [
        "ci:",
        "  checks:",
        "    - name: test",
        "      run: sh test.sh",
        '      junit_paths: ["reports/*.xml"]',
        "    - name: lint",
        "      run: sh lint.sh",
        "",
      ].join("\n"),
      "test.sh": testScript(traces),
      "lint.sh": lintScript(traces),
    },
  );

  // #3 breaks `test`: the batch [#1, #2, #3] fails and is localized. (Each culprit is last in
  // its batch: nothing is left behind it to wait for a batch to fill.)
  const numbers = await runBatch(1, [
    { "numbers/one.txt": "1\n" },
    { "numbers/two.txt": "2\n" },
    { "numbers/three.txt": "three\n" },
  ]);
  await waitFor(
    async () => (await ciRuns()).some((r) => r.request.failFirst && r.status === "running"),
    "a localization run to start",
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  // Its checks wait for the batch run's reports; test health processes them a moment later.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  server.services.worker.start();
  await waitFor(() => allConcluded(call, numbers), "the first batch to conclude", {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  const runs = await ciRuns();
  const localizations = runs.filter((r) => r.request.failFirst);
  batchRun = localizations[0]?.request.failFirst?.fromRunId ?? "";
  // The longest prefix, [#1, #2]: its pass names #3.
  localization = localizations.find((r) => r.request.prNumbers.join() === "1,2")?.runId ?? "";

  // #6 breaks `lint`, which writes no JUnit: its localization runs get an empty file.
  await project.syncMain();
  await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
  const more = await runBatch(4, [
    { "numbers/four.txt": "4\n" },
    { "numbers/five.txt": "5\n" },
    { "numbers/six.txt": "6\n", "lint-error": "x\n" },
  ]);
  await waitFor(() => allConcluded(call, more), "the second batch to conclude", {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
  // The longest prefix, [#4, #5], runs to its end (a shorter one may be cancelled).
  const lint = (await ciRuns()).find(
    (r) =>
      r.request.failFirst?.checks.includes("lint") === true && r.request.prNumbers.join() === "4,5",
  );
  lintLocalization = lint?.runId ?? "";
}, 180_000);

afterAll(async () => {
  await server.close();
  await rm(traces, { recursive: true, force: true });
});

async function numbersTestId(): Promise<string> {
  const row = await server.database.handle.db
    .selectFrom("testCases")
    .select("id")
    .where("name", "=", NUMBERS_TEST)
    .executeTakeFirstOrThrow();
  return row.id;
}

const expectedLine = (id: string) =>
  `${id}\tshop.numbers.${NUMBERS_TEST}\ttest.sh\tshop.numbers\t${NUMBERS_TEST}\tshop\n`;

describe("fail first in the built-in runner", () => {
  it("localizes the failed batch, its culprit evicted on the evidence of two runs", async () => {
    expect(batchRun).not.toBe("");
    const culprit = (await timeline(call, 3)).at(-1);
    expect(culprit).toMatchObject({ toState: "failed", reason: "failing_required_check" });
    // The batch run alone does not fail #3: it failed again, tested once more on #1 and #2.
    expect(culprit?.detail).toMatch(
      new RegExp(
        `^localization: run ${localization} \\(#1, #2\\) passed; run (\\S+) \\(#3\\) failed test$`,
      ),
    );
    expect(culprit?.detail).not.toContain(`run ${batchRun} `);
    const lint = (await timeline(call, 6)).at(-1);
    expect(lint?.detail).toMatch(
      /^localization: run \S+ \(#4, #5\) passed; run \S+ \(#6\) failed lint$/,
    );
    for (const number of [1, 2, 4, 5]) {
      expect((await timeline(call, number)).at(-1)?.toState, `#${String(number)}`).toBe("merged");
    }
  });

  it("gives a localization run's checks the batch run's failed tests, once test health has them", async () => {
    // Those that ran to their end (a shorter prefix is cancelled once a longer one passed).
    const runs = (await ciRuns()).filter(
      (r) => r.request.failFirst?.fromRunId === batchRun && r.status !== "cancelled",
    );
    expect(runs.map((r) => r.runId)).toContain(localization);
    const line = expectedLine(await numbersTestId());
    for (const run of runs) {
      expect(await readFile(path.join(traces, `${run.runId}.tsv`), "utf8"), run.runId).toBe(line);
      for (const check of ["test", "lint"]) {
        const env = await readFile(path.join(traces, `${run.runId}.${check}.env`), "utf8");
        expect(env, `${run.runId} ${check}`).toMatch(
          /^MAINLINE_FAILED_TESTS_FILE=\/.*\/failed-tests\.tsv\nMAINLINE_FAIL_FIRST_CHECKS=test\n$/,
        );
      }
    }
    // Not in the batch run itself, nor in a run that localizes nothing.
    expect(await readFile(path.join(traces, `${batchRun}.test.env`), "utf8")).toBe("");
  });

  it("gives an empty file when the check that failed wrote no JUnit", async () => {
    expect(lintLocalization).not.toBe("");
    expect(await readFile(path.join(traces, `${lintLocalization}.tsv`), "utf8")).toBe("");
    expect(await readFile(path.join(traces, `${lintLocalization}.lint.env`), "utf8")).toMatch(
      /\nMAINLINE_FAIL_FIRST_CHECKS=lint\n$/,
    );
  });
});

describe("getFailFirstTests", () => {
  it("answers a localization run's failed tests, by run id or by test branch and commit", async () => {
    const byId = await ok<Record<string, unknown>>(call, "getFailFirstTests", {
      ...QUEUE,
      runId: localization,
    });
    const id = await numbersTestId();
    expect(byId).toEqual({
      runId: localization,
      fromRunId: batchRun,
      checks: ["test"],
      tests: [
        {
          id,
          name: NUMBERS_TEST,
          classname: "shop.numbers",
          parentName: "shop",
          file: "test.sh",
        },
      ],
      complete: true,
      truncated: false,
      failedTestsFile: expectedLine(id),
    });
    const details = await ok<{ testBranch: string; testBranchSha: string }>(
      call,
      "getMergeQueueTestingDetails",
      { ...QUEUE, testRunId: localization },
    );
    expect(details.testBranch).toBe(`mainline-merge/main/${localization}`);
    const byBranch = await ok(call, "getFailFirstTests", {
      ...QUEUE,
      testBranch: details.testBranch,
      sha: details.testBranchSha.toUpperCase(),
    });
    expect(byBranch).toEqual(byId);
    expect(
      await ok(call, "getFailFirstTests", { ...QUEUE, testBranch: details.testBranch }),
    ).toEqual(byId);
  });

  it("answers nothing to run first for a run that localizes nothing, or whose failed check wrote no JUnit", async () => {
    expect(await ok(call, "getFailFirstTests", { ...QUEUE, runId: batchRun })).toEqual({
      runId: batchRun,
      fromRunId: null,
      checks: [],
      tests: [],
      complete: true,
      truncated: false,
      failedTestsFile: "",
    });
    expect(
      await ok(call, "getFailFirstTests", { ...QUEUE, runId: lintLocalization }),
    ).toMatchObject({ checks: ["lint"], tests: [], complete: true, failedTestsFile: "" });
  });

  it("refuses what names no run, or two, with a 400, and what is not there with a 404", async () => {
    const refused = async (body: Record<string, unknown>, token?: string) => {
      const answered = await server.call("getFailFirstTests", body, token ? { token } : {});
      return [answered.status, (answered.body as { error?: { message?: string } }).error?.message];
    };
    expect(await refused({ ...QUEUE })).toEqual([
      400,
      "runId or testBranch is required: which run is asking",
    ]);
    expect(await refused({ ...QUEUE, runId: localization, testBranch: "x" })).toEqual([
      400,
      "runId and testBranch name the run twice: send one of them",
    ]);
    expect(await refused({ ...QUEUE, runId: localization, sha: "a".repeat(40) })).toEqual([
      400,
      "sha goes with testBranch, not runId",
    ]);
    expect((await refused({ ...QUEUE, testBranch: "x", sha: "abc" }))[0]).toBe(400);
    expect((await refused({ ...QUEUE, runId: "" }))[0]).toBe(400);
    expect((await refused({ ...QUEUE, runId: 12 }))[0]).toBe(400);
    expect(await refused({ ...QUEUE, runId: "nope" })).toEqual([
      404,
      "No test run nope in the merge queue for branch main of acme/shop.",
    ]);
    expect(
      await refused({ ...QUEUE, testBranch: "mainline-merge/main/x", sha: "a".repeat(40) }),
    ).toEqual([
      404,
      `No test run on mainline-merge/main/x at ${"a".repeat(40)} in the merge queue for branch main of acme/shop.`,
    ]);
    expect(await refused({ ...QUEUE, targetBranch: "dev", runId: localization })).toEqual([
      404,
      "No merge queue for branch dev of acme/shop.",
    ]);
    // Another organization's token does not see the queue.
    const other = await server.services.organizations.createOrganizationWithToken("other");
    expect((await refused({ ...QUEUE, runId: localization }, other.token))[0]).toBe(404);
  });
});

describe("mainline test in a CI elsewhere", () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), "mainline-fail-first-ci-"));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** `mainline test` in `dir`, wrapping a command that records what it was given in `dir`. */
  function mainlineTest(
    dir: string,
    extra: string[],
    env: Record<string, string | undefined>,
    url = server.url,
  ) {
    const command = [
      'printf "%s" "${MAINLINE_FAILED_TESTS_FILE:-none}" > given-path',
      'if [ -n "$MAINLINE_FAILED_TESTS_FILE" ]; then cp "$MAINLINE_FAILED_TESTS_FILE" given; fi',
      'printf "%s" "${MAINLINE_FAIL_FIRST_CHECKS:-none}" > given-checks',
      "mkdir -p reports",
      'echo "<testsuite name=\\"ci\\"><testcase classname=\\"ci\\" name=\\"ok\\"/></testsuite>" > reports/r.xml',
    ].join("; ");
    return runCliInProcess(
      [
        "test",
        "--junit",
        "reports/*.xml",
        "--repo",
        "local/acme/shop",
        "--commit",
        "0".repeat(40),
        "--url",
        url,
        "--token",
        server.token,
        ...extra,
        "--",
        command,
      ],
      { MAINLINE_URL: undefined, MAINLINE_TOKEN: undefined, ...env },
      { cwd: dir, timeoutMs: 60_000 },
    );
  }

  async function freshDir(name: string): Promise<string> {
    const dir = path.join(work, name);
    await mkdir(dir);
    return dir;
  }

  it("fetches the failed tests of its run and hands the command the same file", async () => {
    const dir = await freshDir("by-run");
    const result = await mainlineTest(dir, [], {
      MAINLINE_RUN_ID: localization,
      MAINLINE_TARGET_BRANCH: "main",
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(dir, "given"), "utf8")).toBe(
      expectedLine(await numbersTestId()),
    );
    expect(await readFile(path.join(dir, "given-checks"), "utf8")).toBe("test");
    expect(result.stderr).toContain(
      `mainline: run ${localization} runs first what failed in run ${batchRun}: 1 test(s) of test, in `,
    );
    // The file was the command's for its run: gone once it ended.
    const given = await readFile(path.join(dir, "given-path"), "utf8");
    await expect(readFile(given, "utf8")).rejects.toThrow();
  });

  it("finds its run from the test branch and the commit it tests", async () => {
    const details = await ok<{ testBranch: string; testBranchSha: string }>(
      call,
      "getMergeQueueTestingDetails",
      { ...QUEUE, testRunId: localization },
    );
    const dir = await freshDir("by-branch");
    const result = await mainlineTest(
      dir,
      ["--branch", details.testBranch, "--commit", details.testBranchSha],
      {},
    );
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(dir, "given"), "utf8")).toBe(
      expectedLine(await numbersTestId()),
    );
  });

  it("asks nothing outside a test run, and leaves a file the runner gave alone", async () => {
    const outside = await freshDir("outside");
    let result = await mainlineTest(outside, ["--branch", "feature/x"], {});
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(outside, "given-path"), "utf8")).toBe("none");
    expect(result.stderr).not.toMatch(/runs first|failed tests/);

    const preset = await freshDir("preset");
    await writeFile(path.join(preset, "list.tsv"), "from the runner\n");
    result = await mainlineTest(preset, [], {
      MAINLINE_RUN_ID: localization,
      MAINLINE_TARGET_BRANCH: "main",
      MAINLINE_FAILED_TESTS_FILE: path.join(preset, "list.tsv"),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(preset, "given"), "utf8")).toBe("from the runner\n");

    // A check of the built-in runner that is no localization run: the runner gave no file.
    const runner = await freshDir("runner");
    result = await mainlineTest(runner, [], {
      MAINLINE: "true",
      MAINLINE_CHECK: "test",
      MAINLINE_RUN_ID: localization,
      MAINLINE_TARGET_BRANCH: "main",
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(runner, "given-path"), "utf8")).toBe("none");

    const off = await freshDir("off");
    result = await mainlineTest(off, ["--no-fail-first"], {
      MAINLINE_RUN_ID: localization,
      MAINLINE_TARGET_BRANCH: "main",
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(off, "given-path"), "utf8")).toBe("none");
  });

  it("runs the command without the file when the server cannot be reached or refuses", async () => {
    const unreachable = await freshDir("unreachable");
    const port = await freePort();
    let result = await mainlineTest(
      unreachable,
      [],
      { MAINLINE_RUN_ID: localization, MAINLINE_TARGET_BRANCH: "main" },
      `http://127.0.0.1:${String(port)}`,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(unreachable, "given-path"), "utf8")).toBe("none");
    expect(result.stderr).toMatch(
      /mainline: warning: could not fetch the failed tests to run first \(Cannot reach Mainline at http:\/\/127\.0\.0\.1:\d+ .*\); running without them/,
    );

    const unknown = await freshDir("unknown");
    result = await mainlineTest(unknown, [], {
      MAINLINE_RUN_ID: "no-such-run",
      MAINLINE_TARGET_BRANCH: "main",
    });
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(path.join(unknown, "given-path"), "utf8")).toBe("none");
    expect(result.stderr).toContain(
      "mainline: warning: could not fetch the failed tests to run first (No test run no-such-run in the merge queue",
    );
  });

  it("says when the batch run's reports are still being processed, and goes on with what is known", async () => {
    // An upload that has not arrived yet may be the batch run's: the list is not complete.
    const created = await ok<{ url: string }>(call, "metrics/createBundleUpload", {
      repo: LOCAL,
      orgUrlSlug: "acme",
      clientVersion: "0.7.8",
      remoteUrls: [],
    });
    expect(await ok(call, "getFailFirstTests", { ...QUEUE, runId: localization })).toMatchObject({
      complete: false,
      tests: [{ name: NUMBERS_TEST }],
    });
    const dir = await freshDir("incomplete");
    const result = await mainlineTest(dir, ["--fail-first-wait", "1"], {
      MAINLINE_RUN_ID: localization,
      MAINLINE_TARGET_BRANCH: "main",
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      `mainline: warning: results of run ${batchRun} are still being processed; the 1 failed tests known so far are listed`,
    );
    expect(await readFile(path.join(dir, "given"), "utf8")).toBe(
      expectedLine(await numbersTestId()),
    );

    // Once it is processed, the list is complete again.
    const body = await bundle({
      repo: LOCAL,
      commit: "1".repeat(40),
      branch: "main",
      files: ['<testsuite name="x"><testcase classname="x" name="y"/></testsuite>'],
    });
    const put = await fetch(created.url, { method: "PUT", body: new Uint8Array(body) });
    expect(put.status).toBe(200);
    await waitFor(
      async () =>
        (
          await ok<{ complete: boolean }>(call, "getFailFirstTests", {
            ...QUEUE,
            runId: localization,
          })
        ).complete,
      "the upload to be processed",
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  });
});
