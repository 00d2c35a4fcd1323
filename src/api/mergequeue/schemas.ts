import { Type, type Static } from "typebox";
import type { PrState } from "../../mergequeue/model.js";
import {
  DIRECT_MERGE_MODES,
  MERGE_METHODS,
  OPTIMIZATION_MODES,
  QUEUE_MODES,
  QUEUE_STATES,
  WRITABLE_QUEUE_STATES,
} from "../../mergequeue/settings.js";
import { PR_STATES, PRIORITY_NAMES } from "../../mergequeue/model.js";
import { WAITING_KINDS } from "../../mergequeue/waiting.js";
import { FailureSchema } from "./failure-schema.js";
import {
  BranchName,
  CaseInsensitiveEnum,
  OutputEnum,
  PATTERN_MESSAGES,
  PrNumber,
  RepoRefSchema,
  UInt32,
} from "../schemas.js";

const PRIORITY_NAME_VALUES = Object.keys(PRIORITY_NAMES) as (keyof typeof PRIORITY_NAMES)[];

export const QueueAddressFields = {
  repo: RepoRefSchema,
  targetBranch: BranchName("The branch the queue merges into, e.g. `main`."),
};

const RequiredStatusesInput = Type.Union(
  [Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 100 }), Type.Null()],
  {
    description:
      "Statuses that must pass in the queue; overrides branch protection and the repository's config file. A list (even `[]`) sets the override; `null` removes it.",
  },
);

const Descriptions = {
  concurrency: "Pull requests (or batches) tested at once.",
  bisectionConcurrency: "Test runs at once while bisecting a failed batch.",
  testingTimeoutMinutes:
    "Minutes to wait for tests before failing the run; 0 disables the timeout.",
  pendingFailureDepth:
    "How many pull requests behind a failed one must finish testing before it is removed; 0 removes it at once.",
  canOptimisticallyMerge:
    "When a pull request passes, the ones ahead of it that it was tested on count as passed too.",
  batch: "Test pull requests in batches.",
  batchingMaxWaitTimeMinutes:
    "Longest wait, in minutes, for a batch to fill before testing starts.",
  batchingMinSize: "Target batch size: testing starts when this many are waiting.",
  commentsEnabled: "Post comments on pull requests.",
  commandsEnabled: "Accept queue commands written as pull-request comments.",
  createPrsForTestingBranches: "Open pull requests for testing branches so that CI runs on them.",
  statusCheckEnabled: "Post a status check with the pull request's queue state.",
  requiredStatuses: "",
  extensionEnabled: "Enable the browser extension's queue controls.",
  enqueueingLabel: "Label that submits a pull request to the queue.",
  labelCommandsEnabled: "Accept queue commands given as labels.",
  stateLabelsEnabled: "Label pull requests with their queue state.",
  notReadyTimeoutHours:
    "Hours a pull request may stay not_ready before it is removed; 0 waits forever.",
  speculationThresholdPercent:
    "Mainline's extension (not in Trunk's API), 0 to 100. 0 always fills `concurrency`, as Trunk does; N starts a run only when the estimated chance that every pull request still being tested ahead of it passes (from the queue's recent failure rate) is at least N percent.",
} as const;

/** A whole percentage, 0..100. */
const Percent = (description: string) => Type.Integer({ minimum: 0, maximum: 100, description });

