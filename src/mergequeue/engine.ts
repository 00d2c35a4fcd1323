/**
 * The merge-queue driver: the only writer of a queue. It holds the queue's lease, feeds the
 * planner one event at a time (commands from the API, CI results, timer ticks, settings), carries
 * out the decisions through the git host and the CI provider, and stores the outcome in one
 * transaction fenced by the lease's epoch. Several server processes may run engines on one
 * PostgreSQL: whoever holds the lease drives, the others only enqueue commands.
 *
 * Side effects happen before the commit and are idempotent (test branches are named by run id,
 * merges pin both heads, a repeated merge of a merged PR reports its commit), so a crash between
 * the two repeats them harmlessly when the stored state is replayed.
 */
import type { Clock } from "../lib/clock.js";
import type { OwnedRepoRef, Repository } from "../organizations/repositories.js";
import { initialSnapshot, plan } from "./planner/index.js";
import { upgradeSnapshot } from "./snapshot.js";
import {
  isTerminal,
  type Decision,
  type PlanResult,
  type Entry,
  type PullRequestInfo,
  type QueueCommand,
  type QueueEvent,
  type QueueSnapshot,
  type TestRun,
} from "./model.js";
import {
  judgeChecks,
  type CiProvider,
  type CiRunResult,
  type GitHost,
  type PullRequestReadOptions,
} from "./providers.js";
import type {
  CommandResult,
  EntryRecord,
  MergeQueueRecord,
  RunRecord,
  RuntimeRecords,
  TransitionRecord,
} from "./records.js";
import { CommandInbox, type InboxPayload } from "./engine/inbox.js";

export interface EngineLogger {
  error(message: string, error?: unknown): void;
}

export interface EngineOptions {
  /** This process, as named in leases. */
  owner: string;
  leaseMs: number;
  /** How often due queues (timers, commands from other processes) are looked for. */
  pollMs: number;
  /** How long `execute` waits for the queue's driver to apply a command. */
  commandTimeoutMs: number;
  /**
   * When `execute` first reads the stored answer if no step of this process handed it over
   * (another process drives the queue); later reads back off to a second.
   */
  answerPollMs: number;
}

/** How many pull requests a step looks up on the git host at the same time. */
const LOOKUP_PARALLELISM = 4;
/** Ids a step records as issued at a time (`RuntimeRecords.issueIds`): one write per this many. */
const ID_BLOCK = 100;

/** A step found its lease taken over: it stops before acting on ids it could not record. */
class LeaseLost extends Error {
  constructor(queueId: string) {
    super(`merge queue ${queueId}: lease lost`);
  }
}

export interface EngineDeps {
  runtime: RuntimeRecords;
  queues: {
    findById(id: string): Promise<MergeQueueRecord | undefined>;
    setConfiguration(
      id: string,
      configuration: MergeQueueRecord["configuration"],
      now: number,
    ): Promise<void>;
  };
  repositories: { findById(id: string): Promise<Repository | undefined> };
  gitHost: GitHost;
  ci: CiProvider;
  clock: Clock;
  logger?: EngineLogger;
}

const DEFAULTS: EngineOptions = {
  owner: "mainline",
  leaseMs: 30_000,
  pollMs: 1_000,
  commandTimeoutMs: 30_000,
  answerPollMs: 100,
};

export class MergeQueueEngine {
  private readonly options: EngineOptions;
  /** Per queue: the step in progress, and whether another was asked for meanwhile. */
  private readonly steps = new Map<string, { running: Promise<void>; again: boolean }>();
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;
  /** The queues this process has held a lease on: the lease's epoch and expiry (released at stop). */
  private readonly leases = new Map<string, { epoch: number; expiresAt: number }>();
  /**
   * Each queue's planner state as this process last committed it, with the lease epoch of that
   * commit. Only a commit fenced by the same epoch writes the stored snapshot, so while the epoch
   * is unchanged the stored one is this one. A step takes it out and puts it back only after its
   * own commit (the planner changes it in place), so a failed step leaves nothing stale here.
   */
  private readonly snapshots = new Map<
    string,
    { epoch: number; snapshot: QueueSnapshot; wakeAt: number | null; issuedBelow: number }
  >();
  /** Commands stored before anyone acts on them; answers handed to their callers. */
  private readonly inbox: CommandInbox;

  constructor(
    private readonly deps: EngineDeps,
    options: Partial<EngineOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.inbox = new CommandInbox(
      {
        runtime: deps.runtime,
        clock: deps.clock,
        kick: (queueId) => {
          this.kick(queueId);
        },
      },
      this.options,
    );
  }

  /** Listens for CI results and looks for due queues until `stop`. */
  start(): void {
    this.stopped = false;
    this.unsubscribe = this.deps.ci.onResult(async (result) => {
      await this.inbox.enqueue(result.queueId, { type: "ci_result", result });
    });
    const poll = () => {
      void this.pollDue().finally(() => {
        if (!this.stopped) this.timer = setTimeout(poll, this.options.pollMs);
      });
    };
    this.timer = setTimeout(poll, this.options.pollMs);
  }

