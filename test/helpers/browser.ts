/**
 * Pages in a real browser: Debian's Chromium (`/usr/bin/chromium`, or `MAINLINE_CHROMIUM`) driven
 * by playwright-core. One browser per test file (`launchBrowser` in `beforeAll`), a fresh context
 * per test (`openPage`): UTC, en-US, a fixed viewport, reduced motion. Every request off the test
 * server's origin is aborted and recorded, and every console error or page error is recorded;
 * `page.finish()` fails the test on any of them beyond the ones it expects (Chromium's note of
 * a page answered with an error status on purpose, see `statusNote`). `checkAccessibility` runs
 * axe-core (WCAG 2.0/2.1 A and AA) and fails on serious or critical violations; `screenshot`
 * writes `docs/screenshots/<name>.png`.
 *
 * Without Chromium every test fails with the reason (`scripts/ensure-chromium.sh` installs it;
 * `.ci/run` does so with CI=true, where a missing browser must never pass as a skip).
 */
import { existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { expect } from "vitest";

export const CHROMIUM = process.env.MAINLINE_CHROMIUM ?? "/usr/bin/chromium";
/** Debian's wrapper decides `--disable-dev-shm-usage` by a check that misfires here: always. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
  "--disable-dev-shm-usage",
];
export const VIEWPORT = { width: 1280, height: 800 };
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SCREENSHOTS_DIR = path.join(REPO_ROOT, "docs/screenshots");

export function missingChromium(): string {
  return process.env.CI === "true"
    ? `Chromium is missing at ${CHROMIUM}: .ci/run installs Debian's (apt-get install -y chromium); ` +
        "the browser tests cannot run without it."
    : `Chromium is missing at ${CHROMIUM}. Install it (Debian/Ubuntu: sudo apt-get install chromium) ` +
        "or point MAINLINE_CHROMIUM at a Chromium binary.";
}

/** What Chromium logs for a document or resource answered with an error status. */
export function statusNote(status: 400 | 401 | 403 | 404): string {
  const text = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found" }[
    status
  ];
  return `Failed to load resource: the server responded with a status of ${status} (${text})`;
}

/** The file's browser; `launched.browser()` throws the reason when there is none. */
export interface Launched {
  browser(): Browser;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Launched> {
  let browser: Browser | undefined;
  let problem: Error | undefined;
  if (!existsSync(CHROMIUM)) {
    problem = new Error(missingChromium());
  } else {
    try {
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: CHROMIUM_ARGS,
        headless: true,
      });
    } catch (error) {
      problem = new Error(`Chromium at ${CHROMIUM} did not start`, { cause: error });
    }
  }
  return {
    browser() {
      if (!browser) throw problem ?? new Error(missingChromium());
      return browser;
    },
    async close() {
      await browser?.close();
    },
  };
}

export interface TestPage {
  context: BrowserContext;
  page: Page;
  /** Off-origin requests that were aborted. */
  blocked: string[];
  /** Console errors and page errors. */
  errors: string[];
  /**
   * Checks that nothing was blocked and that the errors are exactly `expected` (in order), then
   * closes the context.
   */
  finish(expected?: readonly string[]): Promise<void>;
}

/** A fresh context on the server's origin: off-origin requests aborted, errors recorded. */
export async function openPage(launched: Launched, origin: string): Promise<TestPage> {
  const context = await launched.browser().newContext({
    viewport: VIEWPORT,
    timezoneId: "UTC",
    locale: "en-US",
    reducedMotion: "reduce",
    colorScheme: "light",
  });
  const allowed = new URL(origin).origin;
  const blocked: string[] = [];
  const errors: string[] = [];
  await context.route("**/*", async (route) => {
    const url = route.request().url();
    if (new URL(url).origin === allowed && new URL(url).pathname === AXE_PATH) {
      return route.fulfill({ contentType: "text/javascript", body: await axeScript() });
    }
    if (url.startsWith("data:") || new URL(url).origin === allowed) return route.continue();
    blocked.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  return {
    context,
    page,
    blocked,
    errors,
    async finish(expected = []) {
      try {
        expect(blocked).toEqual([]);
        expect(errors).toEqual(expected);
      } finally {
        await context.close();
      }
    },
  };
}

/**
 * Opens `url` (a page of the test server, which sends a browser without a session to the sign-in
 * form) and signs in there with `token`; resolves back on the page.
 */
export async function signInAt(t: TestPage, url: string, token: string): Promise<void> {
  await t.page.goto(url);
  await t.page.getByLabel("API token").fill(token);
  await Promise.all([
    t.page.waitForURL((at) => at.pathname !== "/sign-in"),
    t.page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

const require = createRequire(import.meta.url);
let axeSource: Promise<string> | undefined;
/** Where pages load axe-core from: the test answers it on the server's origin (never the server). */
const AXE_PATH = "/__test__/axe.min.js";
const axeScript = () => (axeSource ??= readFile(require.resolve("axe-core/axe.min.js"), "utf8"));

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
}

/**
 * axe-core on the page as it is now (WCAG 2.0 and 2.1, A and AA): fails on any serious or
 * critical violation, naming each with the elements it found. `page.addScriptTag` loads it from
 * the page's own origin, where `openPage`'s route answers it, so the pages' CSP (`script-src
 * 'self'`, no inline script) stays in force and unbent.
 */
export async function checkAccessibility(page: Page): Promise<void> {
  if (!(await page.evaluate("typeof axe !== 'undefined'"))) {
    await page.addScriptTag({ url: new URL(AXE_PATH, page.url()).href });
  }
  const options = {
    runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] },
    resultTypes: ["violations"],
  };
  const result = await page.evaluate<AxeResult>(`axe.run(document, ${JSON.stringify(options)})`);
  const serious = result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${v.impact ?? ""} ${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(", ")})`,
    );
  expect(serious, `axe on ${page.url()}`).toEqual([]);
}

/**
 * A full-page screenshot. Written to `docs/screenshots/<name>.png` when `MAINLINE_SCREENSHOTS=1`
 * (`npm run screenshots` refreshes the docs' pictures), else to a temporary directory, so that a
 * test run leaves the working tree as it found it.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir =
    process.env.MAINLINE_SCREENSHOTS === "1"
      ? SCREENSHOTS_DIR
      : path.join(os.tmpdir(), "mainline-screenshots");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true, animations: "disabled", caret: "hide" });
  return file;
}

/**
 * axe, then the page at a phone's and a desktop's width: no sideways scroll (what sticks out is
 * named in the failure), a screenshot each (`<name>-phone`, `<name>-desktop`).
 */
export async function checkPageWidths(page: Page, name: string): Promise<void> {
  await checkAccessibility(page);
  for (const [label, viewport] of [
    ["phone", { width: 390, height: 844 }],
    ["desktop", { width: 1280, height: 800 }],
  ] as const) {
    await page.setViewportSize(viewport);
    const overflow = await page.evaluate<number>(
      "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    );
    const wide =
      overflow > 0
        ? await page.evaluate<string>(
            `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 1).slice(0, 5).map((e) => e.tagName + "." + e.className).join(", ")`,
          )
        : "";
    await screenshot(page, `${name}-${label}`);
    expect(overflow, `${name} at ${label} width overflows: ${wide}`).toBeLessThanOrEqual(0);
  }
}
