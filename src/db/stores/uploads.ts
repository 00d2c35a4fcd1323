import {
  sql,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type Transaction,
} from "kysely";
import type { DialectName } from "../connection.js";
import { compileTemplate, type QueryTemplate } from "../precompiled.js";
import { sqlDialect } from "../dialect.js";
import type { Database, UploadsTable } from "../schema.js";
import {
  UploadTakenOver,
  type ClaimedUpload,
  type CommitFailures,
  type FileError,
  type UploadFailureDetails,
  type UploadOutcome,
  type UploadRecord,
  type UploadState,
} from "../../testhealth/records.js";
import type { NewUpload, UploadRecords } from "../../testhealth/ports.js";
import { GroupWriter } from "../../lib/group-writer.js";

function toRecord(row: Selectable<UploadsTable>): UploadRecord {
  return {
    ...row,
    state: row.state as UploadState,
    fileErrors: row.fileErrors ? (JSON.parse(row.fileErrors) as FileError[]) : [],
    infrastructureFailure: Boolean(row.infrastructureFailure),
  };
}

type Db = Kysely<Database> | Transaction<Database>;

/** Rows per shared insert (8 parameters each: far below PostgreSQL's limit). */
const MAX_CREATES_PER_INSERT = 100;

/** Uploads of bundles and their processing state (the work queue of the ingestion worker). */
export class UploadStore implements UploadRecords {
  /** PostgreSQL: the uploads created in one turn of the event loop share one insert. */
  private readonly creates = new GroupWriter<NewUpload, void>({
    write: async (values) => {
      await this.insertUploads(values);
      return values.map(() => undefined);
    },
    take: (waiting) => Math.min(waiting.length, MAX_CREATES_PER_INSERT),
    aloneOnFailure: true,
  });

