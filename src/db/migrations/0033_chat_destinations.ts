import type { DialectMigration } from "./types.js";

/**
 * Slack and Microsoft Teams destinations on the outbound webhook outbox: an endpoint's `kind`
 * (`webhook`, the default and every endpoint before; `slack`, `slack_bot`, `teams`), the Slack
 * `channel` a bot posts to, and the `code_owners` (JSON array; empty: every test) whose tests'
 * events it takes. A bot's token is kept in `secret`; a Slack or Teams URL is its credential.
 */
export const chatDestinations: DialectMigration = {
  async up(db) {
    // One column a statement: SQLite adds one at a time.
    await db.schema
      .alterTable("outbound_endpoints")
      .addColumn("kind", "text", (c) => c.notNull().defaultTo("webhook"))
      .execute();
    await db.schema.alterTable("outbound_endpoints").addColumn("channel", "text").execute();
    await db.schema
      .alterTable("outbound_endpoints")
      .addColumn("code_owners", "text", (c) => c.notNull().defaultTo("[]"))
      .execute();
  },

  async down(db) {
    for (const column of ["code_owners", "channel", "kind"]) {
      await db.schema.alterTable("outbound_endpoints").dropColumn(column).execute();
    }
  },
};
