/**
 * Island: a server-drawn SVG chart (`<figure data-island="time-series">` with its data in
 * `data-series`) becomes a uPlot chart with a hover cursor and legend values; the SVG is hidden,
 * the caption and data table stay for screen readers. uPlot is the script the page loads first.
 */
import type uPlotType from "uplot";

/** What `data-series` holds (written by `lineChart`'s `seriesData`). */
interface SeriesData {
  /** Epoch seconds of each point. */
  x: number[];
  series: { label: string; values: number[]; className: string }[];
}

const HEIGHT = 180;

/** A CSS custom property of the series' class, so that the canvas matches the SVG's colours. */
function colourOf(figure: Element, className: string): string {
  const probe = document.createElement("span");
  probe.className = className;
  probe.hidden = true;
  figure.append(probe);
  const colour = getComputedStyle(probe).stroke || getComputedStyle(probe).color;
  probe.remove();
  return colour;
}

function enhance(figure: HTMLElement, UPlot: typeof uPlotType): void {
  const raw = figure.dataset.series;
  if (!raw) return;
  const data = JSON.parse(raw) as SeriesData;
  const host = document.createElement("div");
  host.className = "uplot-host";
  // The canvas repeats what the table says: screen readers read the table.
  host.setAttribute("aria-hidden", "true");
  figure.querySelector("svg.chart")?.after(host);
  const width = () => Math.max(240, Math.floor(figure.clientWidth));
  const chart = new UPlot(
    {
      width: width(),
      height: HEIGHT,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [
        {},
        ...data.series.map((s) => ({
          label: s.label,
          stroke: colourOf(figure, s.className),
          width: 2,
          ...(s.className.includes("broken") ? { dash: [5, 3] } : {}),
        })),
      ],
      axes: [{}, { size: 44 }],
      legend: { live: true },
    },
    [data.x, ...data.series.map((s) => s.values)],
    host,
  );
  figure.classList.add("enhanced");
  new ResizeObserver(() => {
    chart.setSize({ width: width(), height: HEIGHT });
  }).observe(figure);
}

// uPlot's own script (loaded before this one) defines it; absent, the SVG stays.
const UPlot = (window as { uPlot?: typeof uPlotType }).uPlot;
if (UPlot !== undefined) {
  for (const figure of document.querySelectorAll<HTMLElement>('[data-island="time-series"]')) {
    enhance(figure, UPlot);
  }
}
