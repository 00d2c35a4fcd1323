/**
 * What the merge-queue engine keeps in storage, as the stores hand it out. The planner's own
 * state is one JSON snapshot per queue (replaying it gives the same decisions); entries,
 * transitions and runs are also written as rows so that the API can list and page them.
 */
import type { Actor, ImpactedTargets, Mergeability, PrState, RunKind, RunStatus } from "./model.js";
import type { RequiredStatusesSource } from "./providers.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { QueueConfiguration, QueueMode, QueueState } from "./settings.js";

/** A queue as listed for an organization: enough to address it and label its metrics. */
export interface QueueListing {
  id: string;
  targetBranch: string;
  /** The repository and the organization it belongs to. */
  repo: RepoRef & { organizationId: string };
}

/** A queue as the dashboard lists it: where, its state, and its pull requests by state. */
export interface QueueOverview {
  id: string;
  repo: RepoRef & { organizationId: string; repositoryId: string };
  targetBranch: string;
  state: QueueState;
  mode: QueueMode;
  /** Pull requests in the queue now (not concluded), by state. */
  active: Partial<Record<PrState, number>>;
}

export interface MergeQueueRecord {
  id: string;
  repositoryId: string;
  targetBranch: string;
  configuration: QueueConfiguration;
  createdAt: number;
  updatedAt: number;
  version: number;
}

/**
 * The queues' settings in storage (implemented by `db/stores/merge-queues.ts`): one row per
 * repository and target branch.
 */
export interface MergeQueueRecords {
  /**
   * The queue of `targetBranch` in an organization's repository. `fresh`: as committed now, also
   * by other processes (a cached record may not have heard of another process's change yet).
   */
  find(
    organizationId: string,
    repo: RepoRef,
    targetBranch: string,
    options?: { fresh?: boolean },
  ): Promise<MergeQueueRecord | undefined>;
  /** Every queue of an organization, or of one of its repositories, by repository and branch. */
  listForOrganization(organizationId: string, repo?: RepoRef): Promise<QueueListing[]>;
  /** Every queue of an organization with its state and active pull requests per state. */
  overview(organizationId: string): Promise<QueueOverview[]>;
  /** Every queue of repositories on one git host, or of one such repository of an organization. */
  listForHost(host: string, repo?: RepoRef & { organizationId: string }): Promise<QueueListing[]>;
  /** False when the queue already exists. */
  insert(queue: Omit<MergeQueueRecord, "version" | "updatedAt">): Promise<boolean>;
  /**
   * Read, decide, write, as one transaction holding the queue: `decide` may throw to refuse the
   * change. Undefined when there is no such queue.
   */
  modify(
    organizationId: string,
    repo: RepoRef,
    targetBranch: string,
    now: number,
    decide: (current: MergeQueueRecord) => QueueConfiguration,
    /** Who changes it (a state change's event names them). */
    actor?: string | null,
  ): Promise<MergeQueueRecord | undefined>;
  findById(id: string): Promise<MergeQueueRecord | undefined>;
  /** The engine's own settings changes (a mode switch that finished). */
  setConfiguration(id: string, configuration: QueueConfiguration, now: number): Promise<void>;
  delete(id: string): Promise<boolean>;
}

/** The repositories the merge queue reads and registers (implemented by `db/stores/repositories.ts`). */
export interface RepositoryRecords {
  find(organizationId: string, ref: RepoRef): Promise<Repository | undefined>;
  findById(id: string): Promise<Repository | undefined>;
  /** The repository, registered first when the organization has none of that name. */
  ensure(organizationId: string, ref: RepoRef, now: number): Promise<Repository>;
}

/** What a queue's listing shows of an entry (getQueue's enqueuedPullRequests). */
export type EntrySummary = Pick<
  EntryRecord,
  | "id"
  | "state"
  | "prNumber"
  | "prTitle"
  | "prSha"
  | "prBaseBranch"
  | "prAuthor"
  | "stateChangedAt"
  | "priorityValue"
  | "usedDefaultPriority"
  | "noBatch"
  | "seq"
>;

/** One submission of a pull request, as listed by the API (kept after it concludes). */
export interface EntryRecord {
  id: string;
  queueId: string;
  prNumber: number;
  prTitle: string;
  prSha: string;
  prHeadBranch: string;
  prBaseBranch: string;
  prAuthor: string;
  state: PrState;
  stateChangedAt: number;
  submittedAt: number;
  /** Set when the entry reached merged, failed or cancelled. */
  concludedAt: number | null;
  priorityValue: number;
  usedDefaultPriority: boolean;
  noBatch: boolean;
  /** Submission order within the queue; also the listing cursor. */
  seq: number;
  readiness: {
    mergeability: Mergeability;
    baseBranchMatches: boolean;
    requiresImpactedTargets: boolean;
    impactedTargets: ImpactedTargets | null;
  };
  /** The reason of the last transition. */
  lastReason: string;
}

