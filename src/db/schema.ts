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
  /** `lower(host/owner/name)`: repositories are looked up case-insensitively. */
  lookupKey: string;
  createdAt: number;
  /** Trunk's public repository id (uploads from forks); null until first asked for. */
  publicId: string | null;
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
  /** 0..100; Mainline's extension (see `QueueSettings`). */
  speculationThresholdPercent: number;
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
  /** Test results commented on the repository's pull requests (migration 0032). */
  pullRequestComments: ColumnType<boolean | number, number | undefined, number>;
  /** The repository's ticket connection (migration 0034). */
  ticketConnectionId: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON of the automatic ticket rule; null: the defaults. */
  ticketRule: ColumnType<string | null, string | null | undefined, string | null>;
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
  /** The 7-day figures, true from `figuresAt` until `figuresExpireAt`. */
  weekFailureRate: Generated<number>;
  weekRuns: Generated<number>;
  weekPrsImpacted: Generated<number>;
  figuresAt: Generated<number>;
  /** 0: not computed yet; null: true until a run of the test arrives. */
  figuresExpireAt: Generated<number | null>;
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

/** A dashboard sign-in session: found by the hash of its cookie's random id. */
export interface WebSessionsTable {
  /** Public name (`ses_…`) for listings and revocation; not a secret. */
  id: string;
  /** SHA-256 (hex) of the session id the cookie holds. */
  idHash: string;
  organizationId: string;
  /** The API token it was signed in with; null for a GitHub session (migration 0021). */
  tokenId: string | null;
  createdAt: number;
  lastSeenAt: number;
  /** The absolute end of the session, whatever its use. */
  expiresAt: number;
  revokedAt: number | null;
  /** `signed_out`, `revoked` (an operator). */
  revokedReason: string | null;
  /** A GitHub session: the user, and the installation it entered through. */
  githubUserId: number | null;
  githubLogin: string | null;
  githubInstallationId: number | null;
}

/** Per merge queue: the planner's snapshot and the lease of its only writer (its driver). */
export interface MqRuntimeTable {
  queueId: string;
  /** JSON of the planner's `QueueSnapshot`; `null` until the first commit. */
  snapshot: string;
  wakeAt: number | null;
  leaseOwner: string | null;
  /** Fencing counter: bumped on every takeover of the lease. */
  leaseEpoch: ColumnType<number, number | undefined, number>;
  /** 0 when released. */
  leaseExpiresAt: ColumnType<number, number | undefined, number>;
  updatedAt: number;
  /** Every id the planner may have issued is below this (migration 0028). */
  issuedBelow: ColumnType<number, number | undefined, number>;
  /** JSON of the driver's `HostTrouble`; null while the host answers (migration 0030). */
  hostTrouble: ColumnType<string | null, string | null | undefined, string | null>;
}

/** One submission of a pull request to a queue (`EntryRecord`). */
export interface MqEntriesTable {
  id: string;
  queueId: string;
  seq: number;
  prNumber: number;
  prTitle: string;
  prSha: string;
  prHeadBranch: string;
  prBaseBranch: string;
  prAuthor: string;
  state: string;
  stateChangedAt: number;
  submittedAt: number;
  concludedAt: number | null;
  priorityValue: number;
  usedDefaultPriority: DbBool;
  noBatch: DbBool;
  /** JSON of `EntryRecord["readiness"]`. */
  readiness: string;
  lastReason: string;
}

export interface MqTransitionsTable {
  id: Generated<number>;
  queueId: string;
  entryId: string;
  at: number;
  fromState: string | null;
  toState: string;
  reason: string;
  /** JSON of the `Actor`. */
  actor: string;
  runId: string | null;
  detail: string | null;
}

