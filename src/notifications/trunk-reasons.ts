/**
 * Mainline's transition reasons as Trunk's webhook enums (research notifications.md §1.3): the
 * reason field each `pull_request.*` action carries. A reason Trunk has no word for maps to none
 * of its values (the field is left out); `mainline_reason` always says ours.
 */
import type { PullRequestAction, QueueFacts } from "./facts.js";

const FAILURE: Record<string, string> = {
  failing_required_check: "TEST_RUN_REQUIRED_STATUS_FAILED",
  test_run_timeout: "TEST_RUN_TIMEOUT",
  merge_conflict: "START_TEST_RUN_MERGE_CONFLICT",
  conflicts_with_base: "START_TEST_RUN_MERGE_CONFLICT",
  config_parsing_failure: "START_TEST_RUN_CONFIG_PARSING_FAILURE",
  no_required_statuses: "START_TEST_RUN_NO_REQUIRED_STATUSES",
  merge_failed: "GITHUB_API_MERGE_PR_FAILED",
};

const CANCELLATION: Record<string, string> = {
  cancelled_by_user: "USER_REQUESTED",
  pr_closed: "PR_CLOSED",
  pr_pushed_to: "PR_PUSHED_TO",
  pr_draft: "PR_CONVERTED_TO_DRAFT",
  pr_base_branch_changed: "PR_BASE_BRANCH_CHANGED",
};

const MERGED: Record<string, string> = {
  merged_by_queue: "MERGE_GRAPH_MERGE",
  merged_optimistically: "MERGE_GRAPH_MERGE",
  merged_through_stack: "MERGE_GRAPH_MERGE",
  merged_directly: "MERGE_GRAPH_DIRECT_MERGE",
  merged_manually: "MANUAL_MERGE",
};

const QUEUED: Record<string, string> = {
  ready: "MERGE_ITEM_NOW_READY",
  submitted: "MERGE_ITEM_NOW_READY",
  resubmitted: "MERGE_ITEM_NOW_READY",
  restarted_by_user: "TESTS_RESTARTED_BY_USER",
  restarted_on_new_base: "MANUAL_PUSH_TO_TARGET_BRANCH",
  preempted_by_urgent: "SKIP_THE_LINE_INTERRUPTED",
  prerequisite_merge_item_failed: "PREREQUISITE_MERGE_ITEM_FAILED",
  prerequisite_merge_item_removed: "PREREQUISITE_MERGE_ITEM_CANCELLED",
  bisection_started: "BISECTION_REQUIRED",
  bisection_passed: "BISECTION_TEST_RUN_PASSED",
};

export const TRUNK_ENUMS = {
  failure_reason: [...new Set(Object.values(FAILURE))],
  cancellation_reason: [...new Set(Object.values(CANCELLATION))],
  merged_reason: [...new Set(Object.values(MERGED))],
  queued_reason: [...new Set(Object.values(QUEUED))],
  submitted_reason: ["USER_REQUESTED", "API_REQUESTED"],
};

/**
 * The reason fields (and `is_bisection`) of one action, Trunk's way. A reason Trunk has no value
 * for leaves its field out (Trunk's schema has it optional, never null).
 */
export function trunkReasonFields(
  action: PullRequestAction,
  facts: Pick<QueueFacts, "reason"> & Partial<Pick<QueueFacts, "actorKind">>,
  bisection: boolean,
): Record<string, unknown> {
  const isBisection = bisection || facts.reason.startsWith("bisection");
  const known = (field: string, table: Record<string, string>) => {
    const value = table[facts.reason];
    return value === undefined ? {} : { [field]: value };
  };
  switch (action) {
    case "submitted":
      return { submitted_reason: facts.actorKind === "user" ? "API_REQUESTED" : "USER_REQUESTED" };
    case "queued":
      return known("queued_reason", QUEUED);
    case "testing":
      return { is_bisection: isBisection };
    case "pending_failure":
      return known("failure_reason", FAILURE);
    case "failed":
      return { ...known("failure_reason", FAILURE), is_bisection: isBisection };
    case "canceled":
      return { ...known("cancellation_reason", CANCELLATION), is_bisection: isBisection };
    case "merged":
      return known("merged_reason", MERGED);
  }
}
