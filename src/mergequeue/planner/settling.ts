/**
 * Settling: after an event the queue is brought to rest (stale runs invalidated, failures
 * resolved, merges and bisections advanced, new runs started), round after round until a round
 * decides nothing.
 */
import { QUEUE_ACTOR, URGENT_PRIORITY, type ImpactedTargets } from "../model.js";
import { finishModeSwitch } from "../settings.js";
import { worthSpeculating } from "../speculation.js";
import { MINUTE_MS as MINUTE } from "../../lib/time.js";
import {
  type PlanningState,
  at,
  config,
  entryOf,
  inFlight,
  targetsOf,
  targetsOverlap,
} from "./state.js";
import { invalidateRun, newRun, toPending, transition } from "./state-changes.js";
import { landedFrom, landingOf, mergeNext, tryDirectMerge } from "./merging.js";
import { presumedCulprit, progressBisections } from "./bisection.js";
import { dependenciesAt, inFlightAhead } from "./dependencies.js";
import { batchSizeChoice } from "../batch-size.js";
import { resolveFailures } from "./pending-failure.js";
import { collectGarbage } from "./housekeeping.js";

export function settle(p: PlanningState): void {
  for (let round = 0; round < 10_000; round++) {
    const before = p.decisions.length;
    revalidate(p);
    resolveFailures(p);
    mergeNext(p);
    progressBisections(p);
    startRuns(p);
    finishModeSwitchIfEmpty(p);
    if (p.decisions.length === before) break;
  }
  collectGarbage(p);
}

/**
 * Runs planned on a base that has since changed in a way they did not include (a bisected PR
 * landed ahead of them, a merge in another lane touched their targets) test the wrong thing.
 */
function revalidate(p: PlanningState): void {
  for (const run of Object.values(p.s.runs)) {
    if (run.kind !== "main" && run.status !== "passed") continue;
    if (run.status === "running" || run.status === "passed") {
      if (landingOf(p, run) === undefined) {
        invalidateRun(p, run, "restarted_on_new_base", QUEUE_ACTOR);
      }
    } else if (run.status === "failed" && landedFrom(p, run.baseSha) === undefined) {
      for (const id of run.unit) {
        const entry = p.s.entries[id];
        if (entry?.failure?.runId === run.id && !entry.bisection) {
          toPending(p, entry, "restarted_on_new_base", QUEUE_ACTOR);
        }
      }
    }
  }
}

function finishModeSwitchIfEmpty(p: PlanningState): void {
  if (config(p).state !== "switching_modes") return;
  if (Object.keys(p.s.entries).length > 0) return;
  p.s.configuration = finishModeSwitch(config(p));
  p.decisions.push({ type: "queue_state", configuration: p.s.configuration });
}