/** Every writable setting, optional: absent means unchanged. */
export const SettingsInputFields = {
  state: Type.Optional(CaseInsensitiveEnum(WRITABLE_QUEUE_STATES, "Run state of the queue.")),
  mode: Type.Optional(
    CaseInsensitiveEnum(QUEUE_MODES, "`single`: one lane; `parallel`: lanes by impacted targets."),
  ),
  concurrency: Type.Optional(UInt32(1, Descriptions.concurrency)),
  bisectionConcurrency: Type.Optional(UInt32(1, Descriptions.bisectionConcurrency)),
  testingTimeoutMinutes: Type.Optional(UInt32(0, Descriptions.testingTimeoutMinutes)),
  pendingFailureDepth: Type.Optional(UInt32(0, Descriptions.pendingFailureDepth)),
  canOptimisticallyMerge: Type.Optional(
    Type.Boolean({ description: Descriptions.canOptimisticallyMerge }),
  ),
  batch: Type.Optional(Type.Boolean({ description: Descriptions.batch })),
  batchingMaxWaitTimeMinutes: Type.Optional(UInt32(1, Descriptions.batchingMaxWaitTimeMinutes)),
  batchingMinSize: Type.Optional(UInt32(1, Descriptions.batchingMinSize)),
  mergeMethod: Type.Optional(
    CaseInsensitiveEnum(MERGE_METHODS, "How a pull request lands on the target branch."),
  ),
  commentsEnabled: Type.Optional(Type.Boolean({ description: Descriptions.commentsEnabled })),
  commandsEnabled: Type.Optional(Type.Boolean({ description: Descriptions.commandsEnabled })),
  createPrsForTestingBranches: Type.Optional(
    Type.Boolean({ description: Descriptions.createPrsForTestingBranches }),
  ),
  statusCheckEnabled: Type.Optional(Type.Boolean({ description: Descriptions.statusCheckEnabled })),
  directMergeMode: Type.Optional(
    CaseInsensitiveEnum(
      DIRECT_MERGE_MODES,
      "`always`: a pull request up to date with the target branch merges without queue testing.",
    ),
  ),
  optimizationMode: Type.Optional(
    CaseInsensitiveEnum(
      OPTIMIZATION_MODES,
      "`bisection_skip_redundant_tests`: bisection skips tests whose outcome is already known.",
    ),
  ),
  requiredStatuses: Type.Optional(RequiredStatusesInput),
  deleteRequiredStatuses: Type.Optional(
    Type.Boolean({
      description:
        "`true` removes the requiredStatuses override (same as `requiredStatuses: null`); may not be combined with a requiredStatuses list.",
    }),
  ),
  extensionEnabled: Type.Optional(Type.Boolean({ description: Descriptions.extensionEnabled })),
  enqueueingLabel: Type.Optional(
    Type.String({ minLength: 1, maxLength: 50, description: Descriptions.enqueueingLabel }),
  ),
  labelCommandsEnabled: Type.Optional(
    Type.Boolean({ description: Descriptions.labelCommandsEnabled }),
  ),
  stateLabelsEnabled: Type.Optional(Type.Boolean({ description: Descriptions.stateLabelsEnabled })),
  notReadyTimeoutHours: Type.Optional(UInt32(0, Descriptions.notReadyTimeoutHours)),
  speculationThresholdPercent: Type.Optional(Percent(Descriptions.speculationThresholdPercent)),
};

export const SettingsInputSchema = Type.Object(SettingsInputFields);
export type SettingsInput = Static<typeof SettingsInputSchema>;

