/**
 * Scenario 7 of bench:merge-queue, the failure path (issue 33, ADR 0034): serial and batched
 * measured in the same run on the same seeds (means of seeds 1…n, `BENCH_PRS` PRs), T = 30 min,
 * C = 10, bisection slots = C, the settings ADR 0012 recommends (speculation threshold 35,
 * `bisection_skip_redundant_tests`, 5-minute batch wait), failing localization runs ending at
 * 0.2·T (fail-first: they run the batch's failed tests first).
 *
 * | case | target |
 * | p = 5 %, b = 4, 40 arrivals/h | ≥ 1.3× serial merges/h, ≤ 0.5× serial CI runs per merge |
 * | p = 1 %, b = 8, 150/h | ≥ 0.85 of the strict-order bound μ*(p, C·b), ≤ 0.3× serial CI |
 * | p = 10 %, batching on (b ≤ 4), 25/h | ≥ 0.95× serial merges/h (the adaptive size) |
 * | p = 5 %, b = 4, 12/h | p95 time in queue ≤ 1.3× serial's |
 * | every case | 0 bad merged, 0 good evicted, 0 anomalies |
 */
import type { SimulationOptions, SimulationReport } from "../src/mergequeue/simulator/index.js";

export interface FailureTarget {
  name: string;
  measured: string;
  threshold: string;
  pass: boolean;
}

type Run = (scenario: string, o: SimulationOptions) => { report: SimulationReport };
type Options = (overrides: Partial<SimulationOptions>) => SimulationOptions;

/** The failing localization run's share of T the targets are stated at. */
export const FAIL_FIRST_FRACTION = 0.2;

const SETTINGS: Partial<SimulationOptions> = {
  concurrency: 10,
  bisectionConcurrency: 10,
  speculationThresholdPercent: 35,
  optimizationMode: "bisection_skip_redundant_tests",
  batchWaitMinutes: 5,
  failFirstFraction: FAIL_FIRST_FRACTION,
};

const round = (value: number, digits = 2): number =>
  Math.round(value * 10 ** digits) / 10 ** digits;
const mean = (values: readonly number[]): number =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

/** μ*(p, n)·60/T: the strict-order bound of a lane of depth n = C·b (merges per hour). */
export function strictOrderBound(p: number, depth: number, ciMinutes: number): number {
  return (((1 - p) * (1 - (1 - p) ** depth)) / p) * (60 / ciMinutes);
}

interface Means {
  perHour: number;
  runsPerMerged: number;
  p95: number;
  evicted: number;
  badMerged: number;
  anomalies: number;
}

