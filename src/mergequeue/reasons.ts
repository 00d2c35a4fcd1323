/**
 * Why a pull request moved, in words a person reads: the one table of human texts for the reason
 * codes of transitions (`TRANSITION_REASONS`). The API and the CLI's JSON keep the codes; every
 * page shows these sentences. Pure.
 */
import type { TransitionReason } from "./model.js";

const REASON_TEXTS: Record<TransitionReason, string> = {
  submitted: "Submitted to the queue.",
  resubmitted: "Submitted again while in the queue: its priority and batching were updated.",
  ready: "Ready: it waits for its turn to be tested.",
  not_mergeable: "The git host does not say it can be merged, so it waits until it can.",
  conflicts_with_base:
    "It conflicts with its target branch: rebase it or merge the target branch into it, and it goes on.",
  review_required: "It lacks the approving reviews its target branch requires, so it waits.",
  base_branch_mismatch: "It targets another branch than the queue's, so it waits.",
  awaiting_impacted_targets: "It waits for the targets its changes impact to be uploaded.",
  not_ready_timeout: "It was not ready in time, so it left the queue.",
  test_run_started: "Its tests started.",
  tests_passed: "Its tests passed.",
  restarted_by_user: "Its tests were restarted by hand.",
  restarted_on_new_base: "The target branch moved, so its tests start again on the new commit.",
  preempted_by_urgent: "An urgent pull request went ahead of it, so its tests start again.",
  prerequisite_merge_item_failed:
    "A pull request ahead of it failed, so its tests start again without it.",
  prerequisite_merge_item_removed:
    "A pull request ahead of it left the queue, so its tests start again without it.",
  retried_flaky_failure: "Only known flaky tests failed, so its tests run once more.",
  bisection_passed: "It passed while the queue looked for the pull request that broke its batch.",
  bisection_inconclusive:
    "The search for the pull request that broke its batch was inconclusive, so it is tested again.",
  bisection_started:
    "Its batch failed: the queue tests parts of the batch to find the pull request that broke it.",
  settings_changed: "The queue's settings changed, so its tests start again.",
  stacked_pr_ahead:
    "A pull request it is stacked on came into the queue ahead of it, so its tests start again.",
  failing_required_check: "A required check failed.",
  test_run_timeout: "Its tests took longer than the queue's testing timeout.",
  merge_conflict: "It conflicts with the target branch or with a pull request ahead of it.",
  no_required_statuses: "No required check is configured, so nothing could test it.",
  config_parsing_failure: "The repository's CI configuration could not be read.",
  merge_failed: "The git host did not merge it.",
  merged_by_queue: "Merged by the queue after its tests passed.",
  merged_optimistically: "Merged by the queue: a run that included it passed.",
  merged_directly: "Merged directly: it was up to date and its checks had passed.",
  merged_manually: "Merged outside the queue, on the git host.",
  merged_through_stack: "Its commits landed with a pull request stacked on it.",
  cancelled_by_user: "Taken out of the queue by hand.",
  pr_closed: "The pull request was closed, so it left the queue.",
  pr_pushed_to: "New commits were pushed to the pull request, so it left the queue.",
  pr_draft: "The pull request became a draft, so it left the queue.",
  pr_base_branch_changed: "The pull request's target branch changed, so it left the queue.",
};

/** The sentence for a reason code; a code this version does not know, in words as it is. */
export function describeReason(reason: string): string {
  return Object.hasOwn(REASON_TEXTS, reason)
    ? REASON_TEXTS[reason as TransitionReason]
    : `${reason.replaceAll("_", " ")}.`;
}
