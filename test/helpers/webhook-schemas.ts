/**
 * JSON Schemas of the outbound webhook payloads, written by hand from Trunk's field lists
 * (research notifications.md §1.2–1.3: required fields, types, Trunk's reason enums), in TypeBox.
 * Extra fields are allowed (Mainline adds `mainline_reason` and `detail`); a Trunk field with a
 * wrong type or a value outside Trunk's enum is not. `check` answers the failures as text.
 */
import { Type, type TSchema } from "typebox";
import { Value } from "typebox/value";

const str = Type.String();
const isoTime = Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$" });
const url = Type.String({ pattern: "^https?://" });
const oneOf = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));

export const TRUNK_REASONS = {
  submitted_reason: ["USER_REQUESTED", "TRUNK_ADMIN_REQUESTED", "API_REQUESTED"],
  queued_reason: [
    "MANUAL_PUSH_TO_TARGET_BRANCH",
    "PREREQUISITE_MERGE_ITEM_CANCELLED",
    "PREREQUISITE_MERGE_ITEM_FAILED",
    "PREREQUISITE_MERGE_ITEM_MANUALLY_MERGED",
    "MERGE_ITEM_NOW_READY",
    "TESTS_RESTARTED_BY_USER",
    "TESTS_RESTARTED_BY_API_REQUEST",
    "SKIP_THE_LINE_INTERRUPTED",
    "BISECTION_REQUIRED",
    "BISECTION_TEST_RUN_PASSED",
  ],
  failure_reason: [
    "START_TEST_RUN_INVALID_EVENT",
    "START_TEST_RUN_MERGE_CONFLICT",
    "START_TEST_RUN_CONFIG_NOT_FOUND",
    "START_TEST_RUN_CONFIG_PARSING_FAILURE",
    "START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES",
    "START_TEST_RUN_CONFIG_BAD_REQUIRED_STATUSES",
    "START_TEST_RUN_CONFIG_BAD_VERSION",
    "START_TEST_RUN_NO_REQUIRED_STATUSES",
    "START_TEST_RUN_RETRY_EXHAUSTED",
    "START_TEST_RUN_DRAFT_PRS_NOT_ALLOWED",
    "TEST_RUN_REQUIRED_STATUS_FAILED",
    "TEST_RUN_TIMEOUT",
    "TEST_RUN_FAILED_BY_OPTIMIZATION",
    "GITHUB_API_MERGE_PR_FAILED",
    "GITHUB_API_DIRECT_MERGE_PR_FAILED",
    "PR_UPDATED_AT_MERGE_TIME",
  ],
  cancellation_reason: [
    "USER_REQUESTED",
    "PR_CLOSED",
    "PR_PUSHED_TO",
    "PR_BASE_BRANCH_CHANGED",
    "TRUNK_ADMIN_REQUESTED",
    "PR_CONVERTED_TO_DRAFT",
    "STACKED_PR_MEMBER_PUSHED_TO",
    "STACKED_PR_MEMBER_CLOSED",
    "STACKED_PR_MEMBER_MERGED",
    "STACKED_PR_MEMBER_BASE_BRANCH_CHANGED",
  ],
  merged_reason: ["MERGE_GRAPH_MERGE", "MANUAL_MERGE", "MERGE_GRAPH_DIRECT_MERGE"],
} as const;

/** Fields of every `pull_request.*` event (all required), plus the run's (optional). */
function pullRequestSchema(action: string, extra: Record<string, TSchema>, withRun: boolean) {
  return Type.Object({
    type: Type.Literal(`pull_request.${action}`),
    action: Type.Literal(action),
    status: Type.Literal(action),
    author: str,
    http_details_url: url,
    pr_number: Type.Integer({ minimum: 1 }),
    repository: Type.Object({ host: str, owner: str, name: str }),
    target_branch: str,
    timestamp: isoTime,
    ...(withRun
      ? {
          test_branch: Type.Optional(str),
          test_branch_sha: Type.Optional(Type.String({ pattern: "^[0-9a-f]{40}$" })),
          test_pr_number: Type.Optional(Type.Integer()),
          batched: Type.Optional(Type.Boolean()),
        }
      : {}),
    ...extra,
  });
}

