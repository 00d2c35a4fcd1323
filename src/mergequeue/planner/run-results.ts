/**
 * Events: a finished run's result. Passed units advance, a conflict evicts the one PR that does
 * not apply, a failure is held, or run once more when only known flaky tests failed.
 */
import {
  QUEUE_ACTOR,
  type Entry,
  type QueueEvent,
  type TestRun,
  type TransitionReason,
} from "../model.js";
import { type PlanningState, at } from "./state.js";
import { newRun, record, recordVerdict, transition } from "./state-changes.js";
import { conclude } from "./order.js";
import { bisectionResult, prefixNotBuilt, retryBisectionRun } from "./bisection.js";

export function runFinished(
  p: PlanningState,
  event: Extract<QueueEvent, { type: "run_finished" }>,
): void {
  const run = p.s.runs[event.runId];
  // Unknown, finished or cancelled runs: a duplicate or late report.
  if (!run || run.status !== "running") return;
  if (event.outcome === "passed") {
    run.status = "passed";
    run.finishedAt = p.now;
    if (run.kind === "bisection") {
      bisectionResult(p, run, true);
      return;
    }
    let passed = 0;
    for (const id of run.unit) {
      const entry = p.s.entries[id];
      if (entry?.runId !== run.id) continue;
      transition(p, entry, "tests_passed", "tests_passed", run.id);
      passed += 1;
    }
    if (passed > 0) recordVerdict(p, passed, false);
    return;
  }
  if (event.conflict) {
    conflictFound(p, run, event.conflict);
    return;
  }
  const reason = event.reason ?? "failing_required_check";
  failRun(p, run, reason, event.failingChecks, event.flakyOnly === true, event.detail);
}

/**
 * A run's test branch could not be built: a conflict is not a test failure. Only the first PR,
 * in queue order, that does not apply onto those ahead of it leaves (`merge_conflict`, naming
 * them and the files); everything else the run covered is tested again without it, with no
 * bisection. A PR never leaves for conflicting with one behind it: the run's PRs are in queue
 * order, and the host reports the first that fails to apply.
 */
function conflictFound(
  p: PlanningState,
  run: TestRun,
  conflict: NonNullable<Extract<QueueEvent, { type: "run_finished" }>["conflict"]>,
): void {
  const index = run.prs.findIndex((pr) => pr.number === conflict.prNumber);
  const named = index >= 0 ? at(run.prs, index) : undefined;
  const culprit = named ? p.s.entries[named.entryId] : undefined;
  const aheadNumbers =
    conflict.conflictsWith ?? (index >= 0 ? run.prs.slice(0, index).map((pr) => pr.number) : []);
  const files = conflict.files.length > 0 ? `: ${conflict.files.join(", ")}` : "";
  const detail =
    aheadNumbers.length > 0
      ? `conflicts with ${aheadNumbers.map((n) => `#${n}`).join(", ")} (ahead of it in the queue)${files}`
      : conflict.landedConflicts && conflict.landedConflicts.length > 0
        ? `conflicts with ${conflict.landedConflicts.map((n) => `#${n}`).join(", ")} (already merged into ${p.s.targetBranch})${files}`
        : `does not apply onto ${p.s.targetBranch}${files}`;
  run.status = "failed";
  run.finishedAt = p.now;
  run.failingChecks = [];
  run.failure = { reason: "merge_conflict", detail: `#${conflict.prNumber} ${detail}` };
  const leaving =
    culprit && culprit.pr.headSha === named?.headSha && p.s.merging?.entryId !== culprit.id
      ? culprit
      : undefined;
  // The rest of the run's unit goes back to be tested without the conflicting PR.
  const why = leaving
    ? `#${conflict.prNumber} left the queue: it ${detail}`
    : `the test branch of run ${run.id} could not be built`;
  if (run.kind === "bisection") prefixNotBuilt(p, run);
  else {
    for (const id of run.unit) {
      const entry = p.s.entries[id];
      if (!entry || entry.runId !== run.id || entry.id === leaving?.id) continue;
      entry.runId = null;
      transition(p, entry, "pending", "prerequisite_merge_item_failed", run.id, why);
    }
  }
  if (leaving) {
    leaving.failure = {
      runId: run.id,
      reason: "merge_conflict",
      checks: [],
      detail,
    };
    conclude(p, leaving, "failed", "merge_conflict", QUEUE_ACTOR, run.id, detail);
  }
}

export function failRun(
  p: PlanningState,
  run: TestRun,
  reason: TransitionReason,
  failingChecks: string[],
  flakyOnly: boolean,
  detail?: string,
): void {
  run.status = "failed";
  run.finishedAt = p.now;
  run.failingChecks = failingChecks;
  run.failure = { reason, detail: detail ?? null };
  // Every run the queue judges, bisection runs included: a failure made only of known flaky
  // (or quarantined) tests gets one more run of the same combination, on the timeline.
  if (flakyOnly && run.attempt === 1 && run.kind === "bisection") {
    if (retryBisectionRun(p, run)) return;
  }
  if (run.kind === "bisection") {
    bisectionResult(p, run, false);
    return;
  }
  const unit = run.unit.map((id) => p.s.entries[id]).filter((e) => e?.runId === run.id);
  if (flakyOnly && run.attempt === 1 && unit.length > 0) {
    // The same tree: what landed meanwhile is now part of the head it starts on.
    // The same tree: what landed meanwhile (ahead or, merged by a later run, in the unit) is
    // now part of the head it starts on.
    const retry = newRun(p, {
      ...run,
      ahead: run.ahead.filter((id) => p.s.entries[id] !== undefined),
      unit: run.unit.filter((id) => p.s.entries[id] !== undefined),
      attempt: run.attempt + 1,
    });
    for (const entry of unit as Entry[]) {
      entry.flakyRetries += 1;
      entry.runId = retry.id;
      record(
        p,
        entry,
        "testing",
        "retried_flaky_failure",
        QUEUE_ACTOR,
        retry.id,
        `only known flaky tests failed in run ${run.id}; retrying once`,
      );
    }
    return;
  }
  const why = detail ?? (failingChecks.length > 0 ? `failed: ${failingChecks.join(", ")}` : null);
  for (const entry of unit as Entry[]) {
    entry.failure = { runId: run.id, reason, checks: failingChecks, detail: why };
    transition(p, entry, "pending_failure", reason, run.id, why);
  }
}
