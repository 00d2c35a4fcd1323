import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY_MS, HOUR_MS } from "../../src/lib/time.js";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  statusNote,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, putBundle, junit, testIdOf, type CaseSpec } from "../helpers/uploads.js";

/**
 * The test-health pages in Chromium: from the home page to a repository, its flaky tests, one
 * test; quarantine it with the test page's form and find it under the repository's
 * "Quarantined" tests; the uploads page; another organization's session gets 404 for all of it.
 * axe checks each page; the screenshots of the repository, uploads and test pages go to the docs
 * (`npm run screenshots`). The data: three weeks of CI uploads of a realistic repository, each
 * day's commit run twice (a retry), with tests that turn flaky on different days and one that
 * breaks.
 */

const DAYS = 21;
const CODEOWNERS = [
  "/src/payments/ @acme/payments",
  "/src/web/ @acme/web",
  "/src/api/ @acme/platform",
  "",
].join("\n");

interface Spec {
  name: string;
  classname: string;
  file: string;
  /** Days ago from which its first attempt of the day fails on some days. */
  flakyFrom?: number;
  /** Days ago from which it fails on every run. */
  brokenFrom?: number;
}

const TESTS: Spec[] = [
  {
    name: "retries the payment when the gateway times out",
    classname: "CheckoutService",
    file: "src/payments/checkout.test.ts",
    flakyFrom: 18,
  },
  {
    name: "refunds a partially captured order",
    classname: "RefundService",
    file: "src/payments/refunds.test.ts",
    flakyFrom: 12,
  },
  {
    name: "renders the invoice with tax lines",
    classname: "InvoiceView",
    file: "src/web/invoice.test.tsx",
    brokenFrom: 4,
  },
  {
    name: "search suggestions appear while typing",
    classname: "SearchBox",
    file: "src/web/search.test.tsx",
    flakyFrom: 9,
  },
  {
    name: "websocket reconnects after a server restart",
    classname: "LiveUpdates",
    file: "src/api/live.test.ts",
    flakyFrom: 6,
  },
  {
    name: "rate limiter allows a burst then throttles",
    classname: "RateLimiter",
    file: "src/api/rate-limit.test.ts",
    flakyFrom: 3,
  },
  ...[
    ["adds an item to the cart", "Cart", "src/web/cart.test.tsx"],
    ["applies a coupon to the total", "Cart", "src/web/cart.test.tsx"],
    ["removes an item from the cart", "Cart", "src/web/cart.test.tsx"],
    ["shows the empty cart message", "Cart", "src/web/cart.test.tsx"],
    ["validates the card number", "PaymentForm", "src/payments/form.test.ts"],
    ["rejects an expired card", "PaymentForm", "src/payments/form.test.ts"],
    ["computes VAT for EU customers", "TaxRules", "src/payments/tax.test.ts"],
    ["rounds totals to the cent", "TaxRules", "src/payments/tax.test.ts"],
    ["lists orders newest first", "OrdersApi", "src/api/orders.test.ts"],
    ["paginates the order list", "OrdersApi", "src/api/orders.test.ts"],
    ["returns 404 for an unknown order", "OrdersApi", "src/api/orders.test.ts"],
    ["signs a webhook payload", "Webhooks", "src/api/webhooks.test.ts"],
    ["verifies a webhook signature", "Webhooks", "src/api/webhooks.test.ts"],
    ["logs in with a magic link", "Auth", "src/api/auth.test.ts"],
    ["refreshes an expired session", "Auth", "src/api/auth.test.ts"],
    ["renders the product grid", "ProductGrid", "src/web/grid.test.tsx"],
    ["filters products by price", "ProductGrid", "src/web/grid.test.tsx"],
    ["keeps the header sticky on scroll", "Header", "src/web/header.test.tsx"],
  ].map(([name, classname, file]) => ({ name, classname, file }) as Spec),
];
const FLAKY = TESTS[0] as Spec;

let launched: Launched;
let server: TestServer;
/** The server's clock runs this far from now (to ingest three weeks of history). */
let clockOffset = 0;

