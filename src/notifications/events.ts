/**
 * Outbound webhook events: their types (Trunk's names where Trunk has the event) and the pure
 * builders of their bodies from what the change knew (`facts`) and what is read when the event is
 * prepared (the test or pull request as it is then). See docs/webhooks.md.
 */
import { isoTime } from "../lib/clock.js";
import {
  BATCH_ACTIONS,
  PULL_REQUEST_ACTIONS,
  type BatchFacts,
  type PullRequestAction,
  type QueueFacts,
  type QueueStateFacts,
  type TestFacts,
} from "./facts.js";
import { trunkReasonFields } from "./trunk-reasons.js";

export {
  BATCH_ACTIONS,
  PULL_REQUEST_ACTIONS,
  type BatchAction,
  type BatchFacts,
  type QueueStateFacts,
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

/** Mainline's own queue events, in Trunk's style: a queue paused or resumed, its host down or back. */
export const QUEUE_EVENT_TYPES = [
  "mainline.queue.state_changed",
  "mainline.queue.blocked",
  "mainline.queue.unblocked",
] as const;

export const EVENT_TYPES: readonly string[] = [
  ...TEST_EVENT_TYPES,
  ...PULL_REQUEST_ACTIONS.map((action) => `pull_request.${action}`),
  ...BATCH_ACTIONS.map((action) => `pull_request_batch.${action}`),
  ...QUEUE_EVENT_TYPES,
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
  /** Why it failed (failed and pending_failure), as the pull request's page explains it. */
  failure?: FailureView | null | undefined;
}

/** A failure as the events show it (Mainline's `failure` field). */
export interface FailureView {
  /** The reason in words, with its detail. */
  summary: string;
  failedChecks: { name: string; conclusion: string; url: string | null }[];
  /** The failing tests, the pull request's own likely first; `verdict` says whose red it is. */
  tests: { name: string; verdict: string; summary: string | null }[];
  testsTruncated: boolean;
  /** Test results of the run were still being processed when the event was prepared. */
  testsPending: boolean;
}

/** `failure` in an event body: the first failing check and its link, then everything. */
function failureField(failure: FailureView): Record<string, unknown> {
  const first = failure.failedChecks[0];
  return {
    check: first?.name ?? null,
    url: first?.url ?? null,
    summary: failure.summary,
    tests: failure.tests.map((test) => test.name),
    failed_checks: failure.failedChecks,
    failing_tests: failure.tests,
    tests_truncated: failure.testsTruncated,
    tests_pending: failure.testsPending,
  };
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
    ...(pr.failure ? { failure: failureField(pr.failure) } : {}),
  };
}

/** A queue as its events show it, read when the event is prepared. */
export interface QueueView {
  targetBranch: string;
  repository: { host: string; owner: string; name: string };
  htmlDetailsUrl: string;
}

/** A batch's run as its events show it. */
export interface BatchView extends QueueView {
  testBranch: string | null;
  testBranchSha: string | null;
  bisection: boolean;
}

/** `pull_request_batch.<action>`: Trunk's batch event, when a batch's run reaches a state. */
export function batchEvent(facts: BatchFacts, batch: BatchView): Record<string, unknown> {
  const action = BATCH_STATE_ACTIONS[facts.to] ?? "testing";
  const reasons = trunkReasonFields(action, { reason: facts.reason }, batch.bisection);
  return {
    type: `pull_request_batch.${action}`,
    action,
    status: action,
    pr_numbers: facts.prNumbers,
    pr_numbers_in_batch: facts.batchPrNumbers,
    repository: batch.repository,
    target_branch: batch.targetBranch,
    test_branch: batch.testBranch ?? "",
    test_branch_sha: batch.testBranchSha ?? "",
    timestamp: isoTime(facts.at),
    http_details_url: batch.htmlDetailsUrl,
    ...reasons,
    mainline_reason: facts.reason,
  };
}

const BATCH_STATE_ACTIONS: Record<string, (typeof BATCH_ACTIONS)[number] | undefined> = {
  testing: "testing",
  pending_failure: "pending_failure",
  failed: "failed",
  cancelled: "canceled",
  merged: "merged",
};

/** The batch action a pull request state reaches, if any. */
export function batchAction(to: string): (typeof BATCH_ACTIONS)[number] | undefined {
  return BATCH_STATE_ACTIONS[to];
}

/** `mainline.queue.*`: a queue's state changed, or its host stopped or started answering. */
export function queueStateEvent(facts: QueueStateFacts, queue: QueueView): Record<string, unknown> {
  const common = {
    timestamp: isoTime(facts.at),
    repository: queue.repository,
    target_branch: queue.targetBranch,
    http_details_url: queue.htmlDetailsUrl,
  };
  if (facts.kind === "queue_state") {
    return {
      type: "mainline.queue.state_changed",
      ...common,
      previous_state: facts.previous.toUpperCase(),
      state: facts.state.toUpperCase(),
      actor: facts.actor,
    };
  }
  return facts.blocked
    ? {
        type: "mainline.queue.blocked",
        ...common,
        cause: facts.cause,
        message: facts.message,
        since: isoTime(facts.since),
      }
    : { type: "mainline.queue.unblocked", ...common, since: isoTime(facts.since) };
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
