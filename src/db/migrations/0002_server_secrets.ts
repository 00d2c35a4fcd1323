import type { DialectMigration } from "./types.js";

/** Keys the server signs with (page tokens, upload URLs), shared by every process. */
export const serverSecrets: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("server_secrets")
      .addColumn("name", "text", (c) => c.primaryKey())
      .addColumn("value", "text", (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .execute();
  },
  async down(db) {
    await db.schema.dropTable("server_secrets").execute();
  },
};
