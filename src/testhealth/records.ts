/**
 * Test health's records: what its stores keep and give back, named in the domain's words. The
 * storage layer (src/db/stores) implements the ports of ./ports.ts with these shapes; nothing here
 * knows how they are stored.
 */
import type { HealthStatus } from "./monitors.js";
import type { QuarantineOverride } from "./quarantine.js";
import type { RepositoryTestSettings } from "./settings.js";

// ---- tests ------------------------------------------------------------------------------------

/** A test as stored: its identity, its status and monitors, its override and ticket. */
export interface TestCaseRow {
  /** The store's own key of the test (what runs and aggregates refer to). */
  key: number;
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
  monitorsActive: boolean | number;
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

export interface FailureGroupRow {
  summary: string;
  occurrenceCount: number;
  lastOccurrence: number;
}

/** What the API shows of a test beyond its row: rates, PRs impacted, common failures. */
export interface TestFigures {
  failureRate7d: number;
  failureRate24h: number;
  /** Runs counted in the rates (passed + failed, excluded uploads aside). */
  runs7d: number;
  runs24h: number;
  prsImpacted7d: number;
  mostCommonFailures: FailureGroupRow[];
}

/** One run of a test as its run history shows it. */
export interface RunRecord {
  at: number;
  status: string;
  attempt: string;
  commitSha: string;
  branch: string;
  prNumber: number | null;
  durationMs: number | null;
  uploadId: string;
  failureSummary: string | null;
  failureText: string | null;
  /** The upload was excluded by infrastructure-failure protection: its runs count for nothing. */
  excluded: boolean;
}

export interface HistoryRecord {
  at: number;
  status: string;
  reason: string;
  kind: string;
  actor: string | null;
}

export interface OverrideChange {
  override: QuarantineOverride;
  actor: string;
  reason: string | null;
  at: number;
}

/**
 * A linked ticket that was created through a ticket connection: its key and its state as last
 * read back from the provider (null until read).
 */
export interface LinkedTicketState {
  url: string;
  key: string;
  stateName: string | null;
  stateOpen: boolean | null;
  stateCheckedAt: number | null;
}

export interface TicketChange {
  /** The linked id or URL; null unlinks. */
  ticket: string | null;
  actor: string;
  at: number;
}

// ---- lists ------------------------------------------------------------------------------------

/** One page of a list: the rows' keys in list order, with the figure each list sorts by. */
export interface ListedPage<T> {
  total: number;
  rows: T[];
}

export interface FailingEntry {
  key: number;
  /** Failed runs in the window (every failed attempt, infrastructure-failure uploads included). */
  failures: number;
}

export interface UnhealthyEntry {
  key: number;
  /** Distinct PRs with a counted failure in the last 7 days (`test_pr_failures`). */
  prsImpacted7d: number;
}

export interface QuarantinedEntry {
  key: number;
  /** `override_at` for an ALWAYS_QUARANTINE override, else `status_changed_at`. */
  quarantinedAt: number;
}

// ---- settings ---------------------------------------------------------------------------------

export interface StoredTestSettings extends RepositoryTestSettings {
  codeowners: string | null;
  codeownersUpdatedAt: number | null;
  updatedAt: number | null;
}

// ---- uploads ----------------------------------------------------------------------------------

/**
 * `awaiting_bundle`: created, its URL not used yet. `pending`: the bundle is stored, waiting for a
 * worker. `processing`: a worker holds its lease. `processed` / `failed`: done.
 */
export type UploadState = "awaiting_bundle" | "pending" | "processing" | "processed" | "failed";

export interface FileError {
  file: string;
  reason: string;
}

export interface UploadRecord {
  key: number;
  id: string;
  organizationId: string;
  repositoryId: string;
  state: UploadState;
  reason: string | null;
  clientVersion: string | null;
  createdAt: number;
  urlExpiresAt: number;
  receivedAt: number | null;
  bundlePath: string | null;
  bundleBytes: number | null;
  contentHash: string | null;
  attempts: number;
  processedAt: number | null;
  duplicateOf: string | null;
  commitSha: string | null;
  branch: string | null;
  prNumber: number | null;
  jobName: string | null;
  jobUrl: string | null;
  variant: string | null;
  uploadedAt: number | null;
  filesTotal: number;
  filesFailed: number;
  fileErrors: FileError[];
  testsPassed: number;
  testsFailed: number;
  testsSkipped: number;
  infrastructureFailure: boolean;
}

/** What processing found, written when the upload is done. */
export interface UploadOutcome {
  commitSha: string;
  branch: string;
  prNumber: number | null;
  jobName: string | null;
  jobUrl: string | null;
  variant: string;
  uploadedAt: number;
  filesTotal: number;
  fileErrors: FileError[];
  testsPassed: number;
  testsFailed: number;
  testsSkipped: number;
  infrastructureFailure: boolean;
}

/**
 * What an upload says about itself (meta.json): kept also when its processing fails, so that a
 * failed upload still shows the commit, branch and job it came from.
 */
export type UploadDescription = Pick<
  UploadOutcome,
  | "commitSha"
  | "branch"
  | "prNumber"
  | "jobName"
  | "jobUrl"
  | "variant"
  | "uploadedAt"
  | "filesTotal"
>;

/** What is known of an upload whose processing failed, besides the reason. */
export interface UploadFailureDetails {
  /** The report files that could not be read. */
  fileErrors?: FileError[];
  /** Absent when the bundle's meta.json was never read. */
  description?: UploadDescription;
}

/** What identifies one claim of an upload: the upload and the attempt the claim counted. */
export type ClaimedUpload = Pick<UploadRecord, "key" | "attempts">;

/** A commit's failed tests, from its processed uploads (a hosted CI's failed run). */
export interface CommitFailures {
  /** The repository's uploads since the time asked about that are not processed yet. */
  unfinished: number;
  /** Processed uploads of the commit. */
  uploads: number;
  /**
   * Tests whose final attempt failed in them, by id (at most the limit asked for, plus one), as
   * test health knows them.
   */
  failedTests: CommitFailedTest[];
}

/** A test that failed at a commit, with the first line of one of its failures there. */
export interface CommitFailedTest extends FailedTestCase {
  /** A failure's summary (its message's first line); null when the report gave none. */
  summary: string | null;
}

/** What test health says of a test now: its status, its quarantine override, when first seen. */
export interface TestStanding {
  id: string;
  status: HealthStatus;
  quarantineOverride: QuarantineOverride;
  firstSeenAt: number;
}

/** A test case that failed, as test health stores it (its identity's parts). */
export interface FailedTestCase {
  id: string;
  name: string;
  /** `""` when the report gives none. */
  classname: string;
  /** The test suite's name (`""` when none). */
  parent: string;
  /** Relative to the repository's root; null when the report gives none. */
  file: string | null;
}

/** The upload's lease ran out and another worker claimed it: this worker's work is void. */
export class UploadTakenOver extends Error {
  constructor(readonly uploadKey: number) {
    super(`upload ${String(uploadKey)} was taken over by another worker (its lease ran out)`);
    this.name = "UploadTakenOver";
  }
}

// ---- ingestion --------------------------------------------------------------------------------

export interface NewTestCase {
  id: string;
  name: string;
  classname: string | null;
  parent: string | null;
  file: string | null;
  variant: string;
}

export interface RunRow {
  testKey: number;
  uploadKey: number;
  fileIndex: number;
  at: number;
  status: "passed" | "failed" | "skipped";
  attempt: "final" | "flaky" | "rerun";
  durationMs: number | null;
  failureSignature: string | null;
  failureSummary: string | null;
  failureText: string | null;
}

/** A test the classifier must look at, with what it needs from the test's row. */
export interface ClassificationCandidate {
  key: number;
  repositoryId: string;
  status: string;
  statusReason: string;
  statusChangedAt: number;
  monitorStates: string;
}

export interface StoredRun {
  at: number;
  status: "passed" | "failed" | "skipped";
  commit: string;
  branch: string;
  prNumber: number | null;
  excluded: boolean;
  /** Uploaded by Mainline's own CI runner (the queue's runs; the classifier's `queueRun`). */
  queueRun: boolean;
}

export interface ClassificationUpdate {
  key: number;
  status: string;
  reason: string;
  /** Set when the status changed (a history row is written). */
  changedAt: number | null;
  monitorStates: string;
  monitorsActive: boolean;
}

export interface AggregatedUpload {
  key: number;
  repositoryId: string;
  prNumber: number | null;
  excluded: boolean;
}

/**
 * A transaction of the store, opaque to the domain: it is only handed back to the store's
 * methods, so that everything written through it lands together or not at all.
 */
export type StoreTransaction = object;

/** An upload's final transaction: everything written through it lands together or not at all. */
export interface IngestTransaction<Trx extends StoreTransaction = StoreTransaction> {
  trx: Trx;
  insertRuns(rows: readonly RunRow[]): Promise<void>;
}
