/**
 * Processing of one stored bundle (ADR 0007): stream it, parse every JUnit report, write the
 * runs, fold them into the aggregates and re-classify the tests whose status could change, all
 * of it idempotent: a retry first removes what an earlier attempt wrote, and the final
 * transaction that counts the runs also marks the upload processed.
 */
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { setImmediate } from "node:timers/promises";
import type { IngestRecords, TestSettingsRecords, UploadRecords } from "../ports.js";
import type {
  FileError,
  NewTestCase,
  RunRow,
  UploadDescription,
  UploadFailureDetails,
  UploadOutcome,
  UploadRecord,
} from "../records.js";
import type { Clock } from "../../lib/clock.js";
import {
  BundleError,
  decodeTestReport,
  readBundle,
  testCasesOfReport,
  TestReportError,
  type BundleMeta,
} from "../bundle/index.js";
import { windowLookbackMs } from "../classifier.js";
import { failureSignature, failureSummary } from "../failure-signatures.js";
import { testId } from "../identity.js";
import { repoRelativeFile } from "../report-paths.js";
import {
  JunitParseError,
  TEXT_LIMIT,
  mergeRepeatedTestcases,
  parseJunit,
  type ParsedTestCase,
} from "../junit/index.js";
import { fitText, withCuts } from "../junit/long-text.js";
import { isInfrastructureFailure, runTime } from "../runs.js";
import type { BundleStorage } from "./bundle-storage.js";
import { classifyCandidates } from "./classify-tests.js";
import { DAY_MS as DAY } from "../../lib/time.js";
import { type RepoRef, repoFullName } from "../../organizations/repositories.js";

/** Parsed test cases are merged (repeated records = attempts) and keyed in groups this large. */
const CASE_BATCH = 2_000;
/** Runs are written ahead of the final transaction once this many are waiting. */
const RUN_FLUSH = 10_000;
/** Runs of a batch written ahead of its final transaction once this many are waiting. */
const BATCH_FLUSH = 40_000;
/**
 * Test keys never change: a bounded cache saves a lookup per test per upload. Bounded while an
 * upload is read too (a report of a million distinct tests must not hold them all).
 */
const KEY_CACHE_LIMIT = 50_000;

export interface ProcessorDependencies {
  uploads: Pick<
    UploadRecords,
    "find" | "findDuplicate" | "markProcessed" | "markFailed" | "sameCommit" | "forgetBundle"
  >;
  ingest: Pick<
    IngestRecords,
    | "ensureTestCases"
    | "insertRunsNow"
    | "deleteRuns"
    | "transaction"
    | "aggregateUploads"
    | "refreshFigures"
    | "candidatesOfUploads"
    | "runsForClassification"
    | "applyClassifications"
  >;
  settings: Pick<TestSettingsRecords, "get" | "putCodeowners">;
  bundles: BundleStorage;
  clock: Clock;
  organizationSlug(organizationId: string): Promise<string>;
  repository(repositoryId: string): Promise<RepoRef>;
}

export type ProcessResult = "processed" | "failed" | "duplicate";

interface FileCounts {
  passed: number;
  failed: number;
  skipped: number;
  attemptsPassed: number;
  attemptsFailed: number;
}

const zeroCounts = (): FileCounts => ({
  passed: 0,
  failed: 0,
  skipped: 0,
  attemptsPassed: 0,
  attemptsFailed: 0,
});

export class UploadProcessor {
  private readonly keyCache = new Map<string, number>();
  private readonly idCache = new Map<string, string>();

  constructor(private readonly deps: ProcessorDependencies) {}

  async process(upload: UploadRecord): Promise<ProcessResult> {
    const [result] = await this.processBatch([upload]);
    if (result === undefined) throw new Error("no result for the upload");
    return result;
  }

