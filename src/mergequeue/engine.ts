/**
 * The merge-queue driver, the only writer of a queue: holds its lease, feeds the planner one event
 * at a time, carries out the decisions through the git host and CI, and stores the outcome in one
 * transaction fenced by the lease's epoch. Side effects come before the commit and are idempotent,
 * so a crash between the two repeats them harmlessly on replay.
 */
import type { Clock } from "../lib/clock.js";
import type { OwnedRepoRef, Repository } from "../organizations/repositories.js";
import { initialSnapshot, plan } from "./planner/index.js";
import { upgradeSnapshot } from "./snapshot.js";
import type { PlanResult, QueueCommand, QueueEvent, QueueSnapshot } from "./model.js";
import type { CiProvider, GitHost } from "./providers.js";
import type {
  CommandResult,
  DriverState,
  HostTrouble,
  MergeQueueRecord,
  RuntimeRecords,
} from "./records.js";
import { CommandInbox, type AcceptedCommand, type InboxPayload } from "./engine/inbox.js";
import { StepWork } from "./engine/step-work.js";
import { HostCalls, failedAttempt, refusable, refusal } from "./engine/host-health.js";

export interface EngineLogger {
  error(message: string, error?: unknown): void;
  /** A queue's host stopped answering (once per outage). */
  warn?(message: string, fields?: object): void;
  /** A queue's host answers again. */
  info?(message: string, fields?: object): void;
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
  /**
   * The longest a batch waits to fill on this server, whatever a queue's
   * `batchingMaxWaitTimeMinutes` says (MAINLINE_BATCH_WAIT_LIMIT_SECONDS); unset: the queue's.
   */
  batchWaitLimitMs?: number | undefined;
}

/** Ids a step records as issued at a time (`RuntimeRecords.issueIds`): one write per this many. */
const ID_BLOCK = 100;
/**
 * A stored host trouble whose attempt is overdue by this much is not believed by `refusal` (each
 * attempt renews it; GitHub's client retries one for a couple of minutes at most).
 */
