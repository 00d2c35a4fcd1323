/**
 * Queue order: where an entry goes in (priority, urgent preemption, stacks) and what leaving it
 * takes along (the runs that assumed it). `conclude`, the way out of the queue, is here for that.
 */
import {
  QUEUE_ACTOR,
  URGENT_PRIORITY,
  type Actor,
  type Entry,
  type TestRun,
  type TransitionReason,
} from "../model.js";
import { type PlanningState, at, byNumber, entryOf, targetsOf, targetsOverlap } from "./state.js";
import { noteStack, stackIndexOf } from "./indexes.js";
import { dissolveGroup, invalidateRun, toPending, transition } from "./state-changes.js";

export function insertIntoOrder(p: PlanningState, entry: Entry): void {
  const order = p.s.order;
  let index: number;
  if (entry.priorityValue === URGENT_PRIORITY) {
    // Urgent goes ahead of everything not yet passed, behind earlier urgent entries.
    index = order.findIndex((id) => {
      const other = entryOf(p, id);
      return (
        (other.state === "pending" || other.state === "testing") &&
        other.priorityValue !== URGENT_PRIORITY &&
        other.bisection === null
      );
    });
    if (index === -1) index = order.length;
  } else {
    // Behind everything already tested at its position; by priority among the rest: the
    // first entry behind the last positioned one that it goes ahead of (one pass, backwards).
    index = order.length;
    for (let i = order.length - 1; i >= 0; i--) {
      const other = entryOf(p, at(order, i));
      if (other.positioned) break;
      if (
        other.priorityValue > entry.priorityValue ||
        (other.priorityValue === entry.priorityValue && other.seq > entry.seq)
      ) {
        index = i;
      }
    }
  }
  // Stacks: never ahead of a queued PR it contains, never behind one that contains it.
  let reason: TransitionReason = "preempted_by_urgent";
  for (const id of containedIn(p, entry)) {
    if (p.s.merging?.entryId === id) continue;
    const position = order.indexOf(id);
    if (position >= 0 && position < index) {
      index = position;
      reason = "stacked_pr_ahead";
    }
  }
  for (const id of containedBy(p, entry)) index = Math.max(index, order.indexOf(id) + 1);
  order.splice(index, 0, entry.id);
  if (index < order.length - 1) {
    // Everything behind that included the entries ahead of it is now tested on the wrong base.
    for (const run of Object.values(p.s.runs)) {
      if ((run.status === "running" || run.status === "passed") && run.kind === "main") {
        if (dependsOnEntry(p, run, entry)) {
          invalidateRun(p, run, reason, QUEUE_ACTOR);
        }
      }
    }
  }
}

/** Queued entries whose PR `entry`'s PR is stacked on (it contains their heads). */
function containedBy(p: PlanningState, entry: Entry): string[] {
  const ids: string[] = [];
  for (const contained of entry.pr.contains ?? []) {
    const other = byNumber(p, contained.number);
    if (other && other.id !== entry.id && other.pr.headSha === contained.headSha) {
      ids.push(other.id);
    }
  }
  return ids;
}

/** Queued entries whose PR is stacked on `entry`'s PR (they contain its head). */
function containedIn(p: PlanningState, entry: Entry): string[] {
  const ids: string[] = [];
  for (const id of stackIndexOf(p.s.entries).get(entry.pr.number) ?? []) {
    const other = p.s.entries[id];
    if (!other || other.id === entry.id || !other.pr.contains) continue;
    if (
      other.pr.contains.some((c) => c.number === entry.pr.number && c.headSha === entry.pr.headSha)
    ) {
      ids.push(other.id);
    }
  }
  return ids;
}

/** Whether a run's unit comes after `entry` in the order and depends on it. */
function dependsOnEntry(p: PlanningState, run: TestRun, entry: Entry): boolean {
  const position = p.s.order.indexOf(entry.id);
  return run.unit.some((id) => {
    const unitEntry = p.s.entries[id];
    if (!unitEntry || unitEntry.runId !== run.id) return false;
    return (
      p.s.order.indexOf(id) > position &&
      targetsOverlap(targetsOf(p, unitEntry), targetsOf(p, entry))
    );
  });
}