  /**
   * Processes uploads of one repository together: each bundle is read on its own (a bad one
   * fails alone), then one final transaction counts all the good ones and classifies their
   * tests once. Results are in the order of `batch`.
   */
  async processBatch(batch: readonly UploadRecord[]): Promise<ProcessResult[]> {
    const repositoryId = batch[0]?.repositoryId;
    if (batch.some((u) => u.repositoryId !== repositoryId)) {
      throw new Error("a batch holds the uploads of one repository");
    }
    const results: ProcessResult[] = [];
    const ready: BundleRun[] = [];
    for (const upload of batch) {
      // Let waiting requests in (uploads arriving meanwhile join the next batch): reading is
      // synchronous work on the only JavaScript thread.
      await setImmediate();
      const outcome = await this.read(upload);
      if (outcome instanceof BundleRun) {
        ready.push(outcome);
        results.push("processed");
        // Runs of the batch wait in memory for the final transaction, up to a bound.
        if (ready.reduce((sum, r) => sum + r.pendingCount, 0) >= BATCH_FLUSH) {
          await flushAll(this.deps, ready);
        }
      } else {
        results.push(outcome);
      }
    }
    if (ready.length > 0) {
      await finishBatch(this.deps, ready);
      for (const run of ready) await this.deps.bundles.remove(run.bundlePath);
      await this.deps.uploads.forgetBundle(ready.map((r) => r.upload.key));
    }
    return results;
  }

  /** Reads one upload's bundle: a run ready for the final transaction, or how it ended. */
  private async read(upload: UploadRecord): Promise<BundleRun | "failed" | "duplicate"> {
    const { uploads, ingest, bundles, clock } = this.deps;
    if (!upload.bundlePath) {
      await uploads.markFailed(upload.key, "The upload has no stored bundle.", clock.now());
      return "failed";
    }
    const duplicateOf = await uploads.findDuplicate(upload);
    if (duplicateOf !== undefined) {
      const original = await uploads.find(duplicateOf);
      await ingest.transaction(upload.repositoryId, async ({ trx }) => {
        await uploads.markProcessed(trx, upload, outcomeOf(original), clock.now(), duplicateOf);
      });
      await bundles.remove(upload.bundlePath);
      await uploads.forgetBundle(upload.key);
      return "duplicate";
    }
    // A previous attempt may have written runs before it stopped.
    if (upload.attempts > 1) await ingest.deleteRuns(upload.key);
    const run = new BundleRun(this.deps, upload, upload.bundlePath, this.keyCache, this.idCache);
    try {
      await run.read(bundles.open(upload.bundlePath));
    } catch (error) {
      if (!(error instanceof BundleError)) throw error;
      await ingest.deleteRuns(upload.key);
      await uploads.markFailed(upload.key, error.message, clock.now(), run.failureDetails());
      return "failed";
    } finally {
      await run.cleanup();
    }
    if (run.filesOk === 0 && run.fileErrors.length > 0) {
      await ingest.deleteRuns(upload.key);
      const first = run.fileErrors[0];
      const reason =
        run.fileErrors.length === 1
          ? `${first?.file ?? "The JUnit report"}: ${first?.reason ?? "unreadable"}`
          : `None of the ${run.fileErrors.length} JUnit reports could be read; the first, ${first?.file ?? ""}: ${first?.reason ?? ""}`;
      await uploads.markFailed(upload.key, reason, clock.now(), run.failureDetails());
      return "failed";
    }
    if (!run.hasContext) {
      await ingest.deleteRuns(upload.key);
      await uploads.markFailed(upload.key, "The bundle has no meta.json.", clock.now());
      return "failed";
    }
    return run;
  }
}

/** The runs the batch's bundles have read so far, in one transaction. */
async function flushAll(deps: ProcessorDependencies, runs: readonly BundleRun[]): Promise<void> {
  await deps.ingest.insertRunsNow(runs.flatMap((run) => run.takeForFlush()));
}

/**
 * The final transaction of a batch: remaining runs, aggregates and outcome of every upload, then
 * one classification of the tests whose status could change.
 */
