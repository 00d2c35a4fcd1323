import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/** Organizations, their API tokens, repositories and merge-queue settings. */
export const initial: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("organizations")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("slug", "text", (c) => c.notNull().unique())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable("api_tokens")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("name", "text")
      .addColumn("token_hash", "text", (c) => c.notNull().unique())
      .addColumn("token_hint", "text", (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("revoked_at", t.bigint)
      .execute();
    await db.schema
      .createIndex("api_tokens_organization_idx")
      .on("api_tokens")
      .column("organization_id")
      .execute();

    await db.schema
      .createTable("repositories")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("host", "text", (c) => c.notNull())
      .addColumn("owner", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("lookup_key", "text", (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addUniqueConstraint("repositories_lookup_unique", ["organization_id", "lookup_key"])
      .execute();

    await db.schema
      .createTable("merge_queues")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("repository_id", "text", (c) =>
        c.notNull().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("target_branch", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("mode", "text", (c) => c.notNull())
      .addColumn("pending_mode", "text")
      .addColumn("concurrency", t.bigint, (c) => c.notNull())
      .addColumn("bisection_concurrency", t.bigint, (c) => c.notNull())
      .addColumn("testing_timeout_minutes", t.bigint, (c) => c.notNull())
      .addColumn("pending_failure_depth", t.bigint, (c) => c.notNull())
      .addColumn("can_optimistically_merge", t.bool, (c) => c.notNull())
      .addColumn("batch", t.bool, (c) => c.notNull())
      .addColumn("batching_max_wait_time_minutes", t.bigint, (c) => c.notNull())
      .addColumn("batching_min_size", t.bigint, (c) => c.notNull())
      .addColumn("merge_method", "text", (c) => c.notNull())
      .addColumn("comments_enabled", t.bool, (c) => c.notNull())
      .addColumn("commands_enabled", t.bool, (c) => c.notNull())
      .addColumn("create_prs_for_testing_branches", t.bool, (c) => c.notNull())
      .addColumn("status_check_enabled", t.bool, (c) => c.notNull())
      .addColumn("direct_merge_mode", "text", (c) => c.notNull())
      .addColumn("optimization_mode", "text", (c) => c.notNull())
      .addColumn("required_statuses", "text")
      .addColumn("extension_enabled", t.bool, (c) => c.notNull())
      .addColumn("enqueueing_label", "text", (c) => c.notNull())
      .addColumn("label_commands_enabled", t.bool, (c) => c.notNull())
      .addColumn("state_labels_enabled", t.bool, (c) => c.notNull())
      .addColumn("not_ready_timeout_hours", t.bigint, (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .addColumn("version", t.bigint, (c) => c.notNull().defaultTo(sql`1`))
      .addUniqueConstraint("merge_queues_branch_unique", ["repository_id", "target_branch"])
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("merge_queues").execute();
    await db.schema.dropTable("repositories").execute();
    await db.schema.dropTable("api_tokens").execute();
    await db.schema.dropTable("organizations").execute();
  },
};
