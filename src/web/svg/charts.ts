/**
 * Server-side SVG charts (sparkline, daily bars, line/area), pure functions of their data in a
 * fixed viewBox that CSS scales. Coloured by CSS classes only (the CSP forbids inline style) and
 * never by colour alone (dash patterns too); every chart has a `<title>`, a `<desc>` and, when
 * large, a visually hidden data table.
 */
import { markup, type SafeHtml } from "../html.js";

/** The series classes app.css colours (and dashes). */
export type SeriesClass = "series-flaky" | "series-broken" | "series-other";

export interface Series {
  label: string;
  values: readonly number[];
  className: SeriesClass;
  /** Fill the area under the line (line charts). */
  area?: boolean;
}

/** Coordinates are written with at most two decimals (stable text, small pages). */
export function coordinate(value: number): string {
  const rounded = Math.round(value * 100) / 100;
  return Object.is(rounded, -0) ? "0" : String(rounded);
}

/**
 * Maps values onto `[bottom, top]` (SVG y grows downwards): 0 is the bottom, the largest value
 * the top. With nothing above 0 (all zero, or empty) the scale runs to 1, so zeros sit on the
 * baseline instead of dividing by zero.
 */
export function valueScale(values: readonly number[], bottom: number, top: number) {
  const max = Math.max(1, ...values.filter((v) => Number.isFinite(v)));
  return {
    max,
    y: (value: number) =>
      bottom - (Math.max(0, Number.isFinite(value) ? value : 0) / max) * (bottom - top),
  };
}

/** x of point `i` of `n` across `[left, right]`; a single point sits in the middle. */
function xOf(i: number, n: number, left: number, right: number): number {
  return n <= 1 ? (left + right) / 2 : left + (i / (n - 1)) * (right - left);
}

function points(values: readonly number[], box: Box, y: (v: number) => number): string {
  return values
    .map((v, i) => `${coordinate(xOf(i, values.length, box.left, box.right))},${coordinate(y(v))}`)
    .join(" ");
}

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** `min 2, max 7, latest 5` for a summary. */
export function describeValues(values: readonly number[]): string {
  if (values.length === 0) return "no data";
  const latest = values[values.length - 1] ?? 0;
  return `lowest ${Math.min(...values)}, highest ${Math.max(...values)}, latest ${latest}`;
}

export interface SparklineOptions {
  /** Unique in the page: the ids of its title and description derive from it. */
  id: string;
  /** The accessible name: what the line is. */
  title: string;
  values: readonly number[];
  className?: SeriesClass;
  width?: number;
  height?: number;
}

/** A small line without axes; its description gives the lowest, highest and latest values. */
export function sparkline(options: SparklineOptions): SafeHtml {
  const { id, title, values, className = "series-other", width = 120, height = 28 } = options;
  const box = { left: 2, right: width - 2, top: 3, bottom: height - 3 };
  const { y } = valueScale(values, box.bottom, box.top);
  const line =
    values.length > 1
      ? markup`<polyline class="line ${className}" points="${points(values, box, y)}"/>`
      : "";
  const last = values.length - 1;
  const dot =
    values.length > 0
      ? markup`<circle class="bar ${className}" cx="${coordinate(xOf(last, values.length, box.left, box.right))}" cy="${coordinate(y(values[last] ?? 0))}" r="2.5"/>`
      : "";
  return markup`<svg class="chart sparkline" role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}"><title id="${id}-title">${title}</title><desc id="${id}-desc">${describeValues(values)}</desc><line class="axis" x1="${box.left}" y1="${coordinate(box.bottom)}" x2="${box.right}" y2="${coordinate(box.bottom)}"/>${line}${dot}</svg>`;
}

export interface BarChartOptions {
  id: string;
  title: string;
  /** One sentence saying what the bars show. */
  description: string;
  /** Each bar's label (a day: `2026-01-15`) and value. */
  bars: readonly { label: string; value: number }[];
  className?: SeriesClass;
  /** The header of the data table's value column. */
  valueLabel: string;
  width?: number;
  height?: number;
}

