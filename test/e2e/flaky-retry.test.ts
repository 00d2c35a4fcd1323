/**
 * The built-in runner's JUnit reports reach test health, and the queue uses what test health
 * knows: a run whose only failing tests are quarantined is retried once (the reason says so)
 * instead of failing the pull request; a run with a real failure fails as usual.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PROJECT_FILES, mainlineYml } from "../helpers/local-project.js";
import {
  LOCAL,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  stateOf,
  submit,
  timeline,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/** A test script that reports two tests in JUnit: `checkout` (flaky) and `numbers`. */
function testScript(checkout: string, numbers: string): string {
  return [
    "#!/bin/sh",
    "mkdir -p reports",
    `checkout=${checkout}`,
    `numbers=${numbers}`,
    'result() { [ "$1" = pass ] || echo "<failure message=\\"it failed\\"/>"; }',
    "{",
    '  echo "<testsuite name=\\"shop\\">"',
    '  echo "<testcase classname=\\"shop\\" name=\\"checkout\\">$(result $checkout)</testcase>"',
    '  echo "<testcase classname=\\"shop\\" name=\\"numbers\\">$(result $numbers)</testcase>"',
    '  echo "</testsuite>"',
    "} > reports/junit.xml",
    '[ "$checkout" = pass ] && [ "$numbers" = pass ]',
    "",
  ].join("\n");
}

const FILES: Record<string, string> = {
  ...PROJECT_FILES,
  ".mainline.yml": mainlineYml("sh test.sh", ['      junit_paths: ["reports/*.xml"]']),
  "test.sh": testScript("pass", "pass"),
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the merge queue and test health", () => {
  it("retries once a run whose only failures are quarantined tests, and fails one with a real failure", async () => {
    server = await startTestServer({ engine: { pollMs: 100 } });
    const s = server;
    const call: Call = (operation, body) => s.call(operation, body);
    const project = await createRepositoryAndQueue(call, { testingTimeoutMinutes: 0 }, FILES);

    // A first pull request merges; its run's reports make the tests known to test health.
    const first = await openPullRequest(call, project, 1, { "numbers/p1.txt": "1\n" });
    await submit(call, first);
    await waitFor(async () => (await stateOf(call, first)) === "merged", "#1 to merge");
    const db = s.database.handle.db;
    const checkoutTest = async () =>
      db.selectFrom("testCases").select("id").where("name", "=", "checkout").executeTakeFirst();
    await waitFor(async () => (await checkoutTest()) !== undefined, "the reports to be processed", {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const testId = (await checkoutTest())?.id ?? "";
    await ok(call, "flaky-tests/set-quarantine-override", {
      repo: LOCAL,
      org_url_slug: "acme",
      test_id: testId,
      override: "ALWAYS_QUARANTINE",
    });

    // #2's `checkout` test fails on its first run only; it is quarantined.
    const marker = path.join(await mkdtemp(path.join(tmpdir(), "mainline-flake-")), "ran-once");
    const flaky = testScript(
      `$([ -e ${marker} ] && echo pass || { touch ${marker}; echo fail; })`,
      "pass",
    );
    const second = await openPullRequest(call, project, 2, {
      "numbers/p2.txt": "2\n",
      "test.sh": flaky,
    });
    await submit(call, second);
    await waitFor(async () => (await stateOf(call, second)) === "merged", "#2 to merge", {
      timeoutMs: 30_000,
    });
    const retried = (await timeline(call, second)).filter(
      (t) => t.reason === "retried_flaky_failure",
    );
    expect(retried).toHaveLength(1);
    expect(retried[0]?.detail).toMatch(/only known flaky tests failed/);

    // #3, on top of #2, breaks `numbers`, which is not quarantined.
    await project.syncMain();
    const third = await openPullRequest(call, project, 3, {
      "numbers/p3.txt": "3\n",
      "test.sh": testScript("pass", "fail"),
    });
    await submit(call, third);
    await waitFor(() => allConcluded(call, [third]), "#3 to conclude", { timeoutMs: 30_000 });
    const history = await timeline(call, third);
    expect(history.at(-1)).toMatchObject({ toState: "failed", reason: "failing_required_check" });
    expect(history.some((t) => t.reason === "retried_flaky_failure")).toBe(false);
  }, 90_000);
});
