import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * The local git host and the built-in CI runner: what git has no place for. Pull requests of local
 * repositories (`local_pull_requests`, numbered per repository) and the runner's runs (`ci_runs`:
 * the request, so that a restarted runner can resume it, under a lease; the checks' outcomes and
 * log files).
 */
export const localGitHost: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("local_pull_requests")
      .addColumn("repository_id", "text", (c) =>
        c.notNull().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("number", t.bigint, (c) => c.notNull())
      .addColumn("head_branch", "text", (c) => c.notNull())
      .addColumn("base_branch", "text", (c) => c.notNull())
      .addColumn("title", "text", (c) => c.notNull())
      .addColumn("author", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("merging_sha", "text")
      .addColumn("merged_sha", "text")
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("closed_at", t.bigint)
      .addPrimaryKeyConstraint("local_pull_requests_pk", ["repository_id", "number"])
      .execute();

    await db.schema
      .createTable("ci_runs")
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("run_id", "text", (c) => c.notNull())
      .addColumn("request", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("checks", "text", (c) => c.notNull())
      .addColumn("error", "text")
      .addColumn("flaky_only", t.bool, (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("finished_at", t.bigint)
      .addColumn("owner", "text")
      .addColumn("lease_until", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addPrimaryKeyConstraint("ci_runs_pk", ["queue_id", "run_id"])
      .execute();
    // A restarted runner looks for the runs it had not finished.
    await db.schema
      .createIndex("ci_runs_unfinished_idx")
      .on("ci_runs")
      .columns(["status", "created_at"])
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("ci_runs").execute();
    await db.schema.dropTable("local_pull_requests").execute();
  },
};
