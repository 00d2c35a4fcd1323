/**
 * What one step of the engine carries out and then writes: commands turned into planner events
 * (pull requests looked up on the git host a few at a time), and the planner's decisions acted
 * on through the git host and the CI provider, kept as records for the step's commit.
 */
import type { Clock } from "../../lib/clock.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import {
  isTerminal,
  type Decision,
  type Entry,
  type PlanResult,
  type PullRequestInfo,
  type QueueEvent,
  type QueueSnapshot,
  type TestRun,
} from "../model.js";
import {
  judgeChecks,
  type CiProvider,
  type CiRunResult,
  type FailFirstRequest,
  type GitHost,
  type PullRequestReadOptions,
} from "../providers.js";
import type {
  CommandResult,
  EntryRecord,
  MergeQueueRecord,
  RunRecord,
  RuntimeRecords,
  TransitionRecord,
} from "../records.js";
import type { InboxPayload } from "./inbox.js";

/** How many pull requests a step looks up on the git host at the same time. */
const LOOKUP_PARALLELISM = 4;

export interface StepDeps {
  runtime: Pick<RuntimeRecords, "run" | "latestEntry">;
  queues: { findById(id: string): Promise<MergeQueueRecord | undefined> };
  gitHost: GitHost;
  ci: CiProvider;
  clock: Clock;
  logger?: { error(message: string, error?: unknown): void };
}

/** The pull request a run of one decides about (`CiRunRequest.decidesPrNumber`). */
function decidedPr(run: TestRun): { decidesPrNumber?: number } {
  const [only, ...more] = run.unit;
  const pr = more.length === 0 ? run.prs.find((p) => p.entryId === only) : undefined;
  return pr ? { decidesPrNumber: pr.number } : {};
}

/** What one step carries out and then writes. */
export class StepWork {
  readonly transitions: TransitionRecord[] = [];
  readonly runs = new Map<string, RunRecord>();
  private readonly entries = new Map<string, EntryRecord>();
  queueState: MergeQueueRecord["configuration"] | null = null;

  constructor(
    private readonly queueId: string,
    private readonly repo: OwnedRepoRef,
    private readonly targetBranch: string,
    private readonly deps: StepDeps,
    private readonly readOptions: PullRequestReadOptions,
  ) {}

  entryRecords(): EntryRecord[] {
    return [...this.entries.values()];
  }

  /** Merges carried out so far: a lookup made before the last one may be out of date. */
  private merges = 0;
  /** Pull requests looked up ahead (several at a time), with the merge count they saw. */
  private readonly lookups = new Map<
    number,
    { merges: number; info: Promise<PullRequestInfo | undefined> }
  >();