/** Every setting as answered by getQueue and updateQueue; all fields always present. */
export const QueueSettingsFields = {
  state: OutputEnum(
    QUEUE_STATES,
    "Run state; `switching_modes` while a mode change drains the queue.",
  ),
  branch: Type.String({ description: "The target branch." }),
  mode: OutputEnum(QUEUE_MODES, "Queue mode."),
  concurrency: Type.Integer({ description: Descriptions.concurrency }),
  bisectionConcurrency: Type.Integer({ description: Descriptions.bisectionConcurrency }),
  testingTimeoutMinutes: Type.Integer({ description: Descriptions.testingTimeoutMinutes }),
  pendingFailureDepth: Type.Integer({ description: Descriptions.pendingFailureDepth }),
  canOptimisticallyMerge: Type.Boolean({ description: Descriptions.canOptimisticallyMerge }),
  batch: Type.Boolean({ description: Descriptions.batch }),
  batchingMaxWaitTimeMinutes: Type.Integer({
    description: Descriptions.batchingMaxWaitTimeMinutes,
  }),
  batchingMinSize: Type.Integer({ description: Descriptions.batchingMinSize }),
  mergeMethod: OutputEnum(MERGE_METHODS, "Merge method."),
  commentsEnabled: Type.Boolean({ description: Descriptions.commentsEnabled }),
  commandsEnabled: Type.Boolean({ description: Descriptions.commandsEnabled }),
  createPrsForTestingBranches: Type.Boolean({
    description: Descriptions.createPrsForTestingBranches,
  }),
  statusCheckEnabled: Type.Boolean({ description: Descriptions.statusCheckEnabled }),
  directMergeMode: OutputEnum(DIRECT_MERGE_MODES, "Direct merge mode."),
  optimizationMode: OutputEnum(OPTIMIZATION_MODES, "Optimization mode."),
  // One schema with two types rather than a union: the serializer handles it without trying
  // each branch.
  requiredStatuses: Type.Unsafe<string[] | null>({
    type: ["array", "null"],
    items: { type: "string" },
    description: "The override, or `null` when none is set.",
  }),
  extensionEnabled: Type.Boolean({ description: Descriptions.extensionEnabled }),
  enqueueingLabel: Type.String({ description: Descriptions.enqueueingLabel }),
  labelCommandsEnabled: Type.Boolean({ description: Descriptions.labelCommandsEnabled }),
  stateLabelsEnabled: Type.Boolean({ description: Descriptions.stateLabelsEnabled }),
  notReadyTimeoutHours: Type.Integer({ description: Descriptions.notReadyTimeoutHours }),
  speculationThresholdPercent: Type.Integer({
    description: Descriptions.speculationThresholdPercent,
  }),
};

export const QueueSettingsResponse = Type.Object(QueueSettingsFields, {
  description: "The queue's settings.",
});

/** Trunk's mergeItem: one submission of a pull request. */
export const MergeItemFields = {
  id: Type.String({
    description:
      'Id of this submission (queue entry); `""` while the queue has not applied it yet (then `prTitle`, `prSha`, `prBaseBranch` and `prAuthor` are `""` too: the queue has not read the pull request from its host).',
  }),
  state: OutputEnum(PR_STATES, "Queue state of the pull request."),
  stateChangedAt: Type.String({ format: "date-time", description: "When `state` last changed." }),
  priorityValue: Type.Integer({ description: "0 (most urgent) to 255." }),
  priorityName: OutputEnum(
    PRIORITY_NAME_VALUES,
    "The named level nearest `priorityValue` (ties: the more urgent).",
  ),
  usedDefaultPriorityName: Type.Optional(
    Type.String({
      description: "`medium` when the submission named no priority; absent otherwise.",
    }),
  ),
  skipTheLine: Type.Boolean({ description: "`priorityValue` is 0 (urgent)." }),
  noBatch: Type.Boolean({ description: "The pull request is tested on its own, never batched." }),
  prNumber: Type.Integer(),
  prTitle: Type.String(),
  prSha: Type.String({ description: "Head commit of the pull request." }),
  prBaseBranch: Type.String({ description: "The branch the pull request targets." }),
  prAuthor: Type.String(),
  waitingFor: Type.Optional(
    Type.Object(
      {
        reason: OutputEnum(
          WAITING_KINDS,
          "`batch_forming`: the batch waits for more pull requests, until `until` at the latest; `bisection_ahead`: a failed batch ahead is being localized (its failing pull request searched for), and this pull request keeps its place behind it; `under_localization`: this pull request was in a failed batch (it is `pending_failure`) whose failing pull request is being searched for among `prNumbers`.",
        ),
        message: Type.String({
          description:
            'In words, e.g. "batch forming: 1 of 3, starts by 2026-01-01T15:19:00.000Z at the latest", "waiting for the localization of the failed batch ahead (suspects #3, #4)", "under localization: testing 2 prefixes of batch run 41 to find the failing pull request (one of #3, #4)".',
        }),
        until: Type.Optional(
          Type.String({ format: "date-time", description: "When the wait ends at the latest." }),
        ),
        batch: Type.Optional(
          Type.Object(
            { have: Type.Integer(), need: Type.Integer() },
            { description: "Pull requests in the forming batch, and the size it waits for." },
          ),
        ),
        prNumbers: Type.Optional(
          Type.Array(Type.Integer(), {
            description:
              "`bisection_ahead`: the suspects of the failed batch ahead; `under_localization`: those of its own batch, itself among them. One of them fails the batch.",
          }),
        ),
        runId: Type.Optional(
          Type.String({
            description:
              "`under_localization`: the failed batch run being localized (the `runId` of one of getQueue's `localizations`; a `testRunId` for getMergeQueueTestingDetails).",
          }),
        ),
      },
      {
        description:
          "On a `pending` pull request the queue holds on purpose, or a `pending_failure` one whose failed batch is being localized: what it waits for. Absent once it is tested, or when it waits for nothing but a free slot.",
      },
    ),
  ),
};

