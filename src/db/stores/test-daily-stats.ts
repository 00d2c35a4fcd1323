import { sql, type Kysely, type Transaction } from "kysely";
import type { DatabaseHandle, DialectName } from "../connection.js";
import type { Database } from "../schema.js";
import { TestIngestStore } from "./test-ingest.js";

/**
 * The write side of `test_daily_stats` and `test_daily_failure_groups` (ADR 0008): the hourly
 * aggregates rolled up by UTC day, so that list-failing-tests and the figures of a page read a
 * week as 7 days and the hours around them instead of 168 hours.
 * Both functions belong in `TestIngestStore.aggregateUpload` / `pruneAggregates`; until the
 * ingestion takes them in, `DailyStatsIngestStore` calls them right after those.
 */

const DAY_MS = 24 * 3_600_000;
const DAY = sql.raw(String(DAY_MS));

/**
 * Folds an upload's runs into the daily counts and failure groups, exactly as `aggregateUpload`
 * does into the hourly ones (same transaction): every run counts in the day of its time;
 * `excluded` uploads count their failures as `excluded_failed` only, and in no failure group.
 */
export async function aggregateUploadDaily(
  trx: Transaction<Database>,
  dialect: DialectName,
  upload: { key: number; repositoryId: string; excluded: boolean },
): Promise<void> {
  const counted = sql.raw(upload.excluded ? "0" : "1");
  await sql`
    insert into test_daily_stats (test_key, day, repository_id, passed, failed, excluded_failed)
    select test_key, (at / ${DAY}) * ${DAY}, ${upload.repositoryId},
      sum(case when status = 'passed' then ${counted} else 0 end),
      sum(case when status = 'failed' then ${counted} else 0 end),
      sum(case when status = 'failed' then 1 - ${counted} else 0 end)
    from test_runs where upload_key = ${upload.key}
    group by test_key, (at / ${DAY}) * ${DAY}
    on conflict (test_key, day) do update set
      passed = test_daily_stats.passed + excluded.passed,
      failed = test_daily_stats.failed + excluded.failed,
      excluded_failed = test_daily_stats.excluded_failed + excluded.excluded_failed`.execute(trx);
  if (upload.excluded) return;
  // As `test_failure_groups`, by day; summaries stay in the hourly rows.
  const greatest = dialect === "postgres" ? sql.raw("greatest") : sql.raw("max");
  await sql`
    insert into test_daily_failure_groups (test_key, day, signature, occurrences, last_at)
    select test_key, (at / ${DAY}) * ${DAY}, failure_signature, count(*), max(at)
    from test_runs
    where upload_key = ${upload.key} and status = 'failed' and failure_signature is not null
    group by test_key, (at / ${DAY}) * ${DAY}, failure_signature
    on conflict (test_key, day, signature) do update set
      occurrences = test_daily_failure_groups.occurrences + excluded.occurrences,
      last_at = ${greatest}(test_daily_failure_groups.last_at, excluded.last_at)`.execute(trx);
}

/**
 * Retention: a day goes once all of its hours are gone from `test_hourly_stats` (those before
 * `before`), so that a day is never missing what its hours still count.
 */
export async function pruneDailyStats(db: Kysely<Database>, before: number): Promise<void> {
  await db
    .deleteFrom("testDailyStats")
    .where("day", "<=", before - DAY_MS)
    .execute();
  await db
    .deleteFrom("testDailyFailureGroups")
    .where("day", "<=", before - DAY_MS)
    .execute();
}

/** The ingestion store with the daily counts kept in its aggregate and retention steps. */
export class DailyStatsIngestStore extends TestIngestStore {
  private readonly handle: DatabaseHandle;

  constructor(handle: DatabaseHandle) {
    super(handle);
    this.handle = handle;
  }

  override async aggregateUpload(
    trx: Transaction<Database>,
    upload: Parameters<TestIngestStore["aggregateUpload"]>[1],
  ): Promise<void> {
    await super.aggregateUpload(trx, upload);
    await aggregateUploadDaily(trx, this.handle.dialect, upload);
  }

  override async pruneAggregates(before: number): Promise<void> {
    await super.pruneAggregates(before);
    await pruneDailyStats(this.handle.db, before);
  }
}
