import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Outbound webhooks (issue 36): an organization's endpoints, the outbox of events (written in the
 * transaction of the change that causes them; `payload` filled and deliveries fanned out by the
 * delivery worker), one delivery per event and endpoint, and every attempt of a delivery.
 * (`webhook_deliveries` is GitHub's inbound inbox.)
 */
export const outboundWebhooks: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("outbound_endpoints")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("url", "text", (c) => c.notNull())
      .addColumn("secret", "text", (c) => c.notNull())
      // JSON arrays; empty: every event type, every repository.
      .addColumn("event_types", "text", (c) => c.notNull())
      .addColumn("repository_ids", "text", (c) => c.notNull())
      .addColumn("description", "text", (c) => c.notNull())
      .addColumn("enabled", t.bool, (c) => c.notNull())
      .addColumn("disabled_reason", "text")
      .addColumn("disabled_at", t.bigint)
      .addColumn("failing_since", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("outbound_endpoints_org_idx")
      .on("outbound_endpoints")
      .columns(["organization_id", "created_at"])
      .execute();

    await db.schema
      .createTable("outbound_events")
      .addColumn("seq", t.autoKey, (c) => c.primaryKey())
      .addColumn("id", "text", (c) => c.notNull().unique())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("repository_id", "text")
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("subject", "text", (c) => c.notNull())
      .addColumn("facts", "text", (c) => c.notNull())
      .addColumn("payload", "text")
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("prepared_at", t.bigint)
      .execute();
    await db.schema
      .createIndex("outbound_events_unprepared_idx")
      .on("outbound_events")
      .column("seq")
      .where(sql.ref("prepared_at"), "is", null)
      .execute();
    await db.schema
      .createIndex("outbound_events_org_idx")
      .on("outbound_events")
      .columns(["organization_id", "seq"])
      .execute();

    await db.schema
      .createTable("outbound_deliveries")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("event_seq", t.bigint, (c) =>
        c.notNull().references("outbound_events.seq").onDelete("cascade"),
      )
      .addColumn("endpoint_id", "text", (c) =>
        c.notNull().references("outbound_endpoints.id").onDelete("cascade"),
      )
      .addColumn("subject", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("attempts", "integer", (c) => c.notNull())
      .addColumn("next_attempt_at", t.bigint, (c) => c.notNull())
      .addColumn("lease_owner", "text")
      .addColumn("lease_until", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("outbound_deliveries_due_idx")
      .on("outbound_deliveries")
      .columns(["next_attempt_at", "event_seq"])
      .where(sql.ref("state"), "=", "pending")
      .execute();
    await db.schema
      .createIndex("outbound_deliveries_subject_idx")
      .on("outbound_deliveries")
      .columns(["endpoint_id", "subject", "event_seq"])
      .where(sql.ref("state"), "=", "pending")
      .execute();
    await db.schema
      .createIndex("outbound_deliveries_event_idx")
      .on("outbound_deliveries")
      .columns(["event_seq", "endpoint_id"])
      .execute();

    await db.schema
      .createTable("outbound_attempts")
      .addColumn("id", t.autoKey, (c) => c.primaryKey())
      .addColumn("delivery_id", "text", (c) =>
        c.notNull().references("outbound_deliveries.id").onDelete("cascade"),
      )
      .addColumn("at", t.bigint, (c) => c.notNull())
      .addColumn("status_code", "integer")
      .addColumn("error", "text")
      .addColumn("duration_ms", t.bigint, (c) => c.notNull())
      .addColumn("response", "text")
      .execute();
    await db.schema
      .createIndex("outbound_attempts_delivery_idx")
      .on("outbound_attempts")
      .columns(["delivery_id", "id"])
      .execute();
  },

  async down(db) {
    for (const table of [
      "outbound_attempts",
      "outbound_deliveries",
      "outbound_events",
      "outbound_endpoints",
    ]) {
      await db.schema.dropTable(table).execute();
    }
  },
};
