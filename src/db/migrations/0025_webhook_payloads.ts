import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * Webhook deliveries' payloads in a table of their own (`webhook_payloads`), so that the inbox's
 * claims and completions rewrite a small row and not the payload (some 20 KB) as well. A payload is
 * deleted with its delivery's completion or prune; failed and parked deliveries keep theirs.
 * Existing payloads are moved over.
 */
export const webhookPayloads: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("webhook_payloads")
      .addColumn("delivery_key", t.bigint, (c) =>
        c.primaryKey().references("webhook_deliveries.key").onDelete("cascade"),
      )
      .addColumn("payload", "text", (c) => c.notNull())
      .execute();
    await sql`insert into webhook_payloads (delivery_key, payload)
      select key, payload from webhook_deliveries`.execute(db);
    await db.schema.alterTable("webhook_deliveries").dropColumn("payload").execute();
  },

  async down(db) {
    await db.schema
      .alterTable("webhook_deliveries")
      .addColumn("payload", "text", (c) => c.notNull().defaultTo("{}"))
      .execute();
    await sql`update webhook_deliveries set payload = (select p.payload from webhook_payloads p
      where p.delivery_key = webhook_deliveries.key)
      where exists (select 1 from webhook_payloads p where p.delivery_key = webhook_deliveries.key)`.execute(
      db,
    );
    await db.schema.dropTable("webhook_payloads").execute();
  },
};