export function removeFromOrder(p: PlanningState, id: string): void {
  const index = p.s.order.indexOf(id);
  if (index >= 0) p.s.order.splice(index, 1);
}

/** An entry stops being ready (or concludes): its runs end and dependents are replanned. */
export function leaveOrder(p: PlanningState, entry: Entry, reason: TransitionReason): void {
  removeFromOrder(p, entry.id);
  if (entry.bisection) {
    const group = p.s.bisections[entry.bisection.groupId];
    if (group) {
      const members = dissolveGroup(p, group, "prerequisite_merge_item_removed", entry.id);
      replanRunsIncluding(p, new Set(members), "prerequisite_merge_item_removed");
    }
    entry.bisection = null;
  }
  const dependentReason: TransitionReason =
    reason === "failing_required_check" ||
    reason === "test_run_timeout" ||
    reason === "merge_conflict" ||
    reason === "merge_failed" ||
    reason === "no_required_statuses" ||
    reason === "config_parsing_failure"
      ? "prerequisite_merge_item_failed"
      : "prerequisite_merge_item_removed";
  replanRunsIncluding(p, new Set([entry.id]), dependentReason);
  entry.runId = null;
}

/**
 * Entries leave what other runs assumed (they concluded, stopped being ready, went to
 * localization, or a presumption about them was withdrawn): every run that included them is
 * tested again without them, and a held failure that included them was most likely theirs, so
 * it is tested again too. The runs of localization `keepGroup` are its own business.
 */
export function replanRunsIncluding(
  p: PlanningState,
  ids: ReadonlySet<string>,
  reason: TransitionReason,
  keepGroup: string | null = null,
): void {
  for (const run of Object.values(p.s.runs)) {
    if (run.status === "cancelled") continue;
    if (keepGroup !== null && run.bisectionGroup === keepGroup) continue;
    if (!run.prs.some((pr) => ids.has(pr.entryId))) continue;
    if (run.status === "running" || run.status === "passed") {
      invalidateRun(p, run, reason, QUEUE_ACTOR, ids);
      continue;
    }
    for (const id of run.unit) {
      const held = p.s.entries[id];
      if (held && !ids.has(id) && held.failure?.runId === run.id && !held.bisection) {
        toPending(p, held, reason, QUEUE_ACTOR);
      }
    }
  }
}

/** merged, failed or cancelled: the entry leaves the queue. */
export function conclude(
  p: PlanningState,
  entry: Entry,
  to: "merged" | "failed" | "cancelled",
  reason: TransitionReason,
  actor: Actor,
  runId: string | null = null,
  detail: string | null = null,
): void {
  const byQueue =
    reason === "merged_by_queue" ||
    reason === "merged_optimistically" ||
    reason === "merged_directly";
  // A queue merge keeps the runs that included it (they tested what landed); anything else
  // leaving the queue takes its runs and their dependents' runs with it.
  if (byQueue) {
    removeFromOrder(p, entry.id);
    // Its own run is still going when a later run cleared it: no longer needed.
    const own = entry.runId ? p.s.runs[entry.runId] : undefined;
    if (own?.status === "running" && own.id !== runId) {
      const rest = own.unit.filter((id) => id !== entry.id && p.s.entries[id]);
      if (rest.length === 0) {
        own.status = "cancelled";
        own.finishedAt = p.now;
        p.decisions.push({ type: "cancel_run", runId: own.id, reason });
      }
    }
  } else leaveOrder(p, entry, reason);
  transition(p, entry, to, reason, runId, detail, actor);
  p.concluded.push(entry);
  Reflect.deleteProperty(p.s.entries, entry.id);
  noteStack(p.s.entries, entry, false);
  Reflect.deleteProperty(p.s.prIndex, String(entry.pr.number));
}
