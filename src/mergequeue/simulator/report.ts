/**
 * The simulation's report: the counts the simulation keeps while it runs, and the summary made of
 * them at the end (deterministic: the same counts give the same report, to the byte).
 */
import type { SimulationOptions } from "./options.js";
import { capMergesPerHour, effectiveFailureRate, expectedMergesPerHour } from "./theory.js";
import type { SimulatedPr } from "./workload.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../lib/time.js";

export type StopReason =
  /** Every PR concluded. */
  | "completed"
  /** The virtual time cap passed first. */
  | "time_cap"
  /** Nothing left to happen (no run, no wake-up, no arrival) while PRs were still queued. */
  | "stalled"
  /** The planner kept asking for wake-ups at the same instant. */
  | "livelock"
  /** The caller's `shouldStop` said so. */
  | "aborted";

/** Things a correct planner never does; each counted, none stops the simulation. */
export interface Anomalies {
  /** A `merge` whose expectedBaseSha was not the branch head (a real host refuses it). */
  mergeBaseMoved: number;
  /** A merge whose run did not contain every earlier merge it depends on (untested code). */
  mergedUntestedCombination: number;
  /** A `merge` or terminal transition of a PR that had already concluded. */
  actedOnConcludedPr: number;
  /** A `start_run` reusing the id of another run, or naming a PR the simulation never sent. */
  malformedRun: number;
  /** A run built on a commit the branch never had. */
  runOnUnknownBase: number;
  /** A `cancel_run` of a run that was not running. */
  cancelledUnknownRun: number;
  /** A decision naming a PR number the simulation never submitted. */
  unknownPr: number;
  /** `wakeAt` at or before the current time. */
  wakeNotInFuture: number;
  /** A merge decision for a PR that never reached `merged`, or the reverse, at the end. */
  mergeTransitionMismatch: number;
  /** The planner refused an event (`rejection`). */
  rejectedEvents: number;
  /**
   * A merge while a PR submitted earlier was still queued (counted only in one lane without
   * priorities, where queue order is submission order): the queue's order broken.
   */
  mergedOutOfOrder: number;
  /** A PR concluded `merged_through_stack` although no PR stacked on it had merged. */
  mergedThroughNothing: number;
  /**
   * A PR failed with `merge_conflict` though every PR it conflicts with was submitted after it
   * (counted only in one lane without priorities): it failed for conflicting with one behind.
   */
  conflictWithLaterEvicted: number;
}

export interface SimulationReport {
  settings: Record<string, unknown>;
  stopReason: StopReason;
  prs: number;
  merged: number;
  failed: number;
  cancelled: number;
  unfinished: number;
  mergedPerHour: number;
  ciRuns: number;
  ciRunsPerMerged: number | null;
  p50MinutesInQueue: number | null;
  p95MinutesInQueue: number | null;
  /** Failed PRs that were good: not bad (pass alone) and conflicting with no other PR. */
  goodPrsEvicted: number;
  badMerged: number;
  /** Single-lane ceiling (1-p)/p per T, p counting flakes; null when nothing can fail. */
  theoreticalCapPerHour: number | null;
  /** Round model b·S(q, C)·60/T with this run's b, C and p (flakes counted). */
  expectedPerHour: number;
  virtualHours: number;
  events: number;
  details: {
    badPrs: number;
    goodPrs: number;
    effectiveFailureRate: number;
    firstArrivalMinutes: number;
    lastConclusionMinutes: number;
    meanMinutesInQueue: number | null;
    maxMinutesInQueue: number | null;
    maxQueued: number;
    meanQueued: number;
    ciRunsCancelled: number;
    bisectionRuns: number;
    /** PRs with a conflict partner, PRs stacked on another, test branches that did not build. */
    conflictingPrs: number;
    stackedPrs: number;
    conflictBuilds: number;
    /** Conflicting PRs that failed with `merge_conflict` / merged. */
    conflictEvictions: number;
    conflictingMerged: number;
    ciHours: number;
    meanPrsPerRun: number | null;
    meanUnitSize: number | null;
    merges: number;
    eventsByType: Record<string, number>;
    transitions: Record<string, number>;
    anomalies: Anomalies;
  };
}