export const MergeItemSchema = Type.Object(MergeItemFields, {
  description: "A submission of a pull request to the queue.",
});
export type MergeItemBody = Static<typeof MergeItemSchema>;

export const EnqueuedPullRequestSchema = MergeItemSchema;

/** A nullable value in one schema with two types (the serializer handles it without a union). */
const Nullable = <T>(type: "string" | "integer", description: string) =>
  Type.Unsafe<T | null>({ type: [type, "null"], description });

const PrNumbers = (description: string) => Type.Array(Type.Integer(), { description });

export const BatchSizeSchema = Type.Object(
  {
    size: Type.Integer({ description: "The pull requests the queue tests together now." }),
    ceiling: Type.Integer({ description: "`batchingMinSize`: the most it uses." }),
    estimatedFailureRate: Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        "The queue's estimated chance that one pull request fails its run, from its recent verdicts (0 until a failure stood); `mq_estimated_failure_rate` in getMergeQueueMetrics.",
    }),
    reason: Type.String({
      description:
        'Why this size, in words, e.g. "at a 5 % failure rate, batches of 3 merge more than larger ones".',
    }),
  },
  {
    description:
      "Mainline's extension (not in Trunk's API), present only with `batch: true`: the batch size in use, chosen from 1 to `batchingMinSize` to merge the most pull requests per round of CI time at the queue's failure rate. Absent with batching off, where every run tests one pull request.",
  },
);

export const LocalizationSchema = Type.Object(
  {
    id: Type.String({ description: "The localization." }),
    runId: Type.String({
      description:
        "The failed batch run (a `testRunId` for getMergeQueueTestingDetails, and the `runId` of its suspects' `waitingFor`).",
    }),
    prNumbers: PrNumbers("The batch's pull requests, in queue order."),
    cleared: PrNumbers(
      "Cleared by a passing prefix: they merge where they stand (and may have merged already).",
    ),
    suspects: PrNumbers("One of these fails the batch."),
    prefixes: Type.Array(
      Type.Object({
        runId: Type.String({ description: "The prefix's run." }),
        prNumbers: PrNumbers(
          "The suspects the prefix holds, on top of the cleared pull requests and what is ahead.",
        ),
      }),
      { description: "The prefixes of the batch being tested now, shortest first." },
    ),
    presumedCulprit: Nullable<number>(
      "integer",
      "The suspect the queue presumes fails the batch (a shorter prefix has not failed in the time failing runs take): the queue goes on behind it, merging nothing on the presumption. `null` while there is none.",
    ),
    summary: Type.String({
      description:
        'In words, e.g. "testing 2 prefixes of batch run 41 to find the failing pull request (one of #3, #4)".',
    }),
  },
  { description: "A failed batch whose failing pull request is being searched for." },
);

export const HOST_STATES = ["ok", "unreachable", "rate_limited"] as const;

