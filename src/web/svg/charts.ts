/**
 * Server-side SVG charts, pure functions of their data, coloured by CSS classes only (the CSP
 * forbids inline style). A sparkline for a table's cell; for days, `dailyBars` (counts per day,
 * series stacked) and `dailyLevels` (how many at the end of each day, a small panel per series so
 * that no line hides another). Their text (axes, legend, summary) is HTML beside the drawing, so
 * it reads the same at any width; the drawing stretches to the width it is given. Every chart has
 * one legend whose swatches are the series' colours, a title and description, a summary anyone
 * can read, and a table of its numbers.
 */
import { DAY_MS } from "../../lib/time.js";
import { plural } from "../format.js";
import { markup, type SafeHtml } from "../html.js";

/** The series classes app.css colours (`--series`: line, area, bar and swatch alike). */
export type SeriesClass = "series-flaky" | "series-broken" | "series-other";

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

/** `2026-01-15` */
export function dayLabel(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 10);
}

/** One series of a daily chart: a value for each of the chart's days. */
export interface DaySeries {
  label: string;
  values: readonly number[];
  className: SeriesClass;
}

export interface DailyChartOptions {
  /** Unique in the page: the figure's id, and the ids of its drawings' titles derive from it. */
  id: string;
  /** What is drawn, without the range: `Test failures per day`. */
  title: string;
  /** One sentence saying what is counted (the drawing's description). */
  description: string;
  /** The start of each UTC day shown, oldest first: what `fitDays` kept. */
  days: readonly number[];
  /** The days asked for (30): a chart with fewer says that its data begins later. */
  window: number;
  series: readonly DaySeries[];
}

/**
 * The rows a daily chart shows: from the day its data begins (`since`: the repository's first
 * upload, the queue's creation), or from the first row with data when that is earlier, to the
 * last row; at least the last row. A 30-day window over one day of data is one day, not 29 days
 * of zeros that were never measured.
 */
export function fitDays<T extends { day: number }>(
  rows: readonly T[],
  since: number,
  hasData: (row: T) => boolean,
): T[] {
  const begins = Math.floor(since / DAY_MS) * DAY_MS;
  const first = rows.findIndex((row) => row.day >= begins || hasData(row));
  return rows.slice(first < 0 ? Math.max(0, rows.length - 1) : first);
}

/** `Last 30 days: 2026-10-29 to 2026-11-27 (UTC)`, or how few days there are, and why. */
export function rangeText(days: readonly number[], window: number): string {
  if (days.length === 0) return "No data yet";
  const first = dayLabel(days[0] ?? 0);
  const last = dayLabel(days[days.length - 1] ?? 0);
  const span = first === last ? first : `${first} to ${last}`;
  return days.length >= window
    ? `Last ${days.length} days: ${span} (UTC)`
    : `${plural(days.length, "day")}: ${span} (UTC), since the data begins`;
}

/** A round top for the y axis, at least the largest value: 7 → 8, 13 → 15, 0 → 1. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  if (max <= 5) return Math.ceil(max);
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    if (step * magnitude >= max) return Math.round(step * magnitude * 100) / 100;
  }
  return 10 * magnitude;
}

/** Drawing units: a day is SLOT wide, the plot PLOT high (stretched by CSS to its box). */
const SLOT = 10;
const PLOT = 100;
/** Up to this many days, the plot keeps a day's width fixed (one day is not a wall of colour). */
const FEW_DAYS = 6;

function yAxis(top: number): SafeHtml {
  const mid = top / 2;
  return markup`<div class="y-axis" aria-hidden="true"><span class="y-top">${top}</span>${Number.isInteger(mid) && top > 1 ? markup`<span class="y-mid">${mid}</span>` : ""}<span class="y-zero">0</span></div>`;
}

function xAxis(days: readonly number[]): SafeHtml {
  const labels = [...new Set([days[0], days[days.length - 1]])].filter((d) => d !== undefined);
  return markup`<div class="x-axis" aria-hidden="true">${labels.map((d) => markup`<span>${dayLabel(d)}</span>`)}</div>`;
}

function grid(width: number): SafeHtml {
  return markup`<line class="grid" x1="0" y1="0" x2="${width}" y2="0"/><line class="grid" x1="0" y1="${PLOT / 2}" x2="${width}" y2="${PLOT / 2}"/><line class="axis" x1="0" y1="${PLOT}" x2="${width}" y2="${PLOT}"/>`;
}

/** An SVG plot over the chart's days, named by a title and a description. */
function plot(id: string, width: number, title: string, desc: string, body: SafeHtml): SafeHtml {
  return markup`<svg class="plot" role="img" aria-labelledby="${id}-title ${id}-desc" viewBox="0 0 ${width} ${PLOT}" preserveAspectRatio="none"><title id="${id}-title">${title}</title><desc id="${id}-desc">${desc}</desc>${grid(width)}${body}</svg>`;
}

function swatch(series: DaySeries): SafeHtml {
  return markup`<span class="swatch ${series.className}" aria-hidden="true"></span>${series.label}`;
}