function startRuns(p: PlanningState): void {
  p.batchDeadline = null;
  // Only the few entries told to wait last time carry a reason; they are listed.
  for (const id of p.s.waiting ?? []) {
    const entry = p.s.entries[id];
    if (entry) Reflect.deleteProperty(entry, "waiting");
  }
  if (p.s.waiting !== undefined) Reflect.deleteProperty(p.s, "waiting");
  // Runs are planned on the branch as it is: not while a merge is moving it.
  if (config(p).state === "paused" || p.s.merging !== null) return;
  let slots =
    config(p).concurrency -
    Object.values(p.s.runs).filter((r) => r.status === "running" && r.kind === "main").length;
  const order = p.s.order;
  const blockedTargets: ImpactedTargets[] = [];
  for (let i = 0; i < order.length && slots > 0; i++) {
    const entry = entryOf(p, at(order, i));
    if (entry.bisection !== null) {
      // Presumed good: in flight on its prefix run. The presumed culprit is held out.
      if (entry.bisection.presumedGood === true || presumedCulprit(p, entry)) continue;
      // Undecided PRs hold their places: what depends on them waits for their verdict.
      if (config(p).mode !== "parallel") {
        markWaitingBehindBisection(p, i);
        break;
      }
      blockedTargets.push(targetsOf(p, entry));
      continue;
    }
    if (entry.state !== "pending") continue;
    const targets = targetsOf(p, entry);
    // Something ahead that it depends on is still waiting: it must wait too (order).
    if (blockedTargets.some((t) => targetsOverlap(t, targets))) {
      if (config(p).mode !== "parallel") break;
      blockedTargets.push(targets);
      continue;
    }
    const deps = dependenciesAt(p, i, targets);
    const depsReady = deps.every((id) => {
      const dep = entryOf(p, id);
      return inFlight(dep) || dep.bisection !== null;
    });
    if (!depsReady || beyondFailureDepth(p, deps) || !worthStarting(p, deps)) {
      if (config(p).mode !== "parallel") break;
      blockedTargets.push(targets);
      continue;
    }
    if (tryDirectMerge(p, entry, deps)) return;
    const unit = formUnit(p, i);
    if (unit === null) {
      blockedTargets.push(targets);
      continue;
    }
    startMainRun(p, unit);
    slots -= 1;
    // One lane: the batch is consecutive. Lanes: entries left out of it are still to be seen.
    if (config(p).mode !== "parallel") i = order.indexOf(at(unit, unit.length - 1));
  }
}

/**
 * `speculationThresholdPercent`: whether a run on top of `deps` is likely enough to be used,
 * given the pull requests among them still being tested and the queue's failure rate.
 */
function worthStarting(p: PlanningState, deps: string[]): boolean {
  const threshold = config(p).speculationThresholdPercent;
  if (threshold <= 0) return true;
  let untested = 0;
  for (const id of deps) {
    const dep = entryOf(p, id);
    if (dep.state === "testing" || dep.bisection?.presumedGood === true) untested += 1;
  }
  return worthSpeculating(threshold, p.s.verdicts, untested);
}

/**
 * Whether a new run would sit on top of a held failure deeper than `pendingFailureDepth`
 * successor levels: only that many successors can clear it, so a run further behind would most
 * likely fail with it and be thrown away. It waits until the failure is resolved.
 */
function beyondFailureDepth(p: PlanningState, deps: string[]): boolean {
  const depth = config(p).pendingFailureDepth;
  let counts: Map<string, number> | null = null;
  for (const id of deps) {
    const held = entryOf(p, id);
    if (held.state !== "pending_failure" || held.bisection !== null) continue;
    counts ??= successorCounts(p);
    if ((counts.get(id) ?? 0) >= depth) return true;
  }
  return false;
}

/**
 * For every entry, how many runs include it ahead of their own unit and still count as its
 * successors: testing, passed, or failed with it and held too.
 */