async function finishBatch(deps: ProcessorDependencies, runs: readonly BundleRun[]): Promise<void> {
  const { uploads, ingest, settings: settingsStore, clock } = deps;
  const repositoryId = runs[0]?.upload.repositoryId;
  if (repositoryId === undefined) return;
  const settings = await settingsStore.get(repositoryId);
  for (const run of runs) {
    if (run.codeowners !== null) {
      await settingsStore.putCodeowners(repositoryId, run.codeowners, run.context.uploadedAt);
    }
  }
  const pending = runs.map((run) => run.takePending());
  await ingest.transaction(repositoryId, async (tx) => {
    const { trx } = tx;
    const now = clock.now();
    // Every bundle's remaining runs in one insert (one statement on PostgreSQL), then outcomes.
    await tx.insertRuns(pending.flat());
    for (const run of runs) await uploads.markProcessed(trx, run.upload, run.outcome(), now);
    await ingest.aggregateUploads(
      trx,
      repositoryId,
      runs.map((run) => ({
        key: run.upload.key,
        repositoryId,
        prNumber: run.context.meta.prNumber,
        excluded: run.excluded,
      })),
    );
    await ingest.refreshFigures(
      trx,
      runs.map((run) => run.upload.key),
      now,
    );
    const counted = runs.filter((run) => !run.excluded);
    if (counted.length === 0) return;
    const window = windowLookbackMs(settings.monitors);
    const commits = [...new Set(counted.map((run) => run.context.meta.commitSha))];
    const sameCommit = await uploads.sameCommit(trx, repositoryId, commits);
    // Run times lie at most a day before their upload: an older failure cannot be on these
    // commits, nor in any window.
    let failedSince = now - window;
    for (const run of counted) {
      failedSince = Math.min(failedSince, run.context.uploadedAt - DAY);
    }
    for (const upload of sameCommit) failedSince = Math.min(failedSince, upload.uploadedAt - DAY);
    const keys = runs.map((run) => run.upload.key);
    const candidates = await ingest.candidatesOfUploads(
      trx,
      counted.map((run) => run.upload.key),
      failedSince,
    );
    if (candidates.length === 0) return;
    const stored = await ingest.runsForClassification(
      trx,
      candidates.map((c) => c.key),
      now - window,
      sameCommit.map((u) => u.key),
      keys,
    );
    const updates = classifyCandidates(candidates, stored, settings.monitors, now);
    await ingest.applyClassifications(trx, updates);
  });
}

function outcomeOf(original: UploadRecord | undefined): UploadOutcome {
  return {
    commitSha: original?.commitSha ?? "",
    branch: original?.branch ?? "",
    prNumber: original?.prNumber ?? null,
    jobName: original?.jobName ?? null,
    jobUrl: original?.jobUrl ?? null,
    variant: original?.variant ?? "",
    uploadedAt: original?.uploadedAt ?? 0,
    filesTotal: original?.filesTotal ?? 0,
    fileErrors: [],
    testsPassed: 0,
    testsFailed: 0,
    testsSkipped: 0,
    infrastructureFailure: original?.infrastructureFailure ?? false,
  };
}

interface Context {
  meta: BundleMeta;
  org: string;
  repoFullName: string;
  variant: string;
  uploadedAt: number;
  branch: string;
}

/** What one report file of a bundle (a JUnit file or a binary test report) contributed. */
interface FileResult {
  counts: FileCounts;
  error: FileError | null;
}

type Spooled =
  | { index: number; name: string; file: string }
  | { index: number; name: string; bytes: Uint8Array };

/**
 * The state of reading one bundle.
 *
 * Precedence (docs/test-health.md): Trunk's uploader writes `internal.bin`, a binary report of
 * every test it was given (or `internal/<n>` when it was handed a binary report, named by
 * meta.json's `internal_bundled_file`), beside the JUnit files it read them from. That report,
 * when present, stands for the bundle: the JUnit files and any other binary report are not
 * counted, whichever comes first in the archive. Without it (or when it holds no test, or
 * cannot be decoded), every JUnit file and every `internal/<n>` counts.
 */
class BundleRun {
  private readonly files = new Map<number, FileResult>();
  /** The bundle's own report was read: nothing else counts. */
  private superseded = false;
  private contextValue: Context | null = null;
  private readonly spooled: Spooled[] = [];
  private pendingRuns: RunRow[] = [];
  private readonly flushedFiles = new Set<number>();
  codeowners: string | null = null;

  get filesOk(): number {
    return [...this.files.values()].filter((f) => f.error === null).length;
  }

  get fileErrors(): FileError[] {
    return [...this.files.values()].flatMap((f) => (f.error ? [f.error] : []));
  }

  private get totals(): FileCounts {
    const totals = zeroCounts();
    for (const { counts } of this.files.values()) {
      for (const key of Object.keys(counts) as (keyof FileCounts)[]) totals[key] += counts[key];
    }
    return totals;
  }

