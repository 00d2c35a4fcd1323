/**
 * What test health needs from storage, as narrow interfaces (the stores in src/db/stores
 * implement them; the composition root hands them in). Services take `Pick<…>`s of these, so
 * that each names exactly the operations it uses.
 */
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { QuarantineOverride, QuarantineSettings } from "./quarantine.js";
import type { RepositoryTestSettings } from "./settings.js";
import type { StatusChange } from "./trends.js";
import type {
  AggregatedUpload,
  ClaimedUpload,
  ClassificationCandidate,
  ClassificationUpdate,
  CommitFailures,
  FailingEntry,
  HistoryRecord,
  IngestTransaction,
  LinkedTicketState,
  ListedPage,
  NewTestCase,
  OverrideChange,
  QuarantinedEntry,
  RunRecord,
  RunRow,
  StoredRun,
  StoredTestSettings,
  StoreTransaction,
  TestCaseRow,
  TestFigures,
  TestStanding,
  TicketChange,
  UnhealthyEntry,
  UploadFailureDetails,
  UploadOutcome,
  UploadRecord,
} from "./records.js";

/** Repositories of organizations (looked up case-insensitively by host/owner/name). */
export interface RepositoryRecords {
  find(organizationId: string, ref: RepoRef): Promise<Repository | undefined>;
  findById(id: string): Promise<Repository | undefined>;
  ensure(organizationId: string, ref: RepoRef, now: number): Promise<Repository>;
  publicId(repositoryId: string): Promise<string | null>;
  setPublicId(repositoryId: string, candidate: string, replace: boolean): Promise<string>;
  findByPublicId(publicId: string): Promise<Repository | undefined>;
}

/** The server's own secrets (signing keys), created once and shared by every process. */
export interface ServerSecretRecords {
  getOrCreate(name: string, now: number): Promise<Buffer>;
}

/** A repository's test-health settings (the defaults until the first write). */
export interface TestSettingsRecords {
  get(repositoryId: string): Promise<StoredTestSettings>;
  putCodeowners(repositoryId: string, text: string, at: number): Promise<void>;
}

/** A repository of an organization with its quarantine settings (null: never written, defaults). */
export interface RepositoryWithQuarantine {
  repository: Repository;
  quarantine: QuarantineSettings | null;
}

/** How many tests of a repository have a status now (`*`: all of its tests). */
export interface StatusCountRow {
  repositoryId: string;
  status: string;
  count: number;
}

/** How many tests of a repository carry a quarantine override, and how many of them are flaky. */
export interface OverrideCountRow {
  repositoryId: string;
  override: QuarantineOverride;
  count: number;
  flaky: number;
}

/** The organization-wide figures of the dashboard's home, read from the aggregates. */
export interface TestOverviewRecords {
  /** The organization's repositories, by host/owner/name, with their quarantine settings. */
  repositories(organizationId: string): Promise<RepositoryWithQuarantine[]>;
  /** Tests per repository (status `*`), and flaky and broken tests per repository. */
  statusCounts(repositoryIds: readonly string[]): Promise<StatusCountRow[]>;
  /** Tests with an ALWAYS or NEVER quarantine override per repository and override. */
  overrideCounts(repositoryIds: readonly string[]): Promise<OverrideCountRow[]>;
  /** The classifier's status changes since `since`, each with the status before it. */
  statusChanges(repositoryIds: readonly string[], since: number): Promise<StatusChange[]>;
}

/** Tests as rows, and the figures (rates, PRs impacted, common failures) shown with them. */
export interface TestViewRecords {
  rowsByKey(keys: readonly number[]): Promise<Map<number, TestCaseRow>>;
  findById(repositoryId: string, id: string): Promise<TestCaseRow | undefined>;
  figures(keys: readonly number[], now: number): Promise<Map<number, TestFigures>>;
}

/** The three Flaky Tests lists, as pages of keys in list order. */
export interface TestListRecords {
  failing(
    repositoryId: string,
    window: { start: number; end: number },
    offset: number,
    limit: number,
  ): Promise<ListedPage<FailingEntry>>;
  unhealthy(
    repositoryId: string,
    status: "flaky" | "broken",
    now: number,
    offset: number,
    limit: number,
  ): Promise<ListedPage<UnhealthyEntry>>;
  quarantined(
    repositoryId: string,
    settings: QuarantineSettings,
    offset: number,
    limit: number,
  ): Promise<ListedPage<QuarantinedEntry>>;
}

/** Tickets created through a ticket connection, as the test's page shows them. */
export interface LinkedTicketRecords {
  /** The created ticket that is the test's link now (not one a person linked by hand). */
  createdTicket(testKey: number): Promise<LinkedTicketState | undefined>;
}

