/**
 * Merge requests as GitLab's REST API shows them, and as the queue reads them: GitLab checks
 * mergeability lazily (a fresh or moved merge request reads `checking` first) and names one
 * blocker at a time in `detailed_merge_status` (15.6+; older instances: `merge_status`).
 */
import type { Mergeability, PullRequestInfo } from "../../mergequeue/model.js";

/** The fields of `GET /projects/:id/merge_requests/:iid` the provider reads. */
export interface MergeRequestJson {
  iid: number;
  title: string;
  state: "opened" | "closed" | "merged" | "locked";
  draft?: boolean;
  work_in_progress?: boolean;
  sha: string | null;
  source_branch: string;
  target_branch: string;
  source_project_id?: number;
  target_project_id?: number;
  author?: { username?: string } | null;
  detailed_merge_status?: string;
  merge_status?: string;
  has_conflicts?: boolean;
  diff_refs?: { base_sha: string; head_sha: string; start_sha: string } | null;
  head_pipeline?: { id: number; sha: string; status: string } | null;
  merge_commit_sha?: string | null;
  squash_commit_sha?: string | null;
  merge_error?: string | null;
  labels?: string[];
  web_url?: string;
}

/** Mergeability still being worked out by GitLab: read again shortly. */
const TRANSIENT = new Set(["unchecked", "checking", "preparing", "approvals_syncing"]);
/**
 * GitLab will not merge it until someone changes it. (`need_rebase`, behind the target in a
 * semi-linear or fast-forward project, is not: the queue has GitLab rebase it when it merges.)
 */
const CONFLICTING = new Set(["conflict"]);
/** Blocked by approvals the target requires (Premium's rules; Free never enforces them). */
const REVIEW = new Set(["not_approved", "requested_changes"]);

/** Whether GitLab is still working out the merge request's mergeability. */
export function mergeabilityPending(mr: MergeRequestJson): boolean {
  const status = mr.detailed_merge_status ?? legacyStatus(mr);
  return TRANSIENT.has(status) || (mr.state === "opened" && mr.diff_refs === null);
}

/**
 * The queue's view of a merge request. Every blocker other than conflicts (a pipeline still to
 * pass, unresolved threads, a blocking merge request, …) is one the queue waits out; the queue's
 * own tests do not wait for the merge request's pipeline, GitLab's merge does where the project
 * says pipelines must succeed.
 */
export function pullRequestInfo(mr: MergeRequestJson): PullRequestInfo {
  const status = mr.detailed_merge_status ?? legacyStatus(mr);
  const draft = mr.draft ?? mr.work_in_progress ?? false;
  return {
    number: mr.iid,
    title: mr.title,
    author: mr.author?.username ?? "",
    headSha: mr.sha ?? "",
    headBranch: mr.source_branch,
    baseBranch: mr.target_branch,
    mergeability: mergeabilityOf(mr, status),
    upToDate: false,
    checksPassed: mr.head_pipeline?.status === "success",
    state: mr.state === "merged" ? "merged" : mr.state === "closed" ? "closed" : "open",
    draft,
    ...(REVIEW.has(status) ? { reviewRequired: true } : {}),
  };
}

function mergeabilityOf(mr: MergeRequestJson, status: string): Mergeability {
  if (mergeabilityPending(mr)) return "in_progress";
  if (CONFLICTING.has(status) || mr.has_conflicts === true) return "not_mergeable";
  if (
    status === "mergeable" ||
    status === "need_rebase" ||
    status === "draft_status" ||
    REVIEW.has(status)
  ) {
    return "mergeable";
  }
  if (status === "not_open") return "unspecified";
  return "in_progress";
}

/** Before 15.6: `merge_status` and the flags beside it. */
function legacyStatus(mr: MergeRequestJson): string {
  if (mr.state !== "opened") return "not_open";
  if (mr.draft ?? mr.work_in_progress) return "draft_status";
  switch (mr.merge_status) {
    case "can_be_merged":
      return "mergeable";
    case "cannot_be_merged":
    case "cannot_be_merged_recheck":
      return "conflict";
    default:
      return "checking";
  }
}