  constructor(
    private readonly deps: ProcessorDependencies,
    readonly upload: UploadRecord,
    readonly bundlePath: string,
    private readonly keyCache: Map<string, number>,
    private readonly idCache: Map<string, string>,
  ) {}

  get hasContext(): boolean {
    return this.contextValue !== null;
  }

  get context(): Context {
    if (!this.contextValue) throw new BundleError("meta.json missing");
    return this.contextValue;
  }

  get pendingCount(): number {
    return this.pendingRuns.length;
  }

  /** Writes the runs read so far ahead of the final transaction (they stay invisible until it). */
  async flush(): Promise<void> {
    await this.deps.ingest.insertRunsNow(this.takeForFlush());
  }

  /** The runs read so far, to be written ahead; their files now have runs in the database. */
  takeForFlush(): RunRow[] {
    const rows = this.takePending();
    for (const row of rows) this.flushedFiles.add(row.fileIndex);
    return rows;
  }

  takePending(): RunRow[] {
    const rows = this.pendingRuns;
    this.pendingRuns = [];
    return rows;
  }

  /** Infrastructure-failure protection: this upload's failures count for no monitor. */
  get excluded(): boolean {
    const totals = this.totals;
    return isInfrastructureFailure({
      passed: totals.attemptsPassed,
      failed: totals.attemptsFailed,
    });
  }

  /** What meta.json said and how many report files were read. */
  private description(context: Context): UploadDescription {
    return {
      commitSha: context.meta.commitSha,
      branch: context.branch,
      prNumber: context.meta.prNumber,
      jobName: context.meta.jobName,
      jobUrl: context.meta.jobUrl,
      variant: context.variant,
      uploadedAt: context.uploadedAt,
      filesTotal: this.files.size,
    };
  }

  /** What a failed upload keeps: its file errors, and its description once meta.json was read. */
  failureDetails(): UploadFailureDetails {
    const context = this.contextValue;
    return {
      fileErrors: this.fileErrors,
      ...(context === null ? {} : { description: this.description(context) }),
    };
  }

  outcome(): UploadOutcome {
    const totals = this.totals;
    return {
      ...this.description(this.context),
      fileErrors: this.fileErrors,
      testsPassed: totals.passed,
      testsFailed: totals.failed,
      testsSkipped: totals.skipped,
      infrastructureFailure: this.excluded,
    };
  }

  async read(source: AsyncIterable<Uint8Array>): Promise<void> {
    let index = 0;
    for await (const entry of readBundle(source)) {
      if (entry.kind === "meta") {
        this.contextValue = await this.loadContext(entry.meta);
        for (const spooled of this.spooled) {
          if ("bytes" in spooled) await this.readReport(spooled.index, spooled.name, spooled.bytes);
          else await this.readFile(spooled.index, spooled.name, createReadStream(spooled.file));
        }
      } else if (entry.kind === "codeowners") {
        this.codeowners = entry.text;
      } else if (entry.kind === "report") {
        const fileIndex = index++;
        if (this.contextValue) await this.readReport(fileIndex, entry.path, entry.bytes);
        else this.spooled.push({ index: fileIndex, name: entry.path, bytes: entry.bytes });
      } else {
        const fileIndex = index++;
        if (this.contextValue) {
          await this.readFile(fileIndex, entry.path, entry.stream);
        } else {
          // Trunk writes meta.json first; anything else is kept on disk until it arrives.
          const file = this.deps.bundles.scratchPath(`${this.upload.id}-${fileIndex}`);
          await mkdir(path.dirname(file), { recursive: true });
          await pipeline(entry.stream, createWriteStream(file));
          this.spooled.push({ index: fileIndex, name: entry.path, file });
        }
      }
    }
  }

  async cleanup(): Promise<void> {
    for (const spooled of this.spooled) {
      if ("file" in spooled) await rm(spooled.file, { force: true });
    }
  }

