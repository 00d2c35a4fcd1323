/**
 * Merge-queue benchmark: the planner (src/mergequeue/planner/) driven by the simulator
 * (src/mergequeue/simulator) on virtual time, against the throughput model of background
 * §merge-queue-5.2 and against latency and wall-time targets. Every scenario is seeded.
 *
 * 1. Single lane, T=30 min, p=0.05, C=10, no batching, Poisson arrivals at 40/h (the lane
 *    saturates): merged per hour within 5% of the round model b·S(q,C)·60/T (15.25/h; the
 *    Monte Carlo of background §merge-queue-5.2 gives 15.7/h), averaged over several seeds.
 * 2. The same with batches of 4: CI runs per merged PR at most half of (1), both as means over
 *    the same seeds. Measured with Mainline's `speculationThresholdPercent` (35), and for context
 *    with Trunk's fixed speculation, other thresholds, fixed shallower pipelines, the unbatched
 *    queue with the threshold, and a lower failure rate (where the threshold speculates fully).
 * 3. Flakes 10%, pending failure depth 2, optimistic merging, C=10: fewer than 1% of the good
 *    PRs evicted.
 * 4. Planner latency with 1,000 PRs queued: every `plan` call of a stream of submits, finished
 *    runs, merges and ticks (a tick every virtual minute), timed: p99 under 5 ms.
 * 5. A 10,000-PR day (Poisson at ~420/h, C=25, batches of 8, 1 % bad and 1 % known flakes,
 *    bisection slots = C, fail-first at 0.2·T): at least 115 merges/h, wall time under 60 s. A
 *    wall-time budget stops it (a missed target, reported with how far it got). For reference,
 *    the same arrivals in parallel mode with 8 targets (3,000 PRs): what keeps up with 420/h.
 * 6. Real repositories (issue 14): the workload of (1) and (2) with 5 % of the PRs editing the
 *    same lines as one submitted just before them, and with 10 % stacked on one just before
 *    them; serial (unbatched) and batched at (2)'s setting. No good PR evicted, the order kept,
 *    nothing untested landed.
 * 7. The failure path (issue 33): serial against batches when PRs fail; see merge-queue-failures.ts.
 *
 * Flakes are known flaky tests (test health flags them): a run that fails only on them says so
 * and is retried once, and the rerun of the same tree passes. Scenario 3 also shows, for
 * reference, flakes that nobody knows are flaky.
 *
 * Usage: npm run bench:merge-queue
 *   BENCH_SEEDS (5)                 seeds averaged in scenarios 1, 2 and 6 (seeds 1…n)
 *   BENCH_PRS (3000)                PRs in scenarios 1-3 and 6
 *   BENCH_SCENARIOS (1,2,3,4,5,6,7) which scenarios to run
 *   BENCH_DAY_BUDGET_SECONDS (300)  wall time after which scenario 5 stops
 */
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as planner from "../src/mergequeue/planner/index.js";
import type { QueueEvent } from "../src/mergequeue/model.js";
import {
  SIMULATION_DEFAULTS,
  defaultTestingTimeoutMinutes,
  simulate,
  type SimulationHooks,
  type SimulationOptions,
  type SimulationReport,
} from "../src/mergequeue/simulator/index.js";
import { ROOT } from "./support/server.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { machineInfo } from "./support/machine.js";
import { formatTable } from "./support/table.js";
import { FAIL_FIRST_FRACTION, failurePath } from "./merge-queue-failures.js";
import type { FanOut } from "../src/mergequeue/simulator/options.js";

/** Scenario 5's parallel-mode references: target fan-out and concurrency. */
const PARALLEL_DAY: [string, { weight: number; value: FanOut }[], number][] = [
  [
    "(80 % touch 1, 20 % touch 2)",
    [
      { weight: 0.8, value: 1 },
      { weight: 0.2, value: 2 },
    ],
    25,
  ],
  [
    "(80 % touch 1, 20 % touch 2)",
    [
      { weight: 0.8, value: 1 },
      { weight: 0.2, value: 2 },
    ],
    50,
  ],
  ["(each PR touches 1)", [{ weight: 1, value: 1 }], 50],
];

