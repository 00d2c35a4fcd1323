/**
 * Runs of a CI that Mainline does not run itself but watches (GitHub's checks and statuses): the
 * driver's request, the checks resolved as required for it, the testing pull request opened for
 * it, and its result once concluded. Durable, so that runs still watched when a process stops are
 * watched again by the next one. Implemented over the database by `db/stores/watched-ci-runs.ts`.
 */
import type { CiRunRequest, CiRunResult, RequiredStatusesSource } from "./providers.js";

export type WatchedRunStatus = "watching" | "passed" | "failed" | "error" | "cancelled";

/** A required check; `appId` set: only that App's check runs count for it (GitHub's pins). */
export interface RequiredCheck {
  context: string;
  appId: number | null;
}

export interface WatchedRequired {
  source: RequiredStatusesSource;
  checks: RequiredCheck[];
}

export interface WatchedCiRun {
  queueId: string;
  runId: string;
  request: CiRunRequest;
  status: WatchedRunStatus;
  /** Resolved once, when the run starts (the configuration at the tested commit). */
  required: WatchedRequired | null;
  /** The result emitted, once concluded. */
  result: CiRunResult | null;
  testPrNumber: number | null;
  createdAt: number;
  finishedAt: number | null;
}

export interface WatchedCiRunRecords {
  /** Stores a new run; false (and nothing changes) when the run is already known. */
  create(run: WatchedCiRun): Promise<boolean>;
  get(queueId: string, runId: string): Promise<WatchedCiRun | undefined>;
  /** Records the resolved required checks and the testing pull request of a run. */
  prepared(
    queueId: string,
    runId: string,
    fields: { required?: WatchedRequired; testPrNumber?: number | null },
  ): Promise<void>;
  /**
   * Ends a run still `watching` (its result, or `cancelled`); false when it had already ended
   * (another process concluded or cancelled it first).
   */
  finish(
    queueId: string,
    runId: string,
    status: Exclude<WatchedRunStatus, "watching">,
    result: CiRunResult | null,
    now: number,
  ): Promise<boolean>;
  /** Runs still `watching`, oldest first. */
  watching(): Promise<WatchedCiRun[]>;
  /** Runs still `watching` that test this commit. */
  watchingSha(sha: string): Promise<WatchedCiRun[]>;
}

/** A run just started, watched until its checks conclude. */
export function newWatchedRun(request: CiRunRequest, now: number): WatchedCiRun {
  return {
    queueId: request.queueId,
    runId: request.runId,
    request,
    status: "watching",
    required: null,
    result: null,
    testPrNumber: null,
    createdAt: now,
    finishedAt: null,
  };
}
