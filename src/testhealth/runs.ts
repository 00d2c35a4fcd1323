import { matchesAny, type MonitorSettings } from "./monitors.js";
import { DAY_MS as DAY } from "../lib/time.js";
import type { RunRecord } from "./records.js";

/**
 * Rules about runs that ingestion applies: a run's time, infrastructure failures, branch classes.
 */

/**
 * A run's time is its testcase's (else its suite's) timestamp when that lies within the 24 hours
 * before the upload, else the upload's time: clocks of CI machines and stale report files must
 * not move runs into the future or far into the past.
 */
export function runTime(reportedAt: number | null, uploadedAt: number): number {
  if (reportedAt === null || !Number.isFinite(reportedAt)) return uploadedAt;
  return reportedAt <= uploadedAt && uploadedAt - reportedAt <= DAY ? reportedAt : uploadedAt;
}

export const INFRASTRUCTURE_FAILURE_SHARE = 0.8;
export const INFRASTRUCTURE_FAILURE_MIN_RUNS = 10;

/**
 * Infrastructure-failure protection: an upload in which at least 80% of at least 10 runs failed
 * (skipped runs aside) says more about the machine than about the tests; it is stored and listed
 * but excluded from detection and rates.
 */
export function isInfrastructureFailure(counts: { passed: number; failed: number }): boolean {
  const runs = counts.passed + counts.failed;
  return (
    runs >= INFRASTRUCTURE_FAILURE_MIN_RUNS && counts.failed >= INFRASTRUCTURE_FAILURE_SHARE * runs
  );
}

/**
 * How Mainline's built-in CI runner names itself as the client of its uploads
 * (`mainline-ci <version>`): runs of the merge queue, whose failures the queue judges.
 */
export const QUEUE_RUNNER_CLIENT = "mainline-ci ";

export type BranchClass = "stable" | "merge_queue" | "pull_request" | "other";

/** Stable and merge-queue branches by the repository's globs; then any run with a PR number. */
export function branchClass(
  branch: string,
  prNumber: number | null,
  settings: Pick<MonitorSettings, "stableBranches" | "mergeQueueBranches">,
): BranchClass {
  if (matchesAny(branch, settings.mergeQueueBranches)) return "merge_queue";
  if (matchesAny(branch, settings.stableBranches)) return "stable";
  return prNumber !== null ? "pull_request" : "other";
}

/** Where a test broke on its stable branches: the first run of its current failing streak. */
export interface BrokeAt {
  commitSha: string;
  at: number;
  /** The last passing run before it (its commit), when the runs read reach back that far. */
  lastPassedSha: string | null;
}

/**
 * The first failing run of the failing streak the latest runs on stable branches end with
 * (`runs` newest first, final attempts only count); null when the latest such run passed or none
 * was read.
 */
export function brokeAt(
  runs: readonly Pick<
    RunRecord,
    "status" | "attempt" | "branch" | "commitSha" | "at" | "excluded"
  >[],
  settings: Pick<MonitorSettings, "stableBranches" | "mergeQueueBranches">,
): BrokeAt | null {
  let first: BrokeAt | null = null;
  for (const run of runs) {
    if (run.attempt !== "final" || run.excluded) continue;
    if (branchClass(run.branch, null, settings) !== "stable") continue;
    if (run.status === "passed") {
      return first ? { ...first, lastPassedSha: run.commitSha } : null;
    }
    if (run.status === "failed")
      first = { commitSha: run.commitSha, at: run.at, lastPassedSha: null };
  }
  return first;
}
