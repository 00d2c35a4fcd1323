/**
 * For tests of the pull-request service, its presenters and its routes without the engine's
 * driver: records are set by hand (and kept in the real store), commands are recorded and
 * answered as scripted.
 */
import type { QueueCommand } from "../../src/mergequeue/model.js";
import type {
  CommandBus,
  PullRequestServiceDeps,
} from "../../src/mergequeue/pull-request-service.js";
import type { DatabaseHandle } from "../../src/db/connection.js";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import type {
  CommandRecord,
  CommandResult,
  EntryListQuery,
  EntryRecord,
  EntrySummary,
  HostTrouble,
  RunRecord,
  TransitionRecord,
} from "../../src/mergequeue/records.js";

type RuntimeReads = PullRequestServiceDeps["runtime"];

/**
 * The engine's records as a test sets them, kept in the real runtime store of the database under
 * test: they are written the way a driver step writes them before each read, and the store
 * answers every read.
 */
export class StoredRecords implements RuntimeReads {
  entries: EntryRecord[] = [];
  transitionRecords: TransitionRecord[] = [];
  runs: RunRecord[] = [];
  /** The planner snapshot stored for a queue (default: an empty object). */
  readonly snapshots = new Map<string, unknown>();
  /** Entry ids whose full history was asked for (to check what metrics read). */
  readonly historyReads: string[] = [];
  private readonly store: MergeQueueRuntimeStore;
  private readonly written = new WeakSet<TransitionRecord>();

  /** `ensureQueue` creates the queue row a record names, if the test has not. */
  constructor(
    private readonly database: DatabaseHandle,
    private readonly ensureQueue: (queueId: string) => Promise<void> = () => Promise.resolve(),
  ) {
    this.store = new MergeQueueRuntimeStore(database.db, database.dialect);
  }

  /** Forgets every record, here and in the database. */
  async reset(): Promise<void> {
    const { db } = this.database;
    await db.deleteFrom("mqTransitions").execute();
    await db.deleteFrom("mqRuns").execute();
    await db.deleteFrom("mqEntries").execute();
    this.entries = [];
    this.transitionRecords = [];
    this.runs = [];
  }

  private async write(): Promise<void> {
    const queueIds = new Set([
      ...[...this.entries, ...this.transitionRecords, ...this.runs].map((r) => r.queueId),
      ...this.snapshots.keys(),
    ]);
    for (const queueId of queueIds) {
      await this.ensureQueue(queueId);
      const lease = await this.store.acquireLease(queueId, "test", 0, Number.MAX_SAFE_INTEGER);
      if (!lease) throw new Error(`queue ${queueId} is leased to someone else`);
      const transitions = this.transitionRecords.filter(
        (t) => t.queueId === queueId && !this.written.has(t),
      );
      const written = await this.store.commit({
        queueId,
        epoch: lease.epoch,
        now: 0,
        snapshot: this.snapshots.get(queueId) ?? {},
        wakeAt: null,
        entries: this.entries.filter((e) => e.queueId === queueId),
        transitions,
        runs: this.runs.filter((r) => r.queueId === queueId),
        appliedCommands: [],
      });
      if (!written) throw new Error(`the records of queue ${queueId} were not written`);
      for (const t of transitions) this.written.add(t);
    }
  }

  async latestEntry(queueId: string, prNumber: number): Promise<EntryRecord | undefined> {
    await this.write();
    return this.store.latestEntry(queueId, prNumber);
  }

  async latestEntryByBranch(queueId: string, headBranch: string): Promise<EntryRecord | undefined> {
    await this.write();
    return this.store.latestEntryByBranch(queueId, headBranch);
  }

  async activeEntries(queueId: string): Promise<EntryRecord[]> {
    await this.write();
    return this.store.activeEntries(queueId);
  }

  async activeSummaries(queueId: string): Promise<EntrySummary[]> {
    await this.write();
    return this.store.activeSummaries(queueId);
  }

  async listEntries(queueId: string, query: EntryListQuery): Promise<EntryRecord[]> {
    await this.write();
    return this.store.listEntries(queueId, query);
  }

  async transitions(entryId: string): Promise<TransitionRecord[]> {
    await this.write();
    this.historyReads.push(entryId);
    return this.store.transitions(entryId);
  }

  async pullRequestTransitions(queueId: string, prNumber: number): Promise<TransitionRecord[]> {
    await this.write();
    return this.store.pullRequestTransitions(queueId, prNumber);
  }

  async run(queueId: string, runId: string): Promise<RunRecord | undefined> {
    await this.write();
    return this.store.run(queueId, runId);
  }

  async loadSnapshot(queueId: string): ReturnType<MergeQueueRuntimeStore["loadSnapshot"]> {
    await this.write();
    return this.store.loadSnapshot(queueId);
  }

  async sharedSnapshot(queueId: string): Promise<unknown> {
    await this.write();
    return this.store.sharedSnapshot(queueId);
  }

  async hostTrouble(queueId: string): Promise<HostTrouble | null> {
    await this.write();
    return this.store.hostTrouble(queueId);
  }

  async transitionsSince(queueId: string, since: number): Promise<TransitionRecord[]> {
    await this.write();
    return this.store.transitionsSince(queueId, since);
  }

  /** The queue's inbox, as stored (a test's commands are recorded, not stored, unless it stores them). */
  pendingCommands(queueId: string, limit: number): Promise<CommandRecord[]> {
    return this.store.pendingCommands(queueId, limit);
  }
}

/** Records every command; answers `{ok: true}` unless told otherwise. */
export class RecordingBus implements CommandBus {
  readonly executed: { queueId: string; command: QueueCommand }[] = [];
  answer: CommandResult = { ok: true };

  execute(queueId: string, command: QueueCommand): Promise<CommandResult> {
    this.executed.push({ queueId, command });
    return Promise.resolve(this.answer);
  }
}

let entryCounter = 0;

/** An entry of `queueId` with sensible defaults: a pending, mergeable PR submitted at `at`. */
export function entryRecord(
  queueId: string,
  overrides: Partial<EntryRecord> & { prNumber: number },
): EntryRecord {
  entryCounter += 1;
  const at = overrides.submittedAt ?? 1_000_000;
  return {
    id: `entry-${entryCounter}`,
    queueId,
    prTitle: `PR ${overrides.prNumber}`,
    prSha: "a".repeat(40),
    prHeadBranch: `feature/${overrides.prNumber}`,
    prBaseBranch: "main",
    prAuthor: "alice",
    state: "pending",
    stateChangedAt: at,
    submittedAt: at,
    concludedAt: null,
    priorityValue: 100,
    usedDefaultPriority: true,
    noBatch: false,
    seq: entryCounter,
    readiness: {
      mergeability: "mergeable",
      baseBranchMatches: true,
      requiresImpactedTargets: false,
      impactedTargets: null,
    },
    lastReason: "ready",
    ...overrides,
  };
}

/** A transition of `entry`, by the queue unless an actor is given. */
export function transition(
  entry: Pick<EntryRecord, "id" | "queueId">,
  at: number,
  from: TransitionRecord["from"],
  to: TransitionRecord["to"],
  extra: Partial<TransitionRecord> = {},
): TransitionRecord {
  return {
    entryId: entry.id,
    queueId: entry.queueId,
    at,
    from,
    to,
    reason: extra.reason ?? "ready",
    actor: extra.actor ?? { kind: "queue" },
    runId: extra.runId ?? null,
    detail: extra.detail ?? null,
  };
}