/** What the simulation counts while it runs (times in virtual milliseconds). */
export interface SimulationTally {
  /** Events handed to the planner, in all and by type. */
  events: number;
  eventsByType: Record<string, number>;
  /** Transitions decided, by `to:reason`. */
  transitions: Record<string, number>;
  anomalies: Anomalies;
  ciRuns: number;
  ciRunsCancelled: number;
  bisectionRuns: number;
  /** CI time spent: finished runs in full, cancelled runs until their cancellation. */
  ciMs: number;
  prsInRuns: number;
  unitsInRuns: number;
  /** Test branches that did not build (no CI run). */
  conflictBuilds: number;
  merges: number;
  badMerged: number;
  concluded: number;
  /** PRs queued now, the most ever, and the integral of `queued` over virtual time. */
  queued: number;
  maxQueued: number;
  queuedArea: number;
  lastConclusionAt: number;
}

/** What became of one simulated PR, as the report reads it. */
export interface PrOutcome {
  sim: SimulatedPr;
  outcome: "merged" | "failed" | "cancelled" | null;
  concludedAt: number | null;
  mergedByDecision: boolean;
  reason: string | null;
}

export function newTally(): SimulationTally {
  return {
    events: 0,
    eventsByType: {},
    transitions: {},
    anomalies: {
      mergeBaseMoved: 0,
      mergedUntestedCombination: 0,
      actedOnConcludedPr: 0,
      malformedRun: 0,
      runOnUnknownBase: 0,
      cancelledUnknownRun: 0,
      unknownPr: 0,
      wakeNotInFuture: 0,
      mergeTransitionMismatch: 0,
      rejectedEvents: 0,
      mergedOutOfOrder: 0,
      mergedThroughNothing: 0,
      conflictWithLaterEvicted: 0,
    },
    ciRuns: 0,
    ciRunsCancelled: 0,
    bisectionRuns: 0,
    ciMs: 0,
    prsInRuns: 0,
    unitsInRuns: 0,
    conflictBuilds: 0,
    merges: 0,
    badMerged: 0,
    concluded: 0,
    queued: 0,
    maxQueued: 0,
    queuedArea: 0,
    lastConclusionAt: 0,
  };
}

