import type { MergeQueueRecord } from "../../db/stores/merge-queues.js";
import { isoTime } from "../../lib/clock.js";
import type { EnqueuedPullRequest } from "../../mergequeue/queue-service.js";
import type { QueueMode, QueueSettingsPatch } from "../../mergequeue/settings.js";
import type { GetQueueBody, QueueSettingsBody, SettingsInput } from "./schemas.js";

export function presentQueueSettings(queue: MergeQueueRecord): QueueSettingsBody {
  const c = queue.configuration;
  return {
    state: c.state,
    branch: queue.targetBranch,
    mode: c.mode,
    concurrency: c.concurrency,
    bisectionConcurrency: c.bisectionConcurrency,
    testingTimeoutMinutes: c.testingTimeoutMinutes,
    pendingFailureDepth: c.pendingFailureDepth,
    canOptimisticallyMerge: c.canOptimisticallyMerge,
    batch: c.batch,
    batchingMaxWaitTimeMinutes: c.batchingMaxWaitTimeMinutes,
    batchingMinSize: c.batchingMinSize,
    mergeMethod: c.mergeMethod,
    commentsEnabled: c.commentsEnabled,
    commandsEnabled: c.commandsEnabled,
    createPrsForTestingBranches: c.createPrsForTestingBranches,
    statusCheckEnabled: c.statusCheckEnabled,
    directMergeMode: c.directMergeMode,
    optimizationMode: c.optimizationMode,
    requiredStatuses: c.requiredStatuses,
    extensionEnabled: c.extensionEnabled,
    enqueueingLabel: c.enqueueingLabel,
    labelCommandsEnabled: c.labelCommandsEnabled,
    stateLabelsEnabled: c.stateLabelsEnabled,
    notReadyTimeoutHours: c.notReadyTimeoutHours,
  };
}

export function presentQueue(
  queue: MergeQueueRecord,
  enqueued: EnqueuedPullRequest[],
): GetQueueBody {
  return {
    ...presentQueueSettings(queue),
    enqueuedPullRequests: enqueued.map((pr) => ({
      id: pr.id,
      state: pr.state,
      prNumber: pr.prNumber,
      prTitle: pr.prTitle,
      prSha: pr.prSha,
      prBaseBranch: pr.prBaseBranch,
      prAuthor: pr.prAuthor,
      stateChangedAt: isoTime(pr.stateChangedAt),
      priorityValue: pr.priorityValue,
      priorityName: pr.priorityName,
      usedDefaultPriorityName: pr.usedDefaultPriorityName,
      skipTheLine: pr.skipTheLine,
      noBatch: pr.noBatch,
    })),
  };
}

const lower = <T extends string>(value: T | undefined): T | undefined =>
  value === undefined ? undefined : (value.toLowerCase() as T);

/** The validated request fields as a domain patch: enum spellings normalized to lowercase. */
export function toSettingsPatch(input: SettingsInput): QueueSettingsPatch {
  const patch: QueueSettingsPatch = {};
  const assign = <K extends keyof QueueSettingsPatch>(key: K, value: QueueSettingsPatch[K]) => {
    if (value !== undefined) patch[key] = value;
  };
  assign("state", lower(input.state));
  assign("mode", lower(input.mode));
  assign("mergeMethod", lower(input.mergeMethod));
  assign("directMergeMode", lower(input.directMergeMode));
  assign("optimizationMode", lower(input.optimizationMode));
  assign("concurrency", input.concurrency);
  assign("bisectionConcurrency", input.bisectionConcurrency);
  assign("testingTimeoutMinutes", input.testingTimeoutMinutes);
  assign("pendingFailureDepth", input.pendingFailureDepth);
  assign("canOptimisticallyMerge", input.canOptimisticallyMerge);
  assign("batch", input.batch);
  assign("batchingMaxWaitTimeMinutes", input.batchingMaxWaitTimeMinutes);
  assign("batchingMinSize", input.batchingMinSize);
  assign("commentsEnabled", input.commentsEnabled);
  assign("commandsEnabled", input.commandsEnabled);
  assign("createPrsForTestingBranches", input.createPrsForTestingBranches);
  assign("statusCheckEnabled", input.statusCheckEnabled);
  assign("requiredStatuses", input.requiredStatuses);
  assign("deleteRequiredStatuses", input.deleteRequiredStatuses);
  assign("extensionEnabled", input.extensionEnabled);
  assign("enqueueingLabel", input.enqueueingLabel);
  assign("labelCommandsEnabled", input.labelCommandsEnabled);
  assign("stateLabelsEnabled", input.stateLabelsEnabled);
  assign("notReadyTimeoutHours", input.notReadyTimeoutHours);
  return patch;
}

export function toQueueMode(mode: string | undefined): QueueMode | undefined {
  return lower(mode as QueueMode | undefined);
}
