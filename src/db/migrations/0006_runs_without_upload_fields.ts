import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * A run's commit, branch and PR are its upload's: they were written again with every run
 * (a third of a run's bytes) and are now read from the upload row.
 */
export const runsWithoutUploadFields: DialectMigration = {
  async up(db) {
    for (const column of ["commit_sha", "branch", "pr_number"]) {
      await db.schema.alterTable("test_runs").dropColumn(column).execute();
    }
  },
  async down(db, t) {
    await db.schema
      .alterTable("test_runs")
      .addColumn("commit_sha", "text", (c) => c.notNull().defaultTo(""))
      .execute();
    await db.schema
      .alterTable("test_runs")
      .addColumn("branch", "text", (c) => c.notNull().defaultTo(""))
      .execute();
    await db.schema.alterTable("test_runs").addColumn("pr_number", t.bigint).execute();
    await sql`update test_runs set commit_sha = coalesce(u.commit_sha, ''),
        branch = coalesce(u.branch, ''), pr_number = u.pr_number
      from uploads u where u.key = test_runs.upload_key`.execute(db);
  },
};
