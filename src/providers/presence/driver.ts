/**
 * The worker that shows the queue on a host's pull requests, driven durably from `mq_transitions`
 * by one worker at a time per host (a lease on its cursor), each pull request brought to its
 * current state by the host's `show`; what was last shown is stored (`PresenceRecords`), so a
 * transition read again sends nothing. GitHub's comment, check run and labels, GitLab's note and
 * labels are the hosts' own.
 */
import type { Clock } from "../../lib/clock.js";
import { SECOND_MS } from "../../lib/time.js";
import { isTerminal } from "../../mergequeue/model.js";
import type {
  PresenceRecords,
  TransitionMark,
} from "../../mergequeue/pull-request-presence-records.js";
import type {
  EntryRecord,
  MergeQueueRecord,
  MergeQueueRecords,
  RepositoryRecords,
} from "../../mergequeue/records.js";
import type { Repository } from "../../organizations/repositories.js";
import type { ProviderLogger } from "../host-provider.js";
import { buildView, type PresenceDriverDeps, type PresenceView } from "./view.js";

export interface DriverDeps extends PresenceDriverDeps {
  store: PresenceRecords;
  queues: Pick<MergeQueueRecords, "findById">;
  repositories: Pick<RepositoryRecords, "findById">;
  /** The host name of the host's repositories: other hosts' queues are not its to show. */
  host: string;
  clock: Clock;
  logger: ProviderLogger;
  owner: string;
}

/** A pull request to show: its queue, repository, latest submission, and what to show. */
export interface PresenceTarget {
  queue: MergeQueueRecord;
  repository: Repository;
  entry: EntryRecord;
  view: PresenceView;
}

export interface PresenceOptions {
  pollIntervalMs: number;
  leaseMs: number;
  batchSize: number;
  /**
   * A gap in the transitions' ids younger than this may be a transaction not committed yet
   * (PostgreSQL hands out ids before commit): the cursor waits at the gap until it is older.
   */
  gapGraceMs: number;
  /**
   * A state still in the queue (not merged, failed or cancelled) is shown once it has held this
   * long: a pull request that passes through states within a moment (queued, testing, tests
   * passed, merged) gets one edit for them, not one each. Concluded states are shown at once.
   */
  settleMs: number;
}

const DEFAULTS: PresenceOptions = {
  pollIntervalMs: SECOND_MS,
  leaseMs: 30 * SECOND_MS,
  batchSize: 500,
  gapGraceMs: 10 * SECOND_MS,
  settleMs: 2 * SECOND_MS,
};

export abstract class PresenceDriver<Deps extends DriverDeps = DriverDeps> {
  private readonly options: PresenceOptions;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private again = false;
  /** Passes run one at a time (the timer's and `idle`'s). */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    protected readonly deps: Deps,
    options: Partial<PresenceOptions>,
    /** The cursor's name (one per host) and the log's prefix. */
    private readonly cursor: string,
    private readonly name: string,
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.deps.store.releaseCursor(this.cursor, this.deps.owner).catch(() => undefined);
  }

  /** Looks for new transitions now. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /**
   * Resolves once every transition stored so far is shown (tests, benchmarks), states still
   * settling included.
   */
  async idle(): Promise<void> {
    for (;;) {
      const caughtUp = await this.pass({ settle: false });
      if (caughtUp) return;
    }
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .then((caughtUp) => {
          this.running = undefined;
          if (this.stopped) return;
          const soon = this.again || !caughtUp;
          this.again = false;
          this.schedule(soon ? 0 : this.options.pollIntervalMs);
        })
        .catch((error: unknown) => {
          this.running = undefined;
          this.deps.logger.warn({ err: error }, `${this.name}: presence pass failed; will retry`);
          if (!this.stopped) this.schedule(this.options.pollIntervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  /**
   * One pass; false when a full batch was read (more may follow at once). `settle` (default):
   * a state younger than `settleMs` that is not a conclusion waits for a later pass.
   */
  pass(options: { settle?: boolean } = {}): Promise<boolean> {
    const settleMs = options.settle === false ? 0 : this.options.settleMs;
    const result = this.chain.then(() => this.passNow(settleMs));
    this.chain = result.catch(() => undefined);
    return result;
  }

  private async passNow(settleMs: number): Promise<boolean> {
    const { store, clock, owner } = this.deps;
    const now = clock.now();
    const cursor = await store.claimCursor(this.cursor, owner, now, now + this.options.leaseMs);
    if (cursor === undefined) return true;
    const marks = await store.transitionsAfter(cursor, this.options.batchSize);
    if (marks.length === 0) return true;

    // Up to where the cursor may move: not past a young gap (an uncommitted transaction).
    let safe = cursor;
    for (const mark of marks) {
      if (mark.id !== safe + 1 && now - mark.at < this.options.gapGraceMs) break;
      safe = mark.id;
    }

    // One update per pull request, in the order of their latest transition.
    const latest = new Map<string, TransitionMark>();
    const first = new Map<string, number>();
    for (const mark of marks) {
      const key = `${mark.queueId}#${mark.prNumber}`;
      latest.delete(key);
      latest.set(key, mark);
      if (!first.has(key)) first.set(key, mark.id);
    }
    for (const [key, mark] of latest) {
      try {
        const settling = settleMs > 0 ? { since: mark.at, ms: settleMs } : undefined;
        const shown = await this.present(mark.queueId, mark.prNumber, settling);
        // Not shown yet (settling): not past its first transition, shown at a later pass.
        if (!shown) safe = Math.min(safe, (first.get(key) ?? mark.id) - 1);
      } catch (error) {
        // Not past this pull request's first transition: it is tried again at the next pass.
        safe = Math.min(safe, (first.get(key) ?? mark.id) - 1);
        this.deps.logger.warn(
          { err: error, queueId: mark.queueId, prNumber: mark.prNumber },
          `${this.name}: could not update a pull request's merge-queue comment, status or labels; will retry`,
        );
      }
    }
    if (safe > cursor) await store.advanceCursor(this.cursor, owner, safe, clock.now());
    // A full batch: more to read at once. Otherwise what is left (a young gap, a pull request
    // GitHub refused) waits for the next poll.
    return marks.length < this.options.batchSize;
  }

  /**
   * Brings one pull request on the host to its current state in the queue; false when it waits
   * instead (`settling`: a state that is no conclusion, which changed less than `ms` ago at
   * `since`, its latest transition).
   */
  async present(
    queueId: string,
    prNumber: number,
    settling?: { since: number; ms: number },
  ): Promise<boolean> {
    const { deps } = this;
    const queue = await deps.queues.findById(queueId);
    if (!queue) return true;
    const { commentsEnabled, statusCheckEnabled, stateLabelsEnabled } = queue.configuration;
    if (!commentsEnabled && !statusCheckEnabled && !stateLabelsEnabled) return true;
    const repository = await deps.repositories.findById(queue.repositoryId);
    if (repository?.host.toLowerCase() !== deps.host.toLowerCase()) return true;
    const entry = await deps.runtime.latestEntry(queueId, prNumber);
    if (!entry) return true;
    if (
      settling !== undefined &&
      !isTerminal(entry.state) &&
      deps.clock.now() - settling.since < settling.ms
    ) {
      return false;
    }

    const view = await buildView(deps, queue, repository, entry);
    return this.show({ queue, repository, entry, view });
  }

  /** Shows the pull request as `view` says, on the host; false when it waits instead. */
  protected abstract show(target: PresenceTarget): Promise<boolean>;
}
