/**
 * Events: each queue event applied to the state (commands, PR and branch updates, settings,
 * ticks). A run's result is in run-results.ts; the queue settles afterwards (settling.ts).
 */
import {
  QUEUE_ACTOR,
  DEFAULT_PRIORITY,
  PRIORITY_NAMES,
  type Actor,
  type Entry,
  type PullRequestInfo,
  type QueueEvent,
} from "../model.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../lib/time.js";
import { type PlanningState, byNumber, config, entryOf, targetsOf } from "./state.js";
import { noteStack } from "./indexes.js";
import { invalidateRun, record, toPending } from "./state-changes.js";
import { conclude, insertIntoOrder, removeFromOrder } from "./order.js";
import { checkPullRequest } from "./readiness.js";
import { dissolveBisection } from "./bisection.js";
import { failRun, runFinished } from "./run-results.js";

/** Stacked-on heads remembered after landing inside another PR (the most recent PR numbers). */
const LANDED_THROUGH_KEPT = 1000;

export function apply(p: PlanningState, event: QueueEvent): void {
  switch (event.type) {
    case "submit":
      submit(p, event.pr, event.priority, event.noBatch, event.actor, event.entryId);
      return;
    case "cancel": {
      const entry = byNumber(p, event.prNumber);
      if (!entry) {
        reject(p, "not_found", notQueued(p, event.prNumber));
        return;
      }
      if (p.s.merging?.entryId === entry.id) {
        reject(p, "conflict", `Pull request #${event.prNumber} is being merged.`);
        return;
      }
      conclude(p, entry, "cancelled", "cancelled_by_user", event.actor);
      return;
    }
    case "restart":
      restart(p, event.prNumber, event.actor);
      return;
    case "set_impacted_targets": {
      // Targets belong to a commit of a PR; CI usually uploads
      // them before the PR is submitted, or for a push the queue has not seen yet.
      const entry = byNumber(p, event.prNumber);
      if (entry?.pr.headSha === event.headSha) {
        entry.impactedTargets = event.targets;
        checkPullRequest(p, entry);
        return;
      }
      p.s.uploadedTargets[String(event.prNumber)] = {
        headSha: event.headSha,
        targets: event.targets,
        at: p.now,
      };
      return;
    }
    case "run_finished":
      runFinished(p, event);
      return;
    case "merge_finished":
      mergeFinished(p, event.entryId, event.newHeadSha);
      return;
    case "merge_failed": {
      const entry = p.s.entries[event.entryId];
      if (!entry || p.s.merging?.entryId !== entry.id) return;
      p.s.merging = null;
      // The branch or the PR moved under the merge: not the PR's fault; the event that
      // follows (a base push or a PR update) replans it.
      if (event.reason === "restarted_on_new_base") {
        toPending(p, entry, event.reason, QUEUE_ACTOR);
        return;
      }
      conclude(p, entry, "failed", event.reason, QUEUE_ACTOR, null, event.message);
      return;
    }
    case "pr_updated":
      prUpdated(p, event.pr);
      return;
    case "base_pushed":
      basePushed(p, event.headSha);
      return;
    case "settings_changed":
      p.s.configuration = event.configuration;
      return;
    case "tick":
      tick(p);
      return;
  }
}

function reject(p: PlanningState, code: "not_found" | "conflict", message: string): void {
  p.rejection = { code, message };
}

function notQueued(p: PlanningState, prNumber: number): string {
  return `Pull request #${prNumber} is not in the merge queue for ${p.s.targetBranch}.`;
}

/** An entry gets a new PR record: the index of stacked entries follows it. */
function setPr(p: PlanningState, entry: Entry, pr: PullRequestInfo): void {
  noteStack(p.s.entries, entry, false);
  entry.pr = pr;
  noteStack(p.s.entries, entry, true);
}

function submit(
  p: PlanningState,
  pr: PullRequestInfo,
  priority: number | null,
  noBatch: boolean,
  actor: Actor,
  entryId: string | undefined,
): void {
  const existing = byNumber(p, pr.number);
  if (existing) {
    // Resubmission updates priority and batching; an unstarted entry moves.
    existing.priorityValue = priority ?? PRIORITY_NAMES[DEFAULT_PRIORITY];
    existing.usedDefaultPriority = priority === null;
    existing.noBatch = noBatch;
    record(p, existing, existing.state, "resubmitted", actor);
    if (existing.state === "pending" && !existing.positioned) {
      removeFromOrder(p, existing.id);
      insertIntoOrder(p, existing);
    }
    return;
  }
  const id = entryId ?? `${p.s.queueId}:${p.s.nextId++}`;
  const entry: Entry = {
    id,
    pr,
    state: "not_ready",
    stateChangedAt: p.now,
    submittedAt: p.now,
    readyAt: null,
    seq: p.s.nextSeq++,
    priorityValue: priority ?? PRIORITY_NAMES[DEFAULT_PRIORITY],
    usedDefaultPriority: priority === null,
    noBatch,
    impactedTargets: null,
    runId: null,
    unit: [],
    failure: null,
    flakyRetries: 0,
    bisection: null,
    positioned: false,
  };
  const uploaded = p.s.uploadedTargets[String(pr.number)];
  if (uploaded?.headSha === pr.headSha) entry.impactedTargets = uploaded.targets;
  Reflect.deleteProperty(p.s.uploadedTargets, String(pr.number));
  p.s.entries[id] = entry;
  noteStack(p.s.entries, entry, true);
  p.s.prIndex[String(pr.number)] = id;
  p.s.notReady.push(id);
  p.decisions.push({
    type: "transition",
    entryId: id,
    prNumber: pr.number,
    from: null,
    to: "not_ready",
    reason: "submitted",
    actor,
    runId: null,
    detail: null,
  });
  checkPullRequest(p, entry);
}

