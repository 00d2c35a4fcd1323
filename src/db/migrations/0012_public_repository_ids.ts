import type { DialectMigration } from "./types.js";

/**
 * A repository's public id (Trunk's `x-trunk-public-repo-id`): lets uploads from forks, which hold
 * no secrets, create uploads for that one repository. Given on first request, so null until then.
 */
export const publicRepositoryIds: DialectMigration = {
  async up(db) {
    await db.schema.alterTable("repositories").addColumn("public_id", "text").execute();
    await db.schema
      .createIndex("repositories_public_id")
      .unique()
      .on("repositories")
      .column("public_id")
      .execute();
  },

  async down(db) {
    await db.schema.dropIndex("repositories_public_id").execute();
    await db.schema.alterTable("repositories").dropColumn("public_id").execute();
  },
};