export function failurePath(run: Run, options: Options, seeds: number): FailureTarget[] {
  const measure = (label: string, overrides: Partial<SimulationOptions>): Means => {
    const reports = Array.from(
      { length: seeds },
      (_, i) => run(`7 ${label}`, options({ ...SETTINGS, ...overrides, seed: i + 1 })).report,
    );
    return {
      perHour: mean(reports.map((r) => r.mergedPerHour)),
      runsPerMerged: mean(reports.map((r) => r.ciRunsPerMerged ?? Infinity)),
      p95: mean(reports.map((r) => r.p95MinutesInQueue ?? Infinity)),
      evicted: reports.reduce((sum, r) => sum + r.goodPrsEvicted, 0),
      badMerged: reports.reduce((sum, r) => sum + r.badMerged, 0),
      anomalies: reports.reduce(
        (sum, r) =>
          sum + Object.values<number>({ ...r.details.anomalies }).reduce((a, b) => a + b, 0),
        0,
      ),
    };
  };
  const pair = (label: string, workload: Partial<SimulationOptions>, batchSize: number) => ({
    serial: measure(`${label}, serial`, { ...workload, batch: false }),
    batched: measure(`${label}, batches ≤ ${batchSize}`, { ...workload, batch: true, batchSize }),
  });
  const note = `mean of ${seeds} seeds`;
  const rate = (m: Means) => `${round(m.perHour, 1)}/h at ${round(m.runsPerMerged, 3)} runs/merged`;
  const targets: FailureTarget[] = [];
  const all: Means[] = [];

  const p5 = pair(
    "p=5% 40/h",
    { failureRate: 0.05, arrivals: { kind: "poisson", perHour: 40 } },
    4,
  );
  all.push(p5.serial, p5.batched);
  targets.push({
    name: `7 p = 5 %, b = 4: merges/h and CI runs per merge vs serial (${note})`,
    measured:
      `${rate(p5.batched)} vs ${rate(p5.serial)}: ${round(p5.batched.perHour / p5.serial.perHour)}× ` +
      `merges/h, ${round(p5.batched.runsPerMerged / p5.serial.runsPerMerged)}× CI`,
    threshold: "≥ 1.3×, ≤ 0.5×",
    pass:
      p5.batched.perHour >= 1.3 * p5.serial.perHour &&
      p5.batched.runsPerMerged <= 0.5 * p5.serial.runsPerMerged,
  });

  const p1 = pair(
    "p=1% 150/h",
    { failureRate: 0.01, arrivals: { kind: "poisson", perHour: 150 } },
    8,
  );
  all.push(p1.serial, p1.batched);
  const bound = strictOrderBound(0.01, 10 * 8, 30);
  targets.push({
    name: `7 p = 1 %, b = 8: merges/h vs the strict-order bound, CI vs serial (${note})`,
    measured:
      `${rate(p1.batched)}: ${round(p1.batched.perHour / bound)} of ${round(bound, 1)}/h, ` +
      `${round(p1.batched.runsPerMerged / p1.serial.runsPerMerged)}× serial's ${round(p1.serial.runsPerMerged, 3)} CI`,
    threshold: "≥ 0.85, ≤ 0.3×",
    pass:
      p1.batched.perHour >= 0.85 * bound &&
      p1.batched.runsPerMerged <= 0.3 * p1.serial.runsPerMerged,
  });

  const p10 = pair(
    "p=10% 25/h",
    { failureRate: 0.1, arrivals: { kind: "poisson", perHour: 25 } },
    4,
  );
  all.push(p10.serial, p10.batched);
  targets.push({
    name: `7 p = 10 %, batching on (adaptive size ≤ 4): merges/h vs serial (${note})`,
    measured: `${rate(p10.batched)} vs ${rate(p10.serial)}: ${round(p10.batched.perHour / p10.serial.perHour)}×`,
    threshold: "≥ 0.95×",
    pass: p10.batched.perHour >= 0.95 * p10.serial.perHour,
  });

  const slow = pair(
    "p=5% 12/h",
    { failureRate: 0.05, arrivals: { kind: "poisson", perHour: 12 } },
    4,
  );
  all.push(slow.serial, slow.batched);
  targets.push({
    name: `7 p = 5 %, b = 4, 12 arrivals/h: p95 minutes in queue vs serial (${note})`,
    measured: `${Math.round(slow.batched.p95)} vs ${Math.round(slow.serial.p95)} min: ${round(slow.batched.p95 / slow.serial.p95)}×`,
    threshold: "≤ 1.3×",
    pass: slow.batched.p95 <= 1.3 * slow.serial.p95,
  });

  const evicted = all.reduce((sum, m) => sum + m.evicted, 0);
  const badMerged = all.reduce((sum, m) => sum + m.badMerged, 0);
  const anomalies = all.reduce((sum, m) => sum + m.anomalies, 0);
  targets.push({
    name: `7 every case above: good PRs evicted, bad merged, anomalies (${note})`,
    measured: `${evicted}, ${badMerged}, ${anomalies}`,
    threshold: "0, 0, 0",
    pass: evicted === 0 && badMerged === 0 && anomalies === 0,
  });
  return targets;
}
