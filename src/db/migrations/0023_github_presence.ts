import type { DialectMigration } from "./types.js";

/**
 * What the GitHub App shows on pull requests, followed durably from `mq_transitions`:
 * `presence_cursors` (how far a worker read, under a lease) and `github_pr_presence` (per pull
 * request, the comment's and check run's ids, the label shown and a digest of what was last shown,
 * so that a transition read twice changes nothing on GitHub).
 */
export const githubPresence: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("presence_cursors")
      .addColumn("name", "text", (c) => c.primaryKey())
      .addColumn("last_id", t.bigint, (c) => c.notNull())
      .addColumn("lease_owner", "text")
      .addColumn("lease_until", t.bigint)
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("github_pr_presence")
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("pr_number", "integer", (c) => c.notNull())
      .addColumn("comment_id", t.bigint)
      .addColumn("check_run_id", t.bigint)
      .addColumn("check_sha", "text")
      .addColumn("state_label", "text")
      .addColumn("presented", "text")
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("github_pr_presence_pk", ["queue_id", "pr_number"])
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("github_pr_presence").execute();
    await db.schema.dropTable("presence_cursors").execute();
  },
};
