import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Tickets for tests (docs/tickets.md): an organization's ticket connections (Jira Cloud, Jira Data
 * Center, Linear, GitHub Issues); the tickets created through them, linked to their test (the
 * link itself stays `test_cases.ticket`), with their state as last read; the intent of each
 * create under way, written before the provider is called; and per repository the connection and
 * the automatic rule (`repository_test_settings`).
 */
export const tickets: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("ticket_connections")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("base_url", "text")
      .addColumn("target", "text")
      .addColumn("issue_type", "text")
      // JSON array of labels.
      .addColumn("labels", "text", (c) => c.notNull())
      .addColumn("email", "text")
      .addColumn("credential", "text")
      .addColumn("last_error", "text")
      .addColumn("last_error_at", t.bigint)
      .addColumn("last_success_at", t.bigint)
      .addColumn("failures", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("paused_until", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("ticket_connections_org_idx")
      .on("ticket_connections")
      .columns(["organization_id", "created_at"])
      .execute();

    await db.schema
      .createTable("test_tickets")
      .addColumn("test_key", t.bigint, (c) =>
        c.primaryKey().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("connection_id", "text", (c) =>
        c.references("ticket_connections.id").onDelete("set null"),
      )
      .addColumn("url", "text", (c) => c.notNull())
      .addColumn("key", "text", (c) => c.notNull())
      .addColumn("external_id", "text", (c) => c.notNull())
      .addColumn("state_name", "text")
      .addColumn("state_open", t.bool)
      .addColumn("state_checked_at", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("test_tickets_checked_idx")
      .on("test_tickets")
      .column("state_checked_at")
      .where(sql.ref("connection_id"), "is not", null)
      .execute();

    await db.schema
      .createTable("ticket_intents")
      .addColumn("test_key", t.bigint, (c) =>
        c.primaryKey().references("test_cases.key").onDelete("cascade"),
      )
      .addColumn("connection_id", "text", (c) =>
        c.notNull().references("ticket_connections.id").onDelete("cascade"),
      )
      .addColumn("marker", "text", (c) => c.notNull())
      .addColumn("previous_ticket", "text")
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull())
      .addColumn("lease_until", t.bigint, (c) => c.notNull())
      .addColumn("last_error", "text")
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("ticket_intents_lease_idx")
      .on("ticket_intents")
      .columns(["lease_until", "test_key"])
      .execute();

    await db.schema
      .alterTable("repository_test_settings")
      .addColumn("ticket_connection_id", "text")
      .execute();
    // JSON of the automatic rule; null: the defaults (off).
    await db.schema
      .alterTable("repository_test_settings")
      .addColumn("ticket_rule", "text")
      .execute();
  },

  async down(db) {
    await db.schema.alterTable("repository_test_settings").dropColumn("ticket_rule").execute();
    await db.schema
      .alterTable("repository_test_settings")
      .dropColumn("ticket_connection_id")
      .execute();
    for (const table of ["ticket_intents", "test_tickets", "ticket_connections"]) {
      await db.schema.dropTable(table).execute();
    }
  },
};
