import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Test results on GitHub pull requests (off by default per repository):
 * `repository_test_settings.pull_request_comments`; `github_pr_test_reports`, per pull request the
 * comment's id and a digest of what it shows; and processed uploads that name a pull request by
 * when they were processed, which the comment's worker follows.
 */
export const prTestReports: DialectMigration = {
  async up(db, t) {
    await db.schema
      .alterTable("repository_test_settings")
      .addColumn("pull_request_comments", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .createTable("github_pr_test_reports")
      .addColumn("repository_id", "text", (c) =>
        c.notNull().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("pr_number", "integer", (c) => c.notNull())
      .addColumn("comment_id", t.bigint)
      .addColumn("head_sha", "text")
      .addColumn("presented", "text")
      .addColumn("unsure", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("github_pr_test_reports_pk", ["repository_id", "pr_number"])
      .execute();
    await db.schema
      .createIndex("uploads_pr_processed_idx")
      .on("uploads")
      .column("processed_at")
      .where(sql.ref("pr_number"), "is not", null)
      .execute();
  },

  async down(db) {
    await db.schema.dropIndex("uploads_pr_processed_idx").execute();
    await db.schema.dropTable("github_pr_test_reports").execute();
    await db.schema
      .alterTable("repository_test_settings")
      .dropColumn("pull_request_comments")
      .execute();
  },
};
