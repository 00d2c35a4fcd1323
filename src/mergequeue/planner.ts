/**
 * The merge-queue planner: a pure function from a queue's state and one event to the decisions
 * to carry out (start runs, cancel runs, merge, change states). It implements Trunk's semantics
 * (background §merge-queue-2): predictive testing, pending failure and its depth, optimistic
 * merging, batching with bisection, priorities with urgent preemption, timeouts, queue states,
 * parallel lanes from impacted targets and direct merge. No I/O, no clock, no randomness: the same
 * state and event always give the same result.
 *
 * `plan` changes the snapshot it is given and returns it; callers continue with the result.
 */
import { finishModeSwitch, type QueueConfiguration } from "./settings.js";
import { SNAPSHOT_VERSION } from "./snapshot.js";
import { NO_VERDICTS, recordVerdict, worthSpeculating } from "./speculation.js";
import {
  QUEUE_ACTOR,
  URGENT_PRIORITY,
  DEFAULT_PRIORITY,
  PRIORITY_NAMES,
  type Actor,
  type BisectionGroup,
  type Decision,
  type Entry,
  type ImpactedTargets,
  type PlanResult,
  type PrState,
  type PullRequestInfo,
  type QueueEvent,
  type QueueSnapshot,
  type TestRun,
  type TransitionReason,
} from "./model.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../lib/time.js";

/** Stacked-on heads remembered after landing inside another PR (the most recent PR numbers). */
const LANDED_THROUGH_KEPT = 1000;

export function initialSnapshot(input: {
  queueId: string;
  targetBranch: string;
  configuration: QueueConfiguration;
  headSha: string;
}): QueueSnapshot {
  return {
    version: SNAPSHOT_VERSION,
    queueId: input.queueId,
    targetBranch: input.targetBranch,
    configuration: input.configuration,
    base: { headSha: input.headSha, merges: [], anchorSha: input.headSha },
    entries: {},
    prIndex: {},
    notReady: [],
    uploadedTargets: {},
    order: [],
    runs: {},
    bisections: {},
    merging: null,
    nextSeq: 1,
    nextId: 1,
    verdicts: { ...NO_VERDICTS },
    landedThrough: {},
  };
}

export function plan(snapshot: QueueSnapshot, event: QueueEvent, now: number): PlanResult {
  const planning = new Planning(snapshot, now);
  planning.apply(event);
  if (!planning.rejection) planning.settle();
  return {
    snapshot,
    decisions: planning.decisions,
    wakeAt: planning.wakeAt(),
    concluded: planning.concluded,
    rejection: planning.rejection,
  };
}

/** Two target sets overlap: `ALL` overlaps everything but `[]`, `[]` overlaps nothing. */
export function targetsOverlap(a: ImpactedTargets, b: ImpactedTargets): boolean {
  if (Array.isArray(a) && a.length === 0) return false;
  if (Array.isArray(b) && b.length === 0) return false;
  if (a === "ALL" || b === "ALL") return true;
  const set = new Set(a);
  return b.some((target) => set.has(target));
}

class Planning {
  readonly decisions: Decision[] = [];
  readonly concluded: Entry[] = [];
  rejection: PlanResult["rejection"] = null;
  private readonly s: QueueSnapshot;
  /** Earliest time a batch that is filling up must start anyway. */
  private batchDeadline: number | null = null;

  constructor(
    snapshot: QueueSnapshot,
    private readonly now: number,
  ) {
    this.s = snapshot;
  }

  /** An entry the caller knows is queued. */
  private entry(id: string): Entry {
    const entry = this.s.entries[id];
    if (!entry) throw new Error(`planner: unknown entry ${id}`);
    return entry;
  }

  private get config(): QueueConfiguration {
    return this.s.configuration;
  }

  // ---- events --------------------------------------------------------------------------------

  apply(event: QueueEvent): void {
    switch (event.type) {
      case "submit":
        this.submit(event.pr, event.priority, event.noBatch, event.actor, event.entryId);
        return;
      case "cancel": {
        const entry = this.byNumber(event.prNumber);
        if (!entry) {
          this.reject("not_found", this.notQueued(event.prNumber));
          return;
        }
        if (this.s.merging?.entryId === entry.id) {
          this.reject("conflict", `Pull request #${event.prNumber} is being merged.`);
          return;
        }
        this.conclude(entry, "cancelled", "cancelled_by_user", event.actor);
        return;
      }
      case "restart":
        this.restart(event.prNumber, event.actor);
        return;
      case "set_impacted_targets": {
        // Targets belong to a commit of a PR (background §merge-queue-2.8); CI usually uploads
        // them before the PR is submitted, or for a push the queue has not seen yet.
        const entry = this.byNumber(event.prNumber);
        if (entry?.pr.headSha === event.headSha) {
          entry.impactedTargets = event.targets;
          this.checkPullRequest(entry);
          return;
        }
        this.s.uploadedTargets[String(event.prNumber)] = {
          headSha: event.headSha,
          targets: event.targets,
          at: this.now,
        };
        return;
      }
      case "run_finished":
        this.runFinished(event);
        return;
      case "merge_finished":
        this.mergeFinished(event.entryId, event.newHeadSha);
        return;
      case "merge_failed": {
        const entry = this.s.entries[event.entryId];
        if (!entry || this.s.merging?.entryId !== entry.id) return;
        this.s.merging = null;
        // The branch or the PR moved under the merge: not the PR's fault; the event that
        // follows (a base push or a PR update) replans it.
        if (event.reason === "restarted_on_new_base") {
          this.toPending(entry, event.reason, QUEUE_ACTOR);
          return;
        }
        this.conclude(entry, "failed", event.reason, QUEUE_ACTOR, null, event.message);
        return;
      }
      case "pr_updated":
        this.prUpdated(event.pr);
        return;
      case "base_pushed":
        this.basePushed(event.headSha);
        return;
      case "settings_changed":
        this.s.configuration = event.configuration;
        return;
      case "tick":
        this.tick();
        return;
    }
  }

  private reject(code: "not_found" | "conflict", message: string): void {
    this.rejection = { code, message };
  }

  private notQueued(prNumber: number): string {
    return `Pull request #${prNumber} is not in the merge queue for ${this.s.targetBranch}.`;
  }

  private byNumber(prNumber: number): Entry | undefined {
    const id = this.s.prIndex[String(prNumber)];
    return id === undefined ? undefined : this.s.entries[id];
  }

  /** Keeps the index of stacked entries in step with `entries` (see `stackIndexOf`). */
  private noteStack(entry: Entry, present: boolean): void {
    const index = stackIndexes.get(this.s.entries);
    if (index) noteStack(index, entry, present);
  }

  /** An entry gets a new PR record: the index of stacked entries follows it. */
  private setPr(entry: Entry, pr: PullRequestInfo): void {
    this.noteStack(entry, false);
    entry.pr = pr;
    this.noteStack(entry, true);
  }

