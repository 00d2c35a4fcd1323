import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * The tables every git host's provider shares, named for what they hold rather than for the first
 * host that used them: `github_ci_runs` → `watched_ci_runs` (the CI runs a provider watches, GitHub's
 * and GitLab's) and `github_pr_presence` → `pr_presence` (what a provider shows on a pull or merge
 * request). Their indexes follow; on PostgreSQL their primary keys' names too (SQLite keeps a
 * constraint's name in the table's text, where nothing reads it).
 */
const TABLES = [
  ["github_ci_runs", "watched_ci_runs"],
  ["github_pr_presence", "pr_presence"],
] as const;
/** The indexes of the first table (the runs'), named after it. */
const INDEXES = [
  ["status_idx", ["status", "created_at"]],
  ["sha_idx", ["sha"]],
] as const;

async function rename(db: Parameters<DialectMigration["up"]>[0], postgres: boolean, back: boolean) {
  for (const [github, neutral] of TABLES) {
    const [from, to] = back ? [neutral, github] : [github, neutral];
    await db.schema.alterTable(from).renameTo(to).execute();
    if (postgres) {
      await sql`alter table ${sql.table(to)} rename constraint ${sql.ref(`${from}_pk`)} to ${sql.ref(`${to}_pk`)}`.execute(
        db,
      );
    }
  }
  const [github, neutral] = TABLES[0];
  const [from, to] = back ? [neutral, github] : [github, neutral];
  for (const [suffix, columns] of INDEXES) {
    await db.schema.dropIndex(`${from}_${suffix}`).execute();
    await db.schema
      .createIndex(`${to}_${suffix}`)
      .on(to)
      .columns([...columns])
      .execute();
  }
}

export const hostNeutralTables: DialectMigration = {
  async up(db, t) {
    await rename(db, t.bigint === "bigint", false);
  },

  async down(db, t) {
    await rename(db, t.bigint === "bigint", true);
  },
};
