/**
 * A pull request from a fork has no API token: its CI runs without the repository's secrets.
 * Trunk's merge action then sends `x-forked-workflow-run-id: <run id>` instead of `x-api-token`
 * on `setImpactedTargets`, and the service asks the git host whether that run is a workflow run
 * of the repository, in progress, for that pull request's head commit. This is the port; the
 * GitHub provider implements it (docs/github.md, "Pull requests from forks").
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
