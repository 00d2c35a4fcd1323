/**
 * What the dashboard's merge-queue pages read: a queue's board (state, runs in flight, positions,
 * estimated times to merge), one pull request's history with its runs, and a queue's health over
 * days. Each read is a fixed number of statements whatever the queue holds; the arithmetic is pure.
 */
import { DAY_MS } from "../lib/time.js";
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import type { Principal } from "../organizations/service.js";
import type { PrState } from "./model.js";
import { batchSizeChoice, type BatchSizeChoice } from "./batch-size.js";
import { computeBoard, type Board, type BoardEntry } from "./board.js";
import { NO_VERDICTS } from "./speculation.js";
import { describeQueue, requireQueue, type QueueAddress } from "./queue-service.js";
import type {
  EntryRecord,
  HostTrouble,
  MergeQueueRecord,
  MergeQueueRecords,
  QueueDashboardReads,
  RunRecord,
  RunTiming,
  RuntimeRecords,
  TransitionRecord,
} from "./records.js";
import { upgradeSnapshot } from "./snapshot.js";
import type { FailureExplainer, PullRequestFailure } from "./failure-explanation.js";

/** Runs whose durations make the estimate: the last ones of this window. */
export const ESTIMATE_WINDOW_MS = 7 * DAY_MS;
export const ESTIMATE_RUNS = 50;
/** Concluded pull requests the board lists. */
export const BOARD_CONCLUDED = 10;

export {
  computeBoard,
  runEstimate,
  OVERRUN_MARGIN,
  type Board,
  type BoardBisection,
  type BoardEntry,
  type BoardRun,
  type BoardWait,
  type NoEstimate,
} from "./board.js";
export { localizationView } from "./localizations.js";

export interface QueueBoard extends Board {
  queue: MergeQueueRecord;
  /** Changes whenever the queue's settings change or a pull request moves (live updates). */
  version: string;
  /** The batch size the queue uses now (with the queue's settings and failure rate), and why. */
  batchSize: BatchSizeChoice;
  /** The pull requests that concluded last, newest first. */
  concluded: {
    number: number;
    title: string;
    state: PrState;
    reason: string;
    at: number;
    /** From submission to conclusion. */
    tookMs: number;
  }[];
  /** The median duration of recent finished runs; null without any. */
  typicalRunMs: number | null;
  /** How many finished runs the estimate rests on. */
  estimateSample: number;
  /** What the queue's driver last found of its git host: null while it answers. */
  hostTrouble: HostTrouble | null;
}

export interface PullRequestHistory {
  queue: MergeQueueRecord;
  entry: EntryRecord;
  /** Every submission's transitions, oldest first. */
  transitions: TransitionRecord[];
  /** The runs its transitions name, newest first. */
  runs: RunRecord[];
  /** While it is in the queue: its place there (position, estimate), and how many are ready. */
  place: { entry: BoardEntry; ready: number } | null;
  /** Why it failed (failed, or failed behind pull requests ahead); null otherwise. */
  failure: PullRequestFailure | null;
}

export type HealthRange = "7d" | "30d" | "90d";
export const HEALTH_RANGES: Record<HealthRange, number> = { "7d": 7, "30d": 30, "90d": 90 };

export interface QueueHealth {
  queue: MergeQueueRecord;
  days: number;
  since: number;
  merged: number;
  failed: number;
  cancelled: number;
  /** Conclusions by `state/reason`, most frequent first. */
  byReason: { state: PrState; reason: string; count: number }[];
  /** Submission to merge, in ms. */
  timeInQueue: { p50: number | null; p95: number | null; p99: number | null };
  runs: number;
  runsPerMerged: number | null;
  /** One element per day, oldest first (UTC days). */
  daily: { day: number; merged: number; failed: number; runs: number }[];
  /** Failed pull requests of the range, newest first: each once, if its latest submission failed. */
  needsAttention: {
    entryId: string;
    number: number;
    title: string;
    author: string;
    reason: string;
    /** What failed, in words (the failing checks, a conflict's files); null when unknown. */
    detail: string | null;
    /** The run that failed it, when one did. */
    runId: string | null;
    at: number;
  }[];
}

/** Statements-bounded entry reads: at most this many concluded entries in a health range. */
export const HEALTH_MAX_ENTRIES = 20_000;
export const HEALTH_MAX_RUNS = 50_000;
const NEEDS_ATTENTION = 25;
/** Runs of a pull request's page (its newest). */
const PR_RUNS = 20;

export function median(values: readonly number[]): number | null {
  return percentile(values, 50);
}

