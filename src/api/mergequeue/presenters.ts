import type { HostTrouble, MergeQueueRecord } from "../../mergequeue/records.js";
import { isoTime } from "../../lib/clock.js";
import { presentFailure } from "./failure-schema.js";
import type { EnqueuedPullRequest, QueueActivity } from "../../mergequeue/queue-service.js";
import type { QueueMode, QueueSettingsPatch } from "../../mergequeue/settings.js";
import type { Actor } from "../../mergequeue/model.js";
import type { WaitingFor } from "../../mergequeue/waiting.js";
import type {
  PullRequestView,
  TestingDetails,
  TimelineItem,
} from "../../mergequeue/pull-request-views.js";
import {
  CHECK_RUN_CONCLUSIONS,
  type GetQueueBody,
  type MergeItemBody,
  type PullRequestDetailsBody,
  type QueueSettingsBody,
  type SettingsInput,
  type TestingDetailsBody,
} from "./schemas.js";

type TimelineBody = NonNullable<PullRequestDetailsBody["timeline"]>[number];

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
    speculationThresholdPercent: c.speculationThresholdPercent,
  };
}

/** getQueue: the settings, the pull requests, and Mainline's batch size and localizations. */
export function presentQueue(queue: MergeQueueRecord, activity: QueueActivity): GetQueueBody {
  return {
    ...presentQueueSettings(queue),
    enqueuedPullRequests: activity.enqueued.map(presentMergeItem),
    ...(activity.batchSize === null ? {} : { batchSize: { ...activity.batchSize } }),
    localizations: activity.localizations.map((l) => ({
      id: l.id,
      runId: l.runId,
      prNumbers: [...l.prNumbers],
      cleared: [...l.cleared],
      suspects: [...l.suspects],
      prefixes: l.prefixes.map((p) => ({ runId: p.runId, prNumbers: [...p.prNumbers] })),
      presumedCulprit: l.presumedCulprit,
      summary: l.summary,
    })),
    host: presentHost(activity.hostTrouble),
  };
}

/** getQueue's `host`: `ok`, or what the queue found of its host and when it tries again. */
export function presentHost(trouble: HostTrouble | null): GetQueueBody["host"] {
  if (!trouble) return { state: "ok" };
  return {
    state: trouble.state,
    since: isoTime(trouble.since),
    message: trouble.message,
    retryAt: isoTime(trouble.retryAt),
  };
}

/** A submission as Trunk's mergeItem: RFC 3339 times, lowercase enums. */
export function presentMergeItem(pr: EnqueuedPullRequest): MergeItemBody {
  return {
    id: pr.id,
    state: pr.state,
    stateChangedAt: isoTime(pr.stateChangedAt),
    priorityValue: pr.priorityValue,
    priorityName: pr.priorityName,
    ...(pr.usedDefaultPriorityName === undefined
      ? {}
      : { usedDefaultPriorityName: pr.usedDefaultPriorityName }),
    skipTheLine: pr.skipTheLine,
    noBatch: pr.noBatch,
    prNumber: pr.prNumber,
    prTitle: pr.prTitle,
    prSha: pr.prSha,
    prBaseBranch: pr.prBaseBranch,
    prAuthor: pr.prAuthor,
    ...(pr.waitingFor === undefined ? {} : { waitingFor: presentWaiting(pr.waitingFor) }),
  };
}

/** What a pending pull request waits for, its time in RFC 3339. */
function presentWaiting(waiting: WaitingFor): NonNullable<MergeItemBody["waitingFor"]> {
  return {
    reason: waiting.reason,
    message: waiting.message,
    ...(waiting.until === undefined ? {} : { until: isoTime(waiting.until) }),
    ...(waiting.batch === undefined ? {} : { batch: { ...waiting.batch } }),
    ...(waiting.prNumbers === undefined ? {} : { prNumbers: [...waiting.prNumbers] }),
    ...(waiting.runId === undefined ? {} : { runId: waiting.runId }),
  };
}

export function presentActor(actor: Actor): TimelineBody["actor"] {
  return actor.kind === "user" ? { kind: "user", name: actor.name } : { kind: actor.kind };
}

export function presentTimelineItem(item: TimelineItem): TimelineBody {
  return {
    at: isoTime(item.at),
    fromState: item.fromState,
    toState: item.toState,
    reason: item.reason,
    actor: presentActor(item.actor),
    testRunId: item.testRunId,
    detail: item.detail,
  };
}

/** getSubmittedPullRequest: the mergeItem, readiness, and the timeline when it was read. */
export function presentPullRequest(view: PullRequestView): PullRequestDetailsBody {
  return {
    ...presentMergeItem(view),
    readiness: { ...view.readiness },
    forceEnqueued: view.forceEnqueued,
    isCurrentlySubmittedToQueue: view.isCurrentlySubmittedToQueue,
    ...(view.timeline ? { timeline: view.timeline.map(presentTimelineItem) } : {}),
    ...(view.failure ? { failure: presentFailure(view.failure) } : {}),
  };
}

type CheckRunBody = TestingDetailsBody["checkSuites"][number]["checkRuns"][number];
type CheckConclusionBody = NonNullable<CheckRunBody["conclusion"]>;

/** A check of a run as a GitHub-style check run: a conclusion once it has one. */
export function presentCheckRun(
  check: TestingDetails["checks"][number],
  runStatus: TestingDetails["status"],
): CheckRunBody {
  const base = { name: check.name, url: check.url ?? "" };
  if (check.conclusion === null) {
    // A check that never reported in a run that is over will not report any more.
    return runStatus === "in_progress"
      ? { ...base, status: "IN_PROGRESS" }
      : { ...base, status: "COMPLETED", conclusion: "STALE" };
  }
  const upper = check.conclusion.toUpperCase();
  const known = (CHECK_RUN_CONCLUSIONS as readonly string[]).includes(upper);
  return {
    ...base,
    status: "COMPLETED",
    ...(known ? { conclusion: upper as CheckConclusionBody } : {}),
  };
}

/** getMergeQueueTestingDetails. */
export function presentTestingDetails(details: TestingDetails): TestingDetailsBody {
  return {
    requiredStatuses: details.requiredStatuses,
    ...(details.requiredStatusesSource === null
      ? {}
      : { requiredStatusesSource: details.requiredStatusesSource }),
    testBranch: details.testBranch ?? "",
    testBranchSha: details.testBranchSha ?? "",
    createdAt: isoTime(details.createdAt),
    status: details.status,
    checkSuites: [{ checkRuns: details.checks.map((c) => presentCheckRun(c, details.status)) }],
    statusChecks: [],
    testedPullRequests: details.testedPullRequests.map((pr) => ({ ...pr })),
    dependentPrs: [...details.dependentPrs],
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
  assign("speculationThresholdPercent", input.speculationThresholdPercent);
  return patch;
}

export function toQueueMode(mode: string | undefined): QueueMode | undefined {
  return lower(mode as QueueMode | undefined);
}
