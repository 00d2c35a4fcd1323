import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Indexes for the list endpoints (ADR 0007's aggregates, read as the lists need them):
 * - list-failing-tests reads, on every request, each failing hour's count of rows and sum of
 *   failures (and the rows of hours that changed): the partial index of failing hours becomes a
 *   covering one, so that these are index-only scans instead of a table read per row;
 * - list-unhealthy-tests (and the figures of every test) count a test's PRs with a failure in
 *   the last 7 days: an index on (test, last failure) answers that without reading the rows.
 */
export const testLists: DialectMigration = {
  async up(db) {
    await db.schema
      .createIndex("test_hourly_stats_failing_cover_idx")
      .on("test_hourly_stats")
      .columns(["repository_id", "hour", "test_key", "failed", "excluded_failed"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();
    await db.schema.dropIndex("test_hourly_stats_failing_idx").execute();
    await db.schema
      .createIndex("test_pr_failures_recent_idx")
      .on("test_pr_failures")
      .columns(["test_key", "last_failed_at"])
      .execute();
  },
  async down(db) {
    await db.schema.dropIndex("test_pr_failures_recent_idx").execute();
    await db.schema
      .createIndex("test_hourly_stats_failing_idx")
      .on("test_hourly_stats")
      .columns(["repository_id", "hour"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();
    await db.schema.dropIndex("test_hourly_stats_failing_cover_idx").execute();
  },
};