/** Whether the test fails on a day's attempt (deterministic: the day and the test decide). */
function fails(spec: Spec, daysAgo: number, attempt: number, index: number): boolean {
  if (spec.brokenFrom !== undefined && daysAgo <= spec.brokenFrom) return true;
  if (spec.flakyFrom !== undefined && daysAgo <= spec.flakyFrom && attempt === 0) {
    return (daysAgo + index) % 3 !== 0;
  }
  return false;
}

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({ clock: { now: () => Date.now() + clockOffset } });
  const switched = await server.call("flaky-tests/update-test-settings", {
    repo: REPO,
    org_url_slug: "acme",
    quarantining_enabled: true,
    auto_quarantine: false,
  });
  // The repository exists only after its first upload: the settings come after it.
  const now = Date.now();
  for (let daysAgo = DAYS; daysAgo >= 0; daysAgo--) {
    const commit = (DAYS - daysAgo).toString(16).padStart(2, "0").repeat(20);
    for (const attempt of [0, 1]) {
      const at = now - daysAgo * DAY_MS - (2 - attempt) * HOUR_MS;
      clockOffset = at - Date.now();
      const cases: CaseSpec[] = TESTS.map((spec, index) => ({
        name: spec.name,
        classname: spec.classname,
        file: spec.file,
        status: fails(spec, daysAgo, attempt, index) ? "failed" : "passed",
        message:
          spec.brokenFrom !== undefined
            ? "expected 3 tax lines, got 2"
            : "Timeout of 5000ms exceeded",
      }));
      await putBundle(
        server,
        await bundle({
          commit,
          branch: daysAgo % 2 === 0 ? "main" : `feature/pr-${400 + daysAgo}`,
          ...(daysAgo % 2 === 0 ? {} : { pr: 400 + daysAgo }),
          uploadedAt: at,
          codeowners: CODEOWNERS,
          files: [junit(cases, "unit")],
        }),
      );
      await server.services.worker.idle();
    }
    if (daysAgo === DAYS && switched.status !== 200) {
      const again = await server.call("flaky-tests/update-test-settings", {
        repo: REPO,
        org_url_slug: "acme",
        quarantining_enabled: true,
        auto_quarantine: false,
      });
      expect(again.status, again.text).toBe(200);
    }
  }
  // Today's three scheduled runs on main (the broken monitor wants five runs in a day).
  for (const run of [0, 1, 2]) {
    const at = now - (80 - run * 10) * 60_000;
    clockOffset = at - Date.now();
    await putBundle(
      server,
      await bundle({
        commit: `e${run}`.repeat(20),
        branch: "main",
        uploadedAt: at,
        codeowners: CODEOWNERS,
        files: [
          junit(
            TESTS.map((spec, index) => ({
              name: spec.name,
              classname: spec.classname,
              file: spec.file,
              status: fails(spec, 0, 1, index) ? ("failed" as const) : ("passed" as const),
              message: "expected 3 tax lines, got 2",
            })),
            "unit",
          ),
        ],
      }),
    );
    await server.services.worker.idle();
  }
  // A CI job whose second report was cut short: the upload keeps its good file and says why.
  clockOffset = -30 * 60_000;
  await putBundle(
    server,
    await bundle({
      commit: "ff".repeat(20),
      uploadedAt: now - 30 * 60_000,
      codeowners: CODEOWNERS,
      files: [
        junit(
          TESTS.slice(6, 12).map((spec) => ({ ...spec, status: "passed" as const })),
          "integration",
        ),
        '<?xml version="1.0"?><testsuites><testsuite name="e2e"><testcase name="checks',
      ],
    }),
  );
  await server.services.worker.idle();
  clockOffset = 0;
}, 300_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