const RESULTS_FILE = path.join(ROOT, "bench", "results", "merge-queue.json");

const SEEDS = integerFromEnv("BENCH_SEEDS", 5, 1, 100);
const PRS = integerFromEnv("BENCH_PRS", 3000, 100, 1_000_000);
const DAY_BUDGET_SECONDS = integerFromEnv("BENCH_DAY_BUDGET_SECONDS", 300, 10, 36_000);
const SCENARIOS = new Set(listFromEnv("BENCH_SCENARIOS", "1,2,3,4,5,6,7"));

/** The `speculationThresholdPercent` that scenario 2 measures batching with. */
const SPECULATION_THRESHOLD = 35;

const TARGETS = {
  modelTolerance: 0.05,
  /** The Monte Carlo figure for p=0.05, C=10, T=30 (background §merge-queue-5.2). */
  tableMergedPerHour: 15.7,
  batchRunsRatio: 0.5,
  evictedShare: 0.01,
  planP99Ms: 5,
  daySeconds: 60,
  dayMergedPerHour: 115,
};

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const round = (value: number, digits = 2): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};

/**
 * The common workload: a saturated single lane (background §merge-queue-5.2, table row p=0.05,
 * C=10).
 */
function options(overrides: Partial<SimulationOptions>): SimulationOptions {
  const ciMinutes = overrides.ciMinutes ?? 30;
  const ciJitter = overrides.ciJitter ?? SIMULATION_DEFAULTS.ciJitter;
  return {
    ...SIMULATION_DEFAULTS,
    prs: PRS,
    arrivals: { kind: "poisson", perHour: 40 },
    ciMinutes,
    failureRate: 0.05,
    flakesKnown: true,
    concurrency: 10,
    batch: false,
    optimistic: false,
    testingTimeoutMinutes: defaultTestingTimeoutMinutes(ciMinutes, ciJitter),
    priorities: null,
    targetsFanout: null,
    seed: 1,
    ...overrides,
  };
}

interface Measured {
  scenario: string;
  report: SimulationReport;
  wallSeconds: number;
}

function run(scenario: string, o: SimulationOptions, hooks: SimulationHooks = {}): Measured {
  const { report, wallSeconds } = simulate(o, planner, hooks);
  say(
    `  ${scenario} seed ${o.seed}: ${report.merged} merged, ${report.mergedPerHour}/h ` +
      `(model ${report.expectedPerHour}/h), ${report.ciRunsPerMerged ?? "-"} runs/merged, ` +
      `${report.goodPrsEvicted} good evicted, ${report.stopReason}, ${round(wallSeconds)} s`,
  );
  return { scenario, report, wallSeconds: round(wallSeconds, 3) };
}

interface Target {
  name: string;
  measured: string;
  threshold: string;
  pass: boolean;
  /** Shown for context, not a target of the issue ("info" instead of PASS/FAIL). */
  reference?: boolean;
}

const mean = (values: readonly number[]): number =>
  values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;

function percentileOf(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(fraction * sorted.length))) - 1] ?? 0;
}

interface Distribution {
  calls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

interface LatencyResult {
  queuedMin: number;
  queuedMax: number;
  /** Wall time of each call (what the target is about). */
  wall: Distribution;
  /** The process's CPU time during each call: what the machine's other load does not inflate. */
  cpu: Distribution;
  byEvent: Record<string, { wall: Distribution; cpu: Distribution }>;
  /** The 1,000 submits that fill the queue (not part of the figures above). */
  backlogSubmit: Distribution;
}

function summarize(ms: number[]): Distribution {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    calls: sorted.length,
    p50Ms: round(percentileOf(sorted, 0.5), 3),
    p99Ms: round(percentileOf(sorted, 0.99), 3),
    maxMs: round(sorted[sorted.length - 1] ?? 0, 3),
  };
}

