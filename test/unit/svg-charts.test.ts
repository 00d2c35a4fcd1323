import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  barChart,
  coordinate,
  lineChart,
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

describe("bar chart", () => {
  it("gives every bar its value, as a hidden table too, with no negative heights", () => {
    const bars = [
      { label: "2026-01-01", value: 3 },
      { label: "2026-01-02", value: 0 },
      { label: "2026-01-03", value: 6 },
    ];
    const svg = barChart({
      id: "b",
      title: "Failures per day",
      description: "Failed runs.",
      bars,
      valueLabel: "Failures",
    }).value;
    expect(svg.match(/<rect /g)).toHaveLength(3);
    for (const h of [...svg.matchAll(/height="([^"]*)"/g)].map((m) => Number(m[1])))
      expect(h).toBeGreaterThanOrEqual(0);
    expect(svg).toContain('<table class="visually-hidden"><caption>Failures per day</caption>');
    expect(svg).toContain('<tr><th scope="row">2026-01-03</th><td>6</td></tr>');
    expect(svg).toContain("lowest 0, highest 6, latest 6");
    const zero = barChart({
      id: "z",
      title: "t",
      description: "d",
      bars: bars.map((b) => ({ ...b, value: 0 })),
      valueLabel: "v",
    }).value;
    expect(coordinates(zero).every(Number.isFinite)).toBe(true);
  });
});

describe("line chart", () => {
  it("draws each series inside the plot, with a legend, a table and, when interactive, its data", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 40 }),
        fc.array(fc.nat({ max: 500 }), { minLength: 40, maxLength: 40 }),
        (n, raw) => {
          const x = days(n);
          const flaky = raw.slice(0, n);
          const svg = lineChart({
            id: "l",
            title: "Trend",
            description: "d.",
            x,
            series: [
              { label: "Flaky", values: flaky, className: "series-flaky", area: true },
              { label: "Broken", values: flaky.map(() => 0), className: "series-broken" },
            ],
            interactive: true,
          }).value;
          for (const c of coordinates(svg)) {
            expect(Number.isFinite(c)).toBe(true);
            expect(c).toBeGreaterThanOrEqual(0);
            expect(c).toBeLessThanOrEqual(600);
          }
          expect(svg.match(/<tr><th scope="row">/g) ?? []).toHaveLength(n);
          expect(svg).toContain(
            '<ul class="legend"><li><span class="swatch series-flaky"></span>Flaky</li>',
          );
          const data = /data-series="([^"]*)"/.exec(svg)?.[1] ?? "";
          const parsed = JSON.parse(data.replace(/&quot;/g, '"')) as {
            x: number[];
            series: { values: number[] }[];
          };
          expect(parsed.x).toHaveLength(n);
          expect(parsed.series[0]?.values).toEqual(flaky);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("marks a single day with a dot and all-zero data on the baseline", () => {
    const one = lineChart({
      id: "o",
      title: "t",
      description: "d.",
      x: days(1),
      series: [{ label: "F", values: [4], className: "series-flaky" }],
    }).value;
    expect(one).toMatch(/<circle class="bar series-flaky" cx="[\d.]+" cy="10" r="3"\/>/);
    const zero = lineChart({
      id: "z",
      title: "t",
      description: "d.",
      x: days(3),
      series: [{ label: "F", values: [0, 0, 0], className: "series-flaky" }],
    }).value;
    expect(/<polyline [^>]*points="([^"]*)"/.exec(zero)?.[1]).toBe("36,158 314,158 592,158");
  });
});
