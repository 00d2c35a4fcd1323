/**
 * Outbound webhook events: their types (Trunk's names where Trunk has the event) and the pure
 * builders of their bodies from what the change knew (`facts`) and what is read when the event is
 * prepared (the test or pull request as it is then). See docs/webhooks.md.
 */
import { isoTime } from "../lib/clock.js";
import {
  PULL_REQUEST_ACTIONS,
  type PullRequestAction,
  type QueueFacts,
  type TestFacts,
} from "./facts.js";
import { trunkReasonFields } from "./trunk-reasons.js";

export {
  PULL_REQUEST_ACTIONS,
  type EventFacts,
  type PullRequestAction,
  type QueueFacts,
  type TestFacts,
} from "./facts.js";

export const TEST_EVENT_TYPES = [
  "test_case.status_changed",
  "v2.test_case.status_changed",
  "test_case.quarantining_setting_changed",
] as const;

/** Sent only by "send a test event": never emitted by a change. */
export const PING_EVENT_TYPE = "mainline.ping";

export const EVENT_TYPES: readonly string[] = [
  ...TEST_EVENT_TYPES,
  ...PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}`),
  PING_EVENT_TYPE,
];

/** Trunk's v1 `test_case` object (as the Flaky Tests API presents a failing test). */
export interface TrunkTestCase {
  id: string;
  repository: { html_url: string };
  html_url: string;
  name: string;
  variant: string;
  status: { value: string; reason: string; timestamp: string };
  most_common_failures: { summary: string; occurrence_count: number; last_occurrence: string }[];
  failure_rate_last_7d: number;
  failure_rate_last_24h: number;
  file_path: string;
  parent: string;
  classname: string;
  codeowners: string[];
  pull_requests_impacted_last_7d: number;
  quarantined: boolean;
  ticket?: { html_url: string };
}

/** A test as the events show it, read when the event is prepared. */
export interface TestCaseView {
  testCase: TrunkTestCase;
  /** The repository's id in Mainline (v2's `repository.id`). */
  repositoryId: string;
}

/** Trunk's slim `test_case` of the v2 events. */
function testCaseV2(test: TrunkTestCase): Record<string, unknown> {
  return {
    id: test.id,
    name: test.name,
    classname: test.classname,
    file_path: test.file_path,
    html_url: test.html_url,
    codeowners: test.codeowners,
    quarantined: test.quarantined,
    variant: test.variant,
  };
}

type StatusFacts = Extract<TestFacts, { kind: "test_status" }>;
type OverrideFacts = Extract<TestFacts, { kind: "test_override" }>;

/** `test_case.status_changed` (v1: lowercase statuses, the full test). */
export function statusChangedV1(facts: StatusFacts, test: TestCaseView): Record<string, unknown> {
  return {
    type: "test_case.status_changed",
    test_case: test.testCase,
    status_change: {
      previous_status: facts.previous.toLowerCase(),
      current_status: {
        value: facts.current.toLowerCase(),
        reason: facts.reason,
        timestamp: isoTime(facts.at),
      },
    },
  };
}

/** `v2.test_case.status_changed` (UPPERCASE statuses, the slim test). */
export function statusChangedV2(facts: StatusFacts, test: TestCaseView): Record<string, unknown> {
  return {
    type: "v2.test_case.status_changed",
    timestamp: isoTime(facts.at),
    previous_status: facts.previous.toUpperCase(),
    new_status: facts.current.toUpperCase(),
    repository: { id: test.repositoryId, html_url: test.testCase.repository.html_url },
    test_case: testCaseV2(test.testCase),
    mainline_reason: facts.reason,
  };
}

/** `test_case.quarantining_setting_changed`. */
export function quarantiningChanged(
  facts: OverrideFacts,
  test: TestCaseView,
): Record<string, unknown> {
  const actor = facts.actor ?? "";
  return {
    type: "test_case.quarantining_setting_changed",
    test_case: test.testCase,
    quarantine_setting_changed: {
      actor: { full_name: actor, email: actor.includes("@") ? actor : null },
      reason: facts.reason,
      timestamp: isoTime(facts.at),
      previous_quarantining_setting: facts.previous,
      updated_quarantining_setting: facts.updated,
    },
  };
}

/** The event types one test status change emits. */
export const STATUS_EVENT_TYPES = ["test_case.status_changed", "v2.test_case.status_changed"];

/**
 * The `pull_request.*` actions of one transition: `submitted` when it enters the queue, then the
 * state it reaches (none for `not_ready` and `tests_passed`, which Trunk has no event for).
 */
export function pullRequestActions(from: string | null, to: string): PullRequestAction[] {
  const actions: PullRequestAction[] = [];
  if (from === null) actions.push("submitted");
  const reached = STATE_ACTIONS[to];
  if (reached) actions.push(reached);
  return actions;
}

const STATE_ACTIONS: Record<string, PullRequestAction | undefined> = {
  pending: "queued",
  testing: "testing",
  pending_failure: "pending_failure",
  failed: "failed",
  cancelled: "canceled",
  merged: "merged",
};

/** A pull request in a queue, read when its event is prepared. */
export interface PullRequestView {
  number: number;
  author: string;
  targetBranch: string;
  repository: { host: string; owner: string; name: string };
  htmlDetailsUrl: string;
  /** The run the transition is about, when it names one. */
  run: {
    testBranch: string | null;
    testBranchSha: string | null;
    batched: boolean;
    bisection: boolean;
  } | null;
}

/** `pull_request.<action>` with Trunk's fields, Mainline's reason and detail beside them. */
export function pullRequestEvent(
  action: PullRequestAction,
  facts: QueueFacts,
  pr: PullRequestView,
): Record<string, unknown> {
  const withRun = action !== "submitted" && action !== "queued" && pr.run !== null;
  return {
    type: `pull_request.${action}`,
    action,
    status: action,
    author: pr.author,
    http_details_url: pr.htmlDetailsUrl,
    pr_number: pr.number,
    repository: pr.repository,
    target_branch: pr.targetBranch,
    timestamp: isoTime(facts.at),
    ...(withRun && pr.run?.testBranch ? { test_branch: pr.run.testBranch } : {}),
    ...(withRun && pr.run?.testBranchSha ? { test_branch_sha: pr.run.testBranchSha } : {}),
    ...(withRun ? { batched: pr.run?.batched ?? false } : {}),
    ...trunkReasonFields(action, facts, pr.run?.bisection ?? false),
    mainline_reason: facts.reason,
    detail: facts.detail,
  };
}

/** The body of "send a test event". */
export function pingEvent(at: number, endpointId: string): Record<string, unknown> {
  return {
    type: PING_EVENT_TYPE,
    timestamp: isoTime(at),
    endpoint_id: endpointId,
    message: "A test event sent by Mainline: this endpoint receives and verifies webhooks.",
  };
}
