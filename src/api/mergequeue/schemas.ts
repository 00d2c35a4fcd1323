import { Type, type Static } from "typebox";
import {
  DIRECT_MERGE_MODES,
  MERGE_METHODS,
  OPTIMIZATION_MODES,
  QUEUE_MODES,
  QUEUE_STATES,
  WRITABLE_QUEUE_STATES,
} from "../../mergequeue/settings.js";
import { BranchName, CaseInsensitiveEnum, OutputEnum, RepoRefSchema, UInt32 } from "../schemas.js";

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
} as const;

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
};

export const QueueSettingsResponse = Type.Object(QueueSettingsFields, {
  description: "The queue's settings.",
});

export const EnqueuedPullRequestSchema = Type.Object({
  id: Type.String(),
  state: Type.String({
    description: "Queue state of the pull request, e.g. `pending`, `testing`.",
  }),
  prNumber: Type.Integer(),
  prTitle: Type.String(),
  prSha: Type.String(),
  prBaseBranch: Type.String(),
  prAuthor: Type.String(),
  stateChangedAt: Type.String({ format: "date-time" }),
  priorityValue: Type.Integer({ description: "0 (most urgent) to 255." }),
  priorityName: Type.String(),
  usedDefaultPriorityName: Type.String(),
  skipTheLine: Type.Boolean(),
  noBatch: Type.Boolean(),
});

export const GetQueueResponse = Type.Object(
  {
    ...QueueSettingsFields,
    enqueuedPullRequests: Type.Array(EnqueuedPullRequestSchema, {
      description: "Pull requests in the queue, in queue order.",
    }),
  },
  { description: "The queue's settings and the pull requests it holds." },
);

export type QueueSettingsBody = Static<typeof QueueSettingsResponse>;
export type GetQueueBody = Static<typeof GetQueueResponse>;
