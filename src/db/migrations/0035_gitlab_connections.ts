import type { DialectMigration } from "./types.js";

/**
 * Organizations' connections to the configured GitLab instance (docs/gitlab.md): the token
 * Mainline acts with, its user and scopes as GitLab answered, and the secret of the webhooks
 * that reach `/v1/gitlab/webhooks/{hook_key}`.
 */
export const gitlabConnections: DialectMigration = {
  async up(db, t) {
    await db.schema
      .createTable("gitlab_connections")
      .addColumn("organization_id", "text", (c) =>
        c.primaryKey().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("hook_key", "text", (c) => c.notNull().unique())
      .addColumn("instance_url", "text", (c) => c.notNull())
      .addColumn("token", "text", (c) => c.notNull())
      .addColumn("user_id", t.bigint, (c) => c.notNull())
      .addColumn("username", "text", (c) => c.notNull())
      // JSON array of scopes.
      .addColumn("scopes", "text", (c) => c.notNull())
      .addColumn("expires_at", t.bigint)
      .addColumn("webhook_secret", "text", (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .addColumn("updated_at", t.bigint, (c) => c.notNull())
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("gitlab_connections").execute();
  },
};