  /**
   * Starts looking up the pull requests the commands name, a few at a time, so that a step with
   * many submissions does not wait for each lookup in turn. Only reads of the git host.
   */
  lookUpPullRequests(payloads: readonly InboxPayload[]): void {
    const numbers = new Set(
      payloads.flatMap((p) => (p.type === "submit" || p.type === "pr_changed" ? [p.prNumber] : [])),
    );
    let active = 0;
    const waiting: (() => void)[] = [];
    const lookUp = async (number: number): Promise<PullRequestInfo | undefined> => {
      if (active >= LOOKUP_PARALLELISM) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
        });
      }
      active += 1;
      try {
        return await this.deps.gitHost.pullRequest(this.repo, number, this.readOptions);
      } finally {
        active -= 1;
        waiting.shift()?.();
      }
    };
    for (const number of numbers) {
      const info = lookUp(number);
      // A failed lookup fails the step when its command is applied, not before.
      info.catch(() => undefined);
      this.lookups.set(number, { merges: this.merges, info });
    }
  }

  /** A pull request as the git host shows it: looked up ahead unless a merge came since. */
  private pullRequest(number: number): Promise<PullRequestInfo | undefined> {
    const ahead = this.lookups.get(number);
    this.lookups.delete(number);
    if (ahead && ahead.merges === this.merges) return ahead.info;
    return this.deps.gitHost.pullRequest(this.repo, number, this.readOptions);
  }

  /** Turns an inbox command into a planner event, looking the PR up where needed. */
  async toEvent(
    payload: InboxPayload,
  ): Promise<{ event: QueueEvent } | { error: Exclude<CommandResult, { ok: true }> }> {
    switch (payload.type) {
      case "submit": {
        const pr = await this.pullRequest(payload.prNumber);
        if (!pr) {
          return {
            error: {
              ok: false,
              code: "not_found",
              message: `Pull request #${payload.prNumber} does not exist in ${this.repo.owner}/${this.repo.name}.`,
            },
          };
        }
        // An acknowledged submission is applied anyway: the planner concludes it as what the
        // pull request became (closed, merged), which its timeline shows.
        if (pr.state !== "open" && !("acknowledged" in payload)) {
          return {
            error: {
              ok: false,
              code: "conflict",
              message: `Pull request #${payload.prNumber} is ${pr.state}; only open pull requests can be queued.`,
            },
          };
        }
        return {
          event: {
            type: "submit",
            pr,
            priority: payload.priority,
            noBatch: payload.noBatch,
            actor: payload.actor,
            entryId: crypto.randomUUID(),
          },
        };
      }
      case "ci_result":
        return { event: await this.ciEvent(payload.result) };
      case "pr_changed": {
        const pr = await this.pullRequest(payload.prNumber);
        return { event: pr ? { type: "pr_updated", pr } : { type: "tick" } };
      }
      case "branch_moved": {
        const head = await this.deps.gitHost.branchHead(this.repo, this.targetBranch);
        return { event: head ? { type: "base_pushed", headSha: head } : { type: "tick" } };
      }
      case "set_impacted_targets": {
        // Without `acknowledged` (targets are answered once stored): the planner's own event.
        const { prNumber, headSha, targets } = payload;
        return { event: { type: "set_impacted_targets", prNumber, headSha, targets } };
      }
      case "reload_settings": {
        const queue = await this.deps.queues.findById(this.queueId);
        return {
          event: queue
            ? { type: "settings_changed", configuration: queue.configuration }
            : { type: "tick" },
        };
      }
      default:
        return { event: payload };
    }
  }

  /** Outcomes of the CI reports fed to the planner in this step, by run. */
  private readonly reported = new Map<string, "passed" | "failed">();

  private async ciEvent(result: CiRunResult): Promise<QueueEvent> {
    const record =
      this.runs.get(result.runId) ?? (await this.deps.runtime.run(this.queueId, result.runId));
    // The queue's override, else what the CI resolved from the repository's configuration, else
    // (a CI that resolves nothing) every check the run reported.
    const resolved =
      record?.requiredStatusesSource === "merge_instance"
        ? { statuses: record.requiredStatuses, source: record.requiredStatusesSource }
        : (result.requiredStatuses ?? null);
    if (record) {
      this.runs.set(record.id, {
        ...record,
        checks: result.checks.map((c) => ({
          name: c.name,
          conclusion: c.conclusion,
          url: c.url ?? null,
        })),
        ...(resolved
          ? { requiredStatuses: resolved.statuses, requiredStatusesSource: resolved.source }
          : {}),
      });
    }
    const error =
      result.error ??
      (resolved?.statuses.length === 0
        ? {
            reason: "no_required_statuses" as const,
            message: "no required statuses are configured for this queue or repository",
          }
        : undefined);
    if (error) {
      this.reported.set(result.runId, "failed");
      return {
        type: "run_finished",
        runId: result.runId,
        outcome: "failed",
        failingChecks: [],
        reason: error.reason,
        detail: error.message,
      };
    }
    const required = resolved ? resolved.statuses : result.checks.map((c) => c.name);
    const judged = judgeChecks(required, result.checks);
    this.reported.set(result.runId, judged.passed ? "passed" : "failed");
    return {
      type: "run_finished",
      runId: result.runId,
      outcome: judged.passed ? "passed" : "failed",
      failingChecks: judged.failing,
      ...(result.flakyOnly ? { flakyOnly: true } : {}),
    };
  }

  async carryOut(result: PlanResult, follow: (event: QueueEvent) => void): Promise<void> {
    const { snapshot } = result;
    const now = this.deps.clock.now();
    for (const decision of result.decisions) {
      switch (decision.type) {
        case "transition":
          this.transition(decision, result, now);
          break;
        case "start_run":
          await this.startRun(decision.run, snapshot, follow);
          break;
        case "cancel_run":
          await this.cancelRun(decision.runId, now);
          break;
        case "merge":
          await this.merge(decision, snapshot, follow);
          break;
        case "queue_state":
          this.queueState = decision.configuration;
          break;
      }
    }
    // Runs that finished in this step: their branches go (docs/contract.md §6). The planner may already
    // have dropped a finished run from its snapshot; the report that finished it says how.
    for (const record of [...this.runs.values()]) {
      if (record.status !== "running") continue;
      const planned = snapshot.runs[record.id];
      const status = planned ? planned.status : this.reported.get(record.id);
      if (status === undefined || status === "running") continue;
      this.runs.set(record.id, { ...record, status, finishedAt: planned?.finishedAt ?? now });
      if (record.testBranch) await this.deps.gitHost.deleteTestBranch(this.repo, record.testBranch);
    }
  }

  private transition(
    decision: Extract<Decision, { type: "transition" }>,
    result: PlanResult,
    now: number,
  ): void {
    this.transitions.push({
      entryId: decision.entryId,
      queueId: this.queueId,
      at: now,
      from: decision.from,
      to: decision.to,
      reason: decision.reason,
      actor: decision.actor,
      runId: decision.runId,
      detail: decision.detail,
    });
    const entry =
      result.snapshot.entries[decision.entryId] ??
      result.concluded.find((e) => e.id === decision.entryId);
    if (!entry) throw new Error(`a transition of entry ${decision.entryId}, which the plan lacks`);
    this.entries.set(decision.entryId, {
      ...this.toRecord(entry, result.snapshot),
      state: decision.to,
      stateChangedAt: now,
      concludedAt: isTerminal(decision.to) ? now : null,
      lastReason: decision.reason,
    });
  }

  /** Upserts the record of a queued entry whose details changed without a transition. */
  async touch(snapshot: QueueSnapshot, prNumber: number): Promise<void> {
    const entry = snapshot.entries[snapshot.prIndex[String(prNumber)] ?? ""];
    if (!entry) return;
    const previous =
      this.entries.get(entry.id) ?? (await this.deps.runtime.latestEntry(this.queueId, prNumber));
    this.entries.set(entry.id, {
      ...this.toRecord(entry, snapshot),
      lastReason: previous?.lastReason ?? "",
    });
  }

  /** An entry as the API lists it; the caller sets what its last transition says. */
  private toRecord(entry: Entry, snapshot: QueueSnapshot): EntryRecord {
    return {
      id: entry.id,
      queueId: this.queueId,
      prNumber: entry.pr.number,
      prTitle: entry.pr.title,
      prSha: entry.pr.headSha,
      prHeadBranch: entry.pr.headBranch,
      prBaseBranch: entry.pr.baseBranch,
      prAuthor: entry.pr.author,
      state: entry.state,
      stateChangedAt: entry.stateChangedAt,
      submittedAt: entry.submittedAt,
      concludedAt: null,
      priorityValue: entry.priorityValue,
      usedDefaultPriority: entry.usedDefaultPriority,
      noBatch: entry.noBatch,
      seq: entry.seq,
      readiness: {
        mergeability: entry.pr.mergeability,
        baseBranchMatches: entry.pr.baseBranch === this.targetBranch,
        requiresImpactedTargets: snapshot.configuration.mode === "parallel",
        impactedTargets: entry.impactedTargets,
      },
      lastReason: "",
    };
  }

  private async startRun(
    run: TestRun,
    snapshot: QueueSnapshot,
    follow: (event: QueueEvent) => void,
  ): Promise<void> {
    const { gitHost, ci } = this.deps;
    const configured = snapshot.configuration.requiredStatuses;
    const record: RunRecord = {
      id: run.id,
      queueId: this.queueId,
      kind: run.kind,
      status: "running",
      baseSha: run.baseSha,
      testBranch: null,
      testBranchSha: null,
      prs: run.prs,
      unit: run.unit,
      requiredStatuses: configured ?? [],
      requiredStatusesSource: configured ? "merge_instance" : null,
      checks: [],
      startedAt: run.startedAt,
      finishedAt: null,
      ...(run.failFirst ? { failFirst: run.failFirst } : {}),
    };
    this.runs.set(run.id, record);
    const branch = await gitHost.createTestBranch({
      repo: this.repo,
      targetBranch: this.targetBranch,
      runId: run.id,
      baseSha: run.baseSha,
      prs: run.prs.map((pr) => ({ number: pr.number, headSha: pr.headSha })),
      // A testing pull request needs a branch of its own; otherwise the slot's branch will do.
      ...(run.slot !== undefined && !snapshot.configuration.createPrsForTestingBranches
        ? { slot: run.slot }
        : {}),
    });
    if (!branch.ok) {
      this.reported.set(run.id, "failed");
      follow({
        type: "run_finished",
        runId: run.id,
        outcome: "failed",
        failingChecks: [],
        reason: "merge_conflict",
        detail: `#${branch.prNumber} does not merge onto the pull requests ahead of it: ${branch.files.join(", ")}`,
        conflict: {
          prNumber: branch.prNumber,
          files: branch.files,
          ...(branch.conflictsWith ? { conflictsWith: branch.conflictsWith } : {}),
          ...(branch.landedConflicts ? { landedConflicts: branch.landedConflicts } : {}),
        },
      });
      return;
    }
    this.runs.set(run.id, { ...record, testBranch: branch.branch, testBranchSha: branch.sha });
    const failFirst = run.failFirst ? await this.failFirst(run.failFirst) : undefined;
    await ci.start({
      repo: this.repo,
      queueId: this.queueId,
      runId: run.id,
      targetBranch: this.targetBranch,
      testBranch: branch.branch,
      sha: branch.sha,
      prNumbers: run.prs.map((pr) => pr.number),
      ...decidedPr(run),
      requiredStatuses: configured,
      ...(failFirst ? { failFirst } : {}),
    });
  }

  /** What a CI needs to run first what failed in the run a localization run names. */
  private async failFirst(failFirst: NonNullable<TestRun["failFirst"]>): Promise<FailFirstRequest> {
    const from =
      this.runs.get(failFirst.fromRunId) ??
      (await this.deps.runtime.run(this.queueId, failFirst.fromRunId));
    return {
      fromRunId: failFirst.fromRunId,
      checks: [...failFirst.checks],
      sha: from?.testBranchSha ?? null,
      testBranch: from?.testBranch ?? null,
      since: from?.startedAt ?? 0,
    };
  }

  private async cancelRun(runId: string, now: number): Promise<void> {
    await this.deps.ci.cancel(this.queueId, runId);
    const record = this.runs.get(runId) ?? (await this.deps.runtime.run(this.queueId, runId));
    if (!record) return;
    this.runs.set(runId, { ...record, status: "cancelled", finishedAt: now });
    if (record.testBranch) await this.deps.gitHost.deleteTestBranch(this.repo, record.testBranch);
  }

  private async merge(
    decision: Extract<Decision, { type: "merge" }>,
    snapshot: QueueSnapshot,
    follow: (event: QueueEvent) => void,
  ): Promise<void> {
    const entry = snapshot.entries[decision.entryId];
    // The test branch that cleared it: the PR lands with the tree it passed with.
    const cleared = decision.runId
      ? (this.runs.get(decision.runId) ??
        (await this.deps.runtime.run(this.queueId, decision.runId)))
      : undefined;
    const testedSha = cleared?.testBranchSha ?? undefined;
    this.merges += 1;
    const result = await this.deps.gitHost.merge({
      repo: this.repo,
      targetBranch: this.targetBranch,
      prNumber: decision.prNumber,
      headSha: decision.headSha,
      expectedBaseSha: decision.expectedBaseSha,
      method: decision.method,
      title: entry ? `${entry.pr.title} (#${decision.prNumber})` : `#${decision.prNumber}`,
      ...(testedSha ? { testedSha } : {}),
    });
    if (result.ok) {
      follow({ type: "merge_finished", entryId: decision.entryId, newHeadSha: result.sha });
      return;
    }
    if (result.reason === "base_moved" || result.reason === "head_moved") {
      follow({
        type: "merge_failed",
        entryId: decision.entryId,
        reason: "restarted_on_new_base",
        message: result.message,
      });
      if (result.reason === "base_moved") {
        const head = await this.deps.gitHost.branchHead(this.repo, this.targetBranch);
        if (head) follow({ type: "base_pushed", headSha: head });
      } else {
        const pr = await this.deps.gitHost.pullRequest(
          this.repo,
          decision.prNumber,
          this.readOptions,
        );
        if (pr) follow({ type: "pr_updated", pr });
      }
      return;
    }
    follow({
      type: "merge_failed",
      entryId: decision.entryId,
      reason: result.reason === "merge_conflict" ? "merge_conflict" : "merge_failed",
      message: result.message,
    });
    if (result.pauseQueue) {
      // What landed is not what was tested: nothing more lands until someone looks.
      const configuration = { ...snapshot.configuration, state: "paused" as const };
      this.deps.logger?.error(
        `merge queue ${this.queueId} paused: ${result.message}`,
        new Error(result.message),
      );
      follow({ type: "settings_changed", configuration });
      this.queueState = configuration;
    }
  }
}
