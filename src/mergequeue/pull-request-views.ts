/**
 * What the pull-request reads answer (getSubmittedPullRequest, listing pages, testing details)
 * before wire formatting, and the listing's opaque cursors.
 */
import type { PullRequestFailure } from "./failure-explanation.js";
import type { Actor, Mergeability, PrState } from "./model.js";
import type { EnqueuedPullRequest } from "./queue-service.js";
import type { RunRecord } from "./records.js";

export interface PullRequestReadiness {
  hasImpactedTargets: boolean;
  requiresImpactedTargets: boolean;
  doesBaseBranchMatch: boolean;
  gitHubMergeability: Mergeability;
}

/** One recorded state change of a submission. */
export interface TimelineItem {
  at: number;
  fromState: PrState | null;
  toState: PrState;
  reason: string;
  actor: Actor;
  testRunId: string | null;
  detail: string | null;
}

/** getSubmittedPullRequest: the mergeItem plus readiness, and the timeline when asked for. */
export interface PullRequestView extends EnqueuedPullRequest {
  readiness: PullRequestReadiness;
  /** Mainline has no forced submissions. */
  forceEnqueued: boolean;
  /** The submission has not concluded (merged, failed or cancelled). */
  isCurrentlySubmittedToQueue: boolean;
  timeline?: TimelineItem[];
  /** Why it failed: failed, or failed behind pull requests ahead (`pending_failure`). */
  failure?: PullRequestFailure;
}

export interface PullRequestPage {
  pullRequests: EnqueuedPullRequest[];
  /** Present when more pull requests follow. */
  nextCursor?: string;
}

export type TestRunStatus = "in_progress" | "succeeded" | "failed" | "cancelled";

/** getMergeQueueTestingDetails, before wire formatting. */
export interface TestingDetails {
  runId: string;
  status: TestRunStatus;
  createdAt: number;
  requiredStatuses: string[];
  /** Where the required statuses came from, in Trunk's words; null when not decided yet. */
  requiredStatusesSource:
    "merge_instance" | "trunk_config" | "repo_provider_branch_protection" | null;
  testBranch: string | null;
  testBranchSha: string | null;
  checks: RunRecord["checks"];
  /** The pull requests the run decides about. */
  testedPullRequests: { prNumber: number; prUrl: string; title: string }[];
  /** Pull requests merged into the test branch because they are ahead in the queue. */
  dependentPrs: number[];
}

export interface ListQuery {
  state?: PrState;
  /** Only submissions that concluded at or after this time (epoch ms). */
  since?: number;
  /** From a previous page's `nextCursor`; `""` is the first page. */
  cursor?: string;
  /** 1..100, default 50. */
  take?: number;
  /** Every submission (a resubmitted pull request once per submission); default: each one's latest. */
  history?: boolean;
}

export const DEFAULT_TAKE = 50;
export const MAX_TAKE = 100;

// ---- listing cursors ---------------------------------------------------------------------------

/**
 * Trunk's cursors are UUIDs. Ours is a UUID-shaped encoding of the submission order (`seq`) of the
 * last item returned: `00000000-0000-4000-8000-` followed by 12 hex digits. Opaque to clients.
 */
const CURSOR_PREFIX = "00000000-0000-4000-8000-";
const CURSOR_PATTERN = /^00000000-0000-4000-8000-([0-9a-f]{12})$/i;
const MAX_CURSOR_SEQ = 0xffff_ffff_ffff;

export function encodeCursor(seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 0 || seq > MAX_CURSOR_SEQ) {
    throw new RangeError(`seq ${seq} cannot be encoded as a cursor`);
  }
  return CURSOR_PREFIX + seq.toString(16).padStart(12, "0");
}

/** The `seq` a cursor stands for, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): number | undefined {
  const match = CURSOR_PATTERN.exec(cursor);
  return match?.[1] === undefined ? undefined : Number.parseInt(match[1], 16);
}
