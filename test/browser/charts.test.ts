import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY_MS, HOUR_MS } from "../../src/lib/time.js";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { PROJECT_FILES } from "../helpers/local-project.js";
import {
  LOCAL,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle, testIdOf } from "../helpers/uploads.js";

/**
 * Every page with a chart, in Chromium at a phone's width (390 × 844) and a desktop's: each chart
 * has one legend, whose swatches have the colours of the series drawn; daily counts are bars;
 * the x axis spans the days that have data (ten days of uploads are not a 30-day axis, a queue
 * created today has one day); nothing is wider than the screen; axe finds nothing serious.
 * Screenshots of each page at both widths go to docs/screenshots/ (`npm run screenshots`).
 */

/** Days of uploads: the repository's first upload was this many days ago. */
const HISTORY = 9;
const FLAKY = { name: "retries the payment", classname: "Checkout", file: "src/checkout.test.ts" };
const TESTS = [
  FLAKY,
  { name: "renders the invoice", classname: "Invoice", file: "src/invoice.test.ts" },
  { name: "adds to cart", classname: "Cart", file: "src/cart.test.ts" },
  { name: "applies a coupon", classname: "Cart", file: "src/cart.test.ts" },
];
const HEALTH_PATH = `/acme/merge-queue/health?repo=acme/shop&host=local&branch=main`;

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

let launched: Launched;
let server: TestServer;
let clockOffset = 0;
/** UTC days (`YYYY-MM-DD`): the first upload's and today's. */
let firstDay = "";
let today = "";

const day = (at: number) => new Date(at).toISOString().slice(0, 10);

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({
    clock: { now: () => Date.now() + clockOffset },
    engine: { pollMs: 100 },
  });
  const now = Date.now();
  firstDay = day(now - HISTORY * DAY_MS);
  today = day(now);
  // acme/app: uploads from HISTORY days ago to today, each day's commit run twice; the first
  // test fails its first attempt from 6 days ago (flaky), the second fails from 3 days ago.
  // The two runs of a day go up to two hours before this time of day, never across midnight
  // (UTC): the axis's days are what the test says at any time.
  const step = Math.max(1, Math.min(HOUR_MS, Math.floor((now % DAY_MS) / 3)));
  for (let daysAgo = HISTORY; daysAgo >= 0; daysAgo--) {
    for (const attempt of [0, 1]) {
      const at = now - daysAgo * DAY_MS - (2 - attempt) * step;
      clockOffset = at - Date.now();
      const status = (i: number) =>
        (i === 0 && daysAgo <= 6 && attempt === 0) || (i === 1 && daysAgo <= 3)
          ? "failed"
          : "passed";
      await putBundle(
        server,
        await bundle({
          commit: daysAgo.toString(16).padStart(2, "0").repeat(20),
          uploadedAt: at,
          files: [junit(TESTS.map((t, i) => ({ ...t, status: status(i) })))],
        }),
      );
      await server.services.worker.idle();
    }
  }
  clockOffset = 0;
  // acme/shop: a queue created today on the local git host; two pull requests merge, one fails.
  const call: Call = (operation, body) => server.call(operation, body);
  const project = await createRepositoryAndQueue(call, { testingTimeoutMinutes: 0 }, PROJECT_FILES);
  const numbers: number[] = [];
  for (const k of [1, 2, 3]) {
    const content = k === 2 ? "two\n" : `${k}\n`;
    numbers.push(await openPullRequest(call, project, k, { [`numbers/p${k}.txt`]: content }));
  }
  for (const number of numbers) await submit(call, number);
  await waitFor(() => allConcluded(call, numbers), "the pull requests concluded", {
    timeoutMs: 90_000,
    intervalMs: 200,
  });
  await ok(call, "getQueue", { repo: LOCAL, targetBranch: "main" });
}, 300_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