/** Fields of every `pull_request_batch.*` event (Trunk marks all but `test_pr_number` required). */
function batchSchema(action: string, extra: Record<string, TSchema>) {
  return Type.Object({
    type: Type.Literal(`pull_request_batch.${action}`),
    action: Type.Literal(action),
    status: Type.Literal(action),
    pr_numbers: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1 }),
    pr_numbers_in_batch: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 2 }),
    repository: Type.Object({ host: str, owner: str, name: str }),
    target_branch: str,
    test_branch: str,
    test_branch_sha: Type.String({ pattern: "^([0-9a-f]{40})?$" }),
    test_pr_number: Type.Optional(Type.Integer()),
    timestamp: isoTime,
    ...extra,
  });
}

/** Mainline's own queue events: the queue they are about. */
const queueFields = {
  timestamp: isoTime,
  repository: Type.Object({ host: str, owner: str, name: str }),
  target_branch: str,
  http_details_url: url,
};
const QUEUE_STATE = oneOf(["RUNNING", "PAUSED", "DRAINING", "SWITCHING_MODES"]);

const reason = (name: keyof typeof TRUNK_REASONS) => Type.Optional(oneOf(TRUNK_REASONS[name]));
const isBisection = Type.Boolean();

const STATUS_V1 = oneOf(["healthy", "flaky", "broken"]);
const STATUS_V2 = oneOf(["HEALTHY", "FLAKY", "BROKEN"]);
const QUARANTINING = oneOf(["ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "UNSPECIFIED"]);

/** Trunk's v1 `test_case` object (required fields as Trunk marks them). */
const TestCaseV1 = Type.Object({
  id: Type.String({ format: "uuid" }),
  repository: Type.Object({ html_url: url }),
  html_url: url,
  name: str,
  variant: str,
  status: Type.Object({ value: STATUS_V1, reason: str, timestamp: isoTime }),
  most_common_failures: Type.Array(
    Type.Object({
      summary: str,
      occurrence_count: Type.Integer({ minimum: 0 }),
      last_occurrence: isoTime,
    }),
  ),
  failure_rate_last_7d: Type.Number({ minimum: 0, maximum: 1 }),
  failure_rate_last_24h: Type.Number({ minimum: 0, maximum: 1 }),
  file_path: Type.Optional(str),
  parent: Type.Optional(str),
  classname: Type.Optional(str),
  codeowners: Type.Array(str),
  pull_requests_impacted_last_7d: Type.Integer({ minimum: 0 }),
  quarantined: Type.Boolean(),
  ticket: Type.Optional(Type.Object({ html_url: url })),
});

/** The slim `test_case` of the v2 events. */
const TestCaseV2 = Type.Object({
  id: Type.String({ format: "uuid" }),
  name: str,
  classname: str,
  file_path: str,
  html_url: url,
  codeowners: Type.Array(str),
  quarantined: Type.Boolean(),
  variant: str,
});

export const PAYLOAD_SCHEMAS: Record<string, TSchema> = {
  "test_case.status_changed": Type.Object({
    type: Type.Literal("test_case.status_changed"),
    test_case: TestCaseV1,
    status_change: Type.Object({
      previous_status: STATUS_V1,
      current_status: Type.Object({ value: STATUS_V1, reason: str, timestamp: isoTime }),
    }),
  }),
  "v2.test_case.status_changed": Type.Object({
    type: Type.Literal("v2.test_case.status_changed"),
    timestamp: isoTime,
    previous_status: STATUS_V2,
    new_status: STATUS_V2,
    repository: Type.Object({ id: str, html_url: url }),
    test_case: TestCaseV2,
  }),
  "test_case.quarantining_setting_changed": Type.Object({
    type: Type.Literal("test_case.quarantining_setting_changed"),
    test_case: TestCaseV1,
    quarantine_setting_changed: Type.Object({
      // Trunk's actor is a person; Mainline knows a free-text actor, an email only when it is one.
      actor: Type.Object({ full_name: str, email: Type.Union([str, Type.Null()]) }),
      reason: Type.Union([str, Type.Null()]),
      timestamp: isoTime,
      previous_quarantining_setting: QUARANTINING,
      updated_quarantining_setting: QUARANTINING,
    }),
  }),
  "pull_request.submitted": pullRequestSchema(
    "submitted",
    { submitted_reason: reason("submitted_reason") },
    false,
  ),
  "pull_request.queued": pullRequestSchema(
    "queued",
    { queued_reason: reason("queued_reason") },
    false,
  ),
  "pull_request.testing": pullRequestSchema("testing", { is_bisection: isBisection }, true),
  "pull_request.pending_failure": pullRequestSchema(
    "pending_failure",
    { failure_reason: reason("failure_reason") },
    true,
  ),
  "pull_request.failed": pullRequestSchema(
    "failed",
    { failure_reason: reason("failure_reason"), is_bisection: isBisection },
    true,
  ),
  "pull_request.canceled": pullRequestSchema(
    "canceled",
    {
      cancellation_reason: reason("cancellation_reason"),
      is_bisection: Type.Optional(isBisection),
    },
    true,
  ),
  "pull_request.merged": pullRequestSchema(
    "merged",
    { merged_reason: reason("merged_reason") },
    true,
  ),
  ...Object.fromEntries(
    (
      [
        ["testing", { is_bisection: isBisection }],
        ["pending_failure", { failure_reason: reason("failure_reason") }],
        ["failed", { failure_reason: reason("failure_reason"), is_bisection: isBisection }],
        ["canceled", { cancellation_reason: reason("cancellation_reason") }],
        ["merged", { merged_reason: reason("merged_reason") }],
      ] as const
    ).map(([action, extra]) => [`pull_request_batch.${action}`, batchSchema(action, extra)]),
  ),
  "mainline.queue.state_changed": Type.Object({
    type: Type.Literal("mainline.queue.state_changed"),
    ...queueFields,
    previous_state: QUEUE_STATE,
    state: QUEUE_STATE,
    actor: Type.Union([str, Type.Null()]),
  }),
  "mainline.queue.blocked": Type.Object({
    type: Type.Literal("mainline.queue.blocked"),
    ...queueFields,
    cause: oneOf(["host_not_connected", "unavailable", "rate_limited"]),
    message: str,
    since: isoTime,
  }),
  "mainline.queue.unblocked": Type.Object({
    type: Type.Literal("mainline.queue.unblocked"),
    ...queueFields,
    since: isoTime,
  }),
  "mainline.ping": Type.Object({
    type: Type.Literal("mainline.ping"),
    timestamp: isoTime,
    endpoint_id: str,
    message: str,
  }),
};

/** The payload's failures against its type's schema ("" when it conforms). */
export function check(payload: Record<string, unknown>): string {
  const schema = PAYLOAD_SCHEMAS[String(payload.type)];
  if (!schema) return `no schema for the type ${JSON.stringify(payload.type)}`;
  if (Value.Check(schema, payload)) return "";
  return [...Value.Errors(schema, payload)]
    .map((error) => `${error.instancePath || "/"} ${error.message}`)
    .join("; ");
}

/** An endpoint as `listEndpoints` shows it (the fields the tests read). */
export interface EndpointJson {
  id: string;
  kind: string;
  url: string;
  channel: string | null;
  codeOwners: string[];
  eventTypes: string[];
  description: string;
  enabled: boolean;
  disabledReason: string | null;
}