export const QueueHostSchema = Type.Object(
  {
    state: OutputEnum(
      HOST_STATES,
      "`ok`: the queue's git host answers (or nothing was asked of it yet); `unreachable`: the queue's last attempt on it failed (no provider for the host on this server, or it answered errors or nothing), and the queue waits for it: it tries again at `retryAt`, with a backoff of up to a minute; `rate_limited`: the host's rate limit holds every request of the queue's installation until `retryAt` (GitHub's secondary limit's `retry-after`, or its primary limit's reset).",
    ),
    since: Type.Optional(
      Type.String({
        format: "date-time",
        description: "Not `ok`: the first failure of this outage, or when the rate limit began.",
      }),
    ),
    message: Type.Optional(Type.String({ description: "Not `ok`: the last failure, in words." })),
    retryAt: Type.Optional(
      Type.String({
        format: "date-time",
        description:
          "Not `ok`: when the queue tries the host again (`rate_limited`: when the limit ends).",
      }),
    ),
  },
  {
    description:
      "Mainline's extension (not in Trunk's API): whether the queue reaches its git host. While it does not, the queue changes nothing: impacted targets are stored and applied once it answers, and submitting, cancelling or restarting answer `host_not_connected` (409, no provider for the host) or `unavailable` (503, with `Retry-After`) at once.",
  },
);

export const GetQueueResponse = Type.Object(
  {
    ...QueueSettingsFields,
    enqueuedPullRequests: Type.Array(EnqueuedPullRequestSchema, {
      description: "Pull requests in the queue, in queue order.",
    }),
    batchSize: Type.Optional(BatchSizeSchema),
    localizations: Type.Array(LocalizationSchema, {
      description:
        "Mainline's extension (not in Trunk's API): the failed batches whose failing pull request is being searched for, oldest first; `[]` when none.",
    }),
    host: QueueHostSchema,
  },
  { description: "The queue's settings and the pull requests it holds." },
);

export type QueueSettingsBody = Static<typeof QueueSettingsResponse>;
export type GetQueueBody = Static<typeof GetQueueResponse>;

// ---- pull requests ------------------------------------------------------------------------------

export const PrRefSchema = Type.Object(
  { number: PrNumber() },
  { description: "The pull request, by number." },
);

export const PriorityInput = Type.Unsafe<number | string | null>({
  type: ["integer", "string", "null"],
  minimum: 0,
  maximum: 4294967295,
  maxLength: 32,
  description:
    "`urgent` (0), `high` (10), `medium` (100, the default), `low` (200), or a whole number from 0 to 255 (lower is more urgent); `null` or absent for the default. Names in any letter case.",
  examples: ["high"],
});

const ALL_TARGETS_PATTERN = "^(?:[aA][lL][lL]|[iI][mM][pP][aA][cC][tT][sS]_[aA][lL][lL])$";
PATTERN_MESSAGES.set(ALL_TARGETS_PATTERN, 'must be a list of targets or the string "ALL"');

export const ImpactedTargetsInput = Type.Unsafe<string[] | string>({
  type: ["array", "string"],
  items: { type: "string", maxLength: 1024 },
  pattern: ALL_TARGETS_PATTERN,
  description:
    'The targets the pull request affects, or `"ALL"` (also the legacy `"IMPACTS_ALL"`) when it affects everything.',
});

export const ReadinessSchema = Type.Object(
  {
    hasImpactedTargets: Type.Boolean({
      description: "Impacted targets were uploaded for the head commit.",
    }),
    requiresImpactedTargets: Type.Boolean({
      description: "The queue needs impacted targets before testing (parallel mode).",
    }),
    doesBaseBranchMatch: Type.Boolean({
      description: "The pull request targets the queue's branch.",
    }),
    gitHubMergeability: OutputEnum(
      ["unspecified", "in_progress", "mergeable", "not_mergeable"] as const,
      "What the git host says about merging the pull request.",
    ),
  },
  {
    description:
      "A pull request starts testing when the base branch matches, it is mergeable, and (if required) its impacted targets were uploaded.",
  },
);

export const ActorSchema = Type.Object(
  {
    kind: OutputEnum(["user", "queue", "git_host"] as const, "Who caused the change."),
    name: Type.Optional(Type.String({ description: "The user or API token (kind `user`)." })),
  },
  { description: "Who caused a transition." },
);

export const TimelineItemSchema = Type.Object({
  at: Type.String({ format: "date-time" }),
  fromState: Nullable<PrState>("string", "The state before; `null` for the submission."),
  toState: OutputEnum(PR_STATES, "The state after."),
  reason: Type.String({ description: "Reason code, e.g. `submitted`, `tests_passed`." }),
  actor: ActorSchema,
  testRunId: Nullable<string>("string", "The test run involved, if any."),
  detail: Nullable<string>("string", "More about the reason, if any."),
});