/** A test's run and status history, and the writes on one test or a repository's settings. */
export interface TestDetailRecords {
  runsPage(
    testKey: number,
    offset: number,
    limit: number,
  ): Promise<{ total: number; runs: RunRecord[] }>;
  statusHistory(testKey: number, limit: number): Promise<HistoryRecord[]>;
  /** Sets the override and writes its history row (with `description`) in one transaction. */
  setOverride(
    testKey: number,
    change: OverrideChange,
    description: string,
  ): Promise<TestCaseRow | undefined>;
  /** Links or unlinks the ticket and writes its history row (`describe(previous)`) at once. */
  setTicket(
    testKey: number,
    change: TicketChange,
    describe: (previous: string | null) => string,
  ): Promise<TestCaseRow | undefined>;
  modifySettings(
    repositoryId: string,
    now: number,
    change: (current: StoredTestSettings) => RepositoryTestSettings,
  ): Promise<StoredTestSettings>;
  findTestByRepositoryName(
    organizationId: string,
    testId: string,
    repo: { owner: string; name: string; host?: string | undefined },
  ): Promise<{ repository: Repository; test: TestCaseRow } | undefined>;
}

/** Which tests are quarantined (getQuarantineConfig, the built-in runner's test results). */
export interface TestCaseRecords {
  quarantinedIds(repositoryId: string, settings: QuarantineSettings): Promise<string[]>;
  flakyOrQuarantined(
    repositoryId: string,
    ids: readonly string[],
    settings: QuarantineSettings,
  ): Promise<Set<string>>;
  /** Where these tests of the repository stand now (unknown ids are left out). */
  standing(repositoryId: string, ids: readonly string[]): Promise<TestStanding[]>;
}

/** What `UploadRecords.create` records: a new upload, awaiting its bundle. */
export interface NewUpload {
  id: string;
  organizationId: string;
  repositoryId: string;
  clientVersion: string | null;
  createdAt: number;
  urlExpiresAt: number;
}

/** Uploads and their processing state: the work queue of the ingestion worker. */
export interface UploadRecords {
  create(values: NewUpload): Promise<void>;
  find(id: string, organizationId?: string): Promise<UploadRecord | undefined>;
  markReceived(
    id: string,
    values: { bundlePath: string; bundleBytes: number; contentHash: string; receivedAt: number },
  ): Promise<UploadRecord | undefined>;
  claimBatch(now: number, leaseUntil: number, limit: number): Promise<UploadRecord[]>;
  extendLease(upload: ClaimedUpload, leaseUntil: number): Promise<boolean>;
  findDuplicate(upload: UploadRecord): Promise<string | undefined>;
  markProcessed(
    trx: StoreTransaction,
    upload: ClaimedUpload,
    outcome: UploadOutcome,
    now: number,
    duplicateOf?: string | null,
  ): Promise<void>;
  markFailed(
    key: number,
    reason: string,
    now: number,
    details?: UploadFailureDetails,
  ): Promise<void>;
  sameCommit(
    trx: StoreTransaction,
    repositoryId: string,
    commitShas: readonly string[],
  ): Promise<{ key: number; commitSha: string; uploadedAt: number }[]>;
  /**
   * A tested commit's failed tests (uploads naming it, or its test branch since `since` when one
   * is given) and the uploads still to process since `since` (hosted CI runs).
   */
  commitFailures(
    repositoryId: string,
    commitSha: string,
    branch: string | undefined,
    since: number,
    limit: number,
  ): Promise<CommitFailures>;
  list(
    repositoryId: string,
    offset: number,
    limit: number,
  ): Promise<{ total: number; uploads: UploadRecord[] }>;
  forgetBundle(keys: number | readonly number[]): Promise<void>;
  /** Retention: bundles of uploads done before `before`. */
  oldBundles(before: number, limit?: number): Promise<{ key: number; bundlePath: string }[]>;
  deleteExpiredUnused(now: number): Promise<number>;
}

