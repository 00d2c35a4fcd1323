import { sql, type Kysely, type RawBuilder, type Transaction } from "kysely";
import type BetterSqlite3 from "better-sqlite3";
import type { DatabaseHandle, DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { computeFigures } from "../figures.js";
import type { Database } from "../schema.js";
import { emitTestEvents } from "../outbound-emission.js";
import { QUEUE_RUNNER_CLIENT } from "../../testhealth/runs.js";
import type {
  AggregatedUpload,
  ClassificationCandidate,
  ClassificationUpdate,
  IngestTransaction as DomainIngestTransaction,
  NewTestCase,
  RunRow,
  StoredRun,
} from "../../testhealth/records.js";
import type { IngestRecords } from "../../testhealth/ports.js";

/** An upload's final transaction: everything written through it lands together or not at all. */
export type IngestTransaction = DomainIngestTransaction<Transaction<Database>>;
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../lib/time.js";

/**
 * The write side of test health, built for throughput (ADR 0007): runs go in with prepared
 * statements (SQLite) or `unnest` arrays (PostgreSQL), and every aggregate the API reads is
 * derived from an upload's runs by set-based SQL inside the upload's final transaction.
 */

interface RunUpload {
  commitSha: string;
  branch: string;
  prNumber: number | null;
  excluded: boolean;
  queueRun: boolean;
}

const RUN_COLUMNS = [
  "test_key",
  "upload_key",
  "file_index",
  "at",
  "status",
  "attempt",
  "duration_ms",
  "failure_signature",
  "failure_summary",
  "failure_text",
] as const;

const PG_RUN_TYPES = [
  "bigint",
  "bigint",
  "bigint",
  "bigint",
  "text",
  "text",
  "bigint",
  "text",
  "text",
  "text",
] as const;

/** A run's values in `RUN_COLUMNS` order. */
function runValues(r: RunRow): unknown[] {
  const values = new Array<unknown>(RUN_COLUMNS.length);
  putRunValues(values, 0, r);
  return values;
}

/** Writes a run's values into `target` from `offset` on, in `RUN_COLUMNS` order. */
function putRunValues(target: unknown[], offset: number, r: RunRow): void {
  target[offset] = r.testKey;
  target[offset + 1] = r.uploadKey;
  target[offset + 2] = r.fileIndex;
  target[offset + 3] = r.at;
  target[offset + 4] = r.status;
  target[offset + 5] = r.attempt;
  target[offset + 6] = r.durationMs;
  target[offset + 7] = r.failureSignature;
  target[offset + 8] = r.failureSummary;
  target[offset + 9] = r.failureText;
}

/** Runs per SQLite insert statement. */
const ROWS_PER_INSERT = 50;

/** A literal, not a parameter: PostgreSQL must see the SELECT and GROUP BY expressions as equal. */
const HOURS = sql.raw(String(HOUR));
const DAYS = sql.raw(String(DAY));
const KEY_CHUNK = 500;

type Db = Kysely<Database> | Transaction<Database>;

export class TestIngestStore implements IngestRecords {
  private readonly db: Kysely<Database>;
  private readonly dialect: DialectName;
  private readonly sqlite: BetterSqlite3.Database | null;
  private insertRunStatement: BetterSqlite3.Statement | null = null;
  private insertOneRunStatement: BetterSqlite3.Statement | null = null;

  constructor(handle: DatabaseHandle) {
    this.db = handle.db;
    this.dialect = handle.dialect;
    this.sqlite = handle.raw.dialect === "sqlite" ? handle.raw.sqlite : null;
  }

  /** Keys of the given tests, creating the ones this repository has never seen. */
  async ensureTestCases(
    repositoryId: string,
    cases: readonly NewTestCase[],
    now: number,
  ): Promise<Map<string, number>> {
    const keys = new Map<string, number>();
    for (let at = 0; at < cases.length; at += KEY_CHUNK) {
      const chunk = cases.slice(at, at + KEY_CHUNK);
      const ids = chunk.map((c) => c.id);
      for (const row of await this.selectKeys(repositoryId, ids)) keys.set(row.id, row.key);
      const missing = chunk.filter((c) => !keys.has(c.id));
      if (missing.length === 0) continue;
      const unique = [...new Map(missing.map((c) => [c.id, c])).values()];
      await this.db
        .insertInto("testCases")
        .values(
          unique.map((c) => ({
            repositoryId,
            id: c.id,
            name: c.name,
            classname: c.classname,
            parent: c.parent,
            file: c.file,
            variant: c.variant,
            status: "healthy",
            statusReason: "",
            statusChangedAt: now,
            monitorStates: "{}",
            monitorsActive: 0,
            quarantineOverride: "UNSPECIFIED",
            firstSeenAt: now,
          })),
        )
        .onConflict((oc) => oc.columns(["repositoryId", "id"]).doNothing())
        .execute();
      const created = await this.selectKeys(
        repositoryId,
        unique.map((c) => c.id),
      );
      for (const row of created) keys.set(row.id, row.key);
    }
    return keys;
  }

  private selectKeys(repositoryId: string, ids: readonly string[]) {
    return this.db
      .selectFrom("testCases")
      .select(["key", "id"])
      .where("repositoryId", "=", repositoryId)
      .where("id", "in", ids)
      .execute();
  }

  /** Runs written ahead of an upload's final transaction (large uploads), in their own transaction. */
  async insertRunsNow(rows: readonly RunRow[]): Promise<void> {
    if (rows.length === 0) return;
    await sqlDialect(this.dialect).relaxedTransaction(this.db, (trx) =>
      this.insertRunsIn(trx, rows),
    );
  }

  private async insertRunsIn(trx: Transaction<Database>, rows: readonly RunRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.sqlite) {
      // Inside Kysely's transaction the connection is ours: synchronous inserts cannot interleave.
      // Many rows per statement: one call into the driver per ROWS_PER_INSERT runs.
      const sqlite = this.sqlite;
      const statementFor = (count: number) =>
        sqlite.prepare(
          `insert into test_runs (${RUN_COLUMNS.join(", ")}) values ${Array.from(
            { length: count },
            () => `(${RUN_COLUMNS.map(() => "?").join(", ")})`,
          ).join(", ")}`,
        );
      this.insertRunStatement ??= statementFor(ROWS_PER_INSERT);
      const many = this.insertRunStatement;
      const values = new Array<unknown>(ROWS_PER_INSERT * RUN_COLUMNS.length);
      let at = 0;
      for (; at + ROWS_PER_INSERT <= rows.length; at += ROWS_PER_INSERT) {
        for (let i = 0; i < ROWS_PER_INSERT; i++) {
          putRunValues(values, i * RUN_COLUMNS.length, rows[at + i] as RunRow);
        }
        many.run(values);
      }
      if (at < rows.length) {
        this.insertOneRunStatement ??= statementFor(1);
        const one = this.insertOneRunStatement;
        const single = new Array<unknown>(RUN_COLUMNS.length);
        for (; at < rows.length; at++) {
          putRunValues(single, 0, rows[at] as RunRow);
          one.run(single);
        }
      }
      return;
    }
    const CHUNK = 10_000;
    for (let at = 0; at < rows.length; at += CHUNK) {
      const chunk = rows.slice(at, at + CHUNK);
      const columns: unknown[][] = RUN_COLUMNS.map(() => new Array<unknown>(chunk.length));
      chunk.forEach((r, i) => {
        runValues(r).forEach((value, c) => {
          (columns[c] as unknown[])[i] = value;
        });
      });
      const arrays = columns.map(
        (values, c) => sql`${values}::${sql.raw(PG_RUN_TYPES[c] ?? "text")}[]`,
      );
      await sql`insert into test_runs (${sql.raw(RUN_COLUMNS.join(", "))})
        select * from unnest(${sql.join(arrays)})`.execute(trx);
    }
  }

  /** Removes what an upload (or one of its files) wrote before it failed or was retried. */
  async deleteRuns(uploadKey: number, fileIndex?: number): Promise<void> {
    let query = this.db.deleteFrom("testRuns").where("uploadKey", "=", uploadKey);
    if (fileIndex !== undefined) query = query.where("fileIndex", "=", fileIndex);
    await query.execute();
  }

  /**
   * Runs `work` in one transaction that does not wait for the disk (everything in it is derived
   * from stored bundles and redone after a power loss: the uploads are then still `processing`,
   * their lease runs out and they are processed again, idempotently). On PostgreSQL it first
   * takes the repository's advisory lock so that two workers never aggregate or classify the
   * same repository's tests at once.
   */
  async transaction<T>(
    repositoryId: string,
    work: (tx: IngestTransaction) => Promise<T>,
  ): Promise<T> {
    return sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      await sqlDialect(this.dialect).lockKey(trx, `test-health:${repositoryId}`);
      return work({ trx, insertRuns: (rows) => this.insertRunsIn(trx, rows) });
    });
  }

  private greatest(a: RawBuilder<unknown>, b: RawBuilder<unknown>): RawBuilder<number> {
    return sqlDialect(this.dialect).greatest(a, b);
  }

  /** `aggregateUploads` of one upload. */
  async aggregateUpload(trx: Transaction<Database>, upload: AggregatedUpload): Promise<void> {
    await this.aggregateUploads(trx, upload.repositoryId, [upload]);
  }

  /**
   * Folds uploads' runs into the aggregates: hourly counts, PRs impacted, failure groups and
   * each test's last run and failure, one statement each for all the uploads (a test run by
   * many uploads of the same hour is one row to update, not one per upload). An `excluded`
   * upload has infrastructure-failure protection on: its runs count for nothing but the
   * failing-tests list.
   */
  async aggregateUploads(
    trx: Transaction<Database>,
    repositoryId: string,
    uploads: readonly AggregatedUpload[],
  ): Promise<void> {
    if (uploads.length === 0) return;
    const all = sql.join(uploads.map((u) => u.key));
    const excludedKeys = uploads.filter((u) => u.excluded).map((u) => u.key);
    const countedKeys = uploads.filter((u) => !u.excluded).map((u) => u.key);
    // 1 when the run's upload counts, else 0.
    const counted =
      excludedKeys.length === 0
        ? sql`1`
        : countedKeys.length === 0
          ? sql`0`
          : sql`(case when upload_key in (${sql.join(excludedKeys)}) then 0 else 1 end)`;
    // By hour, and the same by UTC day (ADR 0008: the failing list reads a week as days plus
    // edge hours).
    await this.foldCounts(trx, "test_hourly_stats", "hour", HOURS, repositoryId, all, counted);
    await this.foldCounts(trx, "test_daily_stats", "day", DAYS, repositoryId, all, counted);

    if (countedKeys.length > 0) {
      const countedList = sql.join(countedKeys);
      if (uploads.some((u) => !u.excluded && u.prNumber !== null)) {
        await sql`
          insert into test_pr_failures (test_key, pr_number, last_failed_at)
          select r.test_key, u.pr_number, max(r.at)
          from test_runs r join uploads u on u.key = r.upload_key
          where r.upload_key in (${countedList}) and r.status = 'failed' and u.pr_number is not null
          group by r.test_key, u.pr_number
          on conflict (test_key, pr_number) do update set
            last_failed_at = ${this.greatest(sql`test_pr_failures.last_failed_at`, sql`excluded.last_failed_at`)}`.execute(
          trx,
        );
      }
      await sql`
        insert into test_failure_groups (test_key, hour, signature, occurrences, last_at, summary)
        select test_key, (at / ${HOURS}) * ${HOURS}, failure_signature, count(*), max(at), max(failure_summary)
        from test_runs
        where upload_key in (${countedList}) and status = 'failed' and failure_signature is not null
        group by test_key, (at / ${HOURS}) * ${HOURS}, failure_signature
        on conflict (test_key, hour, signature) do update set
          occurrences = test_failure_groups.occurrences + excluded.occurrences,
          last_at = ${this.greatest(sql`test_failure_groups.last_at`, sql`excluded.last_at`)},
          summary = case when excluded.last_at >= test_failure_groups.last_at
            then excluded.summary else test_failure_groups.summary end`.execute(trx);
      // By day too, without summaries (those are read from the hour of the latest failure).
      await sql`
        insert into test_daily_failure_groups (test_key, day, signature, occurrences, last_at)
        select test_key, (at / ${DAYS}) * ${DAYS}, failure_signature, count(*), max(at)
        from test_runs
        where upload_key in (${countedList}) and status = 'failed' and failure_signature is not null
        group by test_key, (at / ${DAYS}) * ${DAYS}, failure_signature
        on conflict (test_key, day, signature) do update set
          occurrences = test_daily_failure_groups.occurrences + excluded.occurrences,
          last_at = ${this.greatest(sql`test_daily_failure_groups.last_at`, sql`excluded.last_at`)}`.execute(
        trx,
      );
    }

    // Failures of an excluded upload never count for detection, so they do not make a test a
    // candidate for classification either.
    const lastFailure =
      countedKeys.length === 0
        ? sql`cast(null as bigint)`
        : sql`max(case when status = 'failed' and ${counted} = 1 then at end)`;
    await sql`
      update test_cases set
        last_run_at = ${this.greatest(sql`coalesce(test_cases.last_run_at, 0)`, sql`s.last_run`)},
        last_failure_at = case when s.last_failure is null then test_cases.last_failure_at
          else ${this.greatest(sql`coalesce(test_cases.last_failure_at, 0)`, sql`s.last_failure`)} end
      from (
        select test_key, max(at) as last_run, ${lastFailure} as last_failure
        from test_runs where upload_key in (${all}) group by test_key
      ) as s
      where test_cases.key = s.test_key`.execute(trx);
  }

  /**
   * The 7-day figures of the uploads' tests as of `now` (ADR 0030), computed again from the
   * aggregates the uploads just changed, so that the repository page reads them as they are.
   */
  async refreshFigures(
    trx: Transaction<Database>,
    uploadKeys: readonly number[],
    now: number,
  ): Promise<void> {
    if (uploadKeys.length === 0) return;
    const keys = sql.join(uploadKeys);
    await computeFigures(
      trx,
      this.dialect,
      (alias) =>
        sql`${sql.raw(alias)}.key in (select test_key from test_runs where upload_key in (${keys}))`,
      now,
    );
  }

  /** Adds the uploads' pass/fail counts per test and time unit (an hour or a day) to `table`. */
  private async foldCounts(
    trx: Transaction<Database>,
    table: "test_hourly_stats" | "test_daily_stats",
    unit: "hour" | "day",
    unitMs: RawBuilder<unknown>,
    repositoryId: string,
    uploadKeys: RawBuilder<unknown>,
    counted: RawBuilder<unknown>,
  ): Promise<void> {
    const into = sql.raw(table);
    const column = sql.raw(unit);
    await sql`
      insert into ${into} (test_key, ${column}, repository_id, passed, failed, excluded_failed)
      select test_key, (at / ${unitMs}) * ${unitMs}, ${repositoryId},
        sum(case when status = 'passed' then ${counted} else 0 end),
        sum(case when status = 'failed' then ${counted} else 0 end),
        sum(case when status = 'failed' then 1 - ${counted} else 0 end)
      from test_runs where upload_key in (${uploadKeys})
      group by test_key, (at / ${unitMs}) * ${unitMs}
      on conflict (test_key, ${column}) do update set
        passed = ${into}.passed + excluded.passed,
        failed = ${into}.failed + excluded.failed,
        excluded_failed = ${into}.excluded_failed + excluded.excluded_failed`.execute(trx);
  }

  /**
   * The uploads' tests whose status could change: those with an active monitor, or with a
   * failure at or after `failedSince` (older failures are out of every window, and none of
   * them was on these uploads' commits).
   */
  async candidatesOfUploads(
    trx: Transaction<Database>,
    uploadKeys: readonly number[],
    failedSince: number,
  ): Promise<ClassificationCandidate[]> {
    if (uploadKeys.length === 0) return [];
    const { rows } = await sql<ClassificationCandidate>`
      select t.key, t.repository_id, t.status, t.status_reason, t.status_changed_at, t.monitor_states
      from test_cases t
      where t.key in (select test_key from test_runs where upload_key in (${sql.join(uploadKeys)}))
        and (t.monitors_active = ${this.true()} or t.last_failure_at >= ${failedSince})
      order by t.key`.execute(trx);
    return rows;
  }

  /**
   * Tests with an active monitor (they may resolve as time passes); with `failedSince`, also
   * those with a counted failure since then (after the monitor settings changed).
   */
  async activeCandidates(
    db: Db,
    repositoryId: string,
    failedSince?: number,
  ): Promise<ClassificationCandidate[]> {
    const recent = failedSince === undefined ? sql`` : sql`or t.last_failure_at >= ${failedSince}`;
    const { rows } = await sql<ClassificationCandidate>`
      select t.key, t.repository_id, t.status, t.status_reason, t.status_changed_at, t.monitor_states
      from test_cases t
      where t.repository_id = ${repositoryId}
        and (t.monitors_active = ${this.true()} ${recent})
      order by t.key`.execute(db);
    return rows;
  }

  async repositoriesWithActiveMonitors(): Promise<string[]> {
    const { rows } = await sql<{ repositoryId: string }>`
      select distinct repository_id from test_cases where monitors_active = ${this.true()}`.execute(
      this.db,
    );
    return rows.map((r) => r.repositoryId);
  }

  private true(): RawBuilder<unknown> {
    return sqlDialect(this.dialect).true;
  }

  /**
   * Runs the classifier needs for these tests: those at or after `since`, and those of the given
   * uploads (the commits' earlier uploads, for pass-on-retry). Runs of uploads still being
   * processed by another worker are left out, except those of `currentUploads`.
   */
  async runsForClassification(
    db: Db,
    testKeys: readonly number[],
    since: number,
    commitUploads: readonly number[],
    currentUploads: readonly number[],
  ): Promise<Map<number, StoredRun[]>> {
    type Row = { testKey: number; at: number; status: StoredRun["status"]; uploadKey: number };
    const rows: Row[] = [];
    for (let at = 0; at < testKeys.length; at += KEY_CHUNK) {
      const chunk = sql.join(testKeys.slice(at, at + KEY_CHUNK));
      // Index only (test, time, status, upload): the table is not read.
      const inWindow = await sql<Row>`
        select test_key, at, status, upload_key from test_runs
        where test_key in (${chunk}) and at >= ${since}`.execute(db);
      rows.push(...inWindow.rows);
      if (commitUploads.length > 0) {
        // The commits' runs before the window, by upload: a separate range scan rather than
        // an OR, which would read each test's whole history.
        const same = await sql<Row>`
          select test_key, at, status, upload_key from test_runs
          where upload_key in (${sql.join(commitUploads)}) and test_key in (${chunk})
            and at < ${since}`.execute(db);
        rows.push(...same.rows);
      }
    }
    const uploads = await this.uploadsOfRuns(db, rows, currentUploads);
    const result = new Map<number, StoredRun[]>();
    for (const row of rows) {
      const upload = uploads.get(row.uploadKey);
      if (!upload) continue; // still being processed by another worker
      let runs = result.get(row.testKey);
      if (!runs) result.set(row.testKey, (runs = []));
      runs.push({
        at: row.at,
        status: row.status,
        commit: upload.commitSha,
        branch: upload.branch,
        prNumber: upload.prNumber,
        excluded: upload.excluded,
        queueRun: upload.queueRun,
      });
    }
    return result;
  }

  /** What the classifier needs of the runs' uploads: those processed, and `currentUploads`. */
  private async uploadsOfRuns(
    db: Db,
    rows: readonly { uploadKey: number }[],
    currentUploads: readonly number[],
  ): Promise<Map<number, RunUpload>> {
    const keys = [...new Set(rows.map((r) => r.uploadKey))];
    const current = new Set(currentUploads);
    const uploads = new Map<number, RunUpload>();
    for (let at = 0; at < keys.length; at += KEY_CHUNK) {
      const found = await db
        .selectFrom("uploads")
        .select([
          "key",
          "state",
          "commitSha",
          "branch",
          "prNumber",
          "infrastructureFailure",
          "clientVersion",
        ])
        .where("key", "in", keys.slice(at, at + KEY_CHUNK))
        .execute();
      for (const u of found) {
        if (u.state !== "processed" && !current.has(u.key)) continue;
        uploads.set(u.key, {
          commitSha: u.commitSha ?? "",
          branch: u.branch ?? "",
          prNumber: u.prNumber,
          excluded: Boolean(u.infrastructureFailure),
          queueRun: (u.clientVersion ?? "").startsWith(QUEUE_RUNNER_CLIENT),
        });
      }
    }
    return uploads;
  }

  async applyClassifications(db: Db, updates: readonly ClassificationUpdate[]): Promise<void> {
    const changed = updates.filter((u) => u.changedAt !== null);
    // The statuses before: what the outbound events say the tests changed from.
    const previous = new Map<number, string>();
    for (let at = 0; at < changed.length; at += KEY_CHUNK) {
      const rows = await db
        .selectFrom("testCases")
        .select(["key", "status"])
        .where(
          "key",
          "in",
          changed.slice(at, at + KEY_CHUNK).map((u) => u.key),
        )
        .execute();
      for (const row of rows) previous.set(row.key, row.status);
    }
    for (const update of updates) {
      await db
        .updateTable("testCases")
        .set({
          status: update.status,
          statusReason: update.reason,
          monitorStates: update.monitorStates,
          monitorsActive: update.monitorsActive ? 1 : 0,
          ...(update.changedAt !== null ? { statusChangedAt: update.changedAt } : {}),
        })
        .where("key", "=", update.key)
        .execute();
    }
    const changes = updates.filter((u) => u.changedAt !== null);
    for (let at = 0; at < changes.length; at += KEY_CHUNK) {
      await db
        .insertInto("testStatusHistory")
        .values(
          changes.slice(at, at + KEY_CHUNK).map((u) => ({
            testKey: u.key,
            at: u.changedAt ?? 0,
            status: u.status,
            reason: u.reason,
            kind: "status",
            actor: null,
          })),
        )
        .execute();
    }
    await emitTestEvents(
      db,
      changes.map((u) => ({
        kind: "test_status" as const,
        testKey: u.key,
        previous: previous.get(u.key) ?? u.status,
        current: u.status,
        reason: u.reason,
        at: u.changedAt ?? 0,
      })),
      Math.max(0, ...changes.map((u) => u.changedAt ?? 0)),
    );
  }

  /** Retention: raw runs before `before` go; the aggregates keep what the API's windows need. */
  async pruneRuns(before: number, batch = 50_000): Promise<number> {
    let total = 0;
    for (;;) {
      const row = sqlDialect(this.dialect).rowAddress;
      const result = await sql`
        delete from test_runs where ${row} in (
          select ${row} from test_runs
          where at < ${before} limit ${batch})`.execute(this.db);
      const deleted = Number(result.numAffectedRows ?? 0n);
      total += deleted;
      if (deleted < batch) return total;
    }
  }

  /** Aggregates older than the API's longest window plus the retention age are dropped too. */
  async pruneAggregates(before: number): Promise<void> {
    await this.db.deleteFrom("testHourlyStats").where("hour", "<", before).execute();
    await this.db.deleteFrom("testFailureGroups").where("hour", "<", before).execute();
    await this.db.deleteFrom("testPrFailures").where("lastFailedAt", "<", before).execute();
    // A day goes once all of its hours are gone, so that it never lacks what they still count.
    await this.db
      .deleteFrom("testDailyStats")
      .where("day", "<=", before - DAY)
      .execute();
    await this.db
      .deleteFrom("testDailyFailureGroups")
      .where("day", "<=", before - DAY)
      .execute();
  }
}
