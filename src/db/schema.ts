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

export interface Database {
  organizations: OrganizationsTable;
  apiTokens: ApiTokensTable;
  repositories: RepositoriesTable;
  mergeQueues: MergeQueuesTable;
  serverSecrets: ServerSecretsTable;
}
