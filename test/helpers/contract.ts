/**
 * The settings of a new merge queue as docs/contract.md §5 states them, in wire form. Written out here,
 * not imported from src/, so that tests check the code against the contract.
 */
export const QUEUE_DEFAULTS = {
  state: "running",
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
  // Mainline's extension (not in Trunk's API): 0 behaves as Trunk does.
  speculationThresholdPercent: 0,
} as const;
