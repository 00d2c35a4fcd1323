import type { DialectMigration } from "./types.js";

/**
 * The runs the GitHub CI provider watches (`github_ci_runs`): the driver's request, the required
 * checks resolved for it (with their App pins), the draft testing pull request opened for it, and
 * its result once concluded. Runs still `watching` are watched again after a restart.
 */
export const githubCiRuns: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("github_ci_runs")
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("run_id", "text", (c) => c.notNull())
      .addColumn("sha", "text", (c) => c.notNull())
      .addColumn("request", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("required", "text")
      .addColumn("result", "text")
      .addColumn("test_pr_number", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("finished_at", t.bigint)
      .addPrimaryKeyConstraint("github_ci_runs_pk", ["queue_id", "run_id"])
      .execute();
    // Restarts look for the runs still watched; webhooks look a run up by its tested commit.
    await db.schema
      .createIndex("github_ci_runs_status_idx")
      .on("github_ci_runs")
      .columns(["status", "created_at"])
      .execute();
    await db.schema
      .createIndex("github_ci_runs_sha_idx")
      .on("github_ci_runs")
      .column("sha")
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("github_ci_runs").execute();
  },
};
