import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

const DAY = sql.raw(String(24 * 3_600_000));

/**
 * `test_daily_stats` and `test_daily_failure_groups`, and indexes for the list endpoints (the
 * aggregates, read as the lists need them). Each one lets a list read index entries stored side by
 * side instead of a table row per entry (the rows of a test are spread over the table in the order
 * they were written, one page per hour):
 * - list-failing-tests reads, on every request, each failing day's and hour's count of rows and
 *   sum of failures (and the rows of those that changed): partial covering indexes of failing
 *   days and hours, so that these are index-only scans;
 * - the figures of a page's tests (rates over 7 days and 24 hours, most common failures) read a
 *   week of hourly counts and failure groups per test: covering indexes by test;
 * - list-unhealthy-tests (and the figures of every test) count a test's PRs with a failure in
 *   the last 7 days: an index on (test, last failure) answers that without reading the rows.
 */
export const testLists: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("test_daily_stats")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("day", t.bigint, (c) => c.notNull())
      .addColumn("repository_id", "text", (c) => c.notNull())
      .addColumn("passed", t.bigint, (c) => c.notNull())
      .addColumn("failed", t.bigint, (c) => c.notNull())
      .addColumn("excluded_failed", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("test_daily_stats_pk", ["test_key", "day"])
      .execute();
    await sql`
      insert into test_daily_stats (test_key, day, repository_id, passed, failed, excluded_failed)
      select test_key, (hour / ${DAY}) * ${DAY}, min(repository_id), sum(passed), sum(failed),
        sum(excluded_failed)
      from test_hourly_stats group by test_key, (hour / ${DAY}) * ${DAY}`.execute(db);
    await db.schema
      .createTable("test_daily_failure_groups")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("day", t.bigint, (c) => c.notNull())
      .addColumn("signature", "text", (c) => c.notNull())
      .addColumn("occurrences", t.bigint, (c) => c.notNull())
      .addColumn("last_at", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("test_daily_failure_groups_pk", ["test_key", "day", "signature"])
      .execute();
    await sql`
      insert into test_daily_failure_groups (test_key, day, signature, occurrences, last_at)
      select test_key, (hour / ${DAY}) * ${DAY}, signature, sum(occurrences), max(last_at)
      from test_failure_groups group by test_key, (hour / ${DAY}) * ${DAY}, signature`.execute(db);
    await db.schema
      .createIndex("test_daily_stats_failing_idx")
      .on("test_daily_stats")
      .columns(["repository_id", "day", "test_key", "failed", "excluded_failed"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();
    await db.schema
      .createIndex("test_hourly_stats_failing_cover_idx")
      .on("test_hourly_stats")
      .columns(["repository_id", "hour", "test_key", "failed", "excluded_failed"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();
    await db.schema.dropIndex("test_hourly_stats_failing_idx").execute();
    await db.schema
      .createIndex("test_hourly_stats_test_cover_idx")
      .on("test_hourly_stats")
      .columns(["test_key", "hour", "passed", "failed"])
      .execute();
    await db.schema
      .createIndex("test_failure_groups_cover_idx")
      .on("test_failure_groups")
      .columns(["test_key", "hour", "signature", "occurrences", "last_at"])
      .execute();
    await db.schema
      .createIndex("test_pr_failures_recent_idx")
      .on("test_pr_failures")
      .columns(["test_key", "last_failed_at"])
      .execute();
  },
  async down(db) {
    await db.schema.dropIndex("test_pr_failures_recent_idx").execute();
    await db.schema.dropIndex("test_failure_groups_cover_idx").execute();
    await db.schema.dropIndex("test_hourly_stats_test_cover_idx").execute();
    await db.schema
      .createIndex("test_hourly_stats_failing_idx")
      .on("test_hourly_stats")
      .columns(["repository_id", "hour"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();
    await db.schema.dropIndex("test_hourly_stats_failing_cover_idx").execute();
    await db.schema.dropTable("test_daily_failure_groups").execute();
    await db.schema.dropTable("test_daily_stats").execute();
  },
};
