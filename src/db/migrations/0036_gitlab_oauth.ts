import type { DialectMigration } from "./types.js";

/**
 * GitLab connections made through an OAuth application (docs/gitlab.md, "Connecting with an
 * OAuth application"): the grant's refresh token and redirect URI, when its access token was
 * issued, the lease one process holds while it refreshes (GitLab revokes the previous pair the
 * moment it issues a new one, so two processes must never refresh at once), and why the
 * connection stopped working when GitLab refused its refresh. The authorizations under way wait
 * in `gitlab_oauth_states`, keyed by a hash of the `state` GitLab hands back.
 */
export const gitlabOAuth: DialectMigration = {
  async up(db, t) {
    await db.schema
      .alterTable("gitlab_connections")
      .addColumn("method", "text", (c) => c.notNull().defaultTo("token"))
      .execute();
    await db.schema.alterTable("gitlab_connections").addColumn("refresh_token", "text").execute();
    await db.schema.alterTable("gitlab_connections").addColumn("redirect_uri", "text").execute();
    await db.schema.alterTable("gitlab_connections").addColumn("issued_at", t.bigint).execute();
    await db.schema
      .alterTable("gitlab_connections")
      .addColumn("refresh_lease_until", t.bigint)
      .execute();
    await db.schema.alterTable("gitlab_connections").addColumn("problem", "text").execute();

    await db.schema
      .createTable("gitlab_oauth_states")
      .addColumn("state_hash", "text", (c) => c.primaryKey())
      .addColumn("organization_id", "text", (c) =>
        c.notNull().references("organizations.id").onDelete("cascade"),
      )
      .addColumn("code_verifier", "text", (c) => c.notNull())
      .addColumn("redirect_uri", "text", (c) => c.notNull())
      .addColumn("expires_at", t.bigint, (c) => c.notNull())
      .addColumn("created_at", t.bigint, (c) => c.notNull())
      .execute();
  },

  async down(db) {
    await db.schema.dropTable("gitlab_oauth_states").execute();
    for (const column of [
      "problem",
      "refresh_lease_until",
      "issued_at",
      "redirect_uri",
      "refresh_token",
      "method",
    ]) {
      await db.schema.alterTable("gitlab_connections").dropColumn(column).execute();
    }
  },
};
