import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  coordinate,
  dailyBars,
  dailyLevels,
  fitDays,
  niceMax,
  rangeText,
  sparkline,
  valueScale,
} from "../../src/web/svg/charts.js";

const DAY = 86_400_000;
const days = (n: number) => Array.from({ length: n }, (_, i) => Date.UTC(2026, 0, 1) + i * DAY);

/** Every number in the drawing's coordinates. */
function coordinates(svg: string): number[] {
  return [...svg.matchAll(/\s(?:x|y|x1|x2|y1|y2|cx|cy|width|height|points)="([^"]*)"/g)].flatMap(
    (m) =>
      (m[1] ?? "")
        .split(/[\s,]+/)
        .filter((v) => v !== "")
        .map(Number),
  );
}

describe("scales", () => {
  it("puts zero on the baseline and the largest value at the top; all-zero data stays on the baseline", () => {
    const s = valueScale([0, 5, 10], 100, 0);
    expect(s.y(0)).toBe(100);
    expect(s.y(10)).toBe(0);
    expect(s.y(5)).toBe(50);
    const zero = valueScale([0, 0, 0], 100, 0);
    expect(zero.max).toBe(1);
    expect(zero.y(0)).toBe(100);
    expect(valueScale([], 100, 0).y(0)).toBe(100);
    expect(coordinate(-0)).toBe("0");
    expect(coordinate(1 / 3)).toBe("0.33");
  });
});

describe("sparkline", () => {
  it("has an accessible name and description, and stays inside its box", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 10_000 }), { maxLength: 60 }), (values) => {
        const svg = sparkline({
          id: "s",
          title: "Flaky per day",
          values,
          width: 120,
          height: 28,
        }).value;
        expect(svg).toContain('role="img" aria-labelledby="s-title s-desc"');
        expect(svg).toContain('<title id="s-title">Flaky per day</title>');
        for (const c of coordinates(svg)) {
          expect(Number.isFinite(c)).toBe(true);
          expect(c).toBeGreaterThanOrEqual(0);
          expect(c).toBeLessThanOrEqual(120);
        }
        // Deterministic: the same data, the same bytes.
        expect(
          sparkline({ id: "s", title: "Flaky per day", values, width: 120, height: 28 }).value,
        ).toBe(svg);
      }),
    );
  });

  it("draws all-zero data flat on the baseline, a single point as a dot, nothing as nothing", () => {
    const zero = sparkline({ id: "z", title: "t", values: [0, 0, 0, 0] }).value;
    const ys = /points="([^"]*)"/
      .exec(zero)?.[1]
      ?.split(" ")
      .map((p) => p.split(",")[1]);
    expect(new Set(ys)).toEqual(new Set(["25"]));
    expect(zero).toContain("lowest 0, highest 0, latest 0");
    const one = sparkline({ id: "o", title: "t", values: [7] }).value;
    expect(one).not.toContain("<polyline");
    expect(one).toMatch(/<circle [^>]*cx="60" cy="3"/);
    expect(sparkline({ id: "n", title: "t", values: [] }).value).toContain("no data");
  });

  it("escapes its text", () => {
    const svg = sparkline({ id: "x", title: "<script>", values: [1, 2] }).value;
    expect(svg).not.toContain("<script>");
    expect(svg).toContain("&lt;script&gt;");
  });
});

const heights = (svg: string) => [...svg.matchAll(/ height="([^"]*)"/g)].map((m) => Number(m[1]));

describe("fitting the days to the data", () => {
  const rows = days(30).map((day, i) => ({ day, value: i === 25 ? 4 : 0 }));
  const hasData = (r: { value: number }) => r.value > 0;

  it("begins on the day the data begins, or on an earlier day with data; never empty", () => {
    const since = (rows[20]?.day ?? 0) + 5 * 3_600_000;
    expect(fitDays(rows, since, hasData).map((r) => r.day)).toEqual(days(30).slice(20));
    // A value before `since` (an upload dated earlier) keeps its day.
    expect(fitDays(rows, (rows[28]?.day ?? 0) + 1, hasData)).toHaveLength(5);
    // Data older than the window: all of it.
    expect(fitDays(rows, 0, hasData)).toHaveLength(30);
    // A beginning after the last day still shows the last day.
    const none = rows.map((r) => ({ ...r, value: 0 }));
    expect(fitDays(none, Date.UTC(2030, 0, 1), hasData)).toEqual(none.slice(29));
    expect(fitDays([], 0, hasData)).toEqual([]);
  });

  it("says the range: the full window, or how few days and why", () => {
    expect(rangeText(days(30), 30)).toBe("Last 30 days: 2026-01-01 to 2026-01-30 (UTC)");
    expect(rangeText(days(10), 30)).toBe(
      "10 days: 2026-01-01 to 2026-01-10 (UTC), since the data begins",
    );
    expect(rangeText(days(1), 30)).toBe("1 day: 2026-01-01 (UTC), since the data begins");
    expect(rangeText([], 30)).toBe("No data yet");
  });

  it("rounds the top of the y axis up, never below the largest value", () => {
    expect([0, 1, 3, 5, 6, 7, 9, 13, 17, 23, 27, 33, 99, 101, 1234].map(niceMax)).toEqual([
      1, 1, 3, 5, 6, 8, 10, 15, 20, 25, 30, 40, 100, 120, 1500,
    ]);
    fc.assert(
      fc.property(fc.nat({ max: 10_000_000 }), (max) => {
        expect(niceMax(max)).toBeGreaterThanOrEqual(max);
        expect(Number.isInteger(niceMax(max))).toBe(true);
      }),
    );
  });
});

