/**
 * The failed tests of a tested commit, as test health stores them (what a localization run runs
 * first, docs/fail-first.md): on both databases, from processed uploads only, each test once,
 * with the parts of its identity; still waiting while uploads since the run started are not
 * processed; limited.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CiFailures } from "../../src/testhealth/ci-failures.js";
import { failedTestsFileText } from "../../src/testhealth/failed-tests-file.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle, testIdOf } from "../helpers/uploads.js";
import { TEST_DIALECT } from "../helpers/database.js";

const TESTED = "a".repeat(40);
const OTHER = "b".repeat(40);

let server: TestServer;
let failures: CiFailures;
beforeEach(async () => {
  server = await startTestServer({ startWorker: false });
  const { stores } = server.services;
  failures = new CiFailures({
    repositories: stores.repositories,
    uploads: stores.uploads,
    testCases: stores.testCases,
    settings: stores.testSettings,
  });
});
afterEach(async () => {
  await server.close();
});

async function processAll(): Promise<void> {
  while (await server.services.worker.processNext()) {
    // until nothing is left
  }
}

describe(`the failed tests of a tested commit on ${TEST_DIALECT}`, () => {
  it("lists each test that failed at the commit once, waiting while uploads are unprocessed", async () => {
    const since = Date.now() - 1_000;
    const repo = { ...REPO, organizationId: server.organizationId };
    const cases = [
      { name: "adds items", classname: "cart.Cart", file: "src/cart.test.ts", status: "failed" },
      { name: "totals due", classname: "", status: "failed" },
      { name: "passes", classname: "cart.Cart", status: "passed" },
    ] as const;
    // Two checks' reports of the commit (one failure in both), and another commit's.
    await putBundle(server, await bundle({ commit: TESTED, files: [junit(cases)] }));
    await putBundle(server, await bundle({ commit: TESTED, files: [junit([cases[0]])] }));
    await putBundle(
      server,
      await bundle({ commit: OTHER, files: [junit([{ name: "elsewhere", status: "failed" }])] }),
    );

    const question = { repo, sha: TESTED, since };
    expect(await failures.failedTests(question, 1000)).toEqual({
      waiting: true,
      uploads: 0,
      tests: [],
      truncated: false,
    });

    await processAll();
    const answer = await failures.failedTests(question, 1000);
    const adds = testIdOf({ name: "adds items", classname: "cart.Cart", file: "src/cart.test.ts" });
    const totals = testIdOf({ name: "totals due", classname: "" });
    expect(answer).toEqual({
      waiting: false,
      uploads: 2,
      tests: [
        {
          id: adds,
          name: "adds items",
          classname: "cart.Cart",
          parent: "suite",
          file: "src/cart.test.ts",
          summary: "expected true to be false",
        },
        {
          id: totals,
          name: "totals due",
          classname: "",
          parent: "suite",
          file: null,
          summary: "expected true to be false",
        },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
      truncated: false,
    });
    expect(failedTestsFileText(answer.tests)).toBe(
      `${totals}\ttotals due\t\t\ttotals due\tsuite\n` +
        `${adds}\tcart.Cart.adds items\tsrc/cart.test.ts\tcart.Cart\tadds items\tsuite\n`,
    );

    // Whose red: both were first seen in these uploads; before that, neither was known.
    const explained = await failures.explain(question, 1000, 0);
    expect(explained.tests.map((t) => [t.name, t.verdict])).toEqual([
      ["adds items", "new"],
      ["totals due", "new"],
    ]);
    const older = await failures.explain(question, 1000, Date.now() + 60_000);
    expect(older.tests.map((t) => t.verdict)).toEqual(["failing", "failing"]);

    const limited = await failures.failedTests(question, 1);
    expect(limited.tests).toHaveLength(1);
    expect(limited.truncated).toBe(true);
    // Uploads before the run started do not hold it up; they still name the commit.
    expect(
      (await failures.failedTests({ ...question, since: Date.now() + 60_000 }, 1000)).tests,
    ).toHaveLength(2);
  });

  it("knows nothing of a commit without reports, or of a repository it does not have", async () => {
    const repo = { ...REPO, organizationId: server.organizationId };
    const nothing = { waiting: false, uploads: 0, tests: [], truncated: false };
    expect(await failures.failedTests({ repo, sha: TESTED, since: 0 }, 1000)).toEqual(nothing);
    expect(
      await failures.failedTests({ repo: { ...repo, name: "other" }, sha: TESTED, since: 0 }, 1000),
    ).toEqual(nothing);
  });
});
