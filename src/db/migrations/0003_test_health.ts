import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Test health: uploads, test cases, their runs, and the aggregates the Flaky Tests API reads
 * instead of raw runs (hourly pass/fail counts, PRs impacted, failure signatures). Tables are keyed
 * by integer keys the database assigns; the public ids (upload UUIDs, Trunk's test UUIDs) are
 * unique columns.
 */
export const testHealth: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("repository_test_settings")
      .addColumn("repository_id", "text", (c) =>
        c.primaryKey().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("monitors", "text", (c) => c.notNull())
      .addColumn("quarantining_enabled", t.bool, (c) => c.notNull())
      .addColumn("auto_quarantine", t.bool, (c) => c.notNull())
      .addColumn("ticket_base_url", "text")
      .addColumn("codeowners", "text")
      .addColumn("codeowners_updated_at", t.bigint)
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .addColumn("version", t.bigint, (c) => c.notNull().defaultTo(sql`1`))
      .execute();

    await db.schema
      .createTable("uploads")
      .addColumn("key", t.autoKey, (c) => c.primaryKey())
      .addColumn("id", "text", (c) => c.notNull().unique())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("repository_id", "text", (c) =>
        c.notNull().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("reason", "text")
      .addColumn("client_version", "text")
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("url_expires_at", t.bigint, (c) => c.notNull())
      .addColumn("received_at", t.bigint)
      .addColumn("bundle_path", "text")
      .addColumn("bundle_bytes", t.bigint)
      .addColumn("content_hash", "text")
      .addColumn("lease_until", t.bigint)
      .addColumn("attempts", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("processed_at", t.bigint)
      .addColumn("duplicate_of", "text")
      .addColumn("commit_sha", "text")
      .addColumn("branch", "text")
      .addColumn("pr_number", t.bigint)
      .addColumn("job_name", "text")
      .addColumn("job_url", "text")
      .addColumn("variant", "text")
      .addColumn("uploaded_at", t.bigint)
      .addColumn("files_total", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("files_failed", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("file_errors", "text")
      .addColumn("tests_passed", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("tests_failed", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("tests_skipped", t.bigint, (c) => c.notNull().defaultTo(sql`0`))
      .addColumn("infrastructure_failure", t.bool, (c) => c.notNull().defaultTo(sql`false`))
      .execute();
    await db.schema
      .createIndex("uploads_repository_idx")
      .on("uploads")
      .columns(["repository_id", "created_at"])
      .execute();
    await db.schema.createIndex("uploads_state_idx").on("uploads").column("state").execute();
    await db.schema
      .createIndex("uploads_commit_idx")
      .on("uploads")
      .columns(["repository_id", "commit_sha"])
      .execute();
    await db.schema
      .createIndex("uploads_content_idx")
      .on("uploads")
      .columns(["repository_id", "content_hash"])
      .execute();

    await db.schema
      .createTable("test_cases")
      .addColumn("key", t.autoKey, (c) => c.primaryKey())
      .addColumn("repository_id", "text", (c) =>
        c.notNull().references("repositories.id").onDelete("cascade"),
      )
      .addColumn("id", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("classname", "text")
      .addColumn("parent", "text")
      .addColumn("file", "text")
      .addColumn("variant", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("status_reason", "text", (c) => c.notNull())
      .addColumn("status_changed_at", t.bigint, (c) => c.notNull())
      .addColumn("monitor_states", "text", (c) => c.notNull())
      .addColumn("monitors_active", t.bool, (c) => c.notNull())
      .addColumn("quarantine_override", "text", (c) => c.notNull())
      .addColumn("override_actor", "text")
      .addColumn("override_reason", "text")
      .addColumn("override_at", t.bigint)
      .addColumn("ticket", "text")
      .addColumn("ticket_linked_at", t.bigint)
      .addColumn("first_seen_at", t.bigint, (c) => c.notNull())
      .addColumn("last_run_at", t.bigint)
      .addColumn("last_failure_at", t.bigint)
      .addUniqueConstraint("test_cases_id_unique", ["repository_id", "id"])
      .execute();
    await db.schema
      .createIndex("test_cases_status_idx")
      .on("test_cases")
      .columns(["repository_id", "status", "id"])
      .execute();
    await db.schema
      .createIndex("test_cases_override_idx")
      .on("test_cases")
      .columns(["repository_id", "quarantine_override"])
      .execute();
    await db.schema
      .createIndex("test_cases_active_idx")
      .on("test_cases")
      .column("monitors_active")
      .execute();

    await db.schema
      .createTable("test_runs")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("upload_key", t.bigint, (c) => c.notNull())
      .addColumn("file_index", t.bigint, (c) => c.notNull())
      .addColumn("at", t.bigint, (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("attempt", "text", (c) => c.notNull())
      .addColumn("commit_sha", "text", (c) => c.notNull())
      .addColumn("branch", "text", (c) => c.notNull())
      .addColumn("pr_number", t.bigint)
      .addColumn("duration_ms", t.bigint)
      .addColumn("failure_signature", "text")
      .addColumn("failure_summary", "text")
      .addColumn("failure_text", "text")
      .execute();
    await db.schema
      .createIndex("test_runs_test_idx")
      .on("test_runs")
      .columns(["test_key", "at"])
      .execute();
    await db.schema
      .createIndex("test_runs_upload_idx")
      .on("test_runs")
      .columns(["upload_key", "test_key"])
      .execute();
    await db.schema
      .createIndex("test_runs_failed_idx")
      .on("test_runs")
      .column("at")
      .where(sql.ref("status"), "=", "failed")
      .execute();

    await db.schema
      .createTable("test_hourly_stats")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("hour", t.bigint, (c) => c.notNull())
      .addColumn("repository_id", "text", (c) => c.notNull())
      .addColumn("passed", t.bigint, (c) => c.notNull())
      .addColumn("failed", t.bigint, (c) => c.notNull())
      .addColumn("excluded_failed", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("test_hourly_stats_pk", ["test_key", "hour"])
      .execute();
    await db.schema
      .createIndex("test_hourly_stats_failing_idx")
      .on("test_hourly_stats")
      .columns(["repository_id", "hour"])
      .where(sql`failed + excluded_failed`, ">", 0)
      .execute();

    await db.schema
      .createTable("test_pr_failures")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("pr_number", t.bigint, (c) => c.notNull())
      .addColumn("last_failed_at", t.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint("test_pr_failures_pk", ["test_key", "pr_number"])
      .execute();

    await db.schema
      .createTable("test_failure_groups")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("hour", t.bigint, (c) => c.notNull())
      .addColumn("signature", "text", (c) => c.notNull())
      .addColumn("occurrences", t.bigint, (c) => c.notNull())
      .addColumn("last_at", t.bigint, (c) => c.notNull())
      .addColumn("summary", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("test_failure_groups_pk", ["test_key", "hour", "signature"])
      .execute();

    await db.schema
      .createTable("test_status_history")
      .addColumn("test_key", t.bigint, (c) =>
        c.notNull().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("at", t.bigint, (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("reason", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("actor", "text")
      .execute();
    await db.schema
      .createIndex("test_status_history_idx")
      .on("test_status_history")
      .columns(["test_key", "at"])
      .execute();
  },
  async down(db) {
    for (const table of [
      "test_status_history",
      "test_failure_groups",
      "test_pr_failures",
      "test_hourly_stats",
      "test_runs",
      "test_cases",
      "uploads",
      "repository_test_settings",
    ]) {
      await db.schema.dropTable(table).execute();
    }
  },
};