export interface TransitionRecord {
  entryId: string;
  queueId: string;
  at: number;
  from: PrState | null;
  to: PrState;
  reason: string;
  actor: Actor;
  runId: string | null;
  detail: string | null;
}

export interface RunRecord {
  id: string;
  queueId: string;
  kind: RunKind;
  status: RunStatus;
  baseSha: string;
  testBranch: string | null;
  testBranchSha: string | null;
  /** Every PR merged onto the base, in order. */
  prs: { entryId: string; number: number; headSha: string }[];
  /** Entries the run decides about (the rest are ahead of them). */
  unit: string[];
  requiredStatuses: string[];
  requiredStatusesSource: RequiredStatusesSource | null;
  checks: { name: string; conclusion: string | null; url: string | null }[];
  startedAt: number;
  finishedAt: number | null;
  /**
   * A localization run: the failed run whose failures it runs first, and the checks that failed
   * there (`TestRun.failFirst`). Absent or null for any other run.
   */
  failFirst?: { fromRunId: string; checks: string[] } | null;
}

/** When a run started and ended, without its contents (durations, counts). */
export interface RunTiming {
  kind: RunKind;
  status: RunStatus;
  startedAt: number;
  finishedAt: number | null;
}

/**
 * Reads the dashboard makes besides the engine's (implemented by `db/stores/merge-queue-runtime.ts`):
 * a change marker for live updates, several runs at once, and runs' timings.
 */
export interface QueueDashboardReads {
  /** The id of the queue's newest transition (0 when none). */
  latestTransitionId(queueId: string): Promise<number>;
  runsByIds(queueId: string, runIds: readonly string[]): Promise<RunRecord[]>;
  /** The transitions to `failed` of these entries. */
  failures(queueId: string, entryIds: readonly string[]): Promise<TransitionRecord[]>;
  /**
   * The pull requests that left the queue last, newest first: each pull request's latest
   * submission, when it concluded (one back in the queue is not listed).
   */
  recentlyConcluded(queueId: string, limit: number): Promise<EntryRecord[]>;
  /** Runs started at or after `since`, newest first, at most `limit`. */
  runTimings(queueId: string, since: number, limit: number): Promise<RunTiming[]>;
}

/** A request to change a queue, waiting for the queue's driver (the single writer). */
export interface CommandRecord {
  id: number;
  queueId: string;
  /** The event, as JSON (a `QueueEvent` without its planner-assigned parts). */
  payload: unknown;
  createdAt: number;
  appliedAt: number | null;
  /** What the driver answered: ok, or an API error code and message. */
  result: CommandResult | null;
}

export type CommandResult =
  | { ok: true }
  | {
      ok: false;
      code: "not_found" | "conflict" | "invalid_request" | "host_not_connected" | "unavailable";
      message: string;
      /** `unavailable`: when to try again, in seconds (the queue's next attempt at its host). */
      retryAfterSeconds?: number;
    };

/**
 * Why a queue's driver cannot work now, as it last found: its git host failed a step (no provider
 * for it on this server, or its answers are errors or never come). Absent while the host answers.
 * A later kind (`rate_limited`, with the time it lifts) is another member of this union.
 */
export type HostTrouble = {
  /** `rate_limited`: the host holds every request until `retryAt` (GitHub's rate limits). */
  state: "unreachable" | "rate_limited";
  /** `host_not_connected`: no provider for the host here; `unavailable`: it failed. */
  code: "host_not_connected" | "unavailable";
  /** The first failure of this outage (epoch ms). */
  since: number;
  /** The last failure, in words. */
  message: string;
  /** When the driver tries the host again (epoch ms). */
  retryAt: number;
  /** Failed attempts in a row, for the backoff. */
  failures: number;
};

/** The lease that makes one process the queue's only writer. */
export interface Lease {
  queueId: string;
  owner: string;
  /** Fencing counter: bumped on every takeover; every write checks it. */
  epoch: number;
  expiresAt: number;
}

/** What a driver step starts from (see `RuntimeRecords.loadDriverState`). */
export interface DriverState {
  snapshot: unknown;
  wakeAt: number | null;
  issuedBelow: number;
  /** The host's trouble as the last driver recorded it (`recordHostTrouble`); null when none. */
  hostTrouble: HostTrouble | null;
}

/** Everything one step of the driver writes, in one transaction, fenced by the lease epoch. */
export interface DriverCommit {
  queueId: string;
  epoch: number;
  now: number;
  snapshot: unknown;
  wakeAt: number | null;
  entries: EntryRecord[];
  transitions: TransitionRecord[];
  runs: RunRecord[];
  appliedCommands: { id: number; result: CommandResult }[];
}