async function signIn(t: TestPage): Promise<void> {
  await t.page.goto(`${server.url}/`);
  await t.page.getByLabel("API token").fill(server.token);
  await Promise.all([
    t.page.waitForURL(/\/acme$/),
    t.page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

interface ChartReading {
  id: string;
  /** Legends in the figure: ours (`.legend`) and any other library's (`.u-legend`). */
  legends: number;
  otherLegends: number;
  /** Each key of the legend: its series' label and its swatch's colour. */
  keys: { label: string; colour: string }[];
  /** Each drawn mark: its series, its element and its colour (fill for shapes, stroke for lines). */
  marks: { series: string; tag: string; colour: string }[];
  /** The x axis's labels, first to last. */
  axis: string[];
  /** The sentence that states the range. */
  range: string;
}

/** What a person sees of each chart of the page, read from the rendered page. */
function readCharts(page: Page): Promise<ChartReading[]> {
  return page.evaluate<
    ChartReading[]
  >(`[...document.querySelectorAll("figure.chart")].map((figure) => ({
    id: figure.id,
    legends: figure.querySelectorAll(".legend").length,
    otherLegends: figure.querySelectorAll(".u-legend").length,
    keys: [...figure.querySelectorAll(".key")].map((key) => ({
      label: key.getAttribute("data-series") ?? "",
      colour: getComputedStyle(key.querySelector(".swatch") ?? key).backgroundColor,
    })),
    marks: [...figure.querySelectorAll("svg [data-series]")].map((mark) => ({
      series: mark.getAttribute("data-series") ?? "",
      tag: mark.tagName,
      colour: mark.tagName === "polyline" ? getComputedStyle(mark).stroke : getComputedStyle(mark).fill,
    })),
    axis: [...figure.querySelectorAll(".x-axis > *")].map((label) => label.textContent ?? ""),
    range: figure.querySelector(".range")?.textContent ?? "",
  }))`);
}

/** One legend per chart, naming each series once, in the colours the series are drawn in. */
function expectOneMatchingLegend(chart: ChartReading): void {
  expect(chart.otherLegends, chart.id).toBe(0);
  expect(chart.legends, chart.id).toBeLessThanOrEqual(1);
  const labels = chart.keys.map((k) => k.label);
  expect(new Set(labels).size, `${chart.id}: a series named twice`).toBe(labels.length);
  expect(new Set(chart.marks.map((m) => m.series)), chart.id).toEqual(new Set(labels));
  for (const key of chart.keys) {
    expect(key.colour, `${chart.id} ${key.label}`).toMatch(/^rgb\(/);
    for (const mark of chart.marks.filter((m) => m.series === key.label)) {
      expect(mark.colour, `${chart.id}: ${key.label}'s ${mark.tag}`).toBe(key.colour);
    }
  }
}

/** Daily counts: one bar per series and day, nothing drawn as a line. */
function expectBars(chart: ChartReading, days: number): void {
  expect(chart.marks.length, chart.id).toBeGreaterThan(0);
  expect(new Set(chart.marks.map((m) => m.tag)), chart.id).toEqual(new Set(["rect"]));
  for (const key of chart.keys) {
    expect(chart.marks.filter((m) => m.series === key.label).length, chart.id).toBe(days);
  }
}

/** The x axis runs from `first` to `last`, and the figure says how many days it shows. */
function expectAxis(chart: ChartReading, first: string, last: string, days: number): void {
  expect(chart.axis[0], chart.id).toBe(first);
  expect(chart.axis[chart.axis.length - 1], chart.id).toBe(last);
  expect(chart.range, chart.id).toContain(days === 1 ? "1 day" : `${days} days`);
}

async function expectFitsTheScreen(page: Page): Promise<void> {
  const widths = await page.evaluate<{ scroll: number; inner: number }>(
    "({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })",
  );
  expect(widths.scroll, page.url()).toBeLessThanOrEqual(widths.inner);
}

const byId = (charts: ChartReading[], id: string): ChartReading => {
  const chart = charts.find((c) => c.id === id);
  if (!chart) throw new Error(`no chart ${id} among ${charts.map((c) => c.id).join(", ")}`);
  return chart;
};

describe.each([
  ["phone", PHONE],
  ["desktop", DESKTOP],
])("the charts at a %s's width", (width, viewport) => {
  async function visit(t: TestPage, path: string, name: string): Promise<ChartReading[]> {
    await t.page.goto(`${server.url}${path}`);
    await t.page.locator("figure.chart").first().waitFor();
    await screenshot(t.page, `charts-${name}-${width}`);
    const charts = await readCharts(t.page);
    for (const chart of charts) expectOneMatchingLegend(chart);
    await expectFitsTheScreen(t.page);
    await checkAccessibility(t.page);
    return charts;
  }

  it("the home page and a repository: status levels since the first upload, failures as bars", async () => {
    const t = await openPage(launched, server.url);
    await t.page.setViewportSize(viewport);
    await signIn(t);
    const days = HISTORY + 1;

    const home = await visit(t, "/acme", "home");
    expectAxis(byId(home, "trend"), firstDay, today, days);
    expect(byId(home, "trend").keys.map((k) => k.label)).toEqual(["Flaky", "Broken"]);

    const repository = await visit(t, "/acme/flaky-tests/repo?repo=acme/app", "repository");
    const failures = byId(repository, "failures");
    expectBars(failures, days);
    expectAxis(failures, firstDay, today, days);
    expectAxis(byId(repository, "statuses"), firstDay, today, days);
    await t.finish();
  });

  it("a test's runs per day: passed and failed as bars, since its first run", async () => {
    const t = await openPage(launched, server.url);
    await t.page.setViewportSize(viewport);
    await signIn(t);
    const id = testIdOf({ ...FLAKY, suite: "suite" });
    const charts = await visit(t, `/acme/flaky-tests/test/${id}?repo=acme/app`, "test");
    const daily = byId(charts, "test-daily");
    expectBars(daily, HISTORY + 1);
    expectAxis(daily, firstDay, today, HISTORY + 1);
    await t.finish();
  });

  it("a queue created today: one day of merged, failed and runs, as bars", async () => {
    const t = await openPage(launched, server.url);
    await t.page.setViewportSize(viewport);
    await signIn(t);
    const charts = await visit(t, HEALTH_PATH, "queue-health");
    for (const id of ["outcomes", "runs"]) {
      expectBars(byId(charts, id), 1);
      expectAxis(byId(charts, id), today, today, 1);
    }
    expect(byId(charts, "outcomes").keys.map((k) => k.label)).toEqual(["Merged", "Failed"]);
    await t.finish();
  });
});