  private async loadContext(meta: BundleMeta): Promise<Context> {
    const [org, repository] = await Promise.all([
      this.deps.organizationSlug(this.upload.organizationId),
      this.deps.repository(this.upload.repositoryId),
    ]);
    const receivedAt = this.upload.receivedAt ?? this.deps.clock.now();
    // The uploader's clock is trusted for the past (back-filled results), never for the future.
    const uploadedAt =
      meta.uploadTimeMs !== null && meta.uploadTimeMs > 0
        ? Math.min(meta.uploadTimeMs, receivedAt)
        : receivedAt;
    return {
      meta,
      org,
      // Ids hash the repository as the uploader spelled it (docs/contract.md §3), as Trunk does.
      repoFullName: repoFullName(meta.repo.name ? meta.repo : repository),
      variant: meta.variant ?? "",
      uploadedAt,
      branch: meta.branch ?? "",
    };
  }

  /** Trunk's binary report: the bundle's own one replaces every other file's runs. */
  private async readReport(fileIndex: number, name: string, bytes: Uint8Array): Promise<void> {
    if (this.superseded) return;
    const bundled = this.contextValue?.meta.internalBundledFile ?? null;
    const standsForBundle = name === "internal.bin" || name === bundled;
    let cases: ParsedTestCase[];
    try {
      cases = testCasesOfReport(decodeTestReport(bytes));
    } catch (error) {
      if (!(error instanceof TestReportError)) throw error;
      // A broken report of the bundle's own leaves the JUnit files to count.
      this.files.set(fileIndex, {
        counts: zeroCounts(),
        error: { file: this.displayName(fileIndex, name), reason: error.reason },
      });
      return;
    }
    // An empty one (zero bytes decode as an empty report) stands for nothing.
    if (standsForBundle && cases.length > 0) {
      await this.discardFilesOtherThan(fileIndex);
      this.superseded = true;
    }
    const counts = zeroCounts();
    for (let start = 0; start < cases.length; start += CASE_BATCH) {
      await this.addCases(cases.slice(start, start + CASE_BATCH), fileIndex, counts, false);
    }
    this.files.set(fileIndex, { counts, error: null });
  }

  /** Forgets what the other files of the bundle contributed (written ahead or not). */
  private async discardFilesOtherThan(fileIndex: number): Promise<void> {
    this.pendingRuns = this.pendingRuns.filter((r) => r.fileIndex === fileIndex);
    for (const index of this.files.keys()) {
      if (index !== fileIndex && this.flushedFiles.has(index)) {
        await this.deps.ingest.deleteRuns(this.upload.key, index);
      }
    }
    for (const index of [...this.files.keys()]) if (index !== fileIndex) this.files.delete(index);
  }

  private async readFile(
    fileIndex: number,
    name: string,
    stream: AsyncIterable<Uint8Array>,
  ): Promise<void> {
    // The reader drains what is left unread.
    if (this.superseded) return;
    const counts = zeroCounts();
    let batch: ParsedTestCase[] = [];
    try {
      for await (const testCase of parseJunit(stream)) {
        batch.push(testCase);
        if (batch.length >= CASE_BATCH) {
          await this.addCases(batch, fileIndex, counts);
          batch = [];
        }
      }
      await this.addCases(batch, fileIndex, counts);
    } catch (error) {
      if (!(error instanceof JunitParseError)) throw error;
      // All or nothing per file (ADR 0006).
      this.pendingRuns = this.pendingRuns.filter((r) => r.fileIndex !== fileIndex);
      if (this.flushedFiles.has(fileIndex)) {
        await this.deps.ingest.deleteRuns(this.upload.key, fileIndex);
      }
      this.files.set(fileIndex, {
        counts: zeroCounts(),
        error: { file: this.displayName(fileIndex, name), reason: error.reason },
      });
      return;
    }
    this.files.set(fileIndex, { counts, error: null });
  }

  /** The path on the CI machine when meta.json names it, else the path inside the bundle. */
  private displayName(fileIndex: number, bundlePath: string): string {
    const files = this.contextValue?.meta.fileSets.flatMap((set) => set.files) ?? [];
    const known = files.find((f) => f.bundlePath === bundlePath);
    return (
      known?.originalPathRelative ?? known?.originalPath ?? (bundlePath || `file ${fileIndex}`)
    );
  }

