/**
 * Bisection: a failed batch whose failure stands is split in halves on the bisection slots until
 * each culprit is found; its PRs keep their places in the queue meanwhile.
 */
import {
  QUEUE_ACTOR,
  type BisectionGroup,
  type Entry,
  type TestRun,
  type TransitionReason,
} from "../model.js";
import { type PlanningState, at, config, entryOf, inFlight } from "./state.js";
import { closeBisectionIfDone, newRun, record, transition } from "./state-changes.js";
import { conclude, replanRunsIncluding } from "./order.js";

export function startBisection(p: PlanningState, run: TestRun, unit: Entry[]): void {
  const id = `b${p.s.nextId++}`;
  const group: BisectionGroup = {
    id,
    runId: run.id,
    segments: [
      { entries: unit.map((e) => e.id), status: "failed", runId: run.id, inferred: false },
    ],
  };
  p.s.bisections[id] = group;
  // Its runs take the bisection slots, but its PRs keep their
  // places in the queue: nothing behind them lands, or is tested, before they are decided
  // (what is tested behind them meanwhile would have to be tested again with those cleared).
  for (const entry of unit) {
    entry.bisection = { groupId: id };
    record(p, entry, "pending_failure", "bisection_started", QUEUE_ACTOR, run.id);
  }
  // The batch leaves the main queue while it is bisected.
  replanRunsIncluding(p, new Set(unit.map((e) => e.id)), "prerequisite_merge_item_failed");
}

/** A culprit's failure in words: its failing checks, else what its run reported. */
function describeFailure(run: TestRun | undefined, culprit: Entry): string {
  const checks = run?.failingChecks ?? culprit.failure?.checks ?? [];
  if (checks.length > 0) return `failed ${checks.join(", ")}`;
  return run?.failure?.detail ?? culprit.failure?.detail ?? "failed";
}

export function progressBisections(p: PlanningState): void {
  if (Object.keys(p.s.bisections).length === 0) return;
  const skip = config(p).optimizationMode === "bisection_skip_redundant_tests";
  let slots =
    config(p).bisectionConcurrency -
    Object.values(p.s.runs).filter((r) => r.status === "running" && r.kind === "bisection").length;
  for (const group of Object.values(p.s.bisections)) {
    // Split failed segments; decide single culprits.
    for (let i = 0; i < group.segments.length; i++) {
      const segment = at(group.segments, i);
      if (segment.status !== "failed") continue;
      if (segment.entries.length === 1) {
        group.segments.splice(i--, 1);
        const culprit = p.s.entries[at(segment.entries, 0)];
        if (culprit) {
          const failedRun = segment.runId ? p.s.runs[segment.runId] : undefined;
          culprit.bisection = null;
          conclude(
            p,
            culprit,
            "failed",
            (segment.inferred ? undefined : failedRun?.failure?.reason) ??
              culprit.failure?.reason ??
              "failing_required_check",
            QUEUE_ACTOR,
            segment.runId,
            segment.inferred
              ? "bisection: its batch failed and the rest of the batch passed"
              : `bisection: ${describeFailure(failedRun, culprit)}`,
          );
        }
        continue;
      }
      const half = Math.ceil(segment.entries.length / 2);
      const left = segment.entries.slice(0, half);
      const right = segment.entries.slice(half);
      group.segments.splice(
        i,
        1,
        { entries: left, status: "untested", runId: null, inferred: false },
        // With skip_redundant_tests the right half waits for the left one's verdict.
        {
          entries: right,
          status: skip ? "testing" : "untested",
          runId: skip ? `after:${left.join(",")}` : null,
          inferred: false,
        },
      );
      i--;
    }
    if (config(p).state === "paused" || p.s.merging !== null) continue;
    for (const segment of group.segments) {
      if (slots <= 0) break;
      if (segment.status !== "untested") continue;
      // On top of what will land before it (halves already proven good), so that the run
      // still matches the branch when they have merged.
      const first = p.s.order.indexOf(at(segment.entries, 0));
      const ahead = p.s.order.slice(0, Math.max(0, first)).filter((id) => inFlight(entryOf(p, id)));
      const run = newRun(p, {
        kind: "bisection",
        ahead,
        unit: segment.entries,
        attempt: 1,
        bisectionGroup: group.id,
      });
      segment.status = "testing";
      segment.runId = run.id;
      slots -= 1;
    }
  }
}

export function bisectionResult(p: PlanningState, run: TestRun, passed: boolean): void {
  const group = run.bisectionGroup ? p.s.bisections[run.bisectionGroup] : undefined;
  if (!group) return;
  const index = group.segments.findIndex((s) => s.runId === run.id);
  if (index < 0) return;
  const segment = at(group.segments, index);
  const waiting = group.segments.find((s) => s.runId === `after:${segment.entries.join(",")}`);
  if (!passed) {
    segment.status = "failed";
    // A failing left half says nothing about its sibling. Proven-good halves are tested again
    // in the main queue anyway, so the sibling goes straight back there instead of taking a
    // bisection run of its own; if it holds a culprit too, its next batch finds it.
    if (waiting) {
      group.segments.splice(group.segments.indexOf(waiting), 1);
      returnToMainQueue(p, waiting.entries, "bisection_inconclusive", run.id);
    }
    return;
  }
  group.segments.splice(index, 1);
  if (waiting) {
    // A failed parent and a passing left half: the right half fails without a run.
    waiting.status = "failed";
    waiting.runId = run.id;
    waiting.inferred = true;
  }
  // Proven good, and tested on exactly what is ahead of them: the run clears them where they
  // stand, like a main run. Should what lands ahead of them differ from what the run tested,
  // it no longer matches the branch and they are tested again at the same place.
  const unit = segment.entries.filter((id) => p.s.entries[id] !== undefined);
  for (const id of unit) {
    const entry = entryOf(p, id);
    entry.bisection = null;
    entry.failure = null;
    entry.runId = run.id;
    entry.unit = unit;
    transition(p, entry, "tests_passed", "bisection_passed", run.id);
  }
  closeBisectionIfDone(p, group);
}

/**
 * Entries leave bisection undecided: back to `pending` at the place they hold in the queue, to
 * be tested there with what is ahead of them.
 */
function returnToMainQueue(
  p: PlanningState,
  ids: string[],
  reason: TransitionReason,
  runId: string | null,
): void {
  for (const id of ids) {
    const entry = p.s.entries[id];
    if (!entry) continue;
    entry.bisection = null;
    entry.failure = null;
    entry.runId = null;
    transition(p, entry, "pending", reason, runId);
  }
}

export function dissolveBisection(p: PlanningState, group: BisectionGroup): void {
  for (const segment of group.segments) {
    const run = segment.runId ? p.s.runs[segment.runId] : undefined;
    if (segment.runId && run?.status === "running") {
      run.status = "cancelled";
      p.decisions.push({
        type: "cancel_run",
        runId: segment.runId,
        reason: "restarted_on_new_base",
      });
    }
    returnToMainQueue(p, segment.entries, "restarted_on_new_base", null);
  }
  Reflect.deleteProperty(p.s.bisections, group.id);
}
