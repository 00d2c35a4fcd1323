/**
 * Merge-queue settings: the vocabulary, the defaults and the pure rule that turns a partial update
 * into new settings. No I/O here.
 */
export const QUEUE_STATES = ["running", "paused", "draining", "switching_modes"] as const;
export const WRITABLE_QUEUE_STATES = ["running", "paused", "draining"] as const;
export const QUEUE_MODES = ["single", "parallel"] as const;
export const MERGE_METHODS = ["merge_commit", "squash", "rebase"] as const;
export const DIRECT_MERGE_MODES = ["off", "always"] as const;
export const OPTIMIZATION_MODES = ["off", "bisection_skip_redundant_tests"] as const;

export type QueueState = (typeof QUEUE_STATES)[number];
export type WritableQueueState = (typeof WRITABLE_QUEUE_STATES)[number];
export type QueueMode = (typeof QUEUE_MODES)[number];
export type MergeMethod = (typeof MERGE_METHODS)[number];
export type DirectMergeMode = (typeof DIRECT_MERGE_MODES)[number];
export type OptimizationMode = (typeof OPTIMIZATION_MODES)[number];

/** The largest value of every integer setting (an unsigned 32-bit integer, as in Trunk's API). */
export const MAX_SETTING_INTEGER = 4294967295;

/** Everything a client can configure on a queue, in the spelling of the wire format. */
export interface QueueSettings {
  mode: QueueMode;
  concurrency: number;
  bisectionConcurrency: number;
  testingTimeoutMinutes: number;
  pendingFailureDepth: number;
  canOptimisticallyMerge: boolean;
  batch: boolean;
  batchingMaxWaitTimeMinutes: number;
  batchingMinSize: number;
  mergeMethod: MergeMethod;
  commentsEnabled: boolean;
  commandsEnabled: boolean;
  createPrsForTestingBranches: boolean;
  statusCheckEnabled: boolean;
  directMergeMode: DirectMergeMode;
  optimizationMode: OptimizationMode;
  /** `null`: not overridden (branch protection or the repository's config file decide). */
  requiredStatuses: string[] | null;
  extensionEnabled: boolean;
  enqueueingLabel: string;
  labelCommandsEnabled: boolean;
  stateLabelsEnabled: boolean;
  notReadyTimeoutHours: number;
  /**
   * Mainline's extension (not in Trunk's API): 0 (the default) always fills `concurrency`, as
   * Trunk does. N in 1..100: a run is started only when the estimated chance that every pull
   * request still being tested ahead of it passes is at least N percent (the estimate is the
   * queue's recent failure rate), so a run that would most likely be thrown away waits instead.
   */
  speculationThresholdPercent: number;
}

/** A queue's settings plus its run state. */
export interface QueueConfiguration extends QueueSettings {
  state: QueueState;
  /** Set while `state` is `switching_modes`: the mode that applies once the queue is empty. */
  pendingMode: QueueMode | null;
}

export const DEFAULT_QUEUE_SETTINGS: Readonly<QueueSettings> = Object.freeze({
  mode: "single",
  concurrency: 1,
  bisectionConcurrency: 1,
  testingTimeoutMinutes: 60,
  pendingFailureDepth: 0,
  canOptimisticallyMerge: false,
  batch: false,
  batchingMaxWaitTimeMinutes: 5,
  batchingMinSize: 4,
  mergeMethod: "squash",
  commentsEnabled: true,
  commandsEnabled: true,
  createPrsForTestingBranches: false,
  statusCheckEnabled: true,
  directMergeMode: "off",
  optimizationMode: "off",
  requiredStatuses: null,
  extensionEnabled: true,
  enqueueingLabel: "merge-queue-submit",
  labelCommandsEnabled: true,
  stateLabelsEnabled: false,
  notReadyTimeoutHours: 24,
  speculationThresholdPercent: 0,
});

export function initialConfiguration(
  overrides: Partial<Pick<QueueSettings, "mode" | "concurrency">>,
): QueueConfiguration {
  return {
    ...DEFAULT_QUEUE_SETTINGS,
    ...overrides,
    state: "running",
    pendingMode: null,
  };
}

/**
 * A partial update, already validated field by field (types, bounds, enum spellings).
 * `requiredStatuses: null` resets the override, like `deleteRequiredStatuses: true`.
 */
export type QueueSettingsPatch = Partial<QueueSettings> & {
  state?: WritableQueueState;
  deleteRequiredStatuses?: boolean;
};

export type UpdateOutcome =
  | { ok: true; configuration: QueueConfiguration }
  | { ok: false; reason: "conflicting_required_statuses" | "switching_modes" };

/**
 * Applies an update to a queue's configuration:
 * - absent fields stay as they are; every present field is taken exactly as given;
 * - `deleteRequiredStatuses: true` resets `requiredStatuses` to `null`, and may not be combined
 *   with a `requiredStatuses` list;
 * - a queue in `switching_modes` refuses every write until it is empty;
 * - a `mode` change while pull requests are in flight moves the queue to `switching_modes`
 *   (it drains, then the new mode applies); otherwise the mode changes at once.
 */
export function applySettingsUpdate(
  current: QueueConfiguration,
  patch: QueueSettingsPatch,
  pullRequestsInFlight: boolean,
): UpdateOutcome {
  const { state, deleteRequiredStatuses, ...settings } = patch;
  if (deleteRequiredStatuses === true && Array.isArray(settings.requiredStatuses)) {
    return { ok: false, reason: "conflicting_required_statuses" };
  }
  if (current.state === "switching_modes") return { ok: false, reason: "switching_modes" };

  const next: QueueConfiguration = { ...current };
  for (const key of Object.keys(settings) as (keyof QueueSettings)[]) {
    const value = settings[key];
    if (value !== undefined) Object.assign(next, { [key]: value });
  }
  if (settings.requiredStatuses) next.requiredStatuses = [...settings.requiredStatuses];
  if (deleteRequiredStatuses === true) next.requiredStatuses = null;
  if (state !== undefined) next.state = state;

  if (settings.mode !== undefined && settings.mode !== current.mode && pullRequestsInFlight) {
    next.mode = current.mode;
    next.pendingMode = settings.mode;
    next.state = "switching_modes";
  }
  return { ok: true, configuration: next };
}

/**
 * Called when a `switching_modes` queue has emptied: the pending mode applies and the queue runs.
 * Returns the configuration unchanged when there is nothing to finish.
 */
export function finishModeSwitch(current: QueueConfiguration): QueueConfiguration {
  if (current.state !== "switching_modes" || current.pendingMode === null) return current;
  return { ...current, mode: current.pendingMode, pendingMode: null, state: "running" };
}
