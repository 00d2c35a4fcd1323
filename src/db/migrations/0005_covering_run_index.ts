import type { DialectMigration } from "./types.js";

/**
 * The classifier reads each candidate test's runs of the monitors' windows at every ingestion
 * batch. With the run's status and upload in the index, that read never touches the table
 * (commit, branch and PR come from the upload, one row per upload instead of per run).
 */
export const coveringRunIndex: DialectMigration = {
  async up(db) {
    await db.schema.dropIndex("test_runs_test_idx").execute();
    await db.schema
      .createIndex("test_runs_test_idx")
      .on("test_runs")
      .columns(["test_key", "at", "status", "upload_key"])
      .execute();
  },
  async down(db) {
    await db.schema.dropIndex("test_runs_test_idx").execute();
    await db.schema
      .createIndex("test_runs_test_idx")
      .on("test_runs")
      .columns(["test_key", "at"])
      .execute();
  },
};