  private async addCases(
    parsed: readonly ParsedTestCase[],
    fileIndex: number,
    counts: FileCounts,
    /** JUnit records of one test are attempts to merge; a binary report's cases come merged. */
    merge = true,
  ): Promise<void> {
    const context = this.contextValue;
    if (!context || parsed.length === 0) return;
    const root = context.meta.repoRoot;
    const located = parsed.map((c) => {
      const file = repoRelativeFile(c.file, root);
      return file === c.file ? c : { ...c, file };
    });
    const cases = merge ? mergeRepeatedTestcases(located) : located;
    const ids = cases.map((c) => this.idOf(context, c));
    const keys = await this.ensureKeys(cases, ids);
    const { uploadedAt } = context;
    cases.forEach((testCase, i) => {
      const testKey = keys.get(ids[i] ?? "");
      if (testKey === undefined) throw new Error("test case without a key");
      const final = testCase.attempts.at(-1);
      if (final?.status === "passed") counts.passed += 1;
      else if (final?.status === "failed") counts.failed += 1;
      else counts.skipped += 1;
      for (const attempt of testCase.attempts) {
        if (attempt.status === "passed") counts.attemptsPassed += 1;
        else if (attempt.status === "failed") counts.attemptsFailed += 1;
        const failure = attempt.status === "failed" ? (attempt.failure ?? emptyFailure) : null;
        this.pendingRuns.push({
          testKey,
          uploadKey: this.upload.key,
          fileIndex,
          at: runTime(attempt.startedAt, uploadedAt),
          status: attempt.status,
          attempt: attempt.kind,
          durationMs: attempt.durationMs === null ? null : Math.round(attempt.durationMs),
          failureSignature: failure ? signatureKey(failureSignature(failure)) : null,
          failureSummary: failure ? failureSummary(failure) : null,
          failureText: failure ? failureText(failure) : null,
        });
      }
    });
    if (this.pendingRuns.length >= RUN_FLUSH) await this.flush();
  }

  /** The test's id (docs/contract.md §3), remembered: hashing it costs more than the lookup. */
  private idOf(context: Context, c: ParsedTestCase): string {
    const identity = [
      context.org,
      context.repoFullName,
      context.variant,
      c.file ?? "",
      c.classname,
      c.parent,
      c.name,
      c.idAttribute ?? "",
    ].join("\u0000");
    const known = this.idCache.get(identity);
    if (known !== undefined) return known;
    const id = testId({
      org: context.org,
      repoFullName: context.repoFullName,
      file: c.file,
      classname: c.classname,
      parent: c.parent,
      name: c.name,
      variant: context.variant,
      idAttribute: c.idAttribute,
    });
    if (this.idCache.size >= KEY_CACHE_LIMIT) this.idCache.clear();
    this.idCache.set(identity, id);
    return id;
  }

  private async ensureKeys(
    cases: readonly ParsedTestCase[],
    ids: readonly string[],
  ): Promise<Map<string, number>> {
    const keys = new Map<string, number>();
    const missing: NewTestCase[] = [];
    const prefix = `${this.upload.repositoryId}:`;
    cases.forEach((c, i) => {
      const id = ids[i] ?? "";
      const cached = this.keyCache.get(prefix + id);
      if (cached !== undefined) keys.set(id, cached);
      else {
        missing.push({
          id,
          name: c.name,
          classname: c.classname === "" ? null : c.classname,
          parent: c.parent === "" ? null : c.parent,
          file: c.file,
          variant: this.contextValue?.variant ?? "",
        });
      }
    });
    if (missing.length > 0) {
      const found = await this.deps.ingest.ensureTestCases(
        this.upload.repositoryId,
        missing,
        this.deps.clock.now(),
      );
      if (this.keyCache.size + found.size > KEY_CACHE_LIMIT) this.keyCache.clear();
      for (const [id, key] of found) {
        keys.set(id, key);
        this.keyCache.set(prefix + id, key);
      }
    }
    return keys;
  }
}

const emptyFailure = { type: null, message: null, text: null };

function signatureKey(signature: string): string {
  return createHash("sha1").update(signature).digest("base64url").slice(0, 16);
}

function failureText(failure: { message: string | null; text: string | null }): string | null {
  const parts = [failure.message, failure.text].filter((p): p is string => !!p);
  if (parts.length === 2 && parts[1]?.includes(parts[0] ?? "")) parts.shift();
  const text = parts.join("\n");
  // Either part may have been cut already (head, marker, tail): cut the whole once more.
  return text === "" ? null : fitText(withCuts(text), TEXT_LIMIT);
}