export const PullRequestDetailsSchema = Type.Object(
  {
    ...MergeItemFields,
    readiness: ReadinessSchema,
    forceEnqueued: Type.Boolean({ description: "Always `false`: Mainline has no forced entries." }),
    isCurrentlySubmittedToQueue: Type.Boolean({
      description: "The submission has not concluded (merged, failed or cancelled).",
    }),
    timeline: Type.Optional(
      Type.Array(TimelineItemSchema, {
        description: "Every state change, oldest first (with `includeTimeline: true`).",
      }),
    ),
    failure: Type.Optional(FailureSchema),
  },
  { description: "The latest submission of the pull request to the queue." },
);
export type PullRequestDetailsBody = Static<typeof PullRequestDetailsSchema>;

export const ListPullRequestsResponse = Type.Object({
  pullRequests: Type.Array(MergeItemSchema, { description: "In submission order." }),
  nextCursor: Type.Optional(
    Type.String({
      format: "uuid",
      description: "Pass as `cursor` for the next page; absent on the last page.",
    }),
  ),
});

export const GetSubmittedPullRequestsResponse = Type.Object({
  pullRequests: Type.Array(PullRequestDetailsSchema),
  notFound: Type.Array(Type.Object({ number: Type.Integer() }), {
    description: "Pull requests never submitted to the queue.",
  }),
});

const CHECK_RUN_STATUSES = ["QUEUED", "IN_PROGRESS", "COMPLETED"] as const;
export const CHECK_RUN_CONCLUSIONS = [
  "ACTION_REQUIRED",
  "CANCELLED",
  "FAILURE",
  "NEUTRAL",
  "SUCCESS",
  "SKIPPED",
  "STALE",
  "TIMED_OUT",
] as const;

export const TestingDetailsResponse = Type.Object({
  requiredStatuses: Type.Array(Type.String(), { description: "Statuses the run had to pass." }),
  requiredStatusesSource: Type.Optional(
    OutputEnum(
      ["merge_instance", "trunk_config", "repo_provider_branch_protection"] as const,
      "`merge_instance`: the queue's override; `trunk_config`: the repository's config file (`.mainline.yml` or `.trunk/trunk.yaml`); `repo_provider_branch_protection`: the git host.",
    ),
  ),
  testBranch: Type.String({ description: 'The test branch; `""` before it was built.' }),
  testBranchSha: Type.String({ description: 'Its commit; `""` before it was built.' }),
  createdAt: Type.String({ format: "date-time" }),
  status: OutputEnum(["in_progress", "failed", "cancelled", "succeeded"] as const, "Run status."),
  checkSuites: Type.Array(
    Type.Object({
      checkRuns: Type.Array(
        Type.Object({
          name: Type.String(),
          url: Type.String({ description: '`""` when the check has no page.' }),
          status: Type.Optional(OutputEnum(CHECK_RUN_STATUSES, "Progress of the check.")),
          conclusion: Type.Optional(OutputEnum(CHECK_RUN_CONCLUSIONS, "Outcome, once completed.")),
        }),
      ),
    }),
  ),
  statusChecks: Type.Array(
    Type.Object({
      context: Type.String(),
      url: Type.Optional(Type.String()),
      state: Type.Optional(
        OutputEnum(["ERROR", "FAILURE", "PENDING", "SUCCESS"] as const, "Commit status."),
      ),
    }),
    { description: "Commit statuses; Mainline's checks are all check runs, so this is empty." },
  ),
  testedPullRequests: Type.Array(
    Type.Object({ prNumber: Type.Integer(), prUrl: Type.String(), title: Type.String() }),
    { description: "The pull requests this run decides about." },
  ),
  dependentPrs: Type.Array(Type.Integer(), {
    description: "Pull requests ahead in the queue that the test branch also contains.",
  }),
});
export type TestingDetailsBody = Static<typeof TestingDetailsResponse>;