function restart(p: PlanningState, prNumber: number, actor: Actor): void {
  const entry = byNumber(p, prNumber);
  if (!entry) {
    reject(p, "not_found", notQueued(p, prNumber));
    return;
  }
  if (p.s.merging?.entryId === entry.id) {
    reject(p, "conflict", `Pull request #${prNumber} is being merged.`);
    return;
  }
  if (entry.bisection) {
    reject(
      p,
      "conflict",
      `Pull request #${prNumber} is being bisected with its batch; it restarts when that ends.`,
    );
    return;
  }
  if (entry.state === "testing" || entry.state === "tests_passed") {
    const run = entry.runId ? p.s.runs[entry.runId] : undefined;
    if (run) invalidateRun(p, run, "restarted_by_user", actor);
  } else if (entry.state === "pending_failure") {
    toPending(p, entry, "restarted_by_user", actor);
  }
}

function mergeFinished(p: PlanningState, entryId: string, newHeadSha: string): void {
  const entry = p.s.entries[entryId];
  const merging = p.s.merging;
  if (!entry || merging?.entryId !== entryId) return;
  p.s.merging = null;
  p.s.base.merges.push({
    entryId,
    number: entry.pr.number,
    sha: newHeadSha,
    targets: targetsOf(p, entry),
  });
  p.s.base.headSha = newHeadSha;
  conclude(p, entry, "merged", merging.reason, QUEUE_ACTOR, merging.runId);
  // The PRs it is stacked on landed with it: merged, now or whenever they are submitted.
  const contained = entry.pr.contains ?? [];
  if (contained.length === 0) return;
  const through = p.s.landedThrough;
  for (const c of contained) {
    through[String(c.number)] = { headSha: c.headSha, by: entry.pr.number };
  }
  const keys = Object.keys(through);
  for (const key of keys.slice(0, Math.max(0, keys.length - LANDED_THROUGH_KEPT))) {
    Reflect.deleteProperty(through, key);
  }
  for (const c of contained) {
    const queued = byNumber(p, c.number);
    if (queued && queued.pr.headSha === c.headSha) checkPullRequest(p, queued);
  }
}

function prUpdated(p: PlanningState, pr: PullRequestInfo): void {
  const entry = byNumber(p, pr.number);
  if (!entry) return;
  const before = entry.pr;
  if (p.s.merging?.entryId === entry.id) {
    setPr(p, entry, { ...pr, headSha: before.headSha });
    return;
  }
  if (pr.state === "merged") {
    setPr(p, entry, pr);
    conclude(p, entry, "merged", "merged_manually", { kind: "git_host" });
    return;
  }
  if (pr.state === "closed") {
    conclude(p, entry, "cancelled", "pr_closed", { kind: "git_host" });
    return;
  }
  if (pr.headSha !== before.headSha) {
    setPr(p, entry, pr);
    conclude(p, entry, "cancelled", "pr_pushed_to", { kind: "git_host" }, null, pr.headSha);
    return;
  }
  if (pr.draft) {
    conclude(p, entry, "cancelled", "pr_draft", { kind: "git_host" });
    return;
  }
  if (pr.baseBranch !== before.baseBranch && entry.state !== "not_ready") {
    conclude(p, entry, "cancelled", "pr_base_branch_changed", { kind: "git_host" });
    return;
  }
  setPr(p, entry, pr);
  checkPullRequest(p, entry);
}

function basePushed(p: PlanningState, headSha: string): void {
  const base = p.s.base;
  if (headSha === base.headSha) return;
  // A report of a head the queue itself produced earlier arrives late: nothing changed.
  if (headSha === base.anchorSha || base.merges.some((m) => m.sha === headSha)) return;
  p.s.base = { headSha, merges: [], anchorSha: headSha };
  // Trunk restarts everything in flight on an outside push.
  for (const group of Object.values(p.s.bisections)) dissolveBisection(p, group);
  for (const run of Object.values(p.s.runs)) {
    if (run.status === "running" || run.status === "passed") {
      invalidateRun(p, run, "restarted_on_new_base", QUEUE_ACTOR);
    }
  }
  for (const id of [...p.s.order]) {
    const entry = p.s.entries[id];
    if (entry?.state === "pending_failure" && p.s.merging?.entryId !== id) {
      toPending(p, entry, "restarted_on_new_base", QUEUE_ACTOR);
    }
  }
}

function tick(p: PlanningState): void {
  // Targets uploaded for PRs that were never submitted are forgotten after a week.
  for (const [number, uploaded] of Object.entries(p.s.uploadedTargets)) {
    if (p.now - uploaded.at > 7 * 24 * HOUR) {
      Reflect.deleteProperty(p.s.uploadedTargets, number);
    }
  }
  const timeout = config(p).testingTimeoutMinutes;
  if (timeout > 0) {
    for (const run of Object.values(p.s.runs)) {
      if (run.status === "running" && p.now >= run.startedAt + timeout * MINUTE) {
        p.decisions.push({ type: "cancel_run", runId: run.id, reason: "test_run_timeout" });
        failRun(p, run, "test_run_timeout", [], false);
      }
    }
  }
  const notReadyHours = config(p).notReadyTimeoutHours;
  if (notReadyHours > 0) {
    for (const id of [...p.s.notReady]) {
      const entry = entryOf(p, id);
      if (p.now >= entry.stateChangedAt + notReadyHours * HOUR) {
        conclude(p, entry, "cancelled", "not_ready_timeout", QUEUE_ACTOR);
      }
    }
  }
}