  /** The `PUT`'s lookup of its upload, compiled once. */
  private readonly uploadById: QueryTemplate<Selectable<UploadsTable>>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    this.uploadById = compileTemplate(1, (args) =>
      db
        .selectFrom("uploads")
        .selectAll()
        .where("id", "=", args[0] as string)
        .compile(),
    );
  }

  /**
   * Records a new upload. On PostgreSQL, uploads created together (in one turn of the event loop)
   * are inserted by one statement: one round trip, however many there are. Each caller resumes once
   * its row is committed; when the shared insert fails, each row is tried alone, so that one bad
   * row fails only its own caller. SQLite inserts each at once: grouping there (one fsync per
   * group) made every upload wait for the rest of the event loop's turn, and the uploads' p99 grew
   * more than the other requests' fell (measured under mixed load).
   */
  create(values: NewUpload): Promise<void> {
    if (this.dialect === "sqlite") return this.insertUploads([values]);
    return this.creates.write(values);
  }

  private async insertUploads(values: readonly NewUpload[]): Promise<void> {
    await this.db
      .insertInto("uploads")
      .values(values.map((v) => ({ ...v, state: "awaiting_bundle", reason: null })))
      .execute();
  }

  async find(id: string, organizationId?: string): Promise<UploadRecord | undefined> {
    if (organizationId === undefined) {
      const [row] = await this.uploadById.run(this.db, [id]);
      return row ? toRecord(row) : undefined;
    }
    const row = await this.db
      .selectFrom("uploads")
      .selectAll()
      .where("id", "=", id)
      .where("organizationId", "=", organizationId)
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  async findByKey(key: number, db: Db = this.db): Promise<UploadRecord | undefined> {
    const row = await db
      .selectFrom("uploads")
      .selectAll()
      .where("key", "=", key)
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /**
   * The URL's one use: `awaiting_bundle` → `pending`, only before it expires; answers the upload
   * as it is then. Undefined when the upload was already received (or expired): the caller must
   * then discard the bytes it stored.
   */
  async markReceived(
    id: string,
    values: { bundlePath: string; bundleBytes: number; contentHash: string; receivedAt: number },
  ): Promise<UploadRecord | undefined> {
    const row = await this.db
      .updateTable("uploads")
      .set({ ...values, state: "pending" })
      .where("id", "=", id)
      .where("state", "=", "awaiting_bundle")
      .where("urlExpiresAt", ">", values.receivedAt)
      .returningAll()
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /**
   * Takes the oldest upload waiting for a worker (or one whose worker's lease ran out: it
   * crashed) and leases it until `leaseUntil`.
   */
  async claimNext(now: number, leaseUntil: number): Promise<UploadRecord | undefined> {
    const [first] = await this.claimBatch(now, leaseUntil, 1);
    return first;
  }

  /**
   * Claims the oldest ready upload and, when it is on its first attempt, up to `limit - 1`
   * more pending first attempts of the same repository, oldest first: a worker processes them
   * together (one final transaction). A retried upload is claimed alone, so that a bundle that
   * keeps failing never takes others down with it. The claim's commit does not wait for the
   * disk: a lost claim leaves the uploads pending, to be claimed again.
   */
  async claimBatch(now: number, leaseUntil: number, limit: number): Promise<UploadRecord[]> {
    const ready = (db: Db) =>
      db
        .selectFrom("uploads")
        .select(["key", "repositoryId", "attempts"])
        .where((eb) =>
          eb.or([
            eb("state", "=", "pending"),
            eb.and([eb("state", "=", "processing"), eb("leaseUntil", "<", now)]),
          ]),
        )
        .orderBy("receivedAt")
        .orderBy("key")
        .limit(1);
    const claim = (db: Db, keys: number[]) =>
      db
        .updateTable("uploads")
        .set((eb) => ({ state: "processing", leaseUntil, attempts: eb("attempts", "+", 1) }))
        .where("key", "in", keys)
        .where((eb) =>
          eb.or([
            eb("state", "=", "pending"),
            eb.and([eb("state", "=", "processing"), eb("leaseUntil", "<", now)]),
          ]),
        )
        .returningAll()
        .execute();
    const companions = (db: Db, first: { key: number; repositoryId: string }) =>
      db
        .selectFrom("uploads")
        .select("key")
        .where("repositoryId", "=", first.repositoryId)
        .where("state", "=", "pending")
        .where("attempts", "=", 0)
        .where("key", "<>", first.key)
        .orderBy("receivedAt")
        .orderBy("key")
        .limit(limit - 1);
    const rows = await sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      const firstQuery = ready(trx);
      const first = await sqlDialect(this.dialect)
        .forUpdateSkipLocked(firstQuery)
        .executeTakeFirst();
      if (!first) return [];
      const keys = [first.key];
      if (first.attempts === 0 && limit > 1) {
        const more = companions(trx, first);
        const found = await sqlDialect(this.dialect).forUpdateSkipLocked(more).execute();
        keys.push(...found.map((r) => r.key));
      }
      return claim(trx, keys);
    });
    return rows
      .map(toRecord)
      .sort((a, b) => (a.receivedAt ?? 0) - (b.receivedAt ?? 0) || a.key - b.key);
  }

  /**
   * Renews (or, with `leaseUntil` = now, gives up) the lease of the claim `upload` was given:
   * the claim's attempt number fences it, so a worker whose lease ran out and was taken over
   * changes nothing. False when the claim is no longer this worker's.
   */
  async extendLease(upload: ClaimedUpload, leaseUntil: number): Promise<boolean> {
    const result = await this.db
      .updateTable("uploads")
      .set({ leaseUntil })
      .where("key", "=", upload.key)
      .where("attempts", "=", upload.attempts)
      .where("state", "=", "processing")
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** An earlier upload of the same bytes to the same repository that was (or is being) counted. */
  async findDuplicate(upload: UploadRecord): Promise<string | undefined> {
    if (!upload.contentHash) return undefined;
    const row = await this.db
      .selectFrom("uploads")
      .select("id")
      .where("repositoryId", "=", upload.repositoryId)
      .where("contentHash", "=", upload.contentHash)
      .where("key", "<>", upload.key)
      .where("state", "in", ["processed", "processing", "pending"])
      .where("duplicateOf", "is", null)
      .where("key", "<", upload.key)
      .orderBy("key")
      .executeTakeFirst();
    return row?.id;
  }

  /**
   * Records the outcome; in the caller's transaction so it lands together with the data. Throws
   * `UploadTakenOver` (and the caller's transaction rolls back) when the claim is no longer the
   * caller's: its lease ran out and another worker took the upload over.
   */
  async markProcessed(
    db: Db,
    upload: ClaimedUpload,
    outcome: UploadOutcome,
    now: number,
    duplicateOf: string | null = null,
  ): Promise<void> {
    const result = await db
      .updateTable("uploads")
      .set({
        state: "processed",
        reason: null,
        processedAt: now,
        leaseUntil: null,
        duplicateOf,
        commitSha: outcome.commitSha,
        branch: outcome.branch,
        prNumber: outcome.prNumber,
        jobName: outcome.jobName,
        jobUrl: outcome.jobUrl,
        variant: outcome.variant,
        uploadedAt: outcome.uploadedAt,
        filesTotal: outcome.filesTotal,
        filesFailed: outcome.fileErrors.length,
        fileErrors: outcome.fileErrors.length > 0 ? JSON.stringify(outcome.fileErrors) : null,
        testsPassed: outcome.testsPassed,
        testsFailed: outcome.testsFailed,
        testsSkipped: outcome.testsSkipped,
        infrastructureFailure: outcome.infrastructureFailure ? 1 : 0,
      })
      .where("key", "=", upload.key)
      .where("attempts", "=", upload.attempts)
      .where("state", "=", "processing")
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new UploadTakenOver(upload.key);
  }

  /** Also records what the upload said about itself, when its meta.json was read. */
  async markFailed(
    key: number,
    reason: string,
    now: number,
    details: UploadFailureDetails = {},
  ): Promise<void> {
    const { fileErrors = [], description } = details;
    await this.db
      .updateTable("uploads")
      .set({
        state: "failed",
        reason,
        processedAt: now,
        leaseUntil: null,
        filesFailed: fileErrors.length,
        fileErrors: fileErrors.length > 0 ? JSON.stringify(fileErrors) : null,
        ...(description === undefined
          ? {}
          : {
              commitSha: description.commitSha,
              branch: description.branch,
              prNumber: description.prNumber,
              jobName: description.jobName,
              jobUrl: description.jobUrl,
              variant: description.variant,
              uploadedAt: description.uploadedAt,
              filesTotal: description.filesTotal,
            }),
      })
      .where("key", "=", key)
      .execute();
  }

  /** Keys of the repository's counted uploads of these commits (pass-on-retry looks at their runs). */
  async sameCommit(
    db: Db,
    repositoryId: string,
    commitShas: readonly string[],
  ): Promise<{ key: number; commitSha: string; uploadedAt: number }[]> {
    if (commitShas.length === 0) return [];
    const rows = await db
      .selectFrom("uploads")
      .select(["key", "commitSha", "uploadedAt"])
      .where("repositoryId", "=", repositoryId)
      .where("commitSha", "in", commitShas)
      .where("state", "in", ["processed", "processing"])
      .execute();
    return rows.map((r) => ({
      key: r.key,
      commitSha: r.commitSha ?? "",
      uploadedAt: r.uploadedAt ?? 0,
    }));
  }

  /**
   * What a hosted CI's failed run asks of a commit (testhealth/ci-failures.ts): the repository's
   * uploads created since `since` not processed yet (one of them may be the run's), the processed
   * uploads naming the commit (or, created since `since`, the run's own branch), and the tests
   * whose final attempt failed in those (at most `limit` + 1, by id).
   */
  async commitFailures(
    repositoryId: string,
    commitSha: string,
    branch: string | undefined,
    since: number,
    limit: number,
  ): Promise<CommitFailures> {
    const theRun = (eb: ExpressionBuilder<Database, "uploads">) =>
      branch === undefined
        ? eb("uploads.commitSha", "=", commitSha)
        : eb.or([
            eb("uploads.commitSha", "=", commitSha),
            eb.and([eb("uploads.branch", "=", branch), eb("uploads.createdAt", ">=", since)]),
          ]);
    const [unfinished, matched, failed] = await Promise.all([
      this.db
        .selectFrom("uploads")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .where("repositoryId", "=", repositoryId)
        .where("createdAt", ">=", since)
        .where("state", "in", ["awaiting_bundle", "pending", "processing"])
        .executeTakeFirst(),
      this.db
        .selectFrom("uploads")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .where("repositoryId", "=", repositoryId)
        .where(theRun)
        .where("state", "=", "processed")
        .executeTakeFirst(),
      this.db
        .selectFrom("uploads")
        .innerJoin("testRuns", "testRuns.uploadKey", "uploads.key")
        .innerJoin("testCases", "testCases.key", "testRuns.testKey")
        .select((eb) => [
          "testCases.id",
          "testCases.name",
          "testCases.classname",
          "testCases.parent",
          "testCases.file",
          eb.fn.max("testRuns.failureSummary").as("summary"),
        ])
        .where("uploads.repositoryId", "=", repositoryId)
        .where(theRun)
        .where("uploads.state", "=", "processed")
        .where("testRuns.status", "=", "failed")
        .where("testRuns.attempt", "=", "final")
        .groupBy([
          "testCases.id",
          "testCases.name",
          "testCases.classname",
          "testCases.parent",
          "testCases.file",
        ])
        .orderBy("testCases.id")
        .limit(limit + 1)
        .execute(),
    ]);
    return {
      unfinished: Number(unfinished?.n ?? 0),
      uploads: Number(matched?.n ?? 0),
      failedTests: failed.map((row) => ({
        id: row.id,
        name: row.name,
        classname: row.classname ?? "",
        parent: row.parent ?? "",
        file: row.file,
        summary: row.summary ?? null,
      })),
    };
  }

  async list(
    repositoryId: string,
    offset: number,
    limit: number,
  ): Promise<{ total: number; uploads: UploadRecord[] }> {
    const [count, rows] = await Promise.all([
      this.db
        .selectFrom("uploads")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("repositoryId", "=", repositoryId)
        .where("state", "<>", "awaiting_bundle")
        .executeTakeFirstOrThrow(),
      this.db
        .selectFrom("uploads")
        .selectAll()
        .where("repositoryId", "=", repositoryId)
        .where("state", "<>", "awaiting_bundle")
        .orderBy("createdAt", "desc")
        .orderBy("key", "desc")
        .offset(offset)
        .limit(limit)
        .execute(),
    ]);
    return { total: count.n, uploads: rows.map(toRecord) };
  }

  /** Bundles still on disk of uploads that ended before `before` (failed ones keep theirs). */
  async oldBundles(before: number, limit = 1000): Promise<{ key: number; bundlePath: string }[]> {
    const rows = await this.db
      .selectFrom("uploads")
      .select(["key", "bundlePath"])
      .where("state", "in", ["processed", "failed"])
      .where("processedAt", "<", before)
      .where("bundlePath", "is not", null)
      .limit(limit)
      .execute();
    return rows.flatMap((r) =>
      r.bundlePath === null ? [] : [{ key: r.key, bundlePath: r.bundlePath }],
    );
  }

  /** The bundle's file is gone (after processing or retention); not waiting for the disk. */
  async forgetBundle(keys: number | readonly number[]): Promise<void> {
    const list = typeof keys === "number" ? [keys] : keys;
    if (list.length === 0) return;
    await sqlDialect(this.dialect).relaxedTransaction(this.db, (trx) =>
      trx.updateTable("uploads").set({ bundlePath: null }).where("key", "in", list).execute(),
    );
  }

  /** Uploads whose URL was never used and has expired: nothing to keep. */
  async deleteExpiredUnused(now: number): Promise<number> {
    const result = await this.db
      .deleteFrom("uploads")
      .where("state", "=", "awaiting_bundle")
      .where("urlExpiresAt", "<", now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async countByState(): Promise<Record<string, number>> {
    const rows = await this.db
      .selectFrom("uploads")
      .select(["state", sql<number>`count(*)`.as("n")])
      .groupBy("state")
      .execute();
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }
}
