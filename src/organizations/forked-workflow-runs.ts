/**
 * The port that vouches for a fork's CI, which has no API token: Trunk's merge action sends
 * `x-forked-workflow-run-id` on `setImpactedTargets`, and the git host is asked whether that run is
 * the repository's, in progress, for the pull request's head commit. The GitHub provider implements
 * it.
 */
import type { RepoRef } from "./repositories.js";
import type { Principal } from "./service.js";

export const FORKED_WORKFLOW_RUN_HEADER = "x-forked-workflow-run-id";

/** What the caller claims: the run, and the pull request and commit it uploads targets for. */
export interface ForkedWorkflowRunClaim {
  /** GitHub's run id, `RUN_ID_PATTERN` (checked before it gets here). */
  runId: string;
  repo: RepoRef;
  prNumber: number;
  sha: string;
}

export interface ForkedWorkflowRuns {
  /**
   * The organization whose repository the run belongs to, acting for that run only (its
   * `tokenId` names the run), once the host confirmed every part of the claim; otherwise an
   * `unauthorized` ApiError that says which part failed and reveals nothing of other
   * organizations.
   */
  verify(claim: ForkedWorkflowRunClaim): Promise<Principal>;
}

/** A run id as the header may carry it: 1 to 15 digits (GitHub's ids are safe integers). */
export const RUN_ID_PATTERN = /^[0-9]{1,15}$/;
