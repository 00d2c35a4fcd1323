import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * The merge-queue engine's storage (`db/stores/merge-queue-runtime.ts`), all of it per queue: the
 * snapshot and the lease of its only writer (`mq_runtime`); the entries, transitions and runs the
 * API lists (`mq_entries`, `mq_transitions`, `mq_runs`); the driver's inbox (`mq_commands`).
 */
export const mergeQueueEngine: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("mq_runtime")
      .addColumn("queue_id", "text", (c) =>
        c.primaryKey().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("snapshot", "text", (c) => c.notNull())
      .addColumn("wake_at", t.bigint)
      .addColumn("lease_owner", "text")
      .addColumn("lease_epoch", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("lease_expires_at", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("mq_runtime_wake_idx")
      .on("mq_runtime")
      .column("wake_at")
      .where(sql.ref("wake_at"), "is not", null)
      .execute();

    await db.schema
      .createTable("mq_entries")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("seq", t.bigint, (c) => c.notNull())
      .addColumn("pr_number", t.bigint, (c) => c.notNull())
      .addColumn("pr_title", "text", (c) => c.notNull())
      .addColumn("pr_sha", "text", (c) => c.notNull())
      .addColumn("pr_head_branch", "text", (c) => c.notNull())
      .addColumn("pr_base_branch", "text", (c) => c.notNull())
      .addColumn("pr_author", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("state_changed_at", t.bigint, (c) => c.notNull())
      .addColumn("submitted_at", t.bigint, (c) => c.notNull())
      .addColumn("concluded_at", t.bigint)
      .addColumn("priority_value", t.bigint, (c) => c.notNull())
      .addColumn("used_default_priority", t.bool, (c) => c.notNull())
      .addColumn("no_batch", t.bool, (c) => c.notNull())
      .addColumn("readiness", "text", (c) => c.notNull())
      .addColumn("last_reason", "text", (c) => c.notNull())
      .execute();
    // `seq` is the listing cursor: unique within a queue, so that pages never skip or repeat.
    await db.schema
      .createIndex("mq_entries_seq_idx")
      .on("mq_entries")
      .columns(["queue_id", "seq"])
      .unique()
      .execute();
    await db.schema
      .createIndex("mq_entries_pr_idx")
      .on("mq_entries")
      .columns(["queue_id", "pr_number", "seq"])
      .execute();
    await db.schema
      .createIndex("mq_entries_branch_idx")
      .on("mq_entries")
      .columns(["queue_id", "pr_head_branch", "seq"])
      .execute();
    await db.schema
      .createIndex("mq_entries_concluded_idx")
      .on("mq_entries")
      .columns(["queue_id", "concluded_at"])
      .execute();
    await db.schema
      .createIndex("mq_entries_state_idx")
      .on("mq_entries")
      .columns(["queue_id", "state", "seq"])
      .execute();
    await db.schema
      .createIndex("mq_entries_active_idx")
      .on("mq_entries")
      .columns(["queue_id", "seq"])
      .where(sql.ref("concluded_at"), "is", null)
      .execute();

    await db.schema
      .createTable("mq_transitions")
      .addColumn("id", t.autoKey, (c) => c.primaryKey())
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("entry_id", "text", (c) => c.notNull())
      .addColumn("at", t.bigint, (c) => c.notNull())
      .addColumn("from_state", "text")
      .addColumn("to_state", "text", (c) => c.notNull())
      .addColumn("reason", "text", (c) => c.notNull())
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("run_id", "text")
      .addColumn("detail", "text")
      .execute();
    await db.schema
      .createIndex("mq_transitions_entry_idx")
      .on("mq_transitions")
      .columns(["entry_id", "id"])
      .execute();
    await db.schema
      .createIndex("mq_transitions_queue_idx")
      .on("mq_transitions")
      .columns(["queue_id", "at"])
      .execute();

    await db.schema
      .createTable("mq_runs")
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("id", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("base_sha", "text", (c) => c.notNull())
      .addColumn("test_branch", "text")
      .addColumn("test_branch_sha", "text")
      .addColumn("prs", "text", (c) => c.notNull())
      .addColumn("unit", "text", (c) => c.notNull())
      .addColumn("required_statuses", "text", (c) => c.notNull())
      .addColumn("required_statuses_source", "text")
      .addColumn("checks", "text", (c) => c.notNull())
      .addColumn("started_at", t.bigint, (c) => c.notNull())
      .addColumn("finished_at", t.bigint)
      .addPrimaryKeyConstraint("mq_runs_pk", ["queue_id", "id"])
      .execute();

    await db.schema
      .createTable("mq_commands")
      .addColumn("id", t.autoKey, (c) => c.primaryKey())
      .addColumn("queue_id", "text", (c) =>
        c.notNull().references("merge_queues.id").onDelete("cascade"),
      )
      .addColumn("payload", "text", (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("applied_at", t.bigint)
      .addColumn("result", "text")
      .execute();
    // Pending commands only: the driver's inbox and the scheduler's look for due queues.
    await db.schema
      .createIndex("mq_commands_pending_idx")
      .on("mq_commands")
      .columns(["queue_id", "id"])
      .where(sql.ref("applied_at"), "is", null)
      .execute();
  },

  async down(db) {
    for (const table of ["mq_commands", "mq_runs", "mq_transitions", "mq_entries", "mq_runtime"]) {
      await db.schema.dropTable(table).execute();
    }
  },
};