/**
 * Scenario 4: 1,000 PRs submitted at once, then arrivals a little faster than the lane merges
 * (so the queue stays at about 1,000), a tick every virtual minute, for 12 virtual hours. Each
 * `plan` call after the backlog is in is timed.
 */
function latency(): { measured: Measured; result: LatencyResult } {
  // Warm up the JIT on the same kind of work.
  simulate(options({ prs: 300, concurrency: 25, seed: 99 }), planner);
  const wall: number[] = [];
  const cpu: number[] = [];
  const backlog: number[] = [];
  const byEvent = new Map<QueueEvent["type"], { wall: number[]; cpu: number[] }>();
  let queuedMin = Infinity;
  let queuedMax = 0;
  let submits = 0;
  const o = options({
    prs: 1400,
    arrivals: { kind: "poisson", perHour: 25, backlog: 1000 },
    concurrency: 25,
    failureRate: 0.05,
    flakeRate: 0.05,
    ciJitter: 0.2,
    pendingFailureDepth: 1,
    optimistic: true,
    testingTimeoutMinutes: defaultTestingTimeoutMinutes(30, 0.2),
    maxHours: 12,
    seed: 4,
  });
  const measured = run("4 latency", o, {
    extraTickMinutes: 1,
    onPlanTimed(event, time, queued) {
      if (event === "submit") submits += 1;
      if (submits <= 1000 && event === "submit") {
        backlog.push(time.wallMs);
        return;
      }
      wall.push(time.wallMs);
      cpu.push(time.cpuMs);
      queuedMin = Math.min(queuedMin, queued);
      queuedMax = Math.max(queuedMax, queued);
      const lists = byEvent.get(event) ?? { wall: [], cpu: [] };
      lists.wall.push(time.wallMs);
      lists.cpu.push(time.cpuMs);
      byEvent.set(event, lists);
    },
  });
  return {
    measured,
    result: {
      queuedMin: Number.isFinite(queuedMin) ? queuedMin : 0,
      queuedMax,
      wall: summarize(wall),
      cpu: summarize(cpu),
      byEvent: Object.fromEntries(
        [...byEvent.entries()]
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([event, lists]) => [
            event,
            { wall: summarize(lists.wall), cpu: summarize(lists.cpu) },
          ]),
      ),
      backlogSubmit: summarize(backlog),
    },
  };
}

