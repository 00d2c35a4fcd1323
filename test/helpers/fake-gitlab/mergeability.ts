import type { MergeRequest, MergeStatus, Pipeline, PipelineStatus } from "./model.js";

/**
 * GitLab's mergeability, as pure functions of a merge request's recorded state (the git check is
 * done elsewhere and stored in `mr.git` and `mr.mergeStatus`). The order of the checks is
 * GitLab's (`MergeRequest.all_mergeability_checks`, `DetailedMergeStatusService`): transient
 * states first, then open, draft, commits, discussions, conflict, rebase, and CI last.
 */

export const ACTIVE: readonly PipelineStatus[] = ["created", "pending", "running"];

/** The newest pipeline for the merge request's head: a branch pipeline of the source, or its own. */
export function headPipeline(mr: MergeRequest): Pipeline | null {
  let best: Pipeline | null = null;
  for (const p of mr.project.pipelines) {
    if (p.sha !== mr.sha) continue;
    if (p.mergeRequest !== mr && (p.ref !== mr.sourceBranch || p.mergeRequest !== null)) continue;
    if (best === null || p.id > best.id) best = p;
  }
  return best;
}

/** `merge_status` as the API shows it. */
export function publicMergeStatus(mr: MergeRequest): MergeStatus {
  return mr.mergeStatus === "cannot_be_merged_rechecking" ? "checking" : mr.mergeStatus;
}

export function hasConflicts(mr: MergeRequest): boolean {
  return (
    mr.mergeStatus === "cannot_be_merged" ||
    mr.mergeStatus === "cannot_be_merged_recheck" ||
    mr.mergeStatus === "cannot_be_merged_rechecking"
  );
}

/** Whether the last check is stale (a head or target moved since). */
export function needsCheck(mr: MergeRequest): boolean {
  return mr.mergeStatus !== "can_be_merged" && mr.mergeStatus !== "cannot_be_merged";
}

export function blockingDiscussionsResolved(mr: MergeRequest): boolean {
  return mr.notes.every((n) => !n.resolvable || n.resolved);
}

export function needRebase(mr: MergeRequest): boolean {
  const method = mr.project.settings.merge_method;
  return method !== "merge" && mr.git !== null && !mr.git.ffPossible;
}

/** The CI check: null when CI does not block. */
export function ciBlocker(mr: MergeRequest): "ci_must_pass" | "ci_still_running" | null {
  const settings = mr.project.settings;
  if (!settings.only_allow_merge_if_pipeline_succeeds) return null;
  const pipeline = headPipeline(mr);
  if (pipeline === null) return "ci_must_pass";
  if (ACTIVE.includes(pipeline.status)) return "ci_still_running";
  if (pipeline.status === "success") return null;
  if (pipeline.status === "skipped" && settings.allow_merge_on_skipped_pipeline) return null;
  return "ci_must_pass";
}

/**
 * `mergeable_state?`: the checks `PUT …/merge` answers 405 for (everything but git's). Null when
 * the merge request may be merged as far as they go.
 */
export function stateBlocker(mr: MergeRequest): string | null {
  if (mr.state !== "opened") return "not_open";
  if (isDraft(mr.title)) return "draft_status";
  if (mr.sourceMissing) return "commits_status";
  if (
    mr.project.settings.only_allow_merge_if_all_discussions_are_resolved &&
    !blockingDiscussionsResolved(mr)
  ) {
    return "discussions_not_resolved";
  }
  return ciBlocker(mr);
}

/** `detailed_merge_status`, from what is recorded (no check is started here). */
export function detailedMergeStatus(mr: MergeRequest): string {
  if (mr.mergeStatus === "checking" || mr.mergeStatus === "cannot_be_merged_rechecking") {
    return "checking";
  }
  if (mr.mergeStatus === "unchecked") return "unchecked";
  if (mr.state !== "opened") return "not_open";
  if (isDraft(mr.title)) return "draft_status";
  if (mr.sourceMissing) return "commits_status";
  if (
    mr.project.settings.only_allow_merge_if_all_discussions_are_resolved &&
    !blockingDiscussionsResolved(mr)
  ) {
    return "discussions_not_resolved";
  }
  if (hasConflicts(mr)) return "conflict";
  if (needRebase(mr)) return "need_rebase";
  return ciBlocker(mr) ?? "mergeable";
}

/** GitLab's draft prefixes: `Draft:`, `[Draft]`, `(Draft)` (any case). */
const DRAFT = /^\s*(\[draft\]|\(draft\)|draft:)\s*/i;

export function isDraft(title: string): boolean {
  return DRAFT.test(title);
}

export function withoutDraft(title: string): string {
  let out = title;
  while (DRAFT.test(out)) out = out.replace(DRAFT, "");
  return out;
}