function successorCounts(p: PlanningState): Map<string, number> {
  const counts = new Map<string, number>();
  for (const run of Object.values(p.s.runs)) {
    if (run.kind !== "main" || run.status === "cancelled") continue;
    if (run.status === "failed") {
      const held = run.unit.some((u) => p.s.entries[u]?.failure?.runId === run.id);
      if (!held) continue;
    }
    for (const id of run.ahead) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * The entries tested together starting at `index`: one, or with batching up to the target
 * size of consecutive ready entries. Null while a batch is still filling up.
 */
function formUnit(p: PlanningState, index: number): string[] | null {
  const order = p.s.order;
  const first = entryOf(p, at(order, index));
  if (!config(p).batch || first.noBatch) return [first.id];
  const size = batchSizeChoice(config(p), p.s.verdicts).size;
  if (size === 1) return [first.id];
  const unit =
    config(p).mode === "parallel" ? laneBatch(p, index, size) : consecutiveBatch(p, index, size);
  let oldestReady = Infinity;
  for (const id of unit) oldestReady = Math.min(oldestReady, entryOf(p, id).readyAt ?? p.now);
  if (unit.length >= size) return unit;
  const urgent = unit.some((id) => entryOf(p, id).priorityValue === URGENT_PRIORITY);
  const wait = Math.min(
    config(p).batchingMaxWaitTimeMinutes * MINUTE,
    p.limits.batchWaitMs ?? Infinity,
  );
  const deadline = oldestReady + wait;
  if (urgent || p.now >= deadline || config(p).state !== "running") return unit;
  p.batchDeadline = Math.min(p.batchDeadline ?? Infinity, deadline);
  for (const id of unit) {
    entryOf(p, id).waiting = {
      kind: "batch_forming",
      have: unit.length,
      need: size,
      startsBy: deadline,
    };
    (p.s.waiting ??= []).push(id);
  }
  return null;
}

/** Single mode: the ready entries from `index` on, in order, up to `size`. */
function consecutiveBatch(p: PlanningState, index: number, size: number): string[] {
  const order = p.s.order;
  const unit: string[] = [];
  for (let i = index; i < order.length && unit.length < size; i++) {
    const entry = entryOf(p, at(order, i));
    if (entry.state !== "pending" || entry.noBatch) break;
    unit.push(entry.id);
  }
  return unit;
}

/** How far behind its first entry a lane's batch looks for more (bounds the planner's work). */
const LANE_SCAN = 256;

/**
 * Parallel mode: a batch stays in its lane. From `index` on, the ready entries whose targets
 * overlap the batch's, up to `size`; independent entries are left for their own lane's batch,
 * and an entry that depends on one left out (or on anything ahead not in flight) cannot join.
 */
function laneBatch(p: PlanningState, index: number, size: number): string[] {
  const order = p.s.order;
  const first = entryOf(p, at(order, index));
  const unit = [first.id];
  const inUnit = new Set(unit);
  const batchTargets: ImpactedTargets[] = [targetsOf(p, first)];
  const leftOut: ImpactedTargets[] = [];
  const end = Math.min(order.length, index + 1 + LANE_SCAN);
  for (let i = index + 1; i < end && unit.length < size; i++) {
    const entry = entryOf(p, at(order, i));
    const targets = targetsOf(p, entry);
    // An entry in flight between counts as left out too: the run goes on top of what is ahead
    // of its first entry, so nothing in it may depend on an entry behind that one.
    const joins =
      entry.state === "pending" &&
      !entry.noBatch &&
      batchTargets.some((t) => targetsOverlap(t, targets)) &&
      !leftOut.some((t) => targetsOverlap(t, targets)) &&
      dependenciesAt(p, i, targets).every((id) => inUnit.has(id) || inFlight(entryOf(p, id)));
    if (!joins) {
      leftOut.push(targets);
      continue;
    }
    unit.push(entry.id);
    inUnit.add(entry.id);
    batchTargets.push(targets);
  }
  return unit;
}

/** The first pending entry behind a batch under bisection says what it waits for. */
function markWaitingBehindBisection(p: PlanningState, index: number): void {
  const order = p.s.order;
  const held: number[] = [];
  for (let i = index; i < order.length; i++) {
    const entry = entryOf(p, at(order, i));
    if (entry.bisection !== null) {
      held.push(entry.pr.number);
      continue;
    }
    if (entry.state === "pending") {
      entry.waiting = { kind: "bisection_ahead", prNumbers: held };
      (p.s.waiting ??= []).push(entry.id);
      return;
    }
  }
}

function startMainRun(p: PlanningState, unitIds: string[]): void {
  const aheadIds = inFlightAhead(p, unitIds);
  const run = newRun(p, {
    kind: "main",
    ahead: aheadIds,
    unit: unitIds,
    attempt: 1,
    bisectionGroup: null,
  });
  for (const id of unitIds) {
    const entry = entryOf(p, id);
    entry.runId = run.id;
    entry.unit = unitIds;
    entry.positioned = true;
    transition(p, entry, "testing", "test_run_started", run.id);
  }
}
