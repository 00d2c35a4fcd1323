/**
 * Pending failure: a failed unit is held until its failure stands (predecessors decided,
 * successors within `pendingFailureDepth` finished, no passed later run to clear it); then a
 * single PR fails, and a batch is bisected to find its culprits.
 */
import { QUEUE_ACTOR, type Entry, type TestRun } from "../model.js";
import { type PlanningState, at, config, entryOf } from "./state.js";
import { recordVerdict } from "./state-changes.js";
import { conclude } from "./order.js";
import { clearingRun } from "./merging.js";
import { startBisection } from "./bisection.js";

export function resolveFailures(p: PlanningState): void {
  const seen = new Set<string>();
  for (const id of heldInOrder(p)) {
    const entry = p.s.entries[id];
    if (!entry || entry.state !== "pending_failure" || entry.bisection || !entry.failure) continue;
    const runId = entry.failure.runId;
    if (seen.has(runId)) continue;
    seen.add(runId);
    const run = p.s.runs[runId];
    if (!run) continue;
    const unit = run.unit
      .map((u) => p.s.entries[u])
      .filter((e): e is Entry => e?.failure?.runId === runId && e.bisection === null);
    if (unit.length === 0) continue;
    // Wait for every predecessor the run included: a failure among them explains this one.
    if (run.ahead.some((a) => p.s.entries[a] !== undefined)) continue;
    if (p.s.merging !== null && unit.some((e) => e.id === p.s.merging?.entryId)) continue;
    if (waitingForSuccessors(p, unit)) continue;
    // With optimistic merging, a passed successor clears it: the merge step does that.
    if (config(p).canOptimisticallyMerge && clearingRun(p, at(unit, 0)) !== null) continue;
    // The failure stands: it counts towards the queue's failure rate.
    recordVerdict(p, unit.length, true);
    if (unit.length === 1) {
      const only = at(unit, 0);
      const failure = only.failure ?? entry.failure;
      conclude(
        p,
        only,
        "failed",
        failure.reason,
        QUEUE_ACTOR,
        runId,
        failure.detail ??
          (failure.checks.length > 0 ? `failed: ${failure.checks.join(", ")}` : null),
      );
    } else {
      startBisection(p, run, unit);
    }
  }
}

/**
 * The queued entries holding a failure of their own run (`pending_failure`, not bisected), in
 * queue order. Found through the runs (a failure points at a run whose unit holds the entry),
 * so that the cost follows the runs, not the length of the queue.
 */
function heldInOrder(p: PlanningState): string[] {
  const held: string[] = [];
  for (const run of Object.values(p.s.runs)) {
    for (const id of run.unit) {
      const entry = p.s.entries[id];
      if (
        entry?.state === "pending_failure" &&
        !entry.bisection &&
        entry.failure?.runId === run.id
      ) {
        held.push(id);
      }
    }
  }
  if (held.length === 0) return held;
  const positions = new Map<string, number>();
  for (const id of held) positions.set(id, p.s.order.indexOf(id));
  return [...new Set(held)]
    .filter((id) => (positions.get(id) ?? -1) >= 0)
    .sort((a, b) => (positions.get(a) ?? 0) - (positions.get(b) ?? 0));
}

/** `pendingFailureDepth`: successors within that many levels still testing with this unit. */
function waitingForSuccessors(p: PlanningState, unit: Entry[]): boolean {
  const depth = config(p).pendingFailureDepth;
  if (depth <= 0) return false;
  const ids = new Set(unit.map((e) => e.id));
  const successorRuns = new Map<string, TestRun>();
  const order = p.s.order;
  const start = Math.max(...unit.map((e) => order.indexOf(e.id)));
  for (let i = start + 1; i < order.length && successorRuns.size < depth; i++) {
    const entry = entryOf(p, at(order, i));
    const run = entry.runId ? p.s.runs[entry.runId] : undefined;
    if (!run || run.kind !== "main" || ids.has(entry.id)) continue;
    if (!run.prs.some((pr) => ids.has(pr.entryId))) continue;
    successorRuns.set(run.id, run);
  }
  return [...successorRuns.values()].some((run) => run.status === "running");
}