/** Nearest-rank percentile; null for no values. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

/** The median duration of finished (passed or failed) runs, and how many there were. */
export function typicalRunDuration(timings: readonly RunTiming[]): {
  ms: number | null;
  sample: number;
} {
  const durations = timings
    .filter((t) => t.finishedAt !== null && (t.status === "passed" || t.status === "failed"))
    .map((t) => (t.finishedAt ?? 0) - t.startedAt)
    .filter((d) => d >= 0);
  return { ms: median(durations), sample: durations.length };
}

const dayOf = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;

/** A queue's health from its concluded entries and its runs over `days` days ending `now`. */
export function healthOf(
  entries: readonly EntryRecord[],
  runs: readonly RunTiming[],
  days: number,
  now: number,
): Omit<QueueHealth, "queue"> {
  const since = dayOf(now) - (days - 1) * DAY_MS;
  const daily = Array.from({ length: days }, (_, i) => ({
    day: since + i * DAY_MS,
    merged: 0,
    failed: 0,
    runs: 0,
  }));
  const slot = (at: number) => daily[Math.floor((at - since) / DAY_MS)];
  const reasons = new Map<string, { state: PrState; reason: string; count: number }>();
  const counts = { merged: 0, failed: 0, cancelled: 0 };
  const inQueue: number[] = [];
  const failures: QueueHealth["needsAttention"] = [];
  // A pull request needs attention once, when its latest submission of the range failed.
  const latest = new Map<number, number>();
  for (const entry of entries) {
    latest.set(entry.prNumber, Math.max(latest.get(entry.prNumber) ?? entry.seq, entry.seq));
  }
  for (const entry of entries) {
    if (entry.concludedAt === null || entry.concludedAt < since) continue;
    const state = entry.state;
    if (state !== "merged" && state !== "failed" && state !== "cancelled") continue;
    counts[state] += 1;
    const key = `${state}/${entry.lastReason}`;
    const known = reasons.get(key) ?? { state, reason: entry.lastReason, count: 0 };
    known.count += 1;
    reasons.set(key, known);
    const day = slot(entry.concludedAt);
    if (state === "merged") {
      inQueue.push(entry.concludedAt - entry.submittedAt);
      if (day) day.merged += 1;
    }
    if (state === "failed") {
      if (day) day.failed += 1;
      if (latest.get(entry.prNumber) !== entry.seq) continue;
      failures.push({
        entryId: entry.id,
        number: entry.prNumber,
        title: entry.prTitle,
        author: entry.prAuthor,
        reason: entry.lastReason,
        detail: null,
        runId: null,
        at: entry.concludedAt,
      });
    }
  }
  let runCount = 0;
  for (const run of runs) {
    if (run.startedAt < since) continue;
    runCount += 1;
    const day = slot(run.startedAt);
    if (day) day.runs += 1;
  }
  failures.sort((a, b) => b.at - a.at);
  return {
    days,
    since,
    ...counts,
    byReason: [...reasons.values()].sort(
      (a, b) => b.count - a.count || a.reason.localeCompare(b.reason),
    ),
    timeInQueue: {
      p50: percentile(inQueue, 50),
      p95: percentile(inQueue, 95),
      p99: percentile(inQueue, 99),
    },
    runs: runCount,
    runsPerMerged: counts.merged === 0 ? null : runCount / counts.merged,
    daily,
    needsAttention: failures.slice(0, NEEDS_ATTENTION),
  };
}

export class QueueDashboardService {
  constructor(
    private readonly deps: {
      queues: Pick<MergeQueueRecords, "find" | "findById">;
      runtime: Pick<
        RuntimeRecords,
        | "loadSnapshot"
        | "loadDriverState"
        | "latestEntry"
        | "pullRequestTransitions"
        | "listEntries"
      > &
        QueueDashboardReads;
      clock: Clock;
      /** Why a pull request failed; absent: the page says only the reason. */
      failures?: Pick<FailureExplainer, "explain">;
    },
  ) {}

  /** The queue at an address of the principal's organization (404 otherwise). */
  queue(principal: Principal, address: QueueAddress): Promise<MergeQueueRecord> {
    return requireQueue(this.deps.queues, principal, address);
  }

  /** The live-update marker of a queue already checked to be the viewer's: two statements. */
  async version(queueId: string): Promise<string | undefined> {
    const [queue, latest] = await Promise.all([
      this.deps.queues.findById(queueId),
      this.deps.runtime.latestTransitionId(queueId),
    ]);
    return queue ? `${queue.version}.${latest}` : undefined;
  }