  /**
   * Stops driving: waits for the steps in progress, then ends this process's leases, so that
   * another process (or this one restarted) drives the queues at once instead of after expiry.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.unsubscribe?.();
    // Commands handed over before the stop are stored (the database closes after this).
    await this.inbox.drained();
    await Promise.allSettled([...this.steps.values()].map((s) => s.running));
    const held = [...this.leases].map(([queueId, lease]) => [queueId, lease.epoch] as const);
    this.leases.clear();
    this.snapshots.clear();
    await Promise.allSettled(
      held.map(([queueId, epoch]) =>
        this.deps.runtime.releaseLease(queueId, this.options.owner, epoch),
      ),
    );
  }

  /**
   * Applies a command to a queue and answers what the queue's driver said. The command is stored
   * first (acknowledged work survives a crash); this process drives it if it holds or can take
   * the lease, otherwise the lease holder does and this waits for its answer.
   */
  execute(queueId: string, command: QueueCommand): Promise<CommandResult> {
    return this.inbox.execute(queueId, command);
  }

  /**
   * Stores a submission and returns once it is durable, without waiting for the driver: the
   * caller has checked it already (the queue and the pull request exist, the pull request is
   * open). The driver applies it at its next step; until then a read of the pull request in this
   * process waits for it (`settled`), so that a client reads what it wrote.
   */
  accept(queueId: string, command: Extract<QueueCommand, { type: "submit" }>): Promise<void> {
    return this.inbox.accept(queueId, command);
  }

  /**
   * Resolves once the submissions of a pull request acknowledged by `accept` in this process
   * have been applied (at once when there are none), or after `commandTimeoutMs` at most.
   */
  settled(queueId: string, prNumber: number): Promise<void> {
    return this.inbox.settled(queueId, prNumber);
  }

  /**
   * Tells a queue's driver about a change on the git host without waiting for it to be applied
   * (the command is stored first, so nothing is lost if this process dies).
   */
  async notify(queueId: string, command: QueueCommand): Promise<void> {
    await this.inbox.enqueue(queueId, command);
  }

  /** Runs a step for the queue now, or right after the one in progress. */
  kick(queueId: string): void {
    const current = this.steps.get(queueId);
    if (current) {
      current.again = true;
      return;
    }
    const state = { running: Promise.resolve(), again: false };
    // Read through a function: `kick` sets it while the step awaits.
    const askedAgain = () => state.again;
    const loop = async () => {
      do {
        state.again = false;
        try {
          await this.step(queueId);
        } catch (error) {
          if (error instanceof LeaseLost) this.leases.delete(queueId);
          else this.deps.logger?.error(`merge queue ${queueId}: step failed`, error);
        }
      } while (askedAgain() && !this.stopped);
      this.steps.delete(queueId);
    };
    this.steps.set(queueId, state);
    state.running = loop();
  }

  /** Waits until no step is running or asked for. */
  async idle(): Promise<void> {
    while (this.steps.size > 0) {
      await Promise.allSettled([...this.steps.values()].map((s) => s.running));
    }
  }

  private async pollDue(): Promise<void> {
    try {
      for (const queueId of await this.deps.runtime.dueQueues(this.deps.clock.now())) {
        this.kick(queueId);
      }
    } catch (error) {
      this.deps.logger?.error("merge queue: polling for due queues failed", error);
    }
  }

  /**
   * The queue's lease for a step: the one this process holds while more than half of its time is
   * left (nothing to write: every commit checks the epoch anyway, and a takeover needs the lease
   * to have expired), else renewed or taken over in the database.
   */
  private async lease(queueId: string): Promise<{ epoch: number } | undefined> {
    const now = this.deps.clock.now();
    const held = this.leases.get(queueId);
    if (held && held.expiresAt - now > this.options.leaseMs / 2) return held;
    const lease = await this.deps.runtime.acquireLease(
      queueId,
      this.options.owner,
      now,
      this.options.leaseMs,
    );
    if (!lease) {
      this.leases.delete(queueId);
      return undefined;
    }
    this.leases.set(queueId, { epoch: lease.epoch, expiresAt: lease.expiresAt });
    return lease;
  }

