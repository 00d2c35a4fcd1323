/**
 * Housekeeping: runs nothing refers to are dropped, the lineage is trimmed to what the remaining
 * runs were planned on, and the time the planner must be woken next.
 */
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../lib/time.js";
import { type PlanningState, at, config, entryOf } from "./state.js";
import { landingOf, lineageIndex } from "./merging.js";
import { presumptionDue } from "./bisection.js";

export function collectGarbage(p: PlanningState): void {
  // Entries point only at runs whose unit they are in: looking there is enough.
  const referenced = new Set<string>();
  for (const run of Object.values(p.s.runs)) {
    for (const id of run.unit) {
      const entry = p.s.entries[id];
      if (entry && (entry.runId === run.id || entry.failure?.runId === run.id)) {
        referenced.add(run.id);
        break;
      }
    }
  }
  for (const group of Object.values(p.s.bisections)) {
    referenced.add(group.runId);
    referenced.add(group.failedRunId);
    if (group.passedRunId) referenced.add(group.passedRunId);
    for (const prefix of group.prefixes) referenced.add(prefix.runId);
  }
  for (const run of Object.values(p.s.runs)) {
    if (run.status === "passed" && landingOf(p, run)?.length) referenced.add(run.id);
    if (run.status !== "running" && !referenced.has(run.id))
      Reflect.deleteProperty(p.s.runs, run.id);
  }
  // Keep the lineage back to the oldest base a remaining run was planned on.
  const base = p.s.base;
  let keepFrom = base.merges.length;
  for (const run of Object.values(p.s.runs)) {
    if (run.baseSha === base.anchorSha) keepFrom = 0;
    else {
      const index = lineageIndex(p).get(run.baseSha);
      if (index !== undefined) keepFrom = Math.min(keepFrom, index + 1);
    }
  }
  if (keepFrom > 0) {
    base.anchorSha = at(base.merges, keepFrom - 1).sha;
    base.merges = base.merges.slice(keepFrom);
  }
}

export function wakeAt(p: PlanningState): number | null {
  let wake = p.batchDeadline ?? Infinity;
  const timeout = config(p).testingTimeoutMinutes;
  for (const run of Object.values(p.s.runs)) {
    if (timeout > 0 && run.status === "running") {
      wake = Math.min(wake, run.startedAt + timeout * MINUTE);
    }
  }
  for (const group of Object.values(p.s.bisections)) {
    const due = presumptionDue(p, group);
    // A presumption held back by a merge in flight is made when that merge reports.
    if (due !== null && due > p.now) wake = Math.min(wake, due);
  }
  const hours = config(p).notReadyTimeoutHours;
  if (hours > 0) {
    for (const id of p.s.notReady) {
      wake = Math.min(wake, entryOf(p, id).stateChangedAt + hours * HOUR);
    }
  }
  return wake === Infinity ? null : wake;
}