const STALE_TROUBLE_MS = 5 * 60_000;
/** Pending commands a refusal pass reads (those nobody waits on come first, and stay). */
const REFUSALS_READ = 1_000;

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
  /**
   * The queues whose host failed this process's last step on them (as stored, see
   * `recordHostTrouble`), with the timer of the next attempt.
   */
  private readonly troubles = new Map<
    string,
    { trouble: HostTrouble; host: string; retry: NodeJS.Timeout | null }
  >();

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
    for (const held of this.troubles.values()) if (held.retry) clearTimeout(held.retry);
    this.troubles.clear();
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
    // The queue's host is known not to answer (this process drives it): refused at once, never
    // stored. Elsewhere the driver refuses it at its next pass (a second at most).
    const held = this.troubles.get(queueId);
    const now = this.deps.clock.now();
    if (held && (this.leases.get(queueId)?.expiresAt ?? 0) > now) {
      return Promise.resolve(refusal(held.trouble, held.host, now));
    }
    return this.inbox.execute(queueId, command);
  }

  /**
   * Stores a submission and returns once it is durable, without waiting for the driver: the
   * caller has checked it already (the queue and the pull request exist, the pull request is
   * open). The driver applies it at its next step; until then reads, in any process, show it
   * from the inbox (`PullRequestService`), so that a client reads what it wrote without waiting.
   */
  accept(queueId: string, command: AcceptedCommand): Promise<void> {
    return this.inbox.accept(queueId, command);
  }

  /** What the queue's driver last found of its host: null while it answers. */
  hostTrouble(queueId: string): Promise<HostTrouble | null> {
    return this.deps.runtime.hostTrouble(queueId);
  }

  /**
   * The answer a command gets now because the queue's host does not answer (as this process, or
   * the driver elsewhere, last found), or null while it does.
   */
  async refusal(queueId: string): Promise<Extract<CommandResult, { ok: false }> | null> {
    const now = this.deps.clock.now();
    const held = this.troubles.get(queueId);
    if (held && (this.leases.get(queueId)?.expiresAt ?? 0) > now) {
      return refusal(held.trouble, held.host, now);
    }
    const stored = await this.deps.runtime.hostTrouble(queueId);
    if (!stored) return null;
    // Its attempt is due: a driver (this process, if the lease is free) tries the host now.
    if (stored.retryAt <= now) this.kick(queueId);
    // A driver renews it at every attempt: one this old was left by a process that is gone.
    if (stored.retryAt + STALE_TROUBLE_MS < now) return null;
    const queue = await this.deps.queues.findById(queueId);
    const repository = queue && (await this.deps.repositories.findById(queue.repositoryId));
    return refusal(stored, repository?.host ?? "its git host", now);
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
      this.forgetTrouble(queueId);
      return undefined;
    }
    this.leases.set(queueId, { epoch: lease.epoch, expiresAt: lease.expiresAt });
    return lease;
  }

  /** Stops the retry timer of a queue's host trouble and forgets it (not the stored one). */
  private forgetTrouble(queueId: string): void {
    const held = this.troubles.get(queueId);
    if (held?.retry) clearTimeout(held.retry);
    this.troubles.delete(queueId);
  }

  /**
   * One driver step: everything waiting for the queue, then one fenced commit. While the queue's
   * host does not answer, a step before the next attempt only refuses the commands whose callers
   * wait (nothing is asked of the host); the attempt first asks the host for the target branch.
   */
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

    let stored: Omit<DriverState, "hostTrouble">;
    if (cached?.epoch === lease.epoch) {
      stored = cached;
    } else {
      const loaded = await runtime.loadDriverState(queueId);
      if (!loaded.hostTrouble) {
        this.forgetTrouble(queueId);
      } else if (!this.troubles.has(queueId)) {
        // Taken over (or first driven here): the stored trouble is the outage so far, tried again
        // at once (this process may be configured otherwise, the App given since).
        const retryAt = Math.min(loaded.hostTrouble.retryAt, clock.now());
        const trouble = { ...loaded.hostTrouble, retryAt };
        this.troubles.set(queueId, { trouble, host: repo.host, retry: null });
      }
      stored = loaded;
    }
    const trouble = this.troubles.get(queueId)?.trouble ?? null;
    if (trouble && trouble.retryAt > clock.now()) {
      if (cached && stored === cached) this.snapshots.set(queueId, cached);
      await this.refuseWaiting(queueId, lease.epoch, repo.host, trouble);
      this.scheduleRetry(queueId, trouble);
      return;
    }
    const calls = new HostCalls(this.deps.gitHost, this.deps.ci);
    try {
      // The host failed before: one read tells whether it answers now, before any other work.
      if (trouble) await calls.gitHost.branchHead(repo, queue.targetBranch);
      await this.drive(queueId, lease, queue, repo, stored, calls);
    } catch (error) {
      if (!calls.caused(error)) throw error;
      await this.hostFailed(queueId, lease.epoch, repo.host, trouble, error);
      return;
    }
    if (trouble) await this.hostRecovered(queueId, lease.epoch, repo.host, trouble);
  }

  /**
   * A step failed on the host: the trouble recorded with the backoff's next attempt, logged once
   * per outage, and the commands whose callers wait refused (answered: never applied later).
   */
  private async hostFailed(
    queueId: string,
    epoch: number,
    host: string,
    previous: HostTrouble | null,
    error: unknown,
  ): Promise<void> {
    const trouble = failedAttempt(previous, error, this.deps.clock.now());
    if (!(await this.refuseWaiting(queueId, epoch, host, trouble, true))) {
      this.leases.delete(queueId);
      this.forgetTrouble(queueId);
      return;
    }
    this.forgetTrouble(queueId);
    this.troubles.set(queueId, { trouble, host, retry: null });
    this.scheduleRetry(queueId, trouble);
    const fields = { queueId, host, retryInMs: trouble.retryAt - trouble.since };
    if (!previous) {
      const message = `merge queue ${queueId}: ${host} does not answer (${trouble.message}); the queue waits for it, trying again with a backoff of up to a minute`;
      if (this.deps.logger?.warn) this.deps.logger.warn(message, fields);
      else this.deps.logger?.error(message);
    }
  }

  /** The host answered again: the trouble cleared and logged once. */
  private async hostRecovered(
    queueId: string,
    epoch: number,
    host: string,
    trouble: HostTrouble,
  ): Promise<void> {
    this.forgetTrouble(queueId);
    if (
      !(await this.deps.runtime.recordHostTrouble(queueId, epoch, null, [], this.deps.clock.now()))
    ) {
      this.leases.delete(queueId);
      return;
    }
    const outageMs = this.deps.clock.now() - trouble.since;
    this.deps.logger?.info?.(
      `merge queue ${queueId}: ${host} answers again after ${String(Math.round(outageMs / 1000))} s`,
      { queueId, host, outageMs },
    );
  }

  /**
   * Answers the pending commands whose callers wait with the trouble's refusal (they are never
   * applied then) and, when `record`, stores the trouble too; false when the lease was lost.
   */
  private async refuseWaiting(
    queueId: string,
    epoch: number,
    host: string,
    trouble: HostTrouble,
    record = false,
  ): Promise<boolean> {
    const now = this.deps.clock.now();
    const pending = await this.deps.runtime.pendingCommands(queueId, REFUSALS_READ);
    const answer = refusal(trouble, host, now);
    const refused = pending
      .filter((command) => refusable(command.payload as InboxPayload))
      .map((command) => ({ id: command.id, result: answer }));
    if (!record && refused.length === 0) return true;
    const written = await this.deps.runtime.recordHostTrouble(
      queueId,
      epoch,
      trouble,
      refused,
      now,
    );
    if (written) this.inbox.answer(refused);
    return written;
  }

  /** The next attempt of a queue whose host failed, at its `retryAt` (one timer per queue). */
  private scheduleRetry(queueId: string, trouble: HostTrouble): void {
    const held = this.troubles.get(queueId);
    if (!held || held.retry || this.stopped) return;
    held.retry = setTimeout(
      () => {
        held.retry = null;
        this.kick(queueId);
      },
      Math.max(0, trouble.retryAt - this.deps.clock.now()),
    );
  }

  /** The step's work once the lease, the queue and its stored state are in hand. */
  private async drive(
    queueId: string,
    lease: { epoch: number },
    queue: MergeQueueRecord,
    repo: OwnedRepoRef,
    stored: Omit<DriverState, "hostTrouble">,
    calls: HostCalls,
  ): Promise<void> {
    const { runtime, clock } = this.deps;
    let snapshot: QueueSnapshot;
    if (stored.snapshot !== undefined) {
      snapshot = upgradeSnapshot(stored.snapshot);
    } else {
      const head = (await calls.gitHost.branchHead(repo, queue.targetBranch)) ?? "";
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
    const work = new StepWork(
      queueId,
      repo,
      queue.targetBranch,
      { ...this.deps, gitHost: calls.gitHost, ci: calls.ci },
      {
        // Up-to-dateness and the PR's own checks matter to a direct merge only (each costs reads).
        readiness:
          snapshot.configuration.directMergeMode === "always" ||
          queue.configuration.directMergeMode === "always",
      },
    );
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
        const result = plan(snapshot, event, clock.now(), {
          batchWaitMs: this.options.batchWaitLimitMs,
        });
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
      // The target branch moved where the queue's base already is (its own merge): nothing to read.
      if (payload.type === "branch_moved" && payload.headSha === snapshot.base.headSha) {
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