/** Listing filters of `listPullRequests`. */
export interface EntryListQuery {
  state?: PrState;
  /** Entries that concluded at or after this time. */
  concludedSince?: number;
  /** Entries with `seq` greater than this (the cursor). */
  afterSeq?: number;
  /** `newest`: the latest submissions first (for a bounded read of a range); default oldest. */
  order?: "oldest" | "newest";
  /**
   * Only each pull request's latest submission: one submitted, cancelled or failed and submitted
   * again is one entry, its latest (the filters apply to that one). Default: every submission.
   */
  latestOnly?: boolean;
  take: number;
}

/**
 * The engine's storage (implemented by `db/stores/merge-queue-runtime.ts` on both dialects).
 * Reads need no lease; every write of driver state is fenced by the lease epoch.
 */
export interface RuntimeRecords {
  /** Takes or renews the lease: renewal by the owner keeps the epoch, a takeover bumps it. */
  acquireLease(
    queueId: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<Lease | undefined>;
  releaseLease(queueId: string, owner: string, epoch: number): Promise<void>;
  /** The stored planner snapshot, or undefined for a queue that never ran. */
  loadSnapshot(queueId: string): Promise<{ snapshot: unknown; wakeAt: number | null } | undefined>;
  /**
   * The stored planner snapshot as `loadSnapshot` gives it (undefined for a queue that never
   * ran), parsed once per distinct stored text and shared by every caller, who must not modify
   * it: for the API's reads, which ask for it on every getQueue and listPullRequests.
   */
  sharedSnapshot(queueId: string): Promise<unknown>;
  /**
   * What a driver step starts from: the stored snapshot (undefined for a queue that never
   * committed one) and the bound below which every id ever issued lies (`issueIds`).
   */
  loadDriverState(queueId: string): Promise<DriverState>;
  /**
   * Records, before a step acts on ids its plan issued, that every id issued so far is below
   * `below`: written at once (not with the step's commit), so that a step whose commit fails
   * never hands one of them out again. Never lowers the bound; false when the epoch is stale.
   */
  issueIds(queueId: string, epoch: number, below: number): Promise<boolean>;
  /** One driver step, atomically; false (and nothing written) when the epoch is stale. */
  commit(step: DriverCommit): Promise<boolean>;
  /**
   * Records the queue's host trouble (null: none any more) and the answers of commands refused
   * because of it, which are then never applied; atomically, fenced by the epoch like `commit`.
   */
  recordHostTrouble(
    queueId: string,
    epoch: number,
    trouble: HostTrouble | null,
    refused: readonly { id: number; result: CommandResult }[],
    now: number,
  ): Promise<boolean>;
  /** The host trouble the queue's driver last recorded; null when none (or never ran). */
  hostTrouble(queueId: string): Promise<HostTrouble | null>;

  enqueueCommand(queueId: string, payload: unknown, now: number): Promise<number>;
  /** Stores several commands in one transaction; their ids, in the order given. */
  enqueueCommands(
    commands: readonly { queueId: string; payload: unknown }[],
    now: number,
  ): Promise<number[]>;
  pendingCommands(queueId: string, limit: number): Promise<CommandRecord[]>;
  command(id: number): Promise<CommandRecord | undefined>;
  /** Queues with pending commands or a wake-up time at or before `now`. */
  dueQueues(now: number): Promise<string[]>;

  /** The latest submission of a PR to the queue. */
  latestEntry(queueId: string, prNumber: number): Promise<EntryRecord | undefined>;
  /** The latest submission from a head branch: open ones first, else the last concluded. */
  latestEntryByBranch(queueId: string, headBranch: string): Promise<EntryRecord | undefined>;
  /** Entries not yet concluded, in submission order. */
  activeEntries(queueId: string): Promise<EntryRecord[]>;
  /** The same, with only what getQueue shows of them (no readiness). */
  activeSummaries(queueId: string): Promise<EntrySummary[]>;
  listEntries(queueId: string, query: EntryListQuery): Promise<EntryRecord[]>;
  transitions(entryId: string): Promise<TransitionRecord[]>;
  /** The transitions of every submission (entry) of a pull request to the queue, in order. */
  pullRequestTransitions(queueId: string, prNumber: number): Promise<TransitionRecord[]>;
  run(queueId: string, runId: string): Promise<RunRecord | undefined>;
  /**
   * The queue's most recently started run on this test branch (a slot's branch serves one run
   * after another), at this commit when one is given.
   */
  runOnTestBranch(
    queueId: string,
    testBranch: string,
    sha?: string,
  ): Promise<RunRecord | undefined>;
  /** Transitions since a time, for metrics (rolling windows). */
  transitionsSince(queueId: string, since: number): Promise<TransitionRecord[]>;
}