  /**
   * Five statements: the queue, its snapshot, its newest transition, recent runs' timings, the
   * pull requests that concluded last.
   */
  async board(principal: Principal, address: QueueAddress): Promise<QueueBoard> {
    const queue = await this.queue(principal, address);
    const now = this.deps.clock.now();
    const [stored, latest, timings, concluded] = await Promise.all([
      this.deps.runtime.loadDriverState(queue.id),
      this.deps.runtime.latestTransitionId(queue.id),
      this.deps.runtime.runTimings(queue.id, now - ESTIMATE_WINDOW_MS, ESTIMATE_RUNS),
      this.deps.runtime.recentlyConcluded(queue.id, BOARD_CONCLUDED),
    ]);
    const typical = typicalRunDuration(timings);
    const snapshot = stored.snapshot === undefined ? undefined : upgradeSnapshot(stored.snapshot);
    return {
      queue,
      version: `${queue.version}.${latest}`,
      hostTrouble: stored.hostTrouble,
      ...computeBoard(snapshot, typical.ms, now),
      batchSize: batchSizeChoice(queue.configuration, snapshot?.verdicts ?? NO_VERDICTS),
      concluded: concluded.map((e) => ({
        number: e.prNumber,
        title: e.prTitle,
        state: e.state,
        reason: e.lastReason,
        at: e.concludedAt ?? e.stateChangedAt,
        tookMs: (e.concludedAt ?? e.stateChangedAt) - e.submittedAt,
      })),
      typicalRunMs: typical.ms,
      estimateSample: typical.sample,
    };
  }

  /**
   * Four statements: the queue, the latest submission, its transitions, the runs they name; two
   * more while it is in the queue (the snapshot and recent runs' timings: its place and estimate).
   */
  async pullRequest(
    principal: Principal,
    address: QueueAddress,
    prNumber: number,
  ): Promise<PullRequestHistory> {
    const queue = await this.queue(principal, address);
    const [entry, transitions] = await Promise.all([
      this.deps.runtime.latestEntry(queue.id, prNumber),
      this.deps.runtime.pullRequestTransitions(queue.id, prNumber),
    ]);
    if (!entry) {
      throw new ApiError(
        "not_found",
        `Pull request #${prNumber} has never been submitted to the merge queue for ${describeQueue(address)}.`,
      );
    }
    const runIds: string[] = [];
    for (const t of [...transitions].reverse()) {
      if (t.runId !== null && !runIds.includes(t.runId)) runIds.push(t.runId);
      if (runIds.length === PR_RUNS) break;
    }
    const now = this.deps.clock.now();
    const [runs, stored, timings] = await Promise.all([
      this.deps.runtime.runsByIds(queue.id, runIds),
      entry.concludedAt === null
        ? this.deps.runtime.loadSnapshot(queue.id)
        : Promise.resolve(undefined),
      entry.concludedAt === null
        ? this.deps.runtime.runTimings(queue.id, now - ESTIMATE_WINDOW_MS, ESTIMATE_RUNS)
        : Promise.resolve([]),
    ]);
    runs.sort((a, b) => b.startedAt - a.startedAt || b.id.localeCompare(a.id));
    let place: PullRequestHistory["place"] = null;
    if (stored) {
      const board = computeBoard(
        upgradeSnapshot(stored.snapshot),
        typicalRunDuration(timings).ms,
        now,
      );
      const mine = board.entries.find((e) => e.id === entry.id);
      if (mine)
        place = { entry: mine, ready: board.entries.filter((e) => e.position !== null).length };
    }
    const failure =
      (await this.deps.failures?.explain(
        { ...address.repo, organizationId: principal.organizationId },
        entry,
        transitions,
        runs,
      )) ?? null;
    return { queue, entry, transitions, runs, place, failure };
  }

  /**
   * Four statements: the queue, the entries concluded in the range, the runs' timings, and what
   * failed the pull requests that need attention.
   */
  async health(
    principal: Principal,
    address: QueueAddress,
    range: HealthRange,
  ): Promise<QueueHealth> {
    const queue = await this.queue(principal, address);
    const now = this.deps.clock.now();
    const days = HEALTH_RANGES[range];
    const since = dayOf(now) - (days - 1) * DAY_MS;
    const [entries, runs] = await Promise.all([
      this.deps.runtime.listEntries(queue.id, {
        concludedSince: since,
        // Past the bound, the oldest of the range are left out, never the latest.
        order: "newest",
        take: HEALTH_MAX_ENTRIES,
      }),
      this.deps.runtime.runTimings(queue.id, since, HEALTH_MAX_RUNS),
    ]);
    const health = healthOf(entries, runs, days, now);
    const failures = await this.deps.runtime.failures(
      queue.id,
      health.needsAttention.map((f) => f.entryId),
    );
    const last = new Map(failures.map((t) => [t.entryId, t]));
    for (const item of health.needsAttention) {
      const failure = last.get(item.entryId);
      item.detail = failure?.detail ?? null;
      item.runId = failure?.runId ?? null;
    }
    return { queue, ...health };
  }
}
