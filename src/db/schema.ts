import type { ColumnType, Generated } from "kysely";

/**
 * Table types as seen through Kysely's CamelCasePlugin: columns are snake_case in SQL and
 * camelCase here. Portability rules (docs/ARCHITECTURE.md): times are epoch milliseconds in
 * BIGINT columns; booleans are BOOLEAN on PostgreSQL and INTEGER 0/1 on SQLite, written as 0/1
 * and read through `Boolean()`; JSON is stored as text and parsed in TypeScript.
 */
export type DbBool = ColumnType<boolean | number, number, number>;

export interface OrganizationsTable {
  id: string;
  slug: string;
  createdAt: number;
}

export interface ApiTokensTable {
  id: string;
  organizationId: string;
  name: string | null;
  tokenHash: string;
  tokenHint: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface RepositoriesTable {
  id: string;
  organizationId: string;
  host: string;
  owner: string;
  name: string;
  /** `lower(host/owner/name)`: repositories are looked up case-insensitively (contract §2). */
  lookupKey: string;
  createdAt: number;
}

export interface MergeQueuesTable {
  id: string;
  repositoryId: string;
  targetBranch: string;
  state: string;
  mode: string;
  /** The mode a `switching_modes` queue moves to once it is empty. */
  pendingMode: string | null;
  concurrency: number;
  bisectionConcurrency: number;
  testingTimeoutMinutes: number;
  pendingFailureDepth: number;
  canOptimisticallyMerge: DbBool;
  batch: DbBool;
  batchingMaxWaitTimeMinutes: number;
  batchingMinSize: number;
  mergeMethod: string;
  commentsEnabled: DbBool;
  commandsEnabled: DbBool;
  createPrsForTestingBranches: DbBool;
  statusCheckEnabled: DbBool;
  directMergeMode: string;
  optimizationMode: string;
  /** JSON array of strings, or NULL when not overridden. */
  requiredStatuses: string | null;
  extensionEnabled: DbBool;
  enqueueingLabel: string;
  labelCommandsEnabled: DbBool;
  stateLabelsEnabled: DbBool;
  notReadyTimeoutHours: number;
  createdAt: number;
  updatedAt: number;
  /** Bumped on every write; lets readers detect concurrent changes. */
  version: Generated<number>;
}

export interface ServerSecretsTable {
  name: string;
  /** base64 */
  value: string;
  createdAt: number;
}

export interface RepositoryTestSettingsTable {
  repositoryId: string;
  /** JSON of `MonitorSettings` (stable and merge-queue branches included). */
  monitors: string;
  quarantiningEnabled: DbBool;
  autoQuarantine: DbBool;
  ticketBaseUrl: string | null;
  /** The latest CODEOWNERS text an upload carried. */
  codeowners: string | null;
  codeownersUpdatedAt: number | null;
  updatedAt: number;
  version: Generated<number>;
}

export interface UploadsTable {
  key: Generated<number>;
  id: string;
  organizationId: string;
  repositoryId: string;
  /** `awaiting_bundle`, `pending`, `processing`, `processed`, `failed`. */
  state: string;
  reason: string | null;
  clientVersion: string | null;
  createdAt: number;
  urlExpiresAt: number;
  receivedAt: number | null;
  bundlePath: string | null;
  bundleBytes: number | null;
  /** SHA-256 of the bundle's bytes: the same bundle is counted once per repository. */
  contentHash: string | null;
  leaseUntil: number | null;
  attempts: ColumnType<number, number | undefined, number>;
  processedAt: number | null;
  duplicateOf: string | null;
  commitSha: string | null;
  branch: string | null;
  prNumber: number | null;
  jobName: string | null;
  jobUrl: string | null;
  variant: string | null;
  uploadedAt: number | null;
  filesTotal: ColumnType<number, number | undefined, number>;
  filesFailed: ColumnType<number, number | undefined, number>;
  /** JSON array of `{file, reason}`. */
  fileErrors: string | null;
  testsPassed: ColumnType<number, number | undefined, number>;
  testsFailed: ColumnType<number, number | undefined, number>;
  testsSkipped: ColumnType<number, number | undefined, number>;
  infrastructureFailure: ColumnType<boolean | number, number | undefined, number>;
}

export interface TestCasesTable {
  key: Generated<number>;
  repositoryId: string;
  /** Trunk's test UUID. */
  id: string;
  name: string;
  classname: string | null;
  parent: string | null;
  file: string | null;
  variant: string;
  status: string;
  statusReason: string;
  statusChangedAt: number;
  /** JSON of the classifier's `MonitorStates`. */
  monitorStates: string;
  monitorsActive: DbBool;
  quarantineOverride: string;
  overrideActor: string | null;
  overrideReason: string | null;
  overrideAt: number | null;
  ticket: string | null;
  ticketLinkedAt: number | null;
  firstSeenAt: number;
  lastRunAt: number | null;
  lastFailureAt: number | null;
}

export interface TestRunsTable {
  testKey: number;
  uploadKey: number;
  fileIndex: number;
  at: number;
  status: string;
  attempt: string;
  durationMs: number | null;
  failureSignature: string | null;
  failureSummary: string | null;
  failureText: string | null;
}

export interface TestHourlyStatsTable {
  testKey: number;
  hour: number;
  repositoryId: string;
  passed: number;
  failed: number;
  excludedFailed: number;
}

/** `test_hourly_stats` rolled up by UTC day (`day` = start of the day, epoch ms). */
export interface TestDailyStatsTable {
  testKey: number;
  day: number;
  repositoryId: string;
  passed: number;
  failed: number;
  excludedFailed: number;
}

/** `test_failure_groups` rolled up by UTC day, without summaries (read from the hour). */
export interface TestDailyFailureGroupsTable {
  testKey: number;
  day: number;
  signature: string;
  occurrences: number;
  lastAt: number;
}

export interface TestPrFailuresTable {
  testKey: number;
  prNumber: number;
  lastFailedAt: number;
}

export interface TestFailureGroupsTable {
  testKey: number;
  hour: number;
  signature: string;
  occurrences: number;
  lastAt: number;
  summary: string;
}

export interface TestStatusHistoryTable {
  testKey: number;
  at: number;
  status: string;
  reason: string;
  /** `status` (the classifier), `override` (a quarantine override), `ticket`. */
  kind: string;
  actor: string | null;
}

export interface Database {
  organizations: OrganizationsTable;
  apiTokens: ApiTokensTable;
  repositories: RepositoriesTable;
  mergeQueues: MergeQueuesTable;
  serverSecrets: ServerSecretsTable;
  repositoryTestSettings: RepositoryTestSettingsTable;
  uploads: UploadsTable;
  testCases: TestCasesTable;
  testRuns: TestRunsTable;
  testHourlyStats: TestHourlyStatsTable;
  testDailyStats: TestDailyStatsTable;
  testDailyFailureGroups: TestDailyFailureGroupsTable;
  testPrFailures: TestPrFailuresTable;
  testFailureGroups: TestFailureGroupsTable;
  testStatusHistory: TestStatusHistoryTable;
}
