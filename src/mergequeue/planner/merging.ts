/**
 * Merging: what a passed run would land now, the run that clears the front entry (its own or,
 * with optimistic merging, a later one), direct merge, and one merge at a time.
 */
import type { Entry, ImpactedTargets, QueueSnapshot, TestRun } from "../model.js";
import { type PlanningState, at, config, entryOf, targetsOf, targetsOverlap } from "./state.js";
import { lineageIndexOf } from "./indexes.js";

/**
 * Where in `base.merges` the PRs merged since `baseSha` start (`merges.length` when nothing
 * landed since); undefined if the head is not on the lineage.
 */
export function landedFrom(p: PlanningState, baseSha: string): number | undefined {
  const base = p.s.base;
  if (baseSha === base.anchorSha) return 0;
  const index = lineageIndex(p).get(baseSha);
  return index === undefined ? undefined : index + 1;
}

/** Where each head of the lineage is (kept across calls, extended as merges are appended). */
export function lineageIndex(p: PlanningState): Map<string, number> {
  return lineageIndexOf(p.s.base.merges);
}

/**
 * What merging a passed run would land, if it is still exactly what the run tested: the
 * queued entries of the run after what has already landed. Undefined when the run no longer
 * matches the target branch (then it cannot clear anything).
 */
export function landingOf(p: PlanningState, run: TestRun): Entry[] | undefined {
  const from = landedFrom(p, run.baseSha);
  if (from === undefined) return undefined;
  let position = 0;
  if (config(p).mode !== "parallel") {
    // One lane: what landed must be exactly the run's first PRs.
    const merges = p.s.base.merges;
    for (let m = from; m < merges.length; m++) {
      if (run.prs[position]?.entryId !== at(merges, m).entryId) return undefined;
      position += 1;
    }
  } else {
    const landed = p.s.base.merges.slice(from);
    // Lanes: the run's own PRs may land in any order that respects their dependencies; a PR of
    // another lane that landed meanwhile is harmless when it is independent of what is left.
    const included = new Set(run.prs.map((pr) => pr.entryId));
    const landedIds = new Set<string>();
    const foreign: ImpactedTargets[] = [];
    for (const merge of landed) {
      if (included.has(merge.entryId)) landedIds.add(merge.entryId);
      else foreign.push(merge.targets);
    }
    const rest: Entry[] = [];
    for (const pr of run.prs) {
      if (landedIds.has(pr.entryId)) continue;
      const entry = p.s.entries[pr.entryId];
      if (!entry || entry.pr.headSha !== pr.headSha) return undefined;
      const targets = targetsOf(p, entry);
      if (foreign.some((t) => targetsOverlap(t, targets))) return undefined;
      rest.push(entry);
    }
    return rest;
  }
  const rest: Entry[] = [];
  for (let i = position; i < run.prs.length; i++) {
    const pr = at(run.prs, i);
    const entry = p.s.entries[pr.entryId];
    if (!entry || entry.pr.headSha !== pr.headSha) return undefined;
    rest.push(entry);
  }
  return rest;
}

/** A passed later run that contains `entry` and can clear it (optimistic merging). */
export function clearingRun(p: PlanningState, entry: Entry): TestRun | null {
  for (const run of Object.values(p.s.runs)) {
    if (run.status !== "passed" || run.kind !== "main") continue;
    const landing = landingOf(p, run);
    if (landing && landing[0]?.id === entry.id) return run;
  }
  return null;
}

export function mergeNext(p: PlanningState): void {
  if (p.s.merging !== null) return;
  if (config(p).state === "paused") return;
  const order = p.s.order;
  const aheadTargets: ImpactedTargets[] = [];
  for (let i = 0; i < order.length; i++) {
    const entry = entryOf(p, at(order, i));
    const targets = targetsOf(p, entry);
    const blocked = aheadTargets.some((t) => targetsOverlap(t, targets));
    aheadTargets.push(targets);
    if (blocked) {
      if (config(p).mode !== "parallel") return;
      continue;
    }
    if (entry.state === "pending" || entry.bisection !== null) continue;
    const clearance = clearanceFor(p, entry);
    if (clearance) {
      startMerge(p, entry, clearance);
      return;
    }
  }
}

/** The passed run that lets the front entry merge now, if there is one. */
function clearanceFor(
  p: PlanningState,
  entry: Entry,
): { runId: string | null; reason: "merged_by_queue" | "merged_optimistically" } | null {
  const own = entry.runId ? p.s.runs[entry.runId] : undefined;
  if (own?.status === "passed" && entry.state === "tests_passed") {
    const landing = landingOf(p, own);
    // Its own run: it lands exactly the unit that was tested (a batch lands PR by PR).
    if (landing && landing[0]?.id === entry.id && landing.every((e) => own.unit.includes(e.id))) {
      return { runId: own.id, reason: "merged_by_queue" };
    }
  }
  if (!config(p).canOptimisticallyMerge) return null;
  const clearing = clearingRun(p, entry);
  if (!clearing) return null;
  return {
    runId: clearing.id,
    reason: clearing.unit.includes(entry.id) ? "merged_by_queue" : "merged_optimistically",
  };
}

/** `directMergeMode: always`: up to date, own checks green, nothing ahead: no queue run. */
export function tryDirectMerge(p: PlanningState, entry: Entry, deps: string[]): boolean {
  if (config(p).directMergeMode !== "always") return false;
  if (p.s.merging !== null || entry.positioned) return false;
  if (!entry.pr.upToDate || !entry.pr.checksPassed) return false;
  if (entry.pr.headSha === p.s.base.headSha) return false;
  if (deps.length > 0) return false;
  if (config(p).mode !== "parallel") {
    const busy = Object.values(p.s.runs).some((r) => r.status === "running");
    if (busy || p.s.order[0] !== entry.id) return false;
  }
  startMerge(p, entry, { runId: null, reason: "merged_directly" });
  return true;
}

/** One merge at a time, pinned to the head the branch is at now. */
function startMerge(
  p: PlanningState,
  entry: Entry,
  clearance: Omit<NonNullable<QueueSnapshot["merging"]>, "entryId">,
): void {
  p.s.merging = { ...clearance, entryId: entry.id };
  p.decisions.push({
    type: "merge",
    entryId: entry.id,
    prNumber: entry.pr.number,
    headSha: entry.pr.headSha,
    expectedBaseSha: p.s.base.headSha,
    method: config(p).mergeMethod,
    runId: clearance.runId,
    reason: clearance.reason,
  });
}
