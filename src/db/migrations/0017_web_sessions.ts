import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * The dashboard's sign-in sessions, and an index for the trend charts' daily health counts. A
 * session is found by the SHA-256 of its cookie's random id (`id_hash`; the id is never stored);
 * `id` (`ses_…`) is a public name. Deleting its API token deletes it; revoking the token ends it.
 */
export const webSessions: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("web_sessions")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("id_hash", "text", (c) => c.notNull().unique())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("token_id", "text", (c) =>
        c.notNull().references("api_tokens.id").onDelete("cascade"),
      )
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("last_seen_at", t.bigint, (c) => c.notNull())
      .addColumn("expires_at", t.bigint, (c) => c.notNull())
      .addColumn("revoked_at", t.bigint)
      .addColumn("revoked_reason", "text")
      .execute();
    await db.schema
      .createIndex("web_sessions_organization_idx")
      .on("web_sessions")
      .columns(["organization_id", "created_at"])
      .execute();
    await db.schema
      .createIndex("web_sessions_token_idx")
      .on("web_sessions")
      .column("token_id")
      .execute();

    // The status changes of a time window, for every test at once (the daily flaky and broken
    // counts of the dashboard): covering, and only the classifier's rows.
    await db.schema
      .createIndex("test_status_history_changes_idx")
      .on("test_status_history")
      .columns(["at", "test_key", "status"])
      .where(sql.ref("kind"), "=", "status")
      .execute();
  },

  async down(db) {
    await db.schema.dropIndex("test_status_history_changes_idx").execute();
    await db.schema.dropTable("web_sessions").execute();
  },
};
