import { sql, type Kysely } from "kysely";
import type { ColumnTypes, DialectMigration } from "./types.js";

/**
 * Dashboard sessions signed in with GitHub: `token_id` becomes nullable, and such a session names
 * the GitHub user and the installation it entered through (the lookup refuses it once that
 * installation is unlinked). SQLite cannot drop a NOT NULL: the table is rebuilt there, rows and
 * indexes kept.
 */

async function createSessions(
  db: Kysely<unknown>,
  t: ColumnTypes,
  name: string,
  github: boolean,
): Promise<void> {
  let table = db.schema
    .createTable(name)
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("id_hash", "text", (c) => c.notNull().unique())
    .addColumn("organization_id", "text", (c) =>
      c.notNull().references("organizations.id").onDelete("cascade"),
    )
    .addColumn("token_id", "text", (c) =>
      github
        ? c.references("api_tokens.id").onDelete("cascade")
        : c.notNull().references("api_tokens.id").onDelete("cascade"),
    )
    .addColumn("created_at", t.bigint, (c) => c.notNull())
    .addColumn("last_seen_at", t.bigint, (c) => c.notNull())
    .addColumn("expires_at", t.bigint, (c) => c.notNull())
    .addColumn("revoked_at", t.bigint)
    .addColumn("revoked_reason", "text");
  if (github) {
    table = table
      .addColumn("github_user_id", t.bigint)
      .addColumn("github_login", "text")
      .addColumn("github_installation_id", t.bigint);
  }
  await table.execute();
}

const COMMON_COLUMNS = [
  "id",
  "id_hash",
  "organization_id",
  "token_id",
  "created_at",
  "last_seen_at",
  "expires_at",
  "revoked_at",
  "revoked_reason",
];

/** SQLite: a new table of that shape, the rows copied over, then renamed; indexes again. */
async function rebuildOnSqlite(db: Kysely<unknown>, t: ColumnTypes, github: boolean) {
  await createSessions(db, t, "web_sessions_new", github);
  const columns = sql.raw(COMMON_COLUMNS.map((c) => `"${c}"`).join(", "));
  // Going down, sessions without a token cannot stay.
  await sql`insert into web_sessions_new (${columns}) select ${columns} from web_sessions where token_id is not null`.execute(
    db,
  );
  await db.schema.dropTable("web_sessions").execute();
  await db.schema.alterTable("web_sessions_new").renameTo("web_sessions").execute();
  await db.schema
    .createIndex("web_sessions_organization_idx")
    .on("web_sessions")
    .columns(["organization_id", "created_at"])
    .execute();
  await db.schema
    .createIndex("web_sessions_token_idx")
    .on("web_sessions")
    .column("token_id")
    .execute();
}

export const githubSessions: DialectMigration = {
  async up(db, t) {
    if (t.bigint === "integer") {
      await rebuildOnSqlite(db, t, true);
      return;
    }
    await db.schema
      .alterTable("web_sessions")
      .alterColumn("token_id", (c) => c.dropNotNull())
      .execute();
    await db.schema
      .alterTable("web_sessions")
      .addColumn("github_user_id", t.bigint)
      .addColumn("github_login", "text")
      .addColumn("github_installation_id", t.bigint)
      .execute();
  },

  async down(db, t) {
    if (t.bigint === "integer") {
      await rebuildOnSqlite(db, t, false);
      return;
    }
    await db
      .deleteFrom("web_sessions" as never)
      .where("token_id" as never, "is", null)
      .execute();
    await db.schema
      .alterTable("web_sessions")
      .dropColumn("github_user_id")
      .dropColumn("github_login")
      .dropColumn("github_installation_id")
      .execute();
    await db.schema
      .alterTable("web_sessions")
      .alterColumn("token_id", (c) => c.setNotNull())
      .execute();
  },
};