/** A queue's test run (`RunRecord`); ids are unique within the queue. */
export interface MqRunsTable {
  queueId: string;
  id: string;
  kind: string;
  status: string;
  baseSha: string;
  testBranch: string | null;
  testBranchSha: string | null;
  /** JSON array of `{entryId, number, headSha}`. */
  prs: string;
  /** JSON array of entry ids. */
  unit: string;
  /** JSON array of strings. */
  requiredStatuses: string;
  requiredStatusesSource: string | null;
  /** JSON array of `{name, conclusion, url}`. */
  checks: string;
  startedAt: number;
  finishedAt: number | null;
  /** JSON of `{fromRunId, checks}` for a localization run (migration 0029); else null. */
  failFirst: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A queue's inbox: requests waiting for its driver, kept with the answer once applied. */
export interface MqCommandsTable {
  id: Generated<number>;
  queueId: string;
  /** JSON of the command. */
  payload: string;
  createdAt: number;
  appliedAt: number | null;
  /** JSON of `CommandResult`, once applied. */
  result: string | null;
}

/** A pull request of a repository on the local git host. */
export interface LocalPullRequestsTable {
  repositoryId: string;
  number: number;
  headBranch: string;
  baseBranch: string;
  title: string;
  author: string;
  /** `""` when it has none. */
  description: string;
  state: string;
  mergingSha: string | null;
  mergedSha: string | null;
  createdAt: number;
  closedAt: number | null;
}

/** A run of the built-in CI runner. */
export interface CiRunsTable {
  queueId: string;
  runId: string;
  /** JSON of the driver's `CiRunRequest`. */
  request: string;
  status: string;
  /** JSON array of `CiCheckRecord`. */
  checks: string;
  /** JSON of `{reason, message}` when the run could not start. */
  error: string | null;
  flakyOnly: DbBool;
  createdAt: number;
  finishedAt: number | null;
  /** The runner process working on it, while `leaseUntil` lasts. */
  owner: string | null;
  leaseUntil: number;
}

/** A GitHub App installation (migration 0015). */
export interface GithubInstallationsTable {
  id: number;
  accountId: number;
  accountLogin: string;
  accountType: string;
  repositorySelection: string;
  organizationId: string | null;
  linkedAt: number | null;
  suspendedAt: number | null;
  deletedAt: number | null;
  syncedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** A repository an installation grants, by GitHub's repository id. */
export interface GithubRepositoriesTable {
  githubId: number;
  installationId: number;
  owner: string;
  name: string;
  organizationId: string | null;
  repositoryId: string | null;
  removedAt: number | null;
  updatedAt: number;
}

/** A worker's position in `mq_transitions`, under a lease (migration 0023). */
export interface PresenceCursorsTable {
  name: string;
  lastId: number;
  leaseOwner: string | null;
  leaseUntil: number | null;
  updatedAt: number;
}

/** What a git host's provider last showed on a pull request for a queue (0023, 0037). */
export interface PrPresenceTable {
  queueId: string;
  prNumber: number;
  commentId: number | null;
  checkRunId: number | null;
  checkSha: string | null;
  stateLabel: string | null;
  presented: string | null;
  updatedAt: number;
}

/** The test-results comment on a GitHub pull request (migration 0032). */
export interface GithubPrTestReportsTable {
  repositoryId: string;
  prNumber: number;
  commentId: number | null;
  /** The commit whose results the comment shows. */
  headSha: string | null;
  /** A digest of the comment's body as last written. */
  presented: string | null;
  /** A creation whose outcome is unknown: the comment is looked for before it is made again. */
  unsure: ColumnType<boolean | number, number | undefined, number>;
  updatedAt: number;
}

/** The inbox of webhook deliveries. */
export interface WebhookDeliveriesTable {
  key: Generated<number>;
  source: string;
  deliveryId: string;
  event: string;
  action: string | null;
  installationId: number | null;
  receivedAt: number;
  state: string;
  attempts: number;
  leaseUntil: number | null;
  leaseOwner: string | null;
  nextAttemptAt: number;
  error: string | null;
  processedAt: number | null;
}

/** A webhook delivery's body until it is handled (migration 0025). */
export interface WebhookPayloadsTable {
  deliveryKey: number;
  /** The body as received: JSON text. */
  payload: string;
}

/** A CI run a git host's provider watches (0022, named `watched_ci_runs` by 0037). */
export interface WatchedCiRunsTable {
  queueId: string;
  runId: string;
  /** The tested commit. */
  sha: string;
  /** JSON of the driver's `CiRunRequest`. */
  request: string;
  /** `watching`, `passed`, `failed`, `error` or `cancelled`. */
  status: string;
  /** JSON of the resolved required checks, once resolved. */
  required: string | null;
  /** JSON of the `CiRunResult` emitted. */
  result: string | null;
  /** The draft pull request opened for the test branch, when the queue asks for one. */
  testPrNumber: number | null;
  createdAt: number;
  finishedAt: number | null;
}

/** An organization's outbound webhook endpoint (migration 0031). */
export interface OutboundEndpointsTable {
  id: string;
  organizationId: string;
  /** `webhook`, `slack`, `slack_bot` or `teams` (migration 0033). */
  kind: string;
  /** Empty for `slack_bot`. */
  url: string;
  /** `webhook`: `whsec_` + base64 of the key's bytes; `slack_bot`: the bot token; else empty. */
  secret: string;
  /** `slack_bot`: the channel (migration 0033). */
  channel: string | null;
  /** JSON array of event types; empty: all. */
  eventTypes: string;
  /** JSON array of repository ids; empty: all. */
  repositoryIds: string;
  /** JSON array of code owners; empty: every test (migration 0033). */
  codeOwners: string;
  description: string;
  enabled: DbBool;
  disabledReason: string | null;
  disabledAt: number | null;
  /** The first failed attempt since the last success; null while deliveries succeed. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

/** An organization's ticket connections (migration 0034). */
export interface TicketConnectionsTable {
  id: string;
  organizationId: string;
  /** `jira_cloud`, `jira_dc`, `linear`, `github`. */
  kind: string;
  name: string;
  baseUrl: string | null;
  target: string | null;
  issueType: string | null;
  /** JSON array of labels. */
  labels: string;
  email: string | null;
  credential: string | null;
  lastError: string | null;
  lastErrorAt: number | null;
  lastSuccessAt: number | null;
  failures: ColumnType<number, number | undefined, number>;
  pausedUntil: number | null;
  createdAt: number;
  updatedAt: number;
}

/** Organizations' connections to the configured GitLab instance (0035). */
export interface GitlabConnectionsTable {
  organizationId: string;
  hookKey: string;
  instanceUrl: string;
  token: string;
  userId: number;
  username: string;
  /** JSON array of scopes. */
  scopes: string;
  expiresAt: number | null;
  webhookSecret: string;
  createdAt: number;
  updatedAt: number;
  /** `token` or `oauth` (0036). */
  method: Generated<string>;
  refreshToken: string | null;
  redirectUri: string | null;
  issuedAt: number | null;
  refreshLeaseUntil: number | null;
  problem: string | null;
}

/** OAuth authorizations under way, by a hash of their `state` (0036). */
export interface GitlabOauthStatesTable {
  stateHash: string;
  organizationId: string;
  codeVerifier: string;
  redirectUri: string;
  expiresAt: number;
  createdAt: number;
}

/** Tickets created through a connection, per test, with their state as last read (0034). */
export interface TestTicketsTable {
  testKey: number;
  connectionId: string | null;
  url: string;
  key: string;
  externalId: string;
  stateName: string | null;
  stateOpen: ColumnType<boolean | number | null, number | null, number | null>;
  stateCheckedAt: number | null;
  createdAt: number;
}

/** Creates under way, one per test at most (0034). */
export interface TicketIntentsTable {
  testKey: number;
  connectionId: string;
  marker: string;
  previousTicket: string | null;
  /** `manual` or `rule`. */
  source: string;
  actor: string;
  attempts: number;
  leaseUntil: number;
  lastError: string | null;
  createdAt: number;
}

/** The outbox: one event per type and change (migration 0031). */
export interface OutboundEventsTable {
  seq: Generated<number>;
  /** `msg_…`: the `webhook-id`. */
  id: string;
  organizationId: string;
  repositoryId: string | null;
  type: string;
  /** What delivery order is kept per (endpoint, subject). */
  subject: string;
  /** JSON: what the change knew (the payload is built from it). */
  facts: string;
  /** JSON text of the body sent; null until prepared. */
  payload: string | null;
  createdAt: number;
  preparedAt: number | null;
}

/** An event to one endpoint (migration 0031). */
export interface OutboundDeliveriesTable {
  id: string;
  eventSeq: number;
  endpointId: string;
  subject: string;
  /** `pending`, `succeeded` or `failed`. */
  state: string;
  attempts: number;
  nextAttemptAt: number;
  leaseOwner: string | null;
  leaseUntil: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One attempt of a delivery (migration 0031). */
export interface OutboundAttemptsTable {
  id: Generated<number>;
  deliveryId: string;
  at: number;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The response body's first kilobyte. */
  response: string | null;
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
  mqRuntime: MqRuntimeTable;
  mqEntries: MqEntriesTable;
  mqTransitions: MqTransitionsTable;
  mqRuns: MqRunsTable;
  mqCommands: MqCommandsTable;
  localPullRequests: LocalPullRequestsTable;
  ciRuns: CiRunsTable;
  webSessions: WebSessionsTable;
  githubInstallations: GithubInstallationsTable;
  githubRepositories: GithubRepositoriesTable;
  webhookDeliveries: WebhookDeliveriesTable;
  webhookPayloads: WebhookPayloadsTable;
  presenceCursors: PresenceCursorsTable;
  prPresence: PrPresenceTable;
  githubPrTestReports: GithubPrTestReportsTable;
  watchedCiRuns: WatchedCiRunsTable;
  outboundEndpoints: OutboundEndpointsTable;
  ticketConnections: TicketConnectionsTable;
  testTickets: TestTicketsTable;
  ticketIntents: TicketIntentsTable;
  gitlabConnections: GitlabConnectionsTable;
  gitlabOauthStates: GitlabOauthStatesTable;
  outboundEvents: OutboundEventsTable;
  outboundDeliveries: OutboundDeliveriesTable;
  outboundAttempts: OutboundAttemptsTable;
}