  private submit(
    pr: PullRequestInfo,
    priority: number | null,
    noBatch: boolean,
    actor: Actor,
    entryId: string | undefined,
  ): void {
    const existing = this.byNumber(pr.number);
    if (existing) {
      // Resubmission updates priority and batching (docs/contract.md §5); an unstarted entry moves.
      existing.priorityValue = priority ?? PRIORITY_NAMES[DEFAULT_PRIORITY];
      existing.usedDefaultPriority = priority === null;
      existing.noBatch = noBatch;
      this.record(existing, existing.state, "resubmitted", actor);
      if (existing.state === "pending" && !existing.positioned) {
        this.removeFromOrder(existing.id);
        this.insertIntoOrder(existing);
      }
      return;
    }
    const id = entryId ?? `${this.s.queueId}:${this.s.nextId++}`;
    const entry: Entry = {
      id,
      pr,
      state: "not_ready",
      stateChangedAt: this.now,
      submittedAt: this.now,
      readyAt: null,
      seq: this.s.nextSeq++,
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
    const uploaded = this.s.uploadedTargets[String(pr.number)];
    if (uploaded?.headSha === pr.headSha) entry.impactedTargets = uploaded.targets;
    Reflect.deleteProperty(this.s.uploadedTargets, String(pr.number));
    this.s.entries[id] = entry;
    this.noteStack(entry, true);
    this.s.prIndex[String(pr.number)] = id;
    this.s.notReady.push(id);
    this.decisions.push({
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
    this.checkPullRequest(entry);
  }

  private restart(prNumber: number, actor: Actor): void {
    const entry = this.byNumber(prNumber);
    if (!entry) {
      this.reject("not_found", this.notQueued(prNumber));
      return;
    }
    if (this.s.merging?.entryId === entry.id) {
      this.reject("conflict", `Pull request #${prNumber} is being merged.`);
      return;
    }
    if (entry.bisection) {
      this.reject(
        "conflict",
        `Pull request #${prNumber} is being bisected with its batch; it restarts when that ends.`,
      );
      return;
    }
    if (entry.state === "testing" || entry.state === "tests_passed") {
      const run = entry.runId ? this.s.runs[entry.runId] : undefined;
      if (run) this.invalidateRun(run, "restarted_by_user", actor);
    } else if (entry.state === "pending_failure") {
      this.toPending(entry, "restarted_by_user", actor);
    }
  }

  private runFinished(event: Extract<QueueEvent, { type: "run_finished" }>): void {
    const run = this.s.runs[event.runId];
    // Unknown, finished or cancelled runs: a duplicate or late report.
    if (!run || run.status !== "running") return;
    if (event.outcome === "passed") {
      run.status = "passed";
      run.finishedAt = this.now;
      if (run.kind === "bisection") {
        this.bisectionResult(run, true);
        return;
      }
      let passed = 0;
      for (const id of run.unit) {
        const entry = this.s.entries[id];
        if (entry?.runId !== run.id) continue;
        this.transition(entry, "tests_passed", "tests_passed", run.id);
        passed += 1;
      }
      if (passed > 0) this.recordVerdict(passed, false);
      return;
    }
    if (event.conflict) {
      this.conflictFound(run, event.conflict);
      return;
    }
    const reason = event.reason ?? "failing_required_check";
    this.failRun(run, reason, event.failingChecks, event.flakyOnly === true, event.detail);
  }

  /**
   * A run's test branch could not be built: a conflict is not a test failure. Only the first PR,
   * in queue order, that does not apply onto those ahead of it leaves (`merge_conflict`, naming
   * them and the files); everything else the run covered is tested again without it, with no
   * bisection. A PR never leaves for conflicting with one behind it: the run's PRs are in queue
   * order, and the host reports the first that fails to apply.
   */
  private conflictFound(
    run: TestRun,
    conflict: NonNullable<Extract<QueueEvent, { type: "run_finished" }>["conflict"]>,
  ): void {
    const index = run.prs.findIndex((pr) => pr.number === conflict.prNumber);
    const named = index >= 0 ? at(run.prs, index) : undefined;
    const culprit = named ? this.s.entries[named.entryId] : undefined;
    const aheadNumbers =
      conflict.conflictsWith ?? (index >= 0 ? run.prs.slice(0, index).map((pr) => pr.number) : []);
    const files = conflict.files.length > 0 ? `: ${conflict.files.join(", ")}` : "";
    const detail =
      aheadNumbers.length > 0
        ? `conflicts with ${aheadNumbers.map((n) => `#${n}`).join(", ")} (ahead of it in the queue)${files}`
        : conflict.landedConflicts && conflict.landedConflicts.length > 0
          ? `conflicts with ${conflict.landedConflicts.map((n) => `#${n}`).join(", ")} (already merged into ${this.s.targetBranch})${files}`
          : `does not apply onto ${this.s.targetBranch}${files}`;
    run.status = "failed";
    run.finishedAt = this.now;
    run.failingChecks = [];
    run.failure = { reason: "merge_conflict", detail: `#${conflict.prNumber} ${detail}` };
    const leaving =
      culprit && culprit.pr.headSha === named?.headSha && this.s.merging?.entryId !== culprit.id
        ? culprit
        : undefined;
    // The rest of the run's unit goes back to be tested without the conflicting PR.
    const why = leaving
      ? `#${conflict.prNumber} left the queue: it ${detail}`
      : `the test branch of run ${run.id} could not be built`;
    if (run.kind === "bisection") {
      const group = run.bisectionGroup ? this.s.bisections[run.bisectionGroup] : undefined;
      const segment = group?.segments.find((s) => s.runId === run.id);
      if (segment) {
        segment.status = "untested";
        segment.runId = null;
      }
    } else {
      for (const id of run.unit) {
        const entry = this.s.entries[id];
        if (!entry || entry.runId !== run.id || entry.id === leaving?.id) continue;
        entry.runId = null;
        this.transition(entry, "pending", "prerequisite_merge_item_failed", run.id, why);
      }
    }
    if (leaving) {
      leaving.failure = {
        runId: run.id,
        reason: "merge_conflict",
        checks: [],
        detail,
      };
      this.conclude(leaving, "failed", "merge_conflict", QUEUE_ACTOR, run.id, detail);
    }
  }

  private failRun(
    run: TestRun,
    reason: TransitionReason,
    failingChecks: string[],
    flakyOnly: boolean,
    detail?: string,
  ): void {
    run.status = "failed";
    run.finishedAt = this.now;
    run.failingChecks = failingChecks;
    run.failure = { reason, detail: detail ?? null };
    // Every run the queue judges, bisection runs included: a failure made only of known flaky
    // (or quarantined) tests gets one more run of the same combination, on the timeline.
    if (flakyOnly && run.attempt === 1 && run.kind === "bisection") {
      if (this.retryBisectionRun(run)) return;
    }
    if (run.kind === "bisection") {
      this.bisectionResult(run, false);
      return;
    }
    const unit = run.unit.map((id) => this.s.entries[id]).filter((e) => e?.runId === run.id);
    if (flakyOnly && run.attempt === 1 && unit.length > 0) {
      // The same tree: what landed meanwhile is now part of the head it starts on.
      const retry = this.newRun({
        ...run,
        ahead: run.ahead.filter((id) => this.s.entries[id] !== undefined),
        attempt: run.attempt + 1,
      });
      for (const entry of unit as Entry[]) {
        entry.flakyRetries += 1;
        entry.runId = retry.id;
        this.record(
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
      this.transition(entry, "pending_failure", reason, run.id, why);
    }
  }

  /** A bisection run's flaky-only failure: the same segment once more, on the same tree. */
  private retryBisectionRun(run: TestRun): boolean {
    const group = run.bisectionGroup ? this.s.bisections[run.bisectionGroup] : undefined;
    const segment = group?.segments.find((s) => s.runId === run.id);
    if (!group || !segment) return false;
    const retry = this.newRun({
      kind: "bisection",
      ahead: run.ahead.filter((id) => this.s.entries[id] !== undefined),
      unit: segment.entries,
      attempt: run.attempt + 1,
      bisectionGroup: group.id,
    });
    segment.runId = retry.id;
    for (const id of segment.entries) {
      const entry = this.s.entries[id];
      if (!entry) continue;
      entry.flakyRetries += 1;
      this.record(
        entry,
        entry.state,
        "retried_flaky_failure",
        QUEUE_ACTOR,
        retry.id,
        `only known flaky tests failed in bisection run ${run.id}; retrying once`,
      );
    }
    return true;
  }

  private mergeFinished(entryId: string, newHeadSha: string): void {
    const entry = this.s.entries[entryId];
    const merging = this.s.merging;
    if (!entry || merging?.entryId !== entryId) return;
    this.s.merging = null;
    this.s.base.merges.push({
      entryId,
      number: entry.pr.number,
      sha: newHeadSha,
      targets: this.targetsOf(entry),
    });
    this.s.base.headSha = newHeadSha;
    this.conclude(entry, "merged", merging.reason, QUEUE_ACTOR, merging.runId);
    // The PRs it is stacked on landed with it: merged, now or whenever they are submitted.
    const contained = entry.pr.contains ?? [];
    if (contained.length === 0) return;
    const through = this.s.landedThrough;
    for (const c of contained) {
      through[String(c.number)] = { headSha: c.headSha, by: entry.pr.number };
    }
    const keys = Object.keys(through);
    for (const key of keys.slice(0, Math.max(0, keys.length - LANDED_THROUGH_KEPT))) {
      Reflect.deleteProperty(through, key);
    }
    for (const c of contained) {
      const queued = this.byNumber(c.number);
      if (queued && queued.pr.headSha === c.headSha) this.checkPullRequest(queued);
    }
  }

  private prUpdated(pr: PullRequestInfo): void {
    const entry = this.byNumber(pr.number);
    if (!entry) return;
    const before = entry.pr;
    if (this.s.merging?.entryId === entry.id) {
      this.setPr(entry, { ...pr, headSha: before.headSha });
      return;
    }
    if (pr.state === "merged") {
      this.setPr(entry, pr);
      this.conclude(entry, "merged", "merged_manually", { kind: "git_host" });
      return;
    }
    if (pr.state === "closed") {
      this.conclude(entry, "cancelled", "pr_closed", { kind: "git_host" });
      return;
    }
    if (pr.headSha !== before.headSha) {
      this.setPr(entry, pr);
      this.conclude(entry, "cancelled", "pr_pushed_to", { kind: "git_host" }, null, pr.headSha);
      return;
    }
    if (pr.draft) {
      this.conclude(entry, "cancelled", "pr_draft", { kind: "git_host" });
      return;
    }
    if (pr.baseBranch !== before.baseBranch && entry.state !== "not_ready") {
      this.conclude(entry, "cancelled", "pr_base_branch_changed", { kind: "git_host" });
      return;
    }
    this.setPr(entry, pr);
    this.checkPullRequest(entry);
  }

  private basePushed(headSha: string): void {
    const base = this.s.base;
    if (headSha === base.headSha) return;
    // A report of a head the queue itself produced earlier arrives late: nothing changed.
    if (headSha === base.anchorSha || base.merges.some((m) => m.sha === headSha)) return;
    this.s.base = { headSha, merges: [], anchorSha: headSha };
    // Trunk restarts everything in flight on an outside push (background §merge-queue-2.4).
    for (const group of Object.values(this.s.bisections)) this.dissolveBisection(group);
    for (const run of Object.values(this.s.runs)) {
      if (run.status === "running" || run.status === "passed") {
        this.invalidateRun(run, "restarted_on_new_base", QUEUE_ACTOR);
      }
    }
    for (const id of [...this.s.order]) {
      const entry = this.s.entries[id];
      if (entry?.state === "pending_failure" && this.s.merging?.entryId !== id) {
        this.toPending(entry, "restarted_on_new_base", QUEUE_ACTOR);
      }
    }
  }

  private tick(): void {
    // Targets uploaded for PRs that were never submitted are forgotten after a week.
    for (const [number, uploaded] of Object.entries(this.s.uploadedTargets)) {
      if (this.now - uploaded.at > 7 * 24 * HOUR) {
        Reflect.deleteProperty(this.s.uploadedTargets, number);
      }
    }
    const timeout = this.config.testingTimeoutMinutes;
    if (timeout > 0) {
      for (const run of Object.values(this.s.runs)) {
        if (run.status === "running" && this.now >= run.startedAt + timeout * MINUTE) {
          this.decisions.push({ type: "cancel_run", runId: run.id, reason: "test_run_timeout" });
          this.failRun(run, "test_run_timeout", [], false);
        }
      }
    }
    const notReadyHours = this.config.notReadyTimeoutHours;
    if (notReadyHours > 0) {
      for (const id of [...this.s.notReady]) {
        const entry = this.entry(id);
        if (this.now >= entry.stateChangedAt + notReadyHours * HOUR) {
          this.conclude(entry, "cancelled", "not_ready_timeout", QUEUE_ACTOR);
        }
      }
    }
  }

  // ---- readiness -------------------------------------------------------------------------------

  /** Why an entry cannot be tested yet, or null when it is ready. */
  private notReadyReason(entry: Entry): TransitionReason | null {
    const pr = entry.pr;
    if (pr.baseBranch !== this.s.targetBranch) return "base_branch_mismatch";
    if (pr.reviewRequired === true) return "review_required";
    if (pr.mergeability === "not_mergeable") return "not_mergeable";
    // Entries already admitted keep their place while the host recomputes mergeability.
    if (entry.state === "not_ready" && pr.mergeability !== "mergeable") return "not_mergeable";
    if (this.config.mode === "parallel" && entry.impactedTargets === null) {
      return "awaiting_impacted_targets";
    }
    return null;
  }

  private checkPullRequest(entry: Entry): void {
    const through = this.s.landedThrough[String(entry.pr.number)];
    if (through?.headSha === entry.pr.headSha && this.s.merging?.entryId !== entry.id) {
      // Its commits are on the branch already, inside a PR stacked on it: nothing to test.
      this.conclude(
        entry,
        "merged",
        "merged_through_stack",
        QUEUE_ACTOR,
        null,
        `its commits landed with #${through.by}`,
      );
      return;
    }
    if (entry.pr.state === "closed") {
      this.conclude(entry, "cancelled", "pr_closed", { kind: "git_host" });
      return;
    }
    if (entry.pr.state === "merged") {
      this.conclude(entry, "merged", "merged_manually", { kind: "git_host" });
      return;
    }
    if (entry.pr.draft) {
      this.conclude(entry, "cancelled", "pr_draft", { kind: "git_host" });
      return;
    }
    const reason = this.notReadyReason(entry);
    if (reason === null && entry.state === "not_ready") {
      entry.readyAt = this.now;
      this.transition(entry, "pending", "ready");
      this.insertIntoOrder(entry);
    } else if (reason !== null && entry.state !== "not_ready") {
      this.leaveOrder(entry, reason);
      entry.readyAt = null;
      this.transition(entry, "not_ready", reason, null, this.notReadyDetail(reason));
    } else if (
      reason === "review_required" &&
      entry.state === "not_ready" &&
      entry.awaitingReview !== true
    ) {
      // Submitted (or held for another reason) and now waiting for reviews: the one not-ready
      // reason a person must act on is said on the timeline, without restarting its not-ready time.
      this.record(entry, "not_ready", reason, QUEUE_ACTOR, null, this.notReadyDetail(reason));
    }
    if (reason === "review_required") entry.awaitingReview = true;
    else Reflect.deleteProperty(entry, "awaitingReview");
  }

  private notReadyDetail(reason: TransitionReason): string | null {
    return reason === "review_required"
      ? "the target branch requires approving reviews this pull request does not have yet"
      : null;
  }

  // ---- queue order -----------------------------------------------------------------------------

  private insertIntoOrder(entry: Entry): void {
    const order = this.s.order;
    let index: number;
    if (entry.priorityValue === URGENT_PRIORITY) {
      // Urgent goes ahead of everything not yet passed, behind earlier urgent entries.
      index = order.findIndex((id) => {
        const other = this.entry(id);
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
        const other = this.entry(at(order, i));
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
    for (const id of this.containedIn(entry)) {
      if (this.s.merging?.entryId === id) continue;
      const position = order.indexOf(id);
      if (position >= 0 && position < index) {
        index = position;
        reason = "stacked_pr_ahead";
      }
    }
    for (const id of this.containedBy(entry)) index = Math.max(index, order.indexOf(id) + 1);
    order.splice(index, 0, entry.id);
    if (index < order.length - 1) {
      // Everything behind that included the entries ahead of it is now tested on the wrong base.
      for (const run of Object.values(this.s.runs)) {
        if ((run.status === "running" || run.status === "passed") && run.kind === "main") {
          if (this.dependsOnEntry(run, entry)) {
            this.invalidateRun(run, reason, QUEUE_ACTOR);
          }
        }
      }
    }
  }

  /** Queued entries whose PR `entry`'s PR is stacked on (it contains their heads). */
  private containedBy(entry: Entry): string[] {
    const ids: string[] = [];
    for (const contained of entry.pr.contains ?? []) {
      const other = this.byNumber(contained.number);
      if (other && other.id !== entry.id && other.pr.headSha === contained.headSha) {
        ids.push(other.id);
      }
    }
    return ids;
  }

  /** Queued entries whose PR is stacked on `entry`'s PR (they contain its head). */
  private containedIn(entry: Entry): string[] {
    const ids: string[] = [];
    for (const id of stackIndexOf(this.s.entries).get(entry.pr.number) ?? []) {
      const other = this.s.entries[id];
      if (!other || other.id === entry.id || !other.pr.contains) continue;
      if (
        other.pr.contains.some(
          (c) => c.number === entry.pr.number && c.headSha === entry.pr.headSha,
        )
      ) {
        ids.push(other.id);
      }
    }
    return ids;
  }

  /** Whether a run's unit comes after `entry` in the order and depends on it. */
  private dependsOnEntry(run: TestRun, entry: Entry): boolean {
    const position = this.s.order.indexOf(entry.id);
    return run.unit.some((id) => {
      const unitEntry = this.s.entries[id];
      if (!unitEntry || unitEntry.runId !== run.id) return false;
      return (
        this.s.order.indexOf(id) > position &&
        targetsOverlap(this.targetsOf(unitEntry), this.targetsOf(entry))
      );
    });
  }

  private removeFromOrder(id: string): void {
    const index = this.s.order.indexOf(id);
    if (index >= 0) this.s.order.splice(index, 1);
  }

  /** An entry stops being ready (or concludes): its runs end and dependents are replanned. */
  private leaveOrder(entry: Entry, reason: TransitionReason): void {
    this.removeFromOrder(entry.id);
    if (entry.bisection) {
      const group = this.s.bisections[entry.bisection.groupId];
      if (group) this.dropFromBisection(group, entry.id);
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
    this.replanRunsIncluding(new Set([entry.id]), dependentReason);
    entry.runId = null;
  }

  /**
   * Entries leave what other runs assumed (they concluded, stopped being ready, or went to
   * bisection): every run that included them is tested again without them, and a held failure
   * that included them was most likely theirs, so it is tested again too.
   */
  private replanRunsIncluding(ids: ReadonlySet<string>, reason: TransitionReason): void {
    for (const run of Object.values(this.s.runs)) {
      if (run.status === "cancelled") continue;
      if (!run.prs.some((pr) => ids.has(pr.entryId))) continue;
      if (run.status === "running" || run.status === "passed") {
        this.invalidateRun(run, reason, QUEUE_ACTOR, ids);
        continue;
      }
      for (const id of run.unit) {
        const held = this.s.entries[id];
        if (held && !ids.has(id) && held.failure?.runId === run.id && !held.bisection) {
          this.toPending(held, reason, QUEUE_ACTOR);
        }
      }
    }
  }

  // ---- state changes ---------------------------------------------------------------------------

  private record(
    entry: Entry,
    to: PrState,
    reason: TransitionReason,
    actor: Actor = QUEUE_ACTOR,
    runId: string | null = null,
    detail: string | null = null,
  ): void {
    this.decisions.push({
      type: "transition",
      entryId: entry.id,
      prNumber: entry.pr.number,
      from: entry.state,
      to,
      reason,
      actor,
      runId,
      detail,
    });
  }

  private transition(
    entry: Entry,
    to: PrState,
    reason: TransitionReason,
    runId: string | null = null,
    detail: string | null = null,
    actor: Actor = QUEUE_ACTOR,
  ): void {
    this.record(entry, to, reason, actor, runId, detail);
    if (entry.state === "not_ready" && to !== "not_ready") {
      const index = this.s.notReady.indexOf(entry.id);
      if (index >= 0) this.s.notReady.splice(index, 1);
    } else if (entry.state !== "not_ready" && to === "not_ready") {
      this.s.notReady.push(entry.id);
    }
    entry.state = to;
    entry.stateChangedAt = this.now;
  }

  /** Back to `pending` at the same position, to be tested again. */
  private toPending(entry: Entry, reason: TransitionReason, actor: Actor): void {
    if (entry.state === "pending" || entry.state === "not_ready") return;
    const run = entry.runId ? this.s.runs[entry.runId] : undefined;
    if (run?.status === "running" && run.unit.every((id) => id === entry.id)) {
      run.status = "cancelled";
      this.decisions.push({ type: "cancel_run", runId: run.id, reason });
    }
    entry.runId = null;
    entry.failure = null;
    this.transition(entry, "pending", reason, null, null, actor);
  }

  /** A run no longer tests what would land: cancel it and send its unit back to pending. */
  private invalidateRun(
    run: TestRun,
    reason: TransitionReason,
    actor: Actor,
    leaving: ReadonlySet<string> = new Set(),
  ): void {
    if (run.status === "running") {
      this.decisions.push({ type: "cancel_run", runId: run.id, reason });
    }
    run.status = "cancelled";
    run.finishedAt = this.now;
    for (const id of run.unit) {
      const entry = this.s.entries[id];
      if (!entry || leaving.has(id) || entry.runId !== run.id) continue;
      if (this.s.merging?.entryId === entry.id) continue;
      if (entry.bisection) continue;
      entry.runId = null;
      this.transition(entry, "pending", reason, null, null, actor);
    }
  }

  /** merged, failed or cancelled: the entry leaves the queue. */
  private conclude(
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
      this.removeFromOrder(entry.id);
      // Its own run is still going when a later run cleared it: no longer needed.
      const own = entry.runId ? this.s.runs[entry.runId] : undefined;
      if (own?.status === "running" && own.id !== runId) {
        const rest = own.unit.filter((id) => id !== entry.id && this.s.entries[id]);
        if (rest.length === 0) {
          own.status = "cancelled";
          own.finishedAt = this.now;
          this.decisions.push({ type: "cancel_run", runId: own.id, reason });
        }
      }
    } else this.leaveOrder(entry, reason);
    this.transition(entry, to, reason, runId, detail, actor);
    this.concluded.push(entry);
    Reflect.deleteProperty(this.s.entries, entry.id);
    this.noteStack(entry, false);
    Reflect.deleteProperty(this.s.prIndex, String(entry.pr.number));
  }

  // ---- settling ------------------------------------------------------------------------------

  settle(): void {
    for (let round = 0; round < 10_000; round++) {
      const before = this.decisions.length;
      this.revalidate();
      this.resolveFailures();
      this.mergeNext();
      this.progressBisections();
      this.startRuns();
      this.finishModeSwitchIfEmpty();
      if (this.decisions.length === before) break;
    }
    this.collectGarbage();
  }

  /**
   * Runs planned on a base that has since changed in a way they did not include (a bisected PR
   * landed ahead of them, a merge in another lane touched their targets) test the wrong thing.
   */
  private revalidate(): void {
    for (const run of Object.values(this.s.runs)) {
      if (run.kind !== "main" && run.status !== "passed") continue;
      if (run.status === "running" || run.status === "passed") {
        if (this.landingOf(run) === undefined) {
          this.invalidateRun(run, "restarted_on_new_base", QUEUE_ACTOR);
        }
      } else if (run.status === "failed" && this.landedFrom(run.baseSha) === undefined) {
        for (const id of run.unit) {
          const entry = this.s.entries[id];
          if (entry?.failure?.runId === run.id && !entry.bisection) {
            this.toPending(entry, "restarted_on_new_base", QUEUE_ACTOR);
          }
        }
      }
    }
  }

  private finishModeSwitchIfEmpty(): void {
    if (this.config.state !== "switching_modes") return;
    if (Object.keys(this.s.entries).length > 0) return;
    this.s.configuration = finishModeSwitch(this.config);
    this.decisions.push({ type: "queue_state", configuration: this.s.configuration });
  }

  /** Impacted targets of an entry; in single mode everything depends on everything. */
  private targetsOf(entry: Entry): ImpactedTargets {
    if (this.config.mode !== "parallel") return "ALL";
    return entry.impactedTargets ?? "ALL";
  }

  /**
   * The entries ahead of `index` in the order that an entry with `targets` depends on, directly
   * or through each other (a dependency's own dependencies are part of its tested base).
   */
  private dependenciesAt(index: number, targets: ImpactedTargets): string[] {
    const order = this.s.order;
    if (this.config.mode !== "parallel") return order.slice(0, index);
    const chosen = new Set<string>();
    let frontier: ImpactedTargets[] = [targets];
    // Walk backwards once: an earlier entry is needed if it overlaps anything already needed.
    for (let i = index - 1; i >= 0; i--) {
      const id = at(order, i);
      const other = this.targetsOf(this.entry(id));
      if (frontier.some((t) => targetsOverlap(t, other))) {
        chosen.add(id);
        frontier = [...frontier, other];
      }
    }
    return order.slice(0, index).filter((id) => chosen.has(id));
  }

  /** Entries whose changes a new run includes: those in flight, not those being bisected. */
  private inFlight(entry: Entry): boolean {
    return (
      entry.bisection === null &&
      (entry.state === "testing" ||
        entry.state === "tests_passed" ||
        entry.state === "pending_failure")
    );
  }

  private startRuns(): void {
    this.batchDeadline = null;
    // Only the few entries told to wait last time carry a reason; they are listed.
    for (const id of this.s.waiting ?? []) {
      const entry = this.s.entries[id];
      if (entry) Reflect.deleteProperty(entry, "waiting");
    }
    if (this.s.waiting !== undefined) Reflect.deleteProperty(this.s, "waiting");
    // Runs are planned on the branch as it is: not while a merge is moving it.
    if (this.config.state === "paused" || this.s.merging !== null) return;
    let slots =
      this.config.concurrency -
      Object.values(this.s.runs).filter((r) => r.status === "running" && r.kind === "main").length;
    const order = this.s.order;
    const blockedTargets: ImpactedTargets[] = [];
    for (let i = 0; i < order.length && slots > 0; i++) {
      const entry = this.entry(at(order, i));
      if (entry.bisection !== null) {
        // Undecided PRs hold their places: what depends on them waits for their verdict.
        if (this.config.mode !== "parallel") {
          this.markWaitingBehindBisection(i);
          break;
        }
        blockedTargets.push(this.targetsOf(entry));
        continue;
      }
      if (entry.state !== "pending") continue;
      const targets = this.targetsOf(entry);
      // Something ahead that it depends on is still waiting: it must wait too (order).
      if (blockedTargets.some((t) => targetsOverlap(t, targets))) {
        if (this.config.mode !== "parallel") break;
        blockedTargets.push(targets);
        continue;
      }
      const deps = this.dependenciesAt(i, targets);
      const depsReady = deps.every((id) => {
        const dep = this.entry(id);
        return this.inFlight(dep) || dep.bisection !== null;
      });
      if (!depsReady || this.beyondFailureDepth(deps) || !this.worthStarting(deps)) {
        if (this.config.mode !== "parallel") break;
        blockedTargets.push(targets);
        continue;
      }
      if (this.tryDirectMerge(entry, deps)) return;
      const unit = this.formUnit(i);
      if (unit === null) {
        blockedTargets.push(targets);
        continue;
      }
      this.startMainRun(unit);
      slots -= 1;
      i = order.indexOf(at(unit, unit.length - 1));
    }
  }

  /**
   * `speculationThresholdPercent`: whether a run on top of `deps` is likely enough to be used,
   * given the pull requests among them still being tested and the queue's failure rate.
   */
  private worthStarting(deps: string[]): boolean {
    const threshold = this.config.speculationThresholdPercent;
    if (threshold <= 0) return true;
    let untested = 0;
    for (const id of deps) if (this.entry(id).state === "testing") untested += 1;
    return worthSpeculating(threshold, this.s.verdicts, untested);
  }

  /** Counts a verdict on a unit of `prs` pull requests towards the queue's failure rate. */
  private recordVerdict(prs: number, failed: boolean): void {
    this.s.verdicts = recordVerdict(this.s.verdicts, prs, failed);
  }

  /**
   * Whether a new run would sit on top of a held failure deeper than `pendingFailureDepth`
   * successor levels: only that many successors can clear it, so a run further behind would most
   * likely fail with it and be thrown away. It waits until the failure is resolved.
   */
  private beyondFailureDepth(deps: string[]): boolean {
    const depth = this.config.pendingFailureDepth;
    let counts: Map<string, number> | null = null;
    for (const id of deps) {
      const held = this.entry(id);
      if (held.state !== "pending_failure" || held.bisection !== null) continue;
      counts ??= this.successorCounts();
      if ((counts.get(id) ?? 0) >= depth) return true;
    }
    return false;
  }

  /**
   * For every entry, how many runs include it ahead of their own unit and still count as its
   * successors: testing, passed, or failed with it and held too.
   */
  private successorCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const run of Object.values(this.s.runs)) {
      if (run.kind !== "main" || run.status === "cancelled") continue;
      if (run.status === "failed") {
        const held = run.unit.some((u) => this.s.entries[u]?.failure?.runId === run.id);
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
  private formUnit(index: number): string[] | null {
    const order = this.s.order;
    const first = this.entry(at(order, index));
    if (!this.config.batch || first.noBatch) return [first.id];
    const size = Math.max(1, this.config.batchingMinSize);
    const unit: string[] = [];
    let oldestReady = Infinity;
    for (let i = index; i < order.length && unit.length < size; i++) {
      const entry = this.entry(at(order, i));
      if (entry.state !== "pending" || entry.noBatch) break;
      unit.push(entry.id);
      oldestReady = Math.min(oldestReady, entry.readyAt ?? this.now);
    }
    if (unit.length >= size) return unit;
    const urgent = unit.some((id) => this.entry(id).priorityValue === URGENT_PRIORITY);
    const deadline = oldestReady + this.config.batchingMaxWaitTimeMinutes * MINUTE;
    if (urgent || this.now >= deadline || this.config.state !== "running") return unit;
    this.batchDeadline = Math.min(this.batchDeadline ?? Infinity, deadline);
    for (const id of unit) {
      this.entry(id).waiting = {
        kind: "batch_forming",
        have: unit.length,
        need: size,
        startsBy: deadline,
      };
      (this.s.waiting ??= []).push(id);
    }
    return null;
  }

  /** The first pending entry behind a batch under bisection says what it waits for. */
  private markWaitingBehindBisection(index: number): void {
    const order = this.s.order;
    const held: number[] = [];
    for (let i = index; i < order.length; i++) {
      const entry = this.entry(at(order, i));
      if (entry.bisection !== null) {
        held.push(entry.pr.number);
        continue;
      }
      if (entry.state === "pending") {
        entry.waiting = { kind: "bisection_ahead", prNumbers: held };
        (this.s.waiting ??= []).push(entry.id);
        return;
      }
    }
  }

  private startMainRun(unitIds: string[]): void {
    const order = this.s.order;
    const firstIndex = order.indexOf(at(unitIds, 0));
    const unitSet = new Set(unitIds);
    const ahead = new Set<string>();
    for (const id of unitIds) {
      const entry = this.entry(id);
      const deps = this.dependenciesAt(order.indexOf(id), this.targetsOf(entry));
      for (const dep of deps) {
        if (!unitSet.has(dep) && this.inFlight(this.entry(dep))) ahead.add(dep);
      }
    }
    const aheadIds = order.slice(0, firstIndex + unitIds.length).filter((id) => ahead.has(id));
    const run = this.newRun({
      kind: "main",
      ahead: aheadIds,
      unit: unitIds,
      attempt: 1,
      bisectionGroup: null,
    });
    for (const id of unitIds) {
      const entry = this.entry(id);
      entry.runId = run.id;
      entry.unit = unitIds;
      entry.positioned = true;
      this.transition(entry, "testing", "test_run_started", run.id);
    }
  }

  private newRun(
    spec: Pick<TestRun, "kind" | "ahead" | "unit" | "attempt" | "bisectionGroup">,
  ): TestRun {
    const id = `${this.s.nextId++}`;
    const held = new Set<number>();
    for (const other of Object.values(this.s.runs)) {
      if (other.status === "running" && other.slot !== undefined) held.add(other.slot);
    }
    let slot = 0;
    while (held.has(slot)) slot++;
    const prs = [...spec.ahead, ...spec.unit].map((entryId) => {
      const entry = this.entry(entryId);
      return { entryId, number: entry.pr.number, headSha: entry.pr.headSha };
    });
    const run: TestRun = {
      id,
      kind: spec.kind,
      status: "running",
      baseSha: this.s.base.headSha,
      prs,
      ahead: [...spec.ahead],
      unit: [...spec.unit],
      startedAt: this.now,
      finishedAt: null,
      bisectionGroup: spec.bisectionGroup,
      failingChecks: [],
      attempt: spec.attempt,
      slot,
    };
    this.s.runs[id] = run;
    this.decisions.push({ type: "start_run", run: copyRun(run) });
    return run;
  }

  // ---- pending failure -------------------------------------------------------------------------

  private resolveFailures(): void {
    const seen = new Set<string>();
    for (const id of this.heldInOrder()) {
      const entry = this.s.entries[id];
      if (!entry || entry.state !== "pending_failure" || entry.bisection || !entry.failure)
        continue;
      const runId = entry.failure.runId;
      if (seen.has(runId)) continue;
      seen.add(runId);
      const run = this.s.runs[runId];
      if (!run) continue;
      const unit = run.unit
        .map((u) => this.s.entries[u])
        .filter((e): e is Entry => e?.failure?.runId === runId && e.bisection === null);
      if (unit.length === 0) continue;
      // Wait for every predecessor the run included: a failure among them explains this one.
      if (run.ahead.some((a) => this.s.entries[a] !== undefined)) continue;
      if (this.s.merging !== null && unit.some((e) => e.id === this.s.merging?.entryId)) continue;
      if (this.waitingForSuccessors(unit)) continue;
      // With optimistic merging, a passed successor clears it: the merge step does that.
      if (this.config.canOptimisticallyMerge && this.clearingRun(at(unit, 0)) !== null) continue;
      // The failure stands: it counts towards the queue's failure rate.
      this.recordVerdict(unit.length, true);
      if (unit.length === 1) {
        const only = at(unit, 0);
        const failure = only.failure ?? entry.failure;
        this.conclude(
          only,
          "failed",
          failure.reason,
          QUEUE_ACTOR,
          runId,
          failure.detail ??
            (failure.checks.length > 0 ? `failed: ${failure.checks.join(", ")}` : null),
        );
      } else {
        this.startBisection(run, unit);
      }
    }
  }

  /**
   * The queued entries holding a failure of their own run (`pending_failure`, not bisected), in
   * queue order. Found through the runs (a failure points at a run whose unit holds the entry),
   * so that the cost follows the runs, not the length of the queue.
   */
  private heldInOrder(): string[] {
    const held: string[] = [];
    for (const run of Object.values(this.s.runs)) {
      for (const id of run.unit) {
        const entry = this.s.entries[id];
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
    for (const id of held) positions.set(id, this.s.order.indexOf(id));
    return [...new Set(held)]
      .filter((id) => (positions.get(id) ?? -1) >= 0)
      .sort((a, b) => (positions.get(a) ?? 0) - (positions.get(b) ?? 0));
  }

  /** `pendingFailureDepth`: successors within that many levels still testing with this unit. */
  private waitingForSuccessors(unit: Entry[]): boolean {
    const depth = this.config.pendingFailureDepth;
    if (depth <= 0) return false;
    const ids = new Set(unit.map((e) => e.id));
    const successorRuns = new Map<string, TestRun>();
    const order = this.s.order;
    const start = Math.max(...unit.map((e) => order.indexOf(e.id)));
    for (let i = start + 1; i < order.length && successorRuns.size < depth; i++) {
      const entry = this.entry(at(order, i));
      const run = entry.runId ? this.s.runs[entry.runId] : undefined;
      if (!run || run.kind !== "main" || ids.has(entry.id)) continue;
      if (!run.prs.some((pr) => ids.has(pr.entryId))) continue;
      successorRuns.set(run.id, run);
    }
    return [...successorRuns.values()].some((run) => run.status === "running");
  }

  // ---- bisection -----------------------------------------------------------------------------

  private startBisection(run: TestRun, unit: Entry[]): void {
    const id = `b${this.s.nextId++}`;
    const group: BisectionGroup = {
      id,
      runId: run.id,
      segments: [
        { entries: unit.map((e) => e.id), status: "failed", runId: run.id, inferred: false },
      ],
    };
    this.s.bisections[id] = group;
    // Its runs take the bisection slots (background §merge-queue-2.7), but its PRs keep their
    // places in the queue: nothing behind them lands, or is tested, before they are decided
    // (what is tested behind them meanwhile would have to be tested again with those cleared).
    for (const entry of unit) {
      entry.bisection = { groupId: id };
      this.record(entry, "pending_failure", "bisection_started", QUEUE_ACTOR, run.id);
    }
    // The batch leaves the main queue while it is bisected.
    this.replanRunsIncluding(new Set(unit.map((e) => e.id)), "prerequisite_merge_item_failed");
  }

  /** A culprit's failure in words: its failing checks, else what its run reported. */
  private describeFailure(run: TestRun | undefined, culprit: Entry): string {
    const checks = run?.failingChecks ?? culprit.failure?.checks ?? [];
    if (checks.length > 0) return `failed ${checks.join(", ")}`;
    return run?.failure?.detail ?? culprit.failure?.detail ?? "failed";
  }

  private progressBisections(): void {
    if (Object.keys(this.s.bisections).length === 0) return;
    const skip = this.config.optimizationMode === "bisection_skip_redundant_tests";
    let slots =
      this.config.bisectionConcurrency -
      Object.values(this.s.runs).filter((r) => r.status === "running" && r.kind === "bisection")
        .length;
    for (const group of Object.values(this.s.bisections)) {
      // Split failed segments; decide single culprits.
      for (let i = 0; i < group.segments.length; i++) {
        const segment = at(group.segments, i);
        if (segment.status !== "failed") continue;
        if (segment.entries.length === 1) {
          group.segments.splice(i--, 1);
          const culprit = this.s.entries[at(segment.entries, 0)];
          if (culprit) {
            const failedRun = segment.runId ? this.s.runs[segment.runId] : undefined;
            culprit.bisection = null;
            this.conclude(
              culprit,
              "failed",
              (segment.inferred ? undefined : failedRun?.failure?.reason) ??
                culprit.failure?.reason ??
                "failing_required_check",
              QUEUE_ACTOR,
              segment.runId,
              segment.inferred
                ? "bisection: its batch failed and the rest of the batch passed"
                : `bisection: ${this.describeFailure(failedRun, culprit)}`,
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
      if (this.config.state === "paused" || this.s.merging !== null) continue;
      for (const segment of group.segments) {
        if (slots <= 0) break;
        if (segment.status !== "untested") continue;
        // On top of what will land before it (halves already proven good), so that the run
        // still matches the branch when they have merged.
        const first = this.s.order.indexOf(at(segment.entries, 0));
        const ahead = this.s.order
          .slice(0, Math.max(0, first))
          .filter((id) => this.inFlight(this.entry(id)));
        const run = this.newRun({
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

  private bisectionResult(run: TestRun, passed: boolean): void {
    const group = run.bisectionGroup ? this.s.bisections[run.bisectionGroup] : undefined;
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
        this.returnToMainQueue(waiting.entries, "bisection_inconclusive", run.id);
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
    const unit = segment.entries.filter((id) => this.s.entries[id] !== undefined);
    for (const id of unit) {
      const entry = this.entry(id);
      entry.bisection = null;
      entry.failure = null;
      entry.runId = run.id;
      entry.unit = unit;
      this.transition(entry, "tests_passed", "bisection_passed", run.id);
    }
    this.closeBisectionIfDone(group);
  }

  /**
   * Entries leave bisection undecided: back to `pending` at the place they hold in the queue, to
   * be tested there with what is ahead of them.
   */
  private returnToMainQueue(ids: string[], reason: TransitionReason, runId: string | null): void {
    for (const id of ids) {
      const entry = this.s.entries[id];
      if (!entry) continue;
      entry.bisection = null;
      entry.failure = null;
      entry.runId = null;
      this.transition(entry, "pending", reason, runId);
    }
  }

  private dropFromBisection(group: BisectionGroup, entryId: string): void {
    for (const segment of group.segments) {
      if (!segment.entries.includes(entryId)) continue;
      const waitingFor = `after:${segment.entries.join(",")}`;
      segment.entries = segment.entries.filter((id) => id !== entryId);
      // What was known of the segment held with the entry in it: it is tested again (its run,
      // if any, is cancelled with the entry's), and a sibling waiting for its verdict goes ahead.
      segment.status = "untested";
      segment.runId = null;
      segment.inferred = false;
      for (const sibling of group.segments) {
        if (sibling.runId === waitingFor) {
          sibling.status = "untested";
          sibling.runId = null;
        }
      }
    }
    group.segments = group.segments.filter((s) => s.entries.length > 0);
    this.closeBisectionIfDone(group);
  }

  private closeBisectionIfDone(group: BisectionGroup): void {
    if (group.segments.length === 0) Reflect.deleteProperty(this.s.bisections, group.id);
  }

  private dissolveBisection(group: BisectionGroup): void {
    for (const segment of group.segments) {
      const run = segment.runId ? this.s.runs[segment.runId] : undefined;
      if (segment.runId && run?.status === "running") {
        run.status = "cancelled";
        this.decisions.push({
          type: "cancel_run",
          runId: segment.runId,
          reason: "restarted_on_new_base",
        });
      }
      this.returnToMainQueue(segment.entries, "restarted_on_new_base", null);
    }
    Reflect.deleteProperty(this.s.bisections, group.id);
  }

  // ---- merging -------------------------------------------------------------------------------

  /**
   * Where in `base.merges` the PRs merged since `baseSha` start (`merges.length` when nothing
   * landed since); undefined if the head is not on the lineage.
   */
  private landedFrom(baseSha: string): number | undefined {
    const base = this.s.base;
    if (baseSha === base.anchorSha) return 0;
    const index = this.lineageIndex().get(baseSha);
    return index === undefined ? undefined : index + 1;
  }

  /** Where each head of the lineage is (kept across calls, extended as merges are appended). */
  private lineageIndex(): Map<string, number> {
    return lineageIndexOf(this.s.base.merges);
  }

  /**
   * What merging a passed run would land, if it is still exactly what the run tested: the
   * queued entries of the run after what has already landed. Undefined when the run no longer
   * matches the target branch (then it cannot clear anything).
   */
  private landingOf(run: TestRun): Entry[] | undefined {
    const from = this.landedFrom(run.baseSha);
    if (from === undefined) return undefined;
    let position = 0;
    if (this.config.mode !== "parallel") {
      // One lane: what landed must be exactly the run's first PRs.
      const merges = this.s.base.merges;
      for (let m = from; m < merges.length; m++) {
        if (run.prs[position]?.entryId !== at(merges, m).entryId) return undefined;
        position += 1;
      }
    } else {
      const landed = this.s.base.merges.slice(from);
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
        const entry = this.s.entries[pr.entryId];
        if (!entry || entry.pr.headSha !== pr.headSha) return undefined;
        const targets = this.targetsOf(entry);
        if (foreign.some((t) => targetsOverlap(t, targets))) return undefined;
        rest.push(entry);
      }
      return rest;
    }
    const rest: Entry[] = [];
    for (let i = position; i < run.prs.length; i++) {
      const pr = at(run.prs, i);
      const entry = this.s.entries[pr.entryId];
      if (!entry || entry.pr.headSha !== pr.headSha) return undefined;
      rest.push(entry);
    }
    return rest;
  }

  /** A passed later run that contains `entry` and can clear it (optimistic merging). */
  private clearingRun(entry: Entry): TestRun | null {
    for (const run of Object.values(this.s.runs)) {
      if (run.status !== "passed" || run.kind !== "main") continue;
      const landing = this.landingOf(run);
      if (landing && landing[0]?.id === entry.id) return run;
    }
    return null;
  }

  private mergeNext(): void {
    if (this.s.merging !== null) return;
    if (this.config.state === "paused") return;
    const order = this.s.order;
    const aheadTargets: ImpactedTargets[] = [];
    for (let i = 0; i < order.length; i++) {
      const entry = this.entry(at(order, i));
      const targets = this.targetsOf(entry);
      const blocked = aheadTargets.some((t) => targetsOverlap(t, targets));
      aheadTargets.push(targets);
      if (blocked) {
        if (this.config.mode !== "parallel") return;
        continue;
      }
      if (entry.state === "pending" || entry.bisection !== null) continue;
      const clearance = this.clearanceFor(entry);
      if (clearance) {
        this.startMerge(entry, clearance);
        return;
      }
    }
  }

  /** The passed run that lets the front entry merge now, if there is one. */
  private clearanceFor(
    entry: Entry,
  ): { runId: string | null; reason: "merged_by_queue" | "merged_optimistically" } | null {
    const own = entry.runId ? this.s.runs[entry.runId] : undefined;
    if (own?.status === "passed" && entry.state === "tests_passed") {
      const landing = this.landingOf(own);
      // Its own run: it lands exactly the unit that was tested (a batch lands PR by PR).
      if (landing && landing[0]?.id === entry.id && landing.every((e) => own.unit.includes(e.id))) {
        return { runId: own.id, reason: "merged_by_queue" };
      }
    }
    if (!this.config.canOptimisticallyMerge) return null;
    const clearing = this.clearingRun(entry);
    if (!clearing) return null;
    return {
      runId: clearing.id,
      reason: clearing.unit.includes(entry.id) ? "merged_by_queue" : "merged_optimistically",
    };
  }

  /** `directMergeMode: always`: up to date, own checks green, nothing ahead: no queue run. */
  private tryDirectMerge(entry: Entry, deps: string[]): boolean {
    if (this.config.directMergeMode !== "always") return false;
    if (this.s.merging !== null || entry.positioned) return false;
    if (!entry.pr.upToDate || !entry.pr.checksPassed) return false;
    if (entry.pr.headSha === this.s.base.headSha) return false;
    if (deps.length > 0) return false;
    if (this.config.mode !== "parallel") {
      const busy = Object.values(this.s.runs).some((r) => r.status === "running");
      if (busy || this.s.order[0] !== entry.id) return false;
    }
    this.startMerge(entry, { runId: null, reason: "merged_directly" });
    return true;
  }

  /** One merge at a time, pinned to the head the branch is at now. */
  private startMerge(
    entry: Entry,
    clearance: Omit<NonNullable<QueueSnapshot["merging"]>, "entryId">,
  ): void {
    this.s.merging = { ...clearance, entryId: entry.id };
    this.decisions.push({
      type: "merge",
      entryId: entry.id,
      prNumber: entry.pr.number,
      headSha: entry.pr.headSha,
      expectedBaseSha: this.s.base.headSha,
      method: this.config.mergeMethod,
      runId: clearance.runId,
      reason: clearance.reason,
    });
  }

  // ---- housekeeping --------------------------------------------------------------------------

  private collectGarbage(): void {
    // Entries point only at runs whose unit they are in: looking there is enough.
    const referenced = new Set<string>();
    for (const run of Object.values(this.s.runs)) {
      for (const id of run.unit) {
        const entry = this.s.entries[id];
        if (entry && (entry.runId === run.id || entry.failure?.runId === run.id)) {
          referenced.add(run.id);
          break;
        }
      }
    }
    for (const group of Object.values(this.s.bisections)) {
      referenced.add(group.runId);
      for (const segment of group.segments) if (segment.runId) referenced.add(segment.runId);
    }
    for (const run of Object.values(this.s.runs)) {
      if (run.status === "passed" && this.landingOf(run)?.length) referenced.add(run.id);
      if (run.status !== "running" && !referenced.has(run.id))
        Reflect.deleteProperty(this.s.runs, run.id);
    }
    // Keep the lineage back to the oldest base a remaining run was planned on.
    const base = this.s.base;
    let keepFrom = base.merges.length;
    for (const run of Object.values(this.s.runs)) {
      if (run.baseSha === base.anchorSha) keepFrom = 0;
      else {
        const index = this.lineageIndex().get(run.baseSha);
        if (index !== undefined) keepFrom = Math.min(keepFrom, index + 1);
      }
    }
    if (keepFrom > 0) {
      base.anchorSha = at(base.merges, keepFrom - 1).sha;
      base.merges = base.merges.slice(keepFrom);
    }
  }

  wakeAt(): number | null {
    let wake = this.batchDeadline ?? Infinity;
    const timeout = this.config.testingTimeoutMinutes;
    for (const run of Object.values(this.s.runs)) {
      if (timeout > 0 && run.status === "running") {
        wake = Math.min(wake, run.startedAt + timeout * MINUTE);
      }
    }
    const hours = this.config.notReadyTimeoutHours;
    if (hours > 0) {
      for (const id of this.s.notReady) {
        wake = Math.min(wake, this.entry(id).stateChangedAt + hours * HOUR);
      }
    }
    return wake === Infinity ? null : wake;
  }
}

/**
 * For each PR number, the queued entries whose PR contains one of its heads (stacked on it):
 * derived data, kept per `entries` object across `plan` calls. Built from the entries the first
 * time; then the planner notes every entry it adds, drops or gives a new PR. Readers check each
 * entry against the snapshot, so an entry noted that is gone or changed is skipped.
 */
const stackIndexes = new WeakMap<Record<string, Entry>, Map<number, Set<string>>>();

function stackIndexOf(entries: Record<string, Entry>): Map<number, Set<string>> {
  let index = stackIndexes.get(entries);
  if (!index) {
    index = new Map();
    stackIndexes.set(entries, index);
    for (const entry of Object.values(entries)) noteStack(index, entry, true);
  }
  return index;
}

function noteStack(index: Map<number, Set<string>>, entry: Entry, present: boolean): void {
  for (const c of entry.pr.contains ?? []) {
    let ids = index.get(c.number);
    if (present) {
      if (!ids) index.set(c.number, (ids = new Set()));
      ids.add(entry.id);
    } else if (ids) {
      ids.delete(entry.id);
      if (ids.size === 0) index.delete(c.number);
    }
  }
}

/**
 * Where each head of a lineage (`base.merges`) is: derived data, kept per array across `plan`
 * calls and extended as merges are appended, rebuilt when the array is replaced or no longer
 * starts as it did (a later duplicate head wins, as in a fresh build).
 */
const lineageIndexes = new WeakMap<
  QueueSnapshot["base"]["merges"],
  { length: number; lastSha: string | null; index: Map<string, number> }
>();

function lineageIndexOf(merges: QueueSnapshot["base"]["merges"]): Map<string, number> {
  let cached = lineageIndexes.get(merges);
  if (
    !cached ||
    cached.length > merges.length ||
    (cached.length > 0 && merges[cached.length - 1]?.sha !== cached.lastSha)
  ) {
    cached = { length: 0, lastSha: null, index: new Map() };
    lineageIndexes.set(merges, cached);
  }
  for (let i = cached.length; i < merges.length; i++) cached.index.set(at(merges, i).sha, i);
  cached.length = merges.length;
  cached.lastSha = merges[merges.length - 1]?.sha ?? null;
  return cached.index;
}

/** The element at `index`, which the caller knows exists. */
function at<T>(list: readonly T[], index: number): T {
  const value = list[index];
  if (value === undefined) throw new Error(`planner: no element at ${index}`);
  return value;
}

function copyRun(run: TestRun): TestRun {
  return {
    ...run,
    prs: run.prs.map((pr) => ({ ...pr })),
    ahead: [...run.ahead],
    unit: [...run.unit],
    failingChecks: [...run.failingChecks],
  };
}