async function main(): Promise<void> {
  const loadAverageBefore = os.loadavg()[0] ?? 0;
  say(`merge-queue benchmark: ${PRS} PRs per scenario, ${SEEDS} seed(s) in scenario 1`);
  const measured: Measured[] = [];
  const targets: Target[] = [];

  // 1. The single lane against the round model.
  const singles: Measured[] = [];
  if (SCENARIOS.has("1") || SCENARIOS.has("2")) {
    for (let seed = 1; seed <= SEEDS; seed++) {
      singles.push(run("1 single lane", options({ seed })));
    }
    measured.push(...singles);
    if (SCENARIOS.has("1")) {
      const rate = mean(singles.map((r) => r.report.mergedPerHour));
      const expected = singles[0]?.report.expectedPerHour ?? 0;
      const off = expected > 0 ? rate / expected - 1 : Infinity;
      targets.push({
        name: `1 merged/h vs round model (mean of ${singles.length} seeds)`,
        measured: `${round(rate)}/h (${off >= 0 ? "+" : ""}${round(off * 100, 1)}%)`,
        threshold: `${expected}/h ±${TARGETS.modelTolerance * 100}%`,
        pass: Math.abs(off) <= TARGETS.modelTolerance,
      });
      const offTable = rate / TARGETS.tableMergedPerHour - 1;
      targets.push({
        name: "1 merged/h vs background §merge-queue-5.2 (Monte Carlo), for reference",
        measured: `${round(rate)}/h (${offTable >= 0 ? "+" : ""}${round(offTable * 100, 1)}%)`,
        threshold: `${TARGETS.tableMergedPerHour}/h ±${TARGETS.modelTolerance * 100}%`,
        pass: Math.abs(offTable) <= TARGETS.modelTolerance,
      });
    }
  }

  // 2. Batches of 4: half the CI per merged PR, on the same seeds as (1).
  if (SCENARIOS.has("2") && singles.length > 0) {
    const base = mean(singles.map((r) => r.report.ciRunsPerMerged ?? Infinity));
    const baseRate = mean(singles.map((r) => r.report.mergedPerHour));
    const seedsNote = `mean of ${SEEDS} seeds`;
    // Bisection on as many slots as the main queue (Trunk's default mirrors concurrency) and
    // Trunk's opt-in skipping of bisection runs whose result is already implied.
    const batched = (label: string, overrides: Partial<SimulationOptions>) => {
      const runs: Measured[] = [];
      for (let seed = 1; seed <= SEEDS; seed++) {
        runs.push(
          run(
            label,
            options({
              batch: true,
              batchSize: 4,
              bisectionConcurrency: 10,
              optimizationMode: "bisection_skip_redundant_tests",
              seed,
              ...overrides,
            }),
          ),
        );
      }
      measured.push(...runs);
      return {
        runsPerMerged: mean(runs.map((r) => r.report.ciRunsPerMerged ?? Infinity)),
        mergedPerHour: mean(runs.map((r) => r.report.mergedPerHour)),
      };
    };
    type Batched = ReturnType<typeof batched>;
    const halves = (r: Batched) => r.runsPerMerged <= base * TARGETS.batchRunsRatio;
    const describe = (r: Batched) =>
      `${round(r.runsPerMerged, 3)} runs/merged (${round(r.runsPerMerged / base, 2)}× of ` +
      `${round(base, 3)}) at ${round(r.mergedPerHour, 1)}/h ` +
      `(${round(r.mergedPerHour / baseRate, 2)}× the merges/h of (1))`;

    // Mainline's speculation threshold: no run that is less than 35 % likely to be used.
    const adaptive = batched(`2 batches of 4, threshold ${SPECULATION_THRESHOLD}%`, {
      speculationThresholdPercent: SPECULATION_THRESHOLD,
    });
    targets.push({
      name: `2 CI runs/merged, batches of 4, speculationThresholdPercent ${SPECULATION_THRESHOLD}, vs (1) (${seedsNote})`,
      measured: describe(adaptive),
      threshold: `≤ ${round(base * TARGETS.batchRunsRatio, 3)}`,
      pass: halves(adaptive),
    });
    // For context (info rows): Trunk's fixed speculation, where each failing batch cancels every
    // run in flight behind it; the unbatched queue with the same threshold, which it leaves
    // unchanged at this failure rate (9 PRs ahead pass together 63 % of the time); and the
    // trade-off curve, other thresholds against fixed shallower pipelines.
    const variants: [string, Partial<SimulationOptions>][] = [
      ["with Trunk's fixed speculation (threshold 0)", {}],
      [
        `(1) with threshold ${SPECULATION_THRESHOLD}`,
        { batch: false, speculationThresholdPercent: SPECULATION_THRESHOLD },
      ],
      ...[20, 30, 40].map((t): [string, Partial<SimulationOptions>] => [
        `threshold ${t}`,
        { speculationThresholdPercent: t },
      ]),
      ...[7, 6].map((c): [string, Partial<SimulationOptions>] => [
        `threshold 0 at a fixed C=${c}`,
        { concurrency: c },
      ]),
    ];
    for (const [label, overrides] of variants) {
      const result = batched(`2 ${label}`, overrides);
      targets.push({
        name: `2 … ${label} (${seedsNote})`,
        measured: describe(result),
        threshold: "-",
        pass: halves(result),
        reference: true,
      });
    }
    // Where the threshold differs from a fixed shallower pipeline: with fewer failures (p = 2 %,
    // arrivals raised to 100/h so that the queue stays saturated) it speculates fully again,
    // while a fixed C=7 gives up throughput.
    const rare: Partial<SimulationOptions> = {
      failureRate: 0.02,
      arrivals: { kind: "poisson", perHour: 100 },
    };
    const rareRuns = [
      batched("2 p=2% at 100/h, threshold 0", rare),
      batched(`2 p=2% at 100/h, threshold ${SPECULATION_THRESHOLD}%`, {
        ...rare,
        speculationThresholdPercent: SPECULATION_THRESHOLD,
      }),
      batched("2 p=2% at 100/h, C=7", { ...rare, concurrency: 7 }),
    ];
    targets.push({
      name: `2 p = 2 % at 100/h: threshold 0 / threshold ${SPECULATION_THRESHOLD} / fixed C=7 (${seedsNote})`,
      measured:
        `${rareRuns.map((r) => round(r.mergedPerHour, 1)).join(" / ")} merges/h at ` +
        `${rareRuns.map((r) => round(r.runsPerMerged, 3)).join(" / ")} runs/merged`,
      threshold: "-",
      pass: true,
      reference: true,
    });
  }

  // 3. Anti-flake: pending failure depth 2 and optimistic merging.
  if (SCENARIOS.has("3")) {
    const flaky = run(
      "3 flakes 10%, depth 2, optimistic",
      options({ flakeRate: 0.1, pendingFailureDepth: 2, optimistic: true }),
    );
    measured.push(flaky);
    const good = flaky.report.details.goodPrs;
    const share = good > 0 ? flaky.report.goodPrsEvicted / good : 0;
    targets.push({
      name: "3 good PRs evicted (known flakes 10%, depth 2, optimistic)",
      measured: `${flaky.report.goodPrsEvicted}/${good} (${round(share * 100, 2)}%)`,
      threshold: "0",
      pass: flaky.report.goodPrsEvicted === 0,
    });
    const unknown = run(
      "3 unknown flakes 10%, depth 2, optimistic",
      options({ flakeRate: 0.1, flakesKnown: false, pendingFailureDepth: 2, optimistic: true }),
    );
    measured.push(unknown);
    const unknownGood = unknown.report.details.goodPrs;
    targets.push({
      name: "3 … flakes not known to be flaky (no retry; only optimistic merging clears them)",
      measured: `${unknown.report.goodPrsEvicted}/${unknownGood} (${round((unknown.report.goodPrsEvicted / Math.max(1, unknownGood)) * 100, 2)}%)`,
      threshold: `< ${TARGETS.evictedShare * 100}%`,
      pass: unknown.report.goodPrsEvicted / Math.max(1, unknownGood) < TARGETS.evictedShare,
      reference: true,
    });
  }

  // 6. Real repositories: conflicts between PRs and stacked PRs, serial and batched.
  if (SCENARIOS.has("6")) {
    const seeds = Array.from({ length: SEEDS }, (_, i) => i + 1);
    const batching: Partial<SimulationOptions> = {
      batch: true,
      batchSize: 4,
      bisectionConcurrency: 10,
      optimizationMode: "bisection_skip_redundant_tests",
      speculationThresholdPercent: SPECULATION_THRESHOLD,
    };
    const workloads: [string, Partial<SimulationOptions>][] = [
      ["conflicts 5%", { conflictRate: 0.05 }],
      ["stacks 10%", { stackRate: 0.1 }],
    ];
    for (const [label, workload] of workloads) {
      const modes: [string, Partial<SimulationOptions>][] = [
        ["serial", {}],
        ["batches of 4", batching],
      ];
      const perMode = modes.map(([mode, settings]) => {
        const results = seeds.map((seed) =>
          run(`6 ${label}, ${mode}`, options({ ...workload, ...settings, seed })),
        );
        measured.push(...results);
        const reports = results.map((r) => r.report);
        const evicted = reports.reduce((sum, r) => sum + r.goodPrsEvicted, 0);
        const anomalies = reports.reduce((sum, r) => {
          const counts: number[] = Object.values<number>({ ...r.details.anomalies });
          return sum + counts.reduce((a, b) => a + b, 0);
        }, 0);
        const badMerged = reports.reduce((sum, r) => sum + r.badMerged, 0);
        targets.push({
          name: `6 ${label}, ${mode}: good PRs evicted, bad merged, anomalies (order, untested landings) (${seeds.length} seeds)`,
          measured: `${evicted}, ${badMerged}, ${anomalies}`,
          threshold: "0, 0, 0",
          pass: evicted === 0 && badMerged === 0 && anomalies === 0,
        });
        return {
          runs: mean(reports.map((r) => r.ciRunsPerMerged ?? 0)),
          perHour: mean(reports.map((r) => r.mergedPerHour)),
        };
      });
      const [serial, batched] = perMode as [(typeof perMode)[0], (typeof perMode)[0]];
      targets.push({
        name: `6 ${label}: batched CI runs/merged vs serial (mean of ${seeds.length} seeds)`,
        measured:
          `${round(batched.runs, 3)} vs ${round(serial.runs, 3)} runs/merged ` +
          `(${round(batched.runs / serial.runs, 2)}×) at ${round(batched.perHour, 1)} vs ` +
          `${round(serial.perHour, 1)} merges/h`,
        threshold: `≤ ${TARGETS.batchRunsRatio}×`,
        pass: batched.runs <= serial.runs * TARGETS.batchRunsRatio,
      });
    }
  }

  // 4. Planner latency with 1,000 PRs queued.
  let latencyResult: LatencyResult | null = null;
  if (SCENARIOS.has("4")) {
    const { measured: m, result } = latency();
    measured.push(m);
    latencyResult = result;
    const { wall, cpu } = result;
    say(
      `  4 latency: ${wall.calls} plan calls with ${result.queuedMin}-${result.queuedMax} PRs ` +
        `queued: wall p50 ${wall.p50Ms} ms, p99 ${wall.p99Ms} ms, max ${wall.maxMs} ms; ` +
        `CPU p50 ${cpu.p50Ms} ms, p99 ${cpu.p99Ms} ms`,
    );
    targets.push({
      name: `4 plan() p99 with ${result.queuedMin}-${result.queuedMax} PRs queued`,
      measured: `${wall.p99Ms} ms (p50 ${wall.p50Ms} ms; CPU p99 ${cpu.p99Ms} ms)`,
      threshold: `< ${TARGETS.planP99Ms} ms`,
      pass: wall.p99Ms < TARGETS.planP99Ms,
    });
  }

  // 5. A 10,000-PR day.
  if (SCENARIOS.has("5")) {
    const started = performance.now();
    const day = run(
      "5 10,000-PR day",
      options({
        prs: 10_000,
        arrivals: { kind: "poisson", perHour: 420 },
        concurrency: 25,
        batch: true,
        batchSize: 8,
        failureRate: 0.01,
        flakeRate: 0.01,
        ciJitter: 0.2,
        bisectionConcurrency: 25,
        optimizationMode: "bisection_skip_redundant_tests",
        failFirstFraction: FAIL_FIRST_FRACTION,
        testingTimeoutMinutes: defaultTestingTimeoutMinutes(30, 0.2),
        seed: 5,
      }),
      { shouldStop: () => performance.now() - started > DAY_BUDGET_SECONDS * 1000 },
    );
    measured.push(day);
    const r = day.report;
    const finished = r.stopReason === "completed";
    targets.push({
      name: "5 10,000-PR day, wall time",
      measured: finished
        ? `${round(day.wallSeconds, 1)} s`
        : `stopped (${r.stopReason}) after ${round(day.wallSeconds, 1)} s: ` +
          `${r.prs - r.unfinished}/${r.prs} PRs concluded, ${r.virtualHours} virtual h`,
      threshold: `< ${TARGETS.daySeconds} s`,
      pass: finished && day.wallSeconds < TARGETS.daySeconds,
    });
    targets.push({
      name: "5 10,000-PR day, merges/h (one lane, batches of 8)",
      measured: `${r.mergedPerHour}/h at ${r.ciRunsPerMerged ?? "-"} runs/merged, p95 ${Math.round(r.p95MinutesInQueue ?? 0)} min`,
      threshold: `≥ ${TARGETS.dayMergedPerHour}/h`,
      pass: finished && r.mergedPerHour >= TARGETS.dayMergedPerHour,
    });
    for (const [label, fanOut, concurrency] of PARALLEL_DAY) {
      const lanes = run(
        `5 parallel, 8 targets ${label}, C=${concurrency}`,
        options({
          prs: 3000,
          arrivals: { kind: "poisson", perHour: 420 },
          concurrency,
          batch: true,
          batchSize: 8,
          failureRate: 0.01,
          flakeRate: 0.01,
          ciJitter: 0.2,
          bisectionConcurrency: concurrency,
          optimizationMode: "bisection_skip_redundant_tests",
          failFirstFraction: FAIL_FIRST_FRACTION,
          testingTimeoutMinutes: defaultTestingTimeoutMinutes(30, 0.2),
          targets: 8,
          targetsFanout: fanOut,
          seed: 5,
        }),
      );
      measured.push(lanes);
      const l = lanes.report;
      targets.push({
        name: `5 … parallel mode, 8 targets ${label}, C = ${concurrency}, 420 arrivals/h (3,000 PRs)`,
        measured: `${l.mergedPerHour}/h at ${l.ciRunsPerMerged ?? "-"} runs/merged, p95 ${Math.round(l.p95MinutesInQueue ?? 0)} min`,
        threshold: "-",
        pass: true,
        reference: true,
      });
    }
  }

  // 7. The failure path: serial against batches when PRs fail.
  if (SCENARIOS.has("7")) {
    targets.push(
      ...failurePath(
        (label, o) => {
          const m = run(label, o);
          measured.push(m);
          return m;
        },
        options,
        SEEDS,
      ),
    );
  }

  const simulations = formatTable(
    [
      "scenario",
      "seed",
      "merged",
      "failed",
      "unfinished",
      "merged/h",
      "model/h",
      "cap/h",
      "runs/merged",
      "p50 min",
      "p95 min",
      "good evicted",
      "events",
      "wall s",
    ],
    measured.map(({ scenario, report: r, wallSeconds }) => [
      scenario,
      String(r.settings.seed),
      String(r.merged),
      String(r.failed),
      String(r.unfinished),
      String(round(r.mergedPerHour)),
      String(round(r.expectedPerHour)),
      r.theoreticalCapPerHour === null ? "-" : String(round(r.theoreticalCapPerHour)),
      r.ciRunsPerMerged === null ? "-" : String(round(r.ciRunsPerMerged)),
      r.p50MinutesInQueue === null ? "-" : String(Math.round(r.p50MinutesInQueue)),
      r.p95MinutesInQueue === null ? "-" : String(Math.round(r.p95MinutesInQueue)),
      String(r.goodPrsEvicted),
      String(r.events),
      String(round(wallSeconds, 1)),
    ]),
    [0],
  );
  const verdicts = formatTable(
    ["target", "measured", "threshold", "result"],
    targets.map((t) => [
      t.name,
      t.measured,
      t.threshold,
      t.reference === true ? "info" : t.pass ? "PASS" : "FAIL",
    ]),
    [0, 1, 2, 3],
  );
  process.stdout.write(`\n${simulations}\n\n${verdicts}\n`);
  await writeResults(measured, targets, latencyResult, loadAverageBefore);
}

async function writeResults(
  measured: Measured[],
  targets: Target[],
  latencyResult: LatencyResult | null,
  loadAverageBefore: number,
): Promise<void> {
  const json = {
    measuredAt: new Date().toISOString(),
    machine: machineInfo(loadAverageBefore),
    node: process.version,
    settings: { seeds: SEEDS, prs: PRS, daySeconds: DAY_BUDGET_SECONDS },
    simulations: measured,
    latency: latencyResult,
    targets,
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(json, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, RESULTS_FILE)}`);
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `bench:merge-queue failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