  /** One driver step: everything waiting for the queue, then one fenced commit. */
  async step(queueId: string): Promise<void> {
    const { runtime, clock } = this.deps;
    const lease = await this.lease(queueId);
    if (!lease) return;
    // Taken out: it goes back only with this step's commit.
    const cached = this.snapshots.get(queueId);
    this.snapshots.delete(queueId);
    const queue = await this.deps.queues.findById(queueId);
    if (!queue) return;
    const repository = await this.deps.repositories.findById(queue.repositoryId);
    if (!repository) return;
    const repo: OwnedRepoRef = {
      organizationId: repository.organizationId,
      host: repository.host,
      owner: repository.owner,
      name: repository.name,
    };

    const stored = cached?.epoch === lease.epoch ? cached : await runtime.loadDriverState(queueId);
    let snapshot: QueueSnapshot;
    if (stored.snapshot !== undefined) {
      snapshot = upgradeSnapshot(stored.snapshot);
    } else {
      const head = (await this.deps.gitHost.branchHead(repo, queue.targetBranch)) ?? "";
      snapshot = initialSnapshot({
        queueId,
        targetBranch: queue.targetBranch,
        configuration: queue.configuration,
        headSha: head,
      });
    }
    // Ids issued by a step that acted on them and then failed to commit are never issued again.
    let issuedBelow = stored.issuedBelow;
    snapshot.nextId = Math.max(snapshot.nextId, issuedBelow);
    const work = new StepWork(queueId, repo, queue.targetBranch, this.deps, {
      // Up-to-dateness and the PR's own checks matter to a direct merge only (each costs reads).
      readiness:
        snapshot.configuration.directMergeMode === "always" ||
        queue.configuration.directMergeMode === "always",
    });
    const commands = await runtime.pendingCommands(queueId, 100);
    const queued = (prNumber: number) => snapshot.prIndex[String(prNumber)] !== undefined;
    work.lookUpPullRequests(
      commands
        .map((c) => c.payload as InboxPayload)
        .filter((p) => p.type !== "pr_changed" || queued(p.prNumber)),
    );
    const applied: { id: number; result: CommandResult }[] = [];

    // The wake-up time follows the last plan; steps that plan nothing keep the stored one.
    let wakeAt = stored.wakeAt;
    /** Plans an event, carries out its decisions and then the events they lead to (merge results,
     * conflicts); answers whether the planner refused the first one. */
    const apply = async (first: QueueEvent): Promise<PlanResult["rejection"]> => {
      let rejection: PlanResult["rejection"] = null;
      const pending = [first];
      for (let event = pending.shift(); event; event = pending.shift()) {
        const result = plan(snapshot, event, clock.now());
        if (event === first) rejection = result.rejection;
        snapshot = result.snapshot;
        wakeAt = result.wakeAt;
        if (snapshot.nextId > issuedBelow) {
          // Before a branch, a CI run or a merge carries one of the new ids; a block at a time.
          issuedBelow = snapshot.nextId + ID_BLOCK;
          if (!(await runtime.issueIds(queueId, lease.epoch, issuedBelow))) {
            throw new LeaseLost(queueId);
          }
        }
        await work.carryOut(result, (next) => pending.push(next));
      }
      return rejection;
    };

    if (JSON.stringify(snapshot.configuration) !== JSON.stringify(queue.configuration)) {
      await apply({ type: "settings_changed", configuration: queue.configuration });
    }
    for (const command of commands) {
      const payload = command.payload as InboxPayload;
      // A change to a pull request the queue does not hold (one opened, pushed to or closed
      // elsewhere in the repository) changes nothing: no need to read it from the git host.
      if (payload.type === "pr_changed" && !queued(payload.prNumber)) {
        applied.push({ id: command.id, result: { ok: true } });
        continue;
      }
      const event = await work.toEvent(payload);
      if ("error" in event) {
        applied.push({ id: command.id, result: event.error });
        continue;
      }
      const rejection = await apply(event.event);
      if (event.event.type === "set_impacted_targets") {
        await work.touch(snapshot, event.event.prNumber);
      }
      applied.push({
        id: command.id,
        result: rejection ? { ok: false, ...rejection } : { ok: true },
      });
    }
    if (stored.wakeAt != null && stored.wakeAt <= clock.now()) await apply({ type: "tick" });

    const committed = await runtime.commit({
      queueId,
      epoch: lease.epoch,
      now: clock.now(),
      snapshot,
      wakeAt,
      entries: work.entryRecords(),
      transitions: work.transitions,
      runs: [...work.runs.values()],
      appliedCommands: applied,
    });
    if (!committed) {
      this.leases.delete(queueId);
      return;
    }
    this.snapshots.set(queueId, { epoch: lease.epoch, snapshot, wakeAt, issuedBelow });
    this.inbox.answer(applied);
    if (work.queueState) {
      await this.deps.queues.setConfiguration(queueId, work.queueState, clock.now());
    }
    if (commands.length === 100) this.kick(queueId);
  }
}

/** What one step carries out and then writes. */
class StepWork {
  readonly transitions: TransitionRecord[] = [];
  readonly runs = new Map<string, RunRecord>();
  private readonly entries = new Map<string, EntryRecord>();
  queueState: MergeQueueRecord["configuration"] | null = null;

  constructor(
    private readonly queueId: string,
    private readonly repo: OwnedRepoRef,
    private readonly targetBranch: string,
    private readonly deps: EngineDeps,
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
    await ci.start({
      repo: this.repo,
      queueId: this.queueId,
      runId: run.id,
      targetBranch: this.targetBranch,
      testBranch: branch.branch,
      sha: branch.sha,
      prNumbers: run.prs.map((pr) => pr.number),
      requiredStatuses: configured,
    });
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