async function signInThroughForm(t: TestPage, token: string): Promise<void> {
  await t.page.goto(`${server.url}/`);
  await t.page.getByLabel("API token").fill(token);
  await Promise.all([
    t.page.waitForURL(/\/[a-z0-9-]+$/),
    t.page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

describe("test health in Chromium", () => {
  it("finds a flaky test from the home page, quarantines it, sees it listed", async () => {
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, server.token);
    await Promise.all([
      t.page.waitForURL(/\/acme\/flaky-tests\/repo\?/),
      t.page.getByRole("link", { name: "acme/app" }).first().click(),
    ]);
    await expect.poll(() => t.page.locator("h1").textContent()).toBe("github.com/acme/app");
    await checkAccessibility(t.page);
    await screenshot(t.page, "repository");

    const tabs = t.page.getByRole("navigation", { name: "Tests by status" });
    await Promise.all([
      t.page.waitForURL(/status=flaky/),
      tabs.getByRole("link", { name: /^Flaky/ }).click(),
    ]);
    const table = t.page.getByRole("table", { name: "Tests of github.com/acme/app" });
    const names = await table.locator("tbody th a").allTextContents();
    expect(names).toContain(FLAKY.name);
    expect(names).not.toContain("adds an item to the cart");
    await Promise.all([
      t.page.waitForURL(/\/flaky-tests\/test\//),
      table.getByRole("link", { name: FLAKY.name }).click(),
    ]);
    await expect.poll(() => t.page.locator("h1").textContent()).toBe(FLAKY.name);
    await checkAccessibility(t.page);

    const form = t.page.getByRole("form", { name: "Quarantine override" });
    await form.getByLabel("Override").selectOption("ALWAYS_QUARANTINE");
    await form.getByLabel("Reason").fill("times out on the shared gateway; JIRA PAY-112");
    await Promise.all([
      t.page.waitForURL(/note=quarantine-always/),
      form.getByRole("button", { name: "Save override" }).click(),
    ]);
    await expect
      .poll(() => t.page.getByRole("status").textContent())
      .toBe("Saved: this test is always quarantined.");
    expect(await t.page.locator("main").textContent()).toContain("PAY-112");
    await checkAccessibility(t.page);
    await screenshot(t.page, "test");

    await Promise.all([
      t.page.waitForURL(/\/flaky-tests\/repo\?/),
      t.page
        .getByRole("navigation", { name: "Breadcrumb" })
        .getByRole("link", { name: "acme/app" })
        .click(),
    ]);
    await Promise.all([
      t.page.waitForURL(/status=quarantined/),
      t.page
        .getByRole("navigation", { name: "Tests by status" })
        .getByRole("link", { name: /^Quarantined/ })
        .click(),
    ]);
    const quarantined = await t.page
      .getByRole("table", { name: "Tests of github.com/acme/app" })
      .locator("tbody th a")
      .allTextContents();
    expect(quarantined).toEqual([FLAKY.name]);

    await Promise.all([
      t.page.waitForURL(/\/flaky-tests\/uploads\?/),
      t.page.getByRole("link", { name: "Uploads of this repository" }).click(),
    ]);
    await expect.poll(() => t.page.locator("h1").textContent()).toBe("Uploads github.com/acme/app");
    expect(await t.page.locator("tbody tr").count()).toBe(48);
    await checkAccessibility(t.page);
    // The cut-short report: processed with its good file, the other file's error shown.
    const latest = t.page.locator("tbody tr").first();
    expect(await latest.locator(".badge").first().textContent()).toBe("processed");
    expect(await latest.textContent()).toContain("reports/junit-1.xml: not well-formed");
    await screenshot(t.page, "uploads");
    await t.finish();
  });

  it("works without JavaScript: the filter form and the quarantine form", async () => {
    const context = await launched.browser().newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(`${server.url}/`);
      await page.getByLabel("API token").fill(server.token);
      await Promise.all([
        page.waitForURL(/\/acme$/),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      await page.goto(`${server.url}/acme/flaky-tests/repo?repo=acme/app`);
      const filters = page.getByRole("search", { name: "Filter tests" });
      await filters.getByLabel("Owner").selectOption("@acme/web");
      await filters.getByLabel("Sort by").selectOption("last_failure");
      await Promise.all([
        page.waitForURL(/owner=/),
        filters.getByRole("button", { name: "Apply" }).click(),
      ]);
      const names = await page.locator("table.tests tbody th a").allTextContents();
      expect(names[0]).toBe("renders the invoice with tax lines");
      expect(names).not.toContain(FLAKY.name);

      const refunds = "refunds a partially captured order";
      await page.goto(`${server.url}/acme/flaky-tests/repo?repo=acme/app&q=refunds`);
      await Promise.all([
        page.waitForURL(/\/flaky-tests\/test\//),
        page.getByRole("link", { name: refunds }).click(),
      ]);
      const form = page.getByRole("form", { name: "Quarantine override" });
      await form.getByLabel("Override").selectOption("NEVER_QUARANTINE");
      await Promise.all([
        page.waitForURL(/note=quarantine-never/),
        form.getByRole("button", { name: "Save override" }).click(),
      ]);
      expect(await page.getByRole("status").textContent()).toBe(
        "Saved: this test is never quarantined.",
      );
      expect(await page.locator("main").textContent()).toContain("NEVER_QUARANTINE");
    } finally {
      await context.close();
    }
  });

  it("another organization's session gets 404 for these pages", async () => {
    // The test's page exists for acme (read with its token): only the session makes it a 404.
    const testPath = `/acme/flaky-tests/test/${testIdOf({ ...FLAKY, suite: "unit" })}?repo=acme/app`;
    const mine = await server.app.inject({
      url: testPath,
      headers: { "x-api-token": server.token },
    });
    expect(mine.statusCode).toBe(200);
    const other = await server.services.organizations.createOrganizationWithToken("hooli");
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, other.token);
    const answers: number[] = [];
    for (const path of [
      "/acme/flaky-tests/repo?repo=acme/app",
      "/acme/flaky-tests/uploads?repo=acme/app",
      "/hooli/flaky-tests/repo?repo=acme/app",
      testPath,
    ]) {
      const answer = await t.page.goto(`${server.url}${path}`);
      answers.push(answer?.status() ?? 0);
      expect(await t.page.locator("h1").textContent()).toBe("Page not found");
      expect(await t.page.locator("main").textContent()).not.toContain("acme/app");
    }
    expect(answers).toEqual([404, 404, 404, 404]);
    await checkAccessibility(t.page);
    await t.finish([statusNote(404), statusNote(404), statusNote(404), statusNote(404)]);
  });
});
