import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * A local pull request's description (the body its squash commit carries after the title).
 * Pull requests opened before it have none: the empty string.
 */
export const localPullRequestDescriptions: DialectMigration = {
  async up(db) {
    await db.schema
      .alterTable("local_pull_requests")
      .addColumn("description", "text", (c) => c.notNull().defaultTo(sql`''`))
      .execute();
  },

  async down(db) {
    await db.schema.alterTable("local_pull_requests").dropColumn("description").execute();
  },
};