describe("daily bars", () => {
  it("draws one bar per series and day, stacked, inside the plot, with one legend and a table", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 90 }),
        fc.array(fc.nat({ max: 500 }), { minLength: 180, maxLength: 180 }),
        (n, raw) => {
          const merged = raw.slice(0, n);
          const failed = raw.slice(90, 90 + n);
          const html = dailyBars({
            id: "b",
            title: "Outcomes per day",
            description: "d.",
            days: days(n),
            window: 30,
            series: [
              { label: "Merged", values: merged, className: "series-other" },
              { label: "Failed", values: failed, className: "series-broken" },
            ],
          }).value;
          expect(html.match(/<rect class="bar series-other" data-series="Merged"/g)).toHaveLength(
            n,
          );
          expect(html.match(/<rect class="bar series-broken" data-series="Failed"/g)).toHaveLength(
            n,
          );
          expect(html.match(/<ul class="legend">/g)).toHaveLength(1);
          expect(html).not.toMatch(/<polyline|<polygon|<circle/);
          for (const c of coordinates(html)) {
            expect(Number.isFinite(c)).toBe(true);
            expect(c).toBeGreaterThanOrEqual(0);
            expect(c).toBeLessThanOrEqual(Math.max(n * 10, 100));
          }
          // Stacked: a day's bars together are at most the plot's height.
          const h = heights(html.slice(html.indexOf("<rect")));
          for (let i = 0; i < n; i++) {
            expect((h[2 * i] ?? 0) + (h[2 * i + 1] ?? 0)).toBeLessThanOrEqual(100.02);
          }
          expect(html.match(/<tr><th scope="row">/g) ?? []).toHaveLength(n);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("keeps a few days narrow, says the range and sums it up", () => {
    const html = dailyBars({
      id: "r",
      title: "CI runs per day",
      description: "Runs.",
      days: days(1),
      window: 30,
      series: [{ label: "Runs", values: [3], className: "series-other" }],
    }).value;
    expect(html).toContain('<div class="frame few days-1">');
    expect(html).toContain('<span class="range">1 day: 2026-01-01 (UTC), since the data begins');
    expect(html).toContain('<div class="x-axis" aria-hidden="true"><span>2026-01-01</span></div>');
    expect(html).toContain('<p class="summary">Runs: 3 on 2026-01-01.</p>');
    expect(html).toContain("<title>2026-01-01: Runs 3</title>");
    expect(html).not.toContain("days-30");
  });
});

describe("daily levels", () => {
  it("draws a labelled panel per series, as steps on one scale, inside the plot", () => {
    const html = dailyLevels({
      id: "s",
      title: "Flaky and broken tests",
      description: "d.",
      days: days(3),
      window: 30,
      series: [
        { label: "Flaky", values: [0, 2, 4], className: "series-flaky" },
        { label: "Broken", values: [1, 1, 0], className: "series-broken" },
      ],
    }).value;
    expect(html.match(/<p class="key" data-series="/g)).toHaveLength(2);
    expect(html).not.toContain('class="legend"');
    expect(/<polyline [^>]*data-series="Flaky" points="([^"]*)"/.exec(html)?.[1]).toBe(
      "0,100 10,100 10,50 20,50 20,0 30,0",
    );
    // One scale: Broken's 1 is a quarter of the way up, as Flaky's top is 4.
    expect(/<polyline [^>]*data-series="Broken" points="([^"]*)"/.exec(html)?.[1]).toBe(
      "0,75 10,75 10,75 20,75 20,100 30,100",
    );
    expect(html).toContain(
      '></span>Flaky <span class="muted">4 now, at most 4 (2026-01-03).</span>',
    );
    expect(html).toContain(
      '></span>Broken <span class="muted">0 now, at most 1 (2026-01-01).</span>',
    );
    expect(html).toContain('aria-labelledby="s-0-title s-0-desc"');
  });

  it("escapes its text", () => {
    const html = dailyLevels({
      id: "x",
      title: "<script>",
      description: "<b>",
      days: days(2),
      window: 30,
      series: [{ label: "<i>", values: [1, 2], className: "series-flaky" }],
    }).value;
    expect(html).not.toMatch(/<script>|<b>|<i>/);
    expect(html).toContain("&lt;script&gt;");
  });
});

describe("the series' colours", () => {
  /** WCAG's relative luminance and contrast ratio of two `#rrggbb` colours. */
  const luminance = (hex: string) => {
    const [r = 0, g = 0, b = 0] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a: string, b: string) => {
    const [hi = 0, lo = 0] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };

  it("stand out from the page at 3:1 or more (WCAG's non-text contrast), light and dark", () => {
    const css = readFileSync(new URL("../../src/web/styles/app.css", import.meta.url), "utf8");
    const blocks = [...css.matchAll(/:root \{([^}]*)\}/g)].map((m) => m[1] ?? "");
    expect(blocks).toHaveLength(2);
    for (const block of blocks) {
      const value = (name: string) => new RegExp(`--${name}: (#[0-9a-f]{6});`).exec(block)?.[1];
      const background = value("bg") ?? "";
      for (const series of ["chart-flaky", "chart-broken", "chart-other"]) {
        expect(contrast(value(series) ?? background, background), series).toBeGreaterThanOrEqual(3);
      }
    }
  });
});
