import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, REPO, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";

/**
 * The test page's sign-in in a real browser: headless Chromium (Debian's, driven by
 * playwright-core) loads the page, gets the form, signs in and sees the test. Every request off
 * the server's host is blocked and counted, and console errors fail the test: the only ones
 * expected are Chromium's notes of the statuses the pages answer on purpose (401 for the form,
 * 403 for a refused post), counted exactly.
 */

const CHROMIUM = process.env.MAINLINE_CHROMIUM ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

function missingChromium(): string {
  return process.env.CI === "true"
    ? `Chromium is missing at ${CHROMIUM}: .ci/run installs Debian's (apt-get install -y chromium); ` +
        "the browser test cannot run without it."
    : `Chromium is missing at ${CHROMIUM}. Install it (Debian/Ubuntu: sudo apt-get install chromium) ` +
        "or point MAINLINE_CHROMIUM at a Chromium binary.";
}

/** What Chromium logs for a page answered with an error status. */
const statusNote = (status: 401 | 403) =>
  `Failed to load resource: the server responded with a status of ${status} (${status === 401 ? "Unauthorized" : "Forbidden"})`;

let server: TestServer;
let browser: Browser | undefined;
let launchError: Error | undefined;
let pageUrl: string;

beforeAll(async () => {
  // Without Chromium each test fails with the reason (a failing hook would only skip them).
  if (!existsSync(CHROMIUM)) return;
  server = await startTestServer();
  await ingest(
    server,
    await bundle({ files: [junit([{ name: "signs in from a browser", status: "failed" }])] }),
  );
  await server.services.worker.idle();
  const details = await server.call<{ test: { html_url: string } }>(
    "flaky-tests/get-test-details",
    { repo: REPO, org_url_slug: "acme", test_id: testIdOf({ name: "signs in from a browser" }) },
  );
  expect(details.status, details.text).toBe(200);
  pageUrl = details.body.test.html_url;
  expect(new URL(pageUrl).origin).toBe(server.url);
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  } catch (error) {
    launchError = error as Error;
  }
});

afterAll(async () => {
  await browser?.close();
  await (server as TestServer | undefined)?.close();
});

/** A fresh browser context that blocks off-host requests and records console errors. */
async function openPage() {
  if (launchError) throw new Error(`Chromium at ${CHROMIUM} did not start`, { cause: launchError });
  if (!browser) throw new Error(missingChromium());
  const context = await browser.newContext();
  const host = new URL(server.url).host;
  const blocked: string[] = [];
  const errors: string[] = [];
  await context.route("**/*", async (route) => {
    const url = new URL(route.request().url());
    if (url.host === host && url.protocol === "http:") return route.continue();
    blocked.push(url.href);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  return { context, page, blocked, errors };
}

describe("the test page in Chromium", () => {
  it("signs in through the form and shows the test", async () => {
    const { context, page, blocked, errors } = await openPage();
    try {
      const first = await page.goto(pageUrl);
      expect(first?.status()).toBe(401);
      expect(await page.locator("h1").textContent()).toBe("Sign in to see this test");

      await page.fill("#token", server.token);
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "GET" && r.url() === pageUrl),
        page.click("button[type=submit]"),
      ]);
      // The same address as the form's: wait for the new document's heading, not the old one's.
      await page.locator("h1", { hasText: "signs in from a browser" }).waitFor();
      expect(answer.status()).toBe(200);
      expect(page.url()).toBe(pageUrl);
      expect(await page.locator("h1").textContent()).toBe("signs in from a browser");
      expect(await page.content()).toContain("Runs");

      // The token cookie works on its own: a reload shows the page again.
      const again = await page.reload();
      expect(again?.status()).toBe(200);
      const cookies = await context.cookies(server.url + new URL(pageUrl).pathname);
      expect(cookies.find((c) => c.name === "mainline_token")?.httpOnly).toBe(true);

      expect(blocked).toEqual([]);
      expect(errors).toEqual([statusNote(401)]);
    } finally {
      await context.close();
    }
  });

  it("refuses a sign-in posted from another site's page", async () => {
    const { context, page, blocked, errors } = await openPage();
    try {
      // Another "site": a page served from a different origin (localhost vs 127.0.0.1) that
      // posts a form to the test page. It must not end signed in.
      await page.goto(pageUrl);
      const forgedFrom = server.url.replace("127.0.0.1", "localhost");
      await context.route(`${forgedFrom}/forged`, (route) =>
        route.fulfill({
          status: 200,
          contentType: "text/html",
          body: `<!doctype html><form method="post" action="${pageUrl.replace(/&/g, "&amp;")}">
<input name="token" value="${server.token}"><input name="csrf" value="guessed">
<button type="submit">go</button></form>`,
        }),
      );
      await page.goto(`${forgedFrom}/forged`);
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "POST"),
        page.click("button[type=submit]"),
      ]);
      await page.waitForURL(pageUrl);
      expect(answer.status()).toBe(403);
      expect(await page.locator("h1").textContent()).toBe("Sign-in refused");
      const cookies = await context.cookies(server.url + new URL(pageUrl).pathname);
      expect(cookies.some((c) => c.name === "mainline_token")).toBe(false);
      expect(blocked).toEqual([]);
      expect(errors).toEqual([statusNote(401), statusNote(403)]);
    } finally {
      await context.close();
    }
  });
});
