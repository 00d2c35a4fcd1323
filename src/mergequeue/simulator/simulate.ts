/**
 * The merge-queue simulator: the planner on a virtual clock, against a simulated git host and CI
 * (background §merge-queue-2.15: arrival rate, CI time, failure and flake rates, fan-out of
 * impacted targets). A discrete-event loop: PR arrivals, CI runs finishing and the planner's own
 * wake-ups sit in one heap ordered by virtual time, ties broken by the order they were scheduled.
 * Each is handed to `plan`, and its decisions are carried out exactly as a driver would:
 *
 * - `start_run`: a CI run of `run.prs` merged on `run.baseSha`; it ends after T·(1 + jitter·U)
 *   and fails (check "test") when it contains a bad PR or builds on a broken base, otherwise
 *   with the flake probability; `run_finished` is reported then.
 * - `cancel_run`: the run's pending completion is dropped.
 * - `merge`: done at once; `merge_finished` with a fresh commit is reported at the same time.
 * - `transition`: recorded; `merged`, `failed` and `cancelled` conclude the PR.
 *
 * No clock, no Math.random: the same options give the same report, to the byte.
 */
import type {
  Decision,
  ImpactedTargets,
  PlanResult,
  PullRequestInfo,
  QueueEvent,
  QueueSnapshot,
  TestRun,
} from "../model.js";
import { initialConfiguration, type QueueConfiguration } from "../settings.js";
import { EventHeap } from "./heap.js";
import type { SimulationOptions } from "./options.js";
import { Random } from "./random.js";
import { capMergesPerHour, effectiveFailureRate, expectedMergesPerHour } from "./theory.js";
import { generatePullRequests, type SimulatedPr } from "./workload.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../lib/time.js";

const TARGET_BRANCH = "main";
const FAILING_CHECK = "test";
/** Events handed to the planner at one virtual instant before the run counts as a livelock. */
const MAX_EVENTS_AT_ONE_INSTANT = 1_000_000;

/** The planner's two entry points (src/mergequeue/planner/index.ts). */
export interface Planner {
  initialSnapshot(input: {
    queueId: string;
    targetBranch: string;
    configuration: QueueConfiguration;
    headSha: string;
  }): QueueSnapshot;
  plan(snapshot: QueueSnapshot, event: QueueEvent, now: number): PlanResult;
}

export interface SimulationProgress {
  concluded: number;
  prs: number;
  virtualHours: number;
  events: number;
}

export interface SimulationHooks {
  /** Called every `progressEvery` events (default 2000). */
  onProgress?: (progress: SimulationProgress) => void;
  progressEvery?: number;
  /**
   * Called after every `plan` call with its wall time and the process's CPU time during it
   * (which other processes on the machine do not inflate), and how many PRs were queued.
   */
  onPlanTimed?: (
    event: QueueEvent["type"],
    time: { wallMs: number; cpuMs: number },
    queued: number,
  ) => void;
  /** Also send a `tick` every so many virtual minutes, whether the planner asked or not. */
  extraTickMinutes?: number;
  /**
   * Asked every 1000 events: true stops the simulation (`stopReason: "aborted"`), e.g. a
   * benchmark's wall-time budget. Leave it out wherever the report must be deterministic.
   */
  shouldStop?: () => boolean;
}

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

export interface SimulationResult {
  report: SimulationReport;
  /** Wall time of the run (not part of the report, which must be deterministic). */
  wallSeconds: number;
}

/** The queue configuration the options describe. */
export function simulationConfiguration(o: SimulationOptions): QueueConfiguration {
  return {
    ...initialConfiguration({
      mode: o.targetsFanout === null ? "single" : "parallel",
      concurrency: o.concurrency,
    }),
    bisectionConcurrency: o.bisectionConcurrency,
    testingTimeoutMinutes: o.testingTimeoutMinutes,
    pendingFailureDepth: o.pendingFailureDepth,
    canOptimisticallyMerge: o.optimistic,
    batch: o.batch,
    batchingMaxWaitTimeMinutes: o.batchWaitMinutes,
    batchingMinSize: o.batchSize,
    optimizationMode: o.optimizationMode,
    speculationThresholdPercent: o.speculationThresholdPercent,
  };
}

type Scheduled =
  | { at: number; kind: "arrival"; pr: number }
  | { at: number; kind: "run"; runId: string }
  | { at: number; kind: "wake"; generation: number }
  | { at: number; kind: "extra_tick" };

