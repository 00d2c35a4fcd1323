import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * A run's `fail_first` (JSON `{fromRunId, checks}`): a localization run names the failed run whose
 * failures it runs first, for the CI that asks (`getFailFirstTests`). And runs by test branch,
 * newest first: a CI job knows its branch (a slot's serves one run after another), not the run.
 * Existing runs get null: they run nothing first.
 */
export const runFailFirst: DialectMigration = {
  async up(db) {
    await db.schema.alterTable("mq_runs").addColumn("fail_first", "text").execute();
    await db.schema
      .createIndex("mq_runs_test_branch_idx")
      .on("mq_runs")
      .columns(["queue_id", "test_branch", "started_at"])
      .where(sql.ref("test_branch"), "is not", null)
      .execute();
  },

  async down(db) {
    await db.schema.dropIndex("mq_runs_test_branch_idx").execute();
    await db.schema.alterTable("mq_runs").dropColumn("fail_first").execute();
  },
};