/** Daily bars with the first and last labels and the top value; a hidden table lists them all. */
export function barChart(options: BarChartOptions): SafeHtml {
  const { id, title, bars, className = "series-other", width = 600, height = 140 } = options;
  const box = { left: 36, right: width - 4, top: 8, bottom: height - 20 };
  const values = bars.map((b) => b.value);
  const { y, max } = valueScale(values, box.bottom, box.top);
  const slot = bars.length === 0 ? 0 : (box.right - box.left) / bars.length;
  const gap = Math.min(2, slot / 4);
  const rects = bars.map((bar, i) => {
    const top = y(bar.value);
    return markup`<rect class="bar ${className}" x="${coordinate(box.left + i * slot + gap / 2)}" y="${coordinate(top)}" width="${coordinate(Math.max(0, slot - gap))}" height="${coordinate(box.bottom - top)}"><title>${bar.label}: ${bar.value}</title></rect>`;
  });
  const first = bars[0]?.label ?? "";
  const last = bars[bars.length - 1]?.label ?? "";
  return markup`<figure class="chart" id="${id}">
<figcaption>${title}</figcaption>
<svg class="chart" role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${width} ${height}"><title id="${id}-title">${title}</title><desc id="${id}-desc">${options.description} ${describeValues(values)}.</desc>
<line class="grid" x1="${box.left}" y1="${box.top}" x2="${box.right}" y2="${box.top}"/><text x="${box.left - 6}" y="${box.top + 4}" text-anchor="end">${max}</text>
<line class="axis" x1="${box.left}" y1="${box.bottom}" x2="${box.right}" y2="${box.bottom}"/><text x="${box.left - 6}" y="${box.bottom + 4}" text-anchor="end">0</text>
${rects}
<text x="${box.left}" y="${height - 4}">${first}</text><text x="${box.right}" y="${height - 4}" text-anchor="end">${last}</text></svg>
${dataTable(
  title,
  ["Day", options.valueLabel],
  bars.map((b) => [b.label, b.value]),
)}
</figure>`;
}

export interface LineChartOptions {
  id: string;
  title: string;
  description: string;
  /** The x of each point: epoch ms (days), labelled `YYYY-MM-DD`. */
  x: readonly number[];
  series: readonly Series[];
  width?: number;
  height?: number;
  /** Adds `data-island="time-series"` and the data it needs (uPlot draws it when scripts run). */
  interactive?: boolean;
}

/** `2026-01-15` */
export function dayLabel(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

/**
 * Lines (and areas) over days, with a legend whose swatches differ in pattern as well as colour,
 * and a visually hidden table of every value.
 */
export function lineChart(options: LineChartOptions): SafeHtml {
  const { id, title, x, series, width = 600, height = 180 } = options;
  const box = { left: 36, right: width - 8, top: 10, bottom: height - 22 };
  const all = series.flatMap((s) => s.values);
  const { y, max } = valueScale(all, box.bottom, box.top);
  const drawn = series.map((s) => {
    const line = points(s.values, box, y);
    const area =
      s.area && s.values.length > 1
        ? markup`<polygon class="area ${s.className}" points="${coordinate(box.left)},${coordinate(box.bottom)} ${line} ${coordinate(box.right)},${coordinate(box.bottom)}"/>`
        : "";
    const path =
      s.values.length > 1
        ? markup`<polyline class="line ${s.className}" points="${line}"/>`
        : s.values.length === 1
          ? markup`<circle class="bar ${s.className}" cx="${coordinate(xOf(0, 1, box.left, box.right))}" cy="${coordinate(y(s.values[0] ?? 0))}" r="3"/>`
          : "";
    return markup`${area}${path}`;
  });
  const first = x.length > 0 ? dayLabel(x[0] ?? 0) : "";
  const last = x.length > 0 ? dayLabel(x[x.length - 1] ?? 0) : "";
  const legend = series.map(
    (s) => markup`<li><span class="swatch ${s.className}"></span>${s.label}</li>`,
  );
  const summary = series.map((s) => `${s.label}: ${describeValues(s.values)}.`).join(" ");
  const data = options.interactive
    ? markup` data-island="time-series" data-series="${JSON.stringify({
        x: x.map((t) => Math.floor(t / 1000)),
        series: series.map((s) => ({ label: s.label, values: s.values, className: s.className })),
      })}"`
    : "";
  const rows = x.map((t, i) => [dayLabel(t), ...series.map((s) => s.values[i] ?? 0)]);
  return markup`<figure class="chart" id="${id}"${data}>
<figcaption>${title}</figcaption>
<svg class="chart" role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${width} ${height}"><title id="${id}-title">${title}</title><desc id="${id}-desc">${options.description} ${summary}</desc>
<line class="grid" x1="${box.left}" y1="${box.top}" x2="${box.right}" y2="${box.top}"/><text x="${box.left - 6}" y="${box.top + 4}" text-anchor="end">${max}</text>
<line class="axis" x1="${box.left}" y1="${box.bottom}" x2="${box.right}" y2="${box.bottom}"/><text x="${box.left - 6}" y="${box.bottom + 4}" text-anchor="end">0</text>
${drawn}
<text x="${box.left}" y="${height - 4}">${first}</text><text x="${box.right}" y="${height - 4}" text-anchor="end">${last}</text></svg>
<ul class="legend">${legend}</ul>
${dataTable(title, ["Day", ...series.map((s) => s.label)], rows)}
</figure>`;
}

/** A table for screen readers (and anyone who copies it), hidden from sight. */
function dataTable(
  caption: string,
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): SafeHtml {
  return markup`<table class="visually-hidden"><caption>${caption}</caption><thead><tr>${headers.map((h) => markup`<th scope="col">${h}</th>`)}</tr></thead><tbody>${rows.map((r) => markup`<tr>${r.map((c, i) => (i === 0 ? markup`<th scope="row">${c}</th>` : markup`<td>${c}</td>`))}</tr>`)}</tbody></table>`;
}