interface RunRecord {
  startedAt: number;
  endsAt: number;
  outcome: "passed" | "failed";
  flakyOnly?: boolean;
  /** The test branch did not build: no CI run. */
  conflict?: boolean;
  state: "running" | "finished" | "cancelled";
}

interface PrRecord {
  sim: SimulatedPr;
  info: PullRequestInfo;
  outcome: "merged" | "failed" | "cancelled" | null;
  concludedAt: number | null;
  mergedByDecision: boolean;
  reason: string | null;
}

/** A fresh commit id: 40 hex digits, `kind` first (a = PR head, b = branch commit). */
const sha = (kind: "a" | "b", n: number): string => kind + n.toString(16).padStart(39, "0");

function overlaps(a: ImpactedTargets | null, b: ImpactedTargets | null): boolean {
  if (a === null || b === null) return true; // single mode: one lane
  if (Array.isArray(a) && a.length === 0) return false;
  if (Array.isArray(b) && b.length === 0) return false;
  if (a === "ALL" || b === "ALL") return true;
  return b.some((target) => a.includes(target));
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

export function simulate(
  options: SimulationOptions,
  planner: Planner,
  hooks: SimulationHooks = {},
): SimulationResult {
  const wallStarted = performance.now();
  const o = options;
  const configuration = simulationConfiguration(o);
  const generated = generatePullRequests(o);
  const ci = new Random(o.seed, "ci");
  const prs = new Map<number, PrRecord>();
  for (const sim of generated) {
    prs.set(sim.number, {
      sim,
      info: {
        number: sim.number,
        title: `Simulated change #${sim.number}`,
        author: "sim",
        headSha: sha("a", sim.number),
        headBranch: `sim/pr-${sim.number}`,
        baseBranch: TARGET_BRANCH,
        mergeability: "mergeable",
        upToDate: false,
        checksPassed: true,
        state: "open",
        draft: false,
        ...(sim.stackedOn === null
          ? {}
          : { contains: [{ number: sim.stackedOn, headSha: sha("a", sim.stackedOn) }] }),
      },
      outcome: null,
      concludedAt: null,
      mergedByDecision: false,
      reason: null,
    });
  }

  // The branch: every commit it had, in order, with the PR each merge added.
  let commits = 0;
  const initialHead = sha("b", commits);
  let head = initialHead;
  const commitIndex = new Map<string, number>([[initialHead, 0]]);
  /** `lineage[k]` is the PR merged to make commit k (k ≥ 1). */
  const lineage: (number | null)[] = [null];
  /** Index of the first commit that contains a bad PR (everything after is broken too). */
  let brokenFrom = Number.POSITIVE_INFINITY;

  let snapshot = planner.initialSnapshot({
    queueId: "sim",
    targetBranch: TARGET_BRANCH,
    configuration,
    headSha: head,
  });

  const heap = new EventHeap<Scheduled>();
  for (const sim of generated) heap.push({ at: sim.arrivalAt, kind: "arrival", pr: sim.number });
  const extraTickMs = (hooks.extraTickMinutes ?? 0) * MINUTE;
  if (extraTickMs > 0) heap.push({ at: extraTickMs, kind: "extra_tick" });

  const runs = new Map<string, RunRecord>();
  /** What each run that may still clear a merge tested: its base and its PRs' numbers. */
  const tested = new Map<string, { baseSha: string; prs: Int32Array }>();
  const followUps: QueueEvent[] = [];
  let wakeGeneration = 0;
  let wakeAt: number | null = null;

  const anomalies: Anomalies = {
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
  };
  /** Commit index at which each PR landed (by merge). */
  const landedAt = new Map<number, number>();
  /** One lane, no priorities: queue order is submission order, and merges must keep it. */
  const singleLaneOrder = o.priorities === null && o.targetsFanout === null;
  /** The lowest PR number not yet concluded (PRs arrive in number order). */
  let lowestOpen = 1;
  let conflictBuilds = 0;
  const eventsByType: Record<string, number> = {};
  const transitions: Record<string, number> = {};
  let events = 0;
  let iterations = 0;
  let ciRuns = 0;
  let ciRunsCancelled = 0;
  let bisectionRuns = 0;
  let ciMs = 0;
  let prsInRuns = 0;
  let unitsInRuns = 0;
  let merges = 0;
  let badMerged = 0;
  let concluded = 0;
  let queued = 0;
  let maxQueued = 0;
  let queuedArea = 0;
  let lastAreaAt = 0;
  let lastConclusionAt = 0;
  let now = 0;
  let instant = -1;
  let eventsAtInstant = 0;
  let stopReason: StopReason | null = null;
  const progressEvery = Math.max(1, hooks.progressEvery ?? 2000);
  const timed = hooks.onPlanTimed;

  const advance = (to: number) => {
    queuedArea += queued * (to - lastAreaAt);
    lastAreaAt = to;
    now = to;
  };

  const conclude = (pr: PrRecord, outcome: "merged" | "failed" | "cancelled") => {
    if (pr.outcome !== null) {
      anomalies.actedOnConcludedPr += 1;
      return;
    }
    pr.outcome = outcome;
    pr.concludedAt = now;
    while (prs.get(lowestOpen)?.outcome != null) lowestOpen += 1;
    concluded += 1;
    queued -= 1;
    lastConclusionAt = now;
  };

  /**
   * The test branch: the first PR, in the run's order, that edits the same lines as a PR on the
   * base or ahead of it in the run does not apply (as `git merge-tree` finds it).
   */
  const buildConflict = (run: TestRun): QueueEvent | null => {
    const base = commitIndex.get(run.baseSha) ?? 0;
    const ahead: number[] = [];
    for (const item of run.prs) {
      const partners = prs.get(item.number)?.sim.conflictsWith ?? [];
      if (partners.length > 0) {
        const withBase = partners.some((n) => (landedAt.get(n) ?? Infinity) <= base);
        const withAhead = partners.filter((n) => ahead.includes(n));
        if (withBase || withAhead.length > 0) {
          return {
            type: "run_finished",
            runId: run.id,
            outcome: "failed",
            failingChecks: [],
            reason: "merge_conflict",
            conflict: {
              prNumber: item.number,
              files: ["shared.ts"],
              conflictsWith: withBase ? [] : withAhead,
            },
          };
        }
      }
      ahead.push(item.number);
    }
    return null;
  };

  const startRun = (run: TestRun) => {
    const conflict = buildConflict(run);
    if (conflict !== null) {
      // No CI run: the driver reports the conflict at once.
      conflictBuilds += 1;
      runs.set(run.id, {
        startedAt: now,
        endsAt: now,
        outcome: "failed",
        conflict: true,
        state: "finished",
      });
      tested.delete(run.id);
      followUps.push(conflict);
      return;
    }
    ciRuns += 1;
    if (run.kind === "bisection") bisectionRuns += 1;
    prsInRuns += run.prs.length;
    unitsInRuns += run.unit.length;
    let bad = false;
    let malformed = runs.has(run.id);
    for (const item of run.prs) {
      const pr = prs.get(item.number);
      if (pr === undefined || pr.info.headSha !== item.headSha) malformed = true;
      else if (pr.sim.bad) bad = true;
    }
    if (malformed) anomalies.malformedRun += 1;
    const base = commitIndex.get(run.baseSha);
    if (base === undefined) anomalies.runOnUnknownBase += 1;
    else if (base >= brokenFrom) bad = true;
    // Both draws always happen, so that one run's contents never shift another run's luck.
    const flaked = ci.chance(o.flakeRate);
    const duration = Math.max(
      1,
      Math.round(o.ciMinutes * MINUTE * (1 + o.ciJitter * ci.uniform(-1, 1))),
    );
    // Known flaky tests fail at most once on the same combination: its rerun passes.
    const flakes = flaked && (!o.flakesKnown || run.attempt === 1);
    const record: RunRecord = {
      startedAt: now,
      endsAt: now + duration,
      outcome: bad || flakes ? "failed" : "passed",
      flakyOnly: o.flakesKnown && flakes && !bad,
      state: "running",
    };
    runs.set(run.id, record);
    heap.push({ at: record.endsAt, kind: "run", runId: run.id });
  };

  /** The run that cleared a merge must contain every same-lane PR merged since its base. */
  const checkTested = (runId: string | null, pr: PrRecord) => {
    if (runId === null) return;
    const run = tested.get(runId);
    if (run === undefined) return;
    const base = commitIndex.get(run.baseSha);
    if (base === undefined) return;
    const numbers = new Set(run.prs);
    if (!numbers.has(pr.sim.number)) {
      anomalies.mergedUntestedCombination += 1;
      return;
    }
    for (let k = base + 1; k < lineage.length; k++) {
      const number = lineage[k];
      if (number === null || number === undefined) continue;
      const earlier = prs.get(number);
      if (earlier && overlaps(earlier.sim.targets, pr.sim.targets) && !numbers.has(number)) {
        anomalies.mergedUntestedCombination += 1;
        return;
      }
    }
  };
  const apply = (decision: Decision) => {
    switch (decision.type) {
      case "start_run":
        tested.set(decision.run.id, {
          baseSha: decision.run.baseSha,
          prs: Int32Array.from(decision.run.prs, (item) => item.number),
        });
        startRun(decision.run);
        return;
      case "cancel_run": {
        const run = runs.get(decision.runId);
        if (run?.conflict === true) return;
        if (run === undefined || run.state !== "running") {
          anomalies.cancelledUnknownRun += 1;
          return;
        }
        run.state = "cancelled";
        tested.delete(decision.runId);
        ciRunsCancelled += 1;
        ciMs += now - run.startedAt;
        return;
      }
      case "merge": {
        const pr = prs.get(decision.prNumber);
        if (pr === undefined) {
          anomalies.unknownPr += 1;
          return;
        }
        if (pr.outcome !== null || pr.mergedByDecision) anomalies.actedOnConcludedPr += 1;
        if (decision.expectedBaseSha !== head) anomalies.mergeBaseMoved += 1;
        if (singleLaneOrder && lowestOpen < pr.sim.number) anomalies.mergedOutOfOrder += 1;
        checkTested(decision.runId, pr);
        pr.mergedByDecision = true;
        merges += 1;
        if (pr.sim.bad) {
          badMerged += 1;
          brokenFrom = Math.min(brokenFrom, commits + 1);
        }
        commits += 1;
        head = sha("b", commits);
        commitIndex.set(head, commits);
        landedAt.set(pr.sim.number, commits);
        lineage.push(pr.sim.number);
        followUps.push({ type: "merge_finished", entryId: decision.entryId, newHeadSha: head });
        return;
      }
      case "transition": {
        const key = `${decision.to}:${decision.reason}`;
        transitions[key] = (transitions[key] ?? 0) + 1;
        const pr = prs.get(decision.prNumber);
        if (pr === undefined) {
          anomalies.unknownPr += 1;
          return;
        }
        if (decision.to === "merged" || decision.to === "failed" || decision.to === "cancelled") {
          pr.reason = decision.reason;
          if (decision.reason === "merged_through_stack") {
            // Its commits landed inside a PR stacked on it, which must have merged.
            const child = [...prs.values()].find(
              (c) => c.sim.stackedOn === pr.sim.number && c.mergedByDecision,
            );
            if (child === undefined) anomalies.mergedThroughNothing += 1;
            pr.mergedByDecision = true;
          }
          if (
            decision.reason === "merge_conflict" &&
            singleLaneOrder &&
            pr.sim.conflictsWith.every((n) => n > pr.sim.number)
          ) {
            anomalies.conflictWithLaterEvicted += 1;
          }
          conclude(pr, decision.to);
        }
        return;
      }
      case "queue_state":
        return;
    }
  };

  const setWake = (at: number | null) => {
    if (at === null) {
      if (wakeAt !== null) wakeGeneration += 1;
      wakeAt = null;
      return;
    }
    if (at <= now) anomalies.wakeNotInFuture += 1;
    const when = Math.max(at, now);
    if (when === wakeAt) return;
    wakeGeneration += 1;
    wakeAt = when;
    heap.push({ at: when, kind: "wake", generation: wakeGeneration });
  };

  const deliver = (event: QueueEvent) => {
    events += 1;
    eventsByType[event.type] = (eventsByType[event.type] ?? 0) + 1;
    let result: PlanResult;
    if (timed) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      result = planner.plan(snapshot, event, now);
      const wallMs = performance.now() - started;
      const used = process.cpuUsage(cpu);
      timed(event.type, { wallMs, cpuMs: (used.user + used.system) / 1000 }, queued);
    } else {
      result = planner.plan(snapshot, event, now);
    }
    snapshot = result.snapshot;
    if (result.rejection !== null) anomalies.rejectedEvents += 1;
    for (const decision of result.decisions) apply(decision);
    setWake(result.wakeAt);
    if (events % progressEvery === 0) {
      hooks.onProgress?.({ concluded, prs: o.prs, virtualHours: now / HOUR, events });
    }
  };

  const drainFollowUps = () => {
    for (let event = followUps.shift(); event !== undefined; event = followUps.shift()) {
      deliver(event);
    }
  };

  const maxMs = o.maxHours * HOUR;
  while (concluded < o.prs) {
    const next = heap.pop();
    if (next === undefined) {
      stopReason = "stalled";
      break;
    }
    if (next.at > maxMs) {
      advance(maxMs);
      stopReason = "time_cap";
      break;
    }
    let event: QueueEvent | null = null;
    switch (next.kind) {
      case "arrival": {
        const pr = prs.get(next.pr);
        if (pr === undefined) continue;
        advance(next.at);
        queued += 1;
        maxQueued = Math.max(maxQueued, queued);
        event = {
          type: "submit",
          pr: { ...pr.info },
          priority: pr.sim.priority,
          noBatch: false,
          actor: { kind: "user", name: "sim" },
        };
        break;
      }
      case "run": {
        const run = runs.get(next.runId);
        if (run === undefined || run.state !== "running") continue; // cancelled
        advance(next.at);
        run.state = "finished";
        if (run.outcome === "failed") tested.delete(next.runId);
        ciMs += run.endsAt - run.startedAt;
        event = {
          type: "run_finished",
          runId: next.runId,
          outcome: run.outcome,
          failingChecks: run.outcome === "failed" ? [FAILING_CHECK] : [],
          ...(run.flakyOnly ? { flakyOnly: true } : {}),
        };
        break;
      }
      case "wake":
        if (next.generation !== wakeGeneration) continue; // replaced by a later wakeAt
        advance(next.at);
        wakeAt = null;
        event = { type: "tick" };
        break;
      case "extra_tick":
        advance(next.at);
        heap.push({ at: next.at + extraTickMs, kind: "extra_tick" });
        event = { type: "tick" };
        break;
    }
    if (now !== instant) {
      instant = now;
      eventsAtInstant = 0;
    }
    eventsAtInstant += 1;
    if (eventsAtInstant > MAX_EVENTS_AT_ONE_INSTANT) {
      stopReason = "livelock";
      break;
    }
    iterations += 1;
    if (iterations % 1000 === 0 && hooks.shouldStop?.() === true) {
      stopReason = "aborted";
      break;
    }
    deliver(event);
    if (next.kind === "arrival") {
      const pr = prs.get(next.pr);
      if (pr?.sim.targets != null) {
        deliver({
          type: "set_impacted_targets",
          prNumber: pr.sim.number,
          headSha: pr.info.headSha,
          targets: pr.sim.targets,
        });
      }
    }
    drainFollowUps();
  }
  stopReason ??= "completed";
  if (stopReason === "completed") advance(lastConclusionAt);
  hooks.onProgress?.({ concluded, prs: o.prs, virtualHours: now / HOUR, events });

  // ---- the report ----
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
  for (const pr of prs.values()) {
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
  const report: SimulationReport = {
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
    badMerged,
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
    events,
    details: {
      badPrs,
      goodPrs: o.prs - badPrs,
      effectiveFailureRate: round(pEff, 6),
      firstArrivalMinutes: round(firstArrival / MINUTE),
      lastConclusionMinutes: round(lastConclusionAt / MINUTE),
      meanMinutesInQueue:
        inQueue.length > 0 ? round(inQueue.reduce((a, b) => a + b, 0) / inQueue.length) : null,
      maxMinutesInQueue: optional(inQueue[inQueue.length - 1] ?? null),
      maxQueued,
      meanQueued: now > 0 ? round(queuedArea / now) : 0,
      ciRunsCancelled,
      bisectionRuns,
      conflictingPrs,
      stackedPrs,
      conflictBuilds,
      conflictEvictions,
      conflictingMerged,
      ciHours: round(ciMs / HOUR),
      meanPrsPerRun: ciRuns > 0 ? round(prsInRuns / ciRuns) : null,
      meanUnitSize: ciRuns > 0 ? round(unitsInRuns / ciRuns) : null,
      merges,
      eventsByType: sortedKeys(eventsByType),
      transitions: sortedKeys(transitions),
      anomalies,
    },
  };
  return { report, wallSeconds: (performance.now() - wallStarted) / 1000 };
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