/** `Failed: 12 in 10 days, most on 2026-11-27 (4).`; one day: `Failed: 4 on 2026-11-27.` */
function countSummary(series: DaySeries, days: readonly number[]): string {
  const total = series.values.reduce((a, b) => a + b, 0);
  if (total === 0) return `${series.label}: none in ${plural(days.length, "day")}.`;
  if (days.length === 1) return `${series.label}: ${total} on ${dayLabel(days[0] ?? 0)}.`;
  const max = Math.max(...series.values);
  const on = dayLabel(days[series.values.indexOf(max)] ?? 0);
  return `${series.label}: ${total} in ${plural(days.length, "day")}, most on ${on} (${max}).`;
}

/** `5 now, at most 6 (2026-11-20).` */
function levelSummary(series: DaySeries, days: readonly number[]): string {
  const now = series.values[series.values.length - 1] ?? 0;
  const max = Math.max(0, ...series.values);
  const on = dayLabel(days[series.values.indexOf(max)] ?? 0);
  return `${now} now, at most ${max}${max > 0 ? ` (${on})` : ""}.`;
}

function figure(
  options: DailyChartOptions,
  kind: string,
  parts: { legend?: SafeHtml; body: SafeHtml; summary?: string },
) {
  const { id, title, days, series } = options;
  const few = days.length <= FEW_DAYS ? ` few days-${days.length}` : "";
  const rows = days.map((d, i) => [dayLabel(d), ...series.map((s) => s.values[i] ?? 0)]);
  return markup`<figure class="chart daily ${kind}" id="${id}">
<figcaption><span class="title">${title}</span> <span class="range">${rangeText(days, options.window)}</span></figcaption>
${parts.legend ?? ""}<div class="frame${few}">
${parts.body}
${xAxis(days)}
</div>
${parts.summary === undefined ? "" : markup`<p class="summary">${parts.summary}</p>`}
<details class="data"><summary>Numbers by day</summary>${dataTable(title, ["Day", ...series.map((s) => s.label)], rows)}</details>
</figure>`;
}

/**
 * Counts per day as bars, the series stacked from the first (at the bottom) up; one legend, a
 * bar's tooltip its day and value, and the days' numbers in a table.
 */
export function dailyBars(options: DailyChartOptions): SafeHtml {
  const { id, days, series } = options;
  const width = Math.max(1, days.length) * SLOT;
  const totals = days.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const bars = days.map((day, i) => {
    let base = PLOT;
    return series.map((s) => {
      const value = s.values[i] ?? 0;
      const height = (value / top) * PLOT;
      base -= height;
      return markup`<rect class="bar ${s.className}" data-series="${s.label}" x="${coordinate(i * SLOT + 1.5)}" y="${coordinate(base)}" width="${SLOT - 3}" height="${coordinate(height)}"><title>${dayLabel(day)}: ${s.label} ${value}</title></rect>`;
    });
  });
  const summary = series.map((s) => countSummary(s, days)).join(" ");
  const legend = markup`<ul class="legend">${series.map((s) => markup`<li class="key" data-series="${s.label}">${swatch(s)}</li>`)}</ul>`;
  const drawing = plot(
    id,
    width,
    options.title,
    `${options.description} ${summary}`,
    markup`${bars}`,
  );
  return figure(options, "bars", { legend, body: markup`${yAxis(top)}${drawing}`, summary });
}

/**
 * How many there were at the end of each day, as small multiples: a panel per series, each
 * labelled (its legend key) and drawn as steps (a day's level held across its day), all on one
 * y scale so that panels compare.
 */
export function dailyLevels(options: DailyChartOptions): SafeHtml {
  const { id, days, series } = options;
  const width = Math.max(1, days.length) * SLOT;
  const top = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const y = (v: number) => coordinate(PLOT - (Math.max(0, v) / top) * PLOT);
  const panels = series.map((s, n) => {
    const steps = days
      .map((_, i) => `${i * SLOT},${y(s.values[i] ?? 0)} ${(i + 1) * SLOT},${y(s.values[i] ?? 0)}`)
      .join(" ");
    const summary = levelSummary(s, days);
    const drawing = markup`<polygon class="area ${s.className}" data-series="${s.label}" points="0,${PLOT} ${steps} ${width},${PLOT}"/><polyline class="line ${s.className}" data-series="${s.label}" points="${steps}"/>`;
    return markup`<p class="key" data-series="${s.label}">${swatch(s)} <span class="muted">${summary}</span></p>
${yAxis(top)}${plot(`${id}-${n}`, width, `${options.title}: ${s.label}`, `${options.description} ${s.label}: ${summary}`, drawing)}`;
  });
  // Each panel's key says what its summary would.
  return figure(options, "levels", { body: markup`${panels}` });
}

/** The chart's numbers as a table (in a `<details>`: for screen readers, and anyone who copies). */
function dataTable(
  caption: string,
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
): SafeHtml {
  return markup`<table><caption class="visually-hidden">${caption}</caption><thead><tr>${headers.map((h, i) => markup`<th scope="col"${i > 0 ? markup` class="num"` : ""}>${h}</th>`)}</tr></thead><tbody>${rows.map((r) => markup`<tr>${r.map((c, i) => (i === 0 ? markup`<th scope="row">${c}</th>` : markup`<td class="num">${c}</td>`))}</tr>`)}</tbody></table>`;
}
