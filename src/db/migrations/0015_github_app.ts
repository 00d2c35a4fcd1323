import type { DialectMigration } from "./types.js";

/**
 * The GitHub App: its installations and the Mainline organization each is linked to; the
 * repositories each installation grants, by GitHub's repository id, with the organization's
 * repository row they are; and the durable inbox of webhook deliveries (stored before they are
 * acknowledged, processed after, under a lease).
 */
export const githubApp: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("github_installations")
      .addColumn("id", t.bigint, (c) => c.primaryKey())
      .addColumn("account_id", t.bigint, (c) => c.notNull())
      .addColumn("account_login", "text", (c) => c.notNull())
      .addColumn("account_type", "text", (c) => c.notNull())
      .addColumn("repository_selection", "text", (c) => c.notNull())
      .addColumn("organization_id", "text", (c) =>
        c.references("organizations.id").onDelete("set null"),
      )
      .addColumn("linked_at", t.bigint)
      .addColumn("suspended_at", t.bigint)
      .addColumn("deleted_at", t.bigint)
      .addColumn("synced_at", t.bigint)
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("github_installations_organization_idx")
      .on("github_installations")
      .column("organization_id")
      .execute();

    await db.schema
      .createTable("github_repositories")
      .addColumn("github_id", t.bigint, (c) => c.primaryKey())
      .addColumn("installation_id", t.bigint, (c) =>
        c.notNull().references("github_installations.id").onDelete("cascade"),
      )
      .addColumn("owner", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("organization_id", "text", (c) =>
        c.references("organizations.id").onDelete("set null"),
      )
      .addColumn("repository_id", "text", (c) =>
        c.references("repositories.id").onDelete("set null"),
      )
      .addColumn("removed_at", t.bigint)
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("github_repositories_installation_idx")
      .on("github_repositories")
      .column("installation_id")
      .execute();
    // Resolution: an organization's repository row → the GitHub repository that is it.
    await db.schema
      .createIndex("github_repositories_repository_idx")
      .on("github_repositories")
      .columns(["repository_id", "organization_id"])
      .execute();

    await db.schema
      .createTable("webhook_deliveries")
      .addColumn("key", t.autoKey, (c) => c.primaryKey())
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("delivery_id", "text", (c) => c.notNull())
      .addColumn("event", "text", (c) => c.notNull())
      .addColumn("action", "text")
      .addColumn("installation_id", t.bigint)
      .addColumn("payload", "text", (c) => c.notNull())
      .addColumn("received_at", t.bigint, (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("attempts", t.bigint, (c) => c.notNull())
      .addColumn("lease_until", t.bigint)
      .addColumn("lease_owner", "text")
      .addColumn("next_attempt_at", t.bigint, (c) => c.notNull())
      .addColumn("error", "text")
      .addColumn("processed_at", t.bigint)
      .addUniqueConstraint("webhook_deliveries_delivery_unique", ["source", "delivery_id"])
      .execute();
    // The worker's claim: ready deliveries, oldest first.
    await db.schema
      .createIndex("webhook_deliveries_ready_idx")
      .on("webhook_deliveries")
      .columns(["state", "next_attempt_at", "key"])
      .execute();
    // Linking an installation wakes its parked deliveries.
    await db.schema
      .createIndex("webhook_deliveries_installation_idx")
      .on("webhook_deliveries")
      .columns(["installation_id", "state"])
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("webhook_deliveries").execute();
    await db.schema.dropTable("github_repositories").execute();
    await db.schema.dropTable("github_installations").execute();
  },
};