const round = (value: number, digits = 3): number => {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
};

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], fraction: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(fraction * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

/**
 * The report of a simulation that stopped for `stopReason` at virtual time `now`. Also counts
 * the PRs whose merge decisions and transitions disagree (`mergeTransitionMismatch`).
 */
export function buildReport(
  o: SimulationOptions,
  generated: readonly SimulatedPr[],
  prs: Iterable<PrOutcome>,
  tally: SimulationTally,
  stopReason: StopReason,
  now: number,
): SimulationReport {
  const { anomalies, ciRuns, lastConclusionAt } = tally;
  let merged = 0;
  let failed = 0;
  let cancelled = 0;
  let goodPrsEvicted = 0;
  let badPrs = 0;
  let conflictingPrs = 0;
  let stackedPrs = 0;
  let conflictEvictions = 0;
  let conflictingMerged = 0;
  const inQueue: number[] = [];
  for (const pr of prs) {
    if (pr.sim.bad) badPrs += 1;
    if (pr.sim.stackedOn !== null) stackedPrs += 1;
    const conflicting = pr.sim.conflictsWith.length > 0;
    if (conflicting) {
      conflictingPrs += 1;
      if (pr.outcome === "merged") conflictingMerged += 1;
      if (pr.reason === "merge_conflict") conflictEvictions += 1;
    }
    if (pr.mergedByDecision !== (pr.outcome === "merged")) anomalies.mergeTransitionMismatch += 1;
    if (pr.outcome === "merged") {
      merged += 1;
      inQueue.push(((pr.concludedAt ?? 0) - pr.sim.arrivalAt) / MINUTE);
    } else if (pr.outcome === "failed") {
      failed += 1;
      if (!pr.sim.bad && !conflicting) goodPrsEvicted += 1;
    } else if (pr.outcome === "cancelled") cancelled += 1;
  }
  inQueue.sort((a, b) => a - b);
  const firstArrival = generated.reduce((min, pr) => Math.min(min, pr.arrivalAt), Infinity);
  const spanHours = (lastConclusionAt - firstArrival) / HOUR;
  const pEff = effectiveFailureRate(o.failureRate, o.flakeRate);
  const batchSize = o.batch ? o.batchSize : 1;
  const cap = capMergesPerHour(pEff, o.ciMinutes);
  const optional = (value: number | null) => (value === null ? null : round(value));
  return {
    settings: describeSettings(o),
    stopReason,
    prs: o.prs,
    merged,
    failed,
    cancelled,
    unfinished: o.prs - merged - failed - cancelled,
    mergedPerHour: spanHours > 0 ? round(merged / spanHours) : 0,
    ciRuns,
    ciRunsPerMerged: merged > 0 ? round(ciRuns / merged) : null,
    p50MinutesInQueue: optional(percentile(inQueue, 0.5)),
    p95MinutesInQueue: optional(percentile(inQueue, 0.95)),
    goodPrsEvicted,
    badMerged: tally.badMerged,
    theoreticalCapPerHour: Number.isFinite(cap) ? round(cap) : null,
    expectedPerHour: round(
      expectedMergesPerHour({
        failureRate: pEff,
        batchSize,
        concurrency: o.concurrency,
        ciMinutes: o.ciMinutes,
      }),
    ),
    virtualHours: round(now / HOUR),
    events: tally.events,
    details: {
      badPrs,
      goodPrs: o.prs - badPrs,
      effectiveFailureRate: round(pEff, 6),
      firstArrivalMinutes: round(firstArrival / MINUTE),
      lastConclusionMinutes: round(lastConclusionAt / MINUTE),
      meanMinutesInQueue:
        inQueue.length > 0 ? round(inQueue.reduce((a, b) => a + b, 0) / inQueue.length) : null,
      maxMinutesInQueue: optional(inQueue[inQueue.length - 1] ?? null),
      maxQueued: tally.maxQueued,
      meanQueued: now > 0 ? round(tally.queuedArea / now) : 0,
      ciRunsCancelled: tally.ciRunsCancelled,
      bisectionRuns: tally.bisectionRuns,
      conflictingPrs,
      stackedPrs,
      conflictBuilds: tally.conflictBuilds,
      conflictEvictions,
      conflictingMerged,
      ciHours: round(tally.ciMs / HOUR),
      meanPrsPerRun: ciRuns > 0 ? round(tally.prsInRuns / ciRuns) : null,
      meanUnitSize: ciRuns > 0 ? round(tally.unitsInRuns / ciRuns) : null,
      merges: tally.merges,
      eventsByType: sortedKeys(tally.eventsByType),
      transitions: sortedKeys(tally.transitions),
      anomalies,
    },
  };
}

function sortedKeys(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
}
/** The options as the report shows them (specs written back in their flag syntax). */
export function describeSettings(o: SimulationOptions): Record<string, unknown> {
  const spec = (rows: { weight: number; value: number | string }[] | null) =>
    rows === null ? null : rows.map((row) => `${round(row.weight, 6)}x${row.value}`).join(",");
  return {
    prs: o.prs,
    arrivals:
      o.arrivals.kind === "burst"
        ? "burst"
        : `poisson ${o.arrivals.perHour}/h` +
          (o.arrivals.backlog ? ` after ${o.arrivals.backlog} at 0` : ""),
    ciMinutes: o.ciMinutes,
    ciJitter: o.ciJitter,
    failFirstFraction: o.failFirstFraction,
    failureRate: o.failureRate,
    flakeRate: o.flakeRate,
    flakesKnown: o.flakesKnown,
    conflictRate: o.conflictRate,
    stackRate: o.stackRate,
    mode: o.targetsFanout === null ? "single" : "parallel",
    concurrency: o.concurrency,
    batch: o.batch,
    batchSize: o.batch ? o.batchSize : null,
    batchWaitMinutes: o.batch ? o.batchWaitMinutes : null,
    bisectionConcurrency: o.bisectionConcurrency,
    pendingFailureDepth: o.pendingFailureDepth,
    optimistic: o.optimistic,
    optimizationMode: o.optimizationMode,
    speculationThresholdPercent: o.speculationThresholdPercent,
    testingTimeoutMinutes: o.testingTimeoutMinutes,
    priorities: spec(o.priorities),
    targets: o.targetsFanout === null ? null : o.targets,
    targetsFanout: spec(o.targetsFanout),
    seed: o.seed,
    maxHours: o.maxHours,
  };
}
