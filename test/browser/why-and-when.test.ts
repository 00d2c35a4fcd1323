import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  signInAt,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { PROJECT_FILES, mainlineYml, type LocalProject } from "../helpers/local-project.js";
import {
  LOCAL,
  QUEUE,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { runCliInProcess, waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { urls } from "../../src/web/urls.js";

/**
 * "Why did my pull request fail?" on a real local queue in Chromium: the built-in runner runs the
 * repository's own test script, which writes JUnit; test health ingests it; the failed pull
 * request's page (opened from the queue page) names the failing tests, says whose red each is,
 * and shows the end of the failing check's log.
 */

/** A test script reporting `checkout`, `numbers` and (when `totals` is set) `totals` in JUnit. */
function testScript(results: { checkout: string; numbers: string; totals?: string }): string {
  const cases = ["checkout", "numbers", ...(results.totals === undefined ? [] : ["totals"])];
  return [
    "#!/bin/sh",
    "mkdir -p reports",
    `checkout=${results.checkout}`,
    `numbers=${results.numbers}`,
    `totals=${results.totals ?? "pass"}`,
    'result() { [ "$1" = pass ] || echo "<failure message=\\"$2\\">$2</failure>"; }',
    "{",
    '  echo "<testsuite name=\\"shop\\">"',
    ...cases.map(
      (name) =>
        `  echo "<testcase classname=\\"shop\\" name=\\"${name}\\">$(result $${name} "${name}: expected 3, got 4")</testcase>"`,
    ),
    '  echo "</testsuite>"',
    "} > reports/junit.xml",
    ...cases.map((name) => `[ "$${name}" = pass ] || echo "FAILED ${name}: expected 3, got 4"`),
    'echo "the end of the test log"',
    `[ "$checkout" = pass ] && [ "$numbers" = pass ] && [ "$totals" = pass ]`,
    "",
  ].join("\n");
}

const FILES: Record<string, string> = {
  ...PROJECT_FILES,
  ".mainline.yml": mainlineYml("sh test.sh", ['      junit_paths: ["reports/*.xml"]']),
  "test.sh": testScript({ checkout: "pass", numbers: "pass" }),
};

let launched: Launched;
let server: TestServer;
let call: Call;
let project: LocalProject;
const numbers = { broken: 0, flaky: 0 };

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({ engine: { pollMs: 100 } });
  call = (operation, body) => server.call(operation, body);
  project = await createRepositoryAndQueue(call, { testingTimeoutMinutes: 0 }, FILES);

  // A first pull request merges: its run's report makes `checkout` and `numbers` known.
  const first = await openPullRequest(call, project, 1, { "numbers/p1.txt": "1\n" });
  await submit(call, first);
  await waitFor(async () => (await stateOf(call, first)) === "merged", "#1 to merge", {
    timeoutMs: 30_000,
  });
  const db = server.database.handle.db;
  const checkoutTest = () =>
    db.selectFrom("testCases").select("id").where("name", "=", "checkout").executeTakeFirst();
  await waitFor(async () => (await checkoutTest()) !== undefined, "the reports to be processed", {
    timeoutMs: 20_000,
    intervalMs: 100,
  });
  // `checkout` is known flaky: quarantined by hand.
  await ok(call, "flaky-tests/set-quarantine-override", {
    repo: LOCAL,
    org_url_slug: "acme",
    test_id: (await checkoutTest())?.id ?? "",
    override: "ALWAYS_QUARANTINE",
  });

  // #2 breaks `numbers` and adds `totals`, which fails too.
  await project.syncMain();
  numbers.broken = await openPullRequest(call, project, 2, {
    "numbers/p2.txt": "2\n",
    "test.sh": testScript({ checkout: "pass", numbers: "fail", totals: "fail" }),
  });
  await submit(call, numbers.broken);
  await waitFor(async () => (await stateOf(call, numbers.broken)) === "failed", "#2 to fail", {
    timeoutMs: 30_000,
  });

  // #3 fails only `checkout`, every time (retried once as a known flaky failure, then failed).
  const marker = path.join(await mkdtemp(path.join(tmpdir(), "mainline-why-")), "never");
  numbers.flaky = await openPullRequest(call, project, 3, {
    "numbers/p3.txt": "3\n",
    "test.sh": testScript({
      checkout: `$([ -e ${marker} ] && echo pass || echo fail)`,
      numbers: "pass",
    }),
  });
  await submit(call, numbers.flaky);
  await waitFor(async () => (await stateOf(call, numbers.flaky)) === "failed", "#3 to fail", {
    timeoutMs: 45_000,
  });
  await server.services.worker.idle();
}, 150_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

const queueUrl = () => `${server.url}${urls.queue("acme", LOCAL, "main")}`;

async function openSignedIn(url: string): Promise<TestPage> {
  const t = await openPage(launched, server.url);
  await signInAt(t, url, server.token);
  return t;
}

interface FailureAnswer {
  state: string;
  failure?: {
    message: string;
    runId: string | null;
    failedChecks: { name: string; conclusion: string }[];
    failedTests: { name: string; verdict: string; summary: string | null }[];
    log: { check: string; lines: string[] } | null;
  };
}

describe("why a pull request failed, through the API and the CLI", () => {
  it("getSubmittedPullRequest answers the failing tests with their verdicts and the log's end", async () => {
    const broken = await ok<FailureAnswer>(call, "getSubmittedPullRequest", {
      repo: LOCAL,
      targetBranch: "main",
      pr: { number: numbers.broken },
    });
    expect(broken.failure?.message).toBe("A required check failed.");
    expect(broken.failure?.failedChecks).toEqual([
      { name: "test", conclusion: "failure", url: null },
    ]);
    expect(broken.failure?.failedTests.map((t) => [t.name, t.verdict, t.summary])).toEqual([
      ["numbers", "failing", "numbers: expected 3, got 4"],
      ["totals", "new", "totals: expected 3, got 4"],
    ]);
    expect(broken.failure?.log?.lines).toContain("FAILED numbers: expected 3, got 4");
    const many = await ok<{ pullRequests: FailureAnswer[] }>(call, "getSubmittedPullRequests", {
      repo: LOCAL,
      targetBranch: "main",
      prs: [{ number: numbers.flaky }],
    });
    expect(many.pullRequests[0]?.failure?.failedTests).toMatchObject([
      { name: "checkout", verdict: "quarantined" },
    ]);
    // A pull request that merged has no failure to explain.
    const merged = await ok<FailureAnswer>(call, "getSubmittedPullRequest", {
      repo: LOCAL,
      targetBranch: "main",
      pr: { number: 1 },
    });
    expect(merged.state).toBe("merged");
    expect(merged.failure).toBeUndefined();
  });

  it("`pr status` prints them", async () => {
    const result = await runCliInProcess([
      "pr",
      "status",
      String(numbers.broken),
      "--repo",
      "local/acme/shop",
      "--branch",
      "main",
      "--url",
      server.url,
      "--token",
      server.token,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("why it failed: A required check failed.");
    expect(result.stdout).toContain("shop › numbers — fails here (not known flaky or broken)");
    expect(result.stdout).toContain("      numbers: expected 3, got 4");
    expect(result.stdout).toContain("shop › totals — new in this pull request");
    expect(result.stdout).toContain("  | FAILED totals: expected 3, got 4");
  });
});

describe("why a pull request failed, in the browser", () => {
  it("names the failing tests, whose red each is, and the end of the log, opened from the queue page", async () => {
    const t = await openSignedIn(queueUrl());
    try {
      await t.page
        .locator("table.concluded")
        .getByRole("link", { name: `#${numbers.broken}` })
        .click();
      await t.page.waitForURL((url) => url.pathname.endsWith(`/pr/${numbers.broken}`));
      const why = t.page.locator("section.why");
      await expect.poll(() => why.textContent(), { timeout: 10_000 }).toContain("totals");
      const text = (await why.textContent()) ?? "";
      expect(text).toContain("Failing check: test (failure)");
      expect(text).toMatch(/2 tests failed that are not known flaky or broken/);
      const items = await why.locator("ul.failing-tests > li").allTextContents();
      expect(items).toHaveLength(2);
      expect(items.find((i) => i.includes("numbers"))).toContain("fails here");
      expect(items.find((i) => i.includes("numbers"))).toContain("numbers: expected 3, got 4");
      expect(items.find((i) => i.includes("totals"))).toContain("new");
      expect(text).not.toContain("checkout");
      const log = (await why.locator("pre.log").textContent()) ?? "";
      expect(log).toContain("FAILED numbers: expected 3, got 4");
      // The end of the log: the script's last line, then the runner's.
      expect(
        log
          .split("\n")
          .filter((line) => line.trim() !== "")
          .slice(-2),
      ).toEqual([
        "the end of the test log",
        expect.stringMatching(/^\[mainline\] exited with code 1 after/),
      ]);
      // A failing test leads to its page.
      await why.getByRole("link", { name: "numbers" }).click();
      await t.page.waitForURL((url) => url.pathname.includes("/flaky-tests/test/"));
      // The queue's run of #2 is there with its pull request, and counts among those impacted.
      const runRow = t.page.locator("tr", { hasText: `#${numbers.broken}` });
      expect(await runRow.textContent()).toContain("failed");
      const impacted = await t.page
        .locator("div", { hasText: /^\d+PRs impacted, 7 days$/ })
        .locator("strong")
        .textContent();
      expect(Number(impacted)).toBeGreaterThanOrEqual(1);
      await t.page.goBack();
      await checkAccessibility(t.page);
    } finally {
      await t.finish();
    }
  }, 60_000);

  it("says so when only a known flaky test failed it", async () => {
    const t = await openSignedIn(
      `${server.url}${urls.pullRequest("acme", LOCAL, "main", numbers.flaky)}`,
    );
    try {
      const why = t.page.locator("section.why");
      const text = (await why.textContent()) ?? "";
      expect(text).toContain("Only known flaky tests failed");
      const items = await why.locator("ul.failing-tests > li").allTextContents();
      expect(items).toHaveLength(1);
      expect(items[0]).toContain("checkout");
      expect(items[0]).toContain("quarantined");
      await checkAccessibility(t.page);
    } finally {
      await t.finish();
    }
  }, 60_000);
});

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

/** The page at a phone's and a desktop's width: no horizontal overflow, a screenshot of each. */
async function bothWidths(t: TestPage, name: string): Promise<void> {
  for (const [label, viewport] of [
    ["phone", PHONE],
    ["desktop", DESKTOP],
  ] as const) {
    await t.page.setViewportSize(viewport);
    const overflow = await t.page.evaluate(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    );
    await screenshot(t.page, `${name}-${label}`);
    expect(overflow, `${name} at ${label} width overflows`).toBeLessThanOrEqual(0);
  }
}

describe("when a pull request will merge, in the browser", () => {
  it("shows no estimate on a paused queue, and a run that overruns its expected time", async () => {
    await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
    await project.syncMain();
    const slow = await openPullRequest(call, project, 4, {
      "numbers/p4.txt": "4\n",
      "test.sh": `sleep 12\n${testScript({ checkout: "pass", numbers: "pass" })}`,
    });
    await submit(call, slow);
    await waitFor(async () => (await stateOf(call, slow)) === "pending", "#4 to wait");
    const t = await openSignedIn(queueUrl());
    try {
      const live = t.page.locator("#queue-live");
      expect(await live.locator(".queue-state").textContent()).toContain("Paused: no estimate");
      const row = live.locator(`tr[data-pr="${slow}"]`);
      expect(await row.textContent()).toContain("paused: no estimate");
      expect(await row.textContent()).toContain("held: the queue is paused");
      await t.page.goto(`${server.url}${urls.pullRequest("acme", LOCAL, "main", slow)}`);
      expect(await t.page.locator("p.place").textContent()).toContain("Paused: no estimate");

      // Resumed: the slow run (12 s against runs of about a second) overruns, and says so.
      await ok(call, "updateQueue", { ...QUEUE, state: "running" });
      await waitFor(async () => (await stateOf(call, slow)) === "testing", "#4 to be tested");
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      // The page's timers run on a clock the test moves: the region's periodic refresh.
      await t.page.clock.install();
      await t.page.goto(queueUrl());
      const card = t.page.locator("#queue-live li.run").first();
      const text = (await card.textContent()) ?? "";
      expect(text).toMatch(
        /running \d+ s of (?:about \d+ s|under a second) expected — \d+ s over; should end in (?:\d+ s|a few seconds)/,
      );
      expect(await card.locator("strong.overrun").count()).toBe(1);
      // Nothing happens to the queue meanwhile, yet its times move on: the live region is
      // fetched again when its refresh is due (30 s), without a reload.
      const elapsed = async () =>
        Number(/running (\d+) s/.exec((await card.textContent()) ?? "")?.[1] ?? "0");
      const before = await elapsed();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await elapsed()).toBe(before);
      await t.page.clock.runFor(31_000);
      await expect.poll(elapsed, { timeout: 5_000 }).toBeGreaterThan(before);
      await checkAccessibility(t.page);
      await bothWidths(t, "queue-overrun");
      await t.page.goto(`${server.url}${urls.pullRequest("acme", LOCAL, "main", numbers.broken)}`);
      await bothWidths(t, "pull-request-why");
      await t.page.goto(`${server.url}${urls.repository("acme", LOCAL)}`);
      await checkAccessibility(t.page);
      await bothWidths(t, "repository-after-queue");
      await waitFor(async () => (await stateOf(call, slow)) === "merged", "#4 to merge", {
        timeoutMs: 30_000,
      });
    } finally {
      await t.finish();
    }
  }, 90_000);
});