/** The write side of ingestion: tests, runs, aggregates and classifications. */
export interface IngestRecords {
  ensureTestCases(
    repositoryId: string,
    cases: readonly NewTestCase[],
    now: number,
  ): Promise<Map<string, number>>;
  insertRunsNow(rows: readonly RunRow[]): Promise<void>;
  deleteRuns(uploadKey: number, fileIndex?: number): Promise<void>;
  transaction<T>(repositoryId: string, work: (tx: IngestTransaction) => Promise<T>): Promise<T>;
  aggregateUploads(
    trx: StoreTransaction,
    repositoryId: string,
    uploads: readonly AggregatedUpload[],
  ): Promise<void>;
  /** Computes the 7-day figures of the uploads' tests as of `now`, after aggregating. */
  refreshFigures(trx: StoreTransaction, uploadKeys: readonly number[], now: number): Promise<void>;
  candidatesOfUploads(
    trx: StoreTransaction,
    uploadKeys: readonly number[],
    failedSince: number,
  ): Promise<ClassificationCandidate[]>;
  activeCandidates(
    trx: StoreTransaction,
    repositoryId: string,
    failedSince?: number,
  ): Promise<ClassificationCandidate[]>;
  repositoriesWithActiveMonitors(): Promise<string[]>;
  runsForClassification(
    trx: StoreTransaction,
    testKeys: readonly number[],
    since: number,
    commitUploads: readonly number[],
    currentUploads: readonly number[],
  ): Promise<Map<number, StoredRun[]>>;
  applyClassifications(
    trx: StoreTransaction,
    updates: readonly ClassificationUpdate[],
  ): Promise<void>;
  /** Retention: runs, then aggregates, older than `before`. */
  pruneRuns(before: number, batch?: number): Promise<number>;
  pruneAggregates(before: number): Promise<void>;
}

/** A test as the repository page's table lists it (the columns it filters and sorts by). */
export interface TableTestRow {
  key: number;
  id: string;
  name: string;
  classname: string | null;
  parent: string | null;
  file: string | null;
  variant: string;
  status: string;
  quarantineOverride: string;
  lastRunAt: number | null;
  lastFailureAt: number | null;
}

/** A row of the tests table with its stored 7-day figures. */
export interface TableFiguresRow extends TableTestRow {
  /** Counted failures / counted runs over the last 7 days (0 without runs or failures). */
  failureRate7d: number;
  /** Counted runs of the last 7 days when the test failed in them, else 0. */
  runs7d: number;
  prsImpacted7d: number;
}

/** The tests table's orders: the sort's figure descending, then name and key ascending. */
export type TableOrder = "failure_rate" | "prs_impacted" | "last_failure";

/**
 * The repository page's tests table read by index over each test's stored 7-day figures: a page
 * costs its rows, not the repository's tests.
 */
export interface RepositoryTableRecords {
  /**
   * Computes again the figures of the repository's tests that are not those of `now` (a counted
   * hour, day or pull request left the window since they were computed, or never computed).
   */
  refreshFigures(repositoryId: string, now: number): Promise<void>;
  /** `limit` rows from `offset` in `order`, of one status (`quarantined`: by the settings) or all. */
  tablePage(
    repositoryId: string,
    status: "flaky" | "broken" | "quarantined" | "healthy" | undefined,
    quarantine: QuarantineSettings,
    order: TableOrder,
    offset: number,
    limit: number,
  ): Promise<TableFiguresRow[]>;
  /** How many tests of that status (or all) the repository has. */
  tableCount(
    repositoryId: string,
    status: "flaky" | "broken" | "quarantined" | "healthy" | undefined,
    quarantine: QuarantineSettings,
  ): Promise<number>;
  /** The distinct files of the repository's tests (for their code owners). */
  testFiles(repositoryId: string): Promise<string[]>;
}

/** Counted passes and failures of a test over a window. */
export interface RunCounts {
  passed: number;
  failed: number;
}

/** A day's counted passes and failures (`day`: start of the UTC day, epoch ms). */
export interface DailyRunCounts extends RunCounts {
  day: number;
}

/**
 * The repository page: its tests table and trends, each a fixed number of statements whatever the
 * number of tests (no statement per test).
 */
export interface RepositoryHealthRecords {
  /** The repository's tests, of one status (`quarantined`: by the settings) or all. */
  tests(
    repositoryId: string,
    status: "flaky" | "broken" | "quarantined" | "healthy" | undefined,
    quarantine: QuarantineSettings,
  ): Promise<TableTestRow[]>;
  /**
   * Passes and failures since `since` (whole hours) of the tests that failed since then, by test
   * key; tests absent failed nothing.
   */
  recentCounts(repositoryId: string, since: number): Promise<Map<number, RunCounts>>;
  /** Pull requests with a failure of the test since `since`, by test key. */
  prsImpacted(repositoryId: string, since: number): Promise<Map<number, number>>;
  /** Distinct pull requests that a flaky test failed on since `since`. */
  prsImpactedByFlaky(repositoryId: string, since: number): Promise<number>;
  /** Counted failures of the repository's tests per UTC day since `fromDay`. */
  dailyFailures(repositoryId: string, fromDay: number): Promise<Map<number, number>>;
  /** A test's counted passes and failures per UTC day since `fromDay`. */
  testDaily(testKey: number, fromDay: number): Promise<DailyRunCounts[]>;
}
