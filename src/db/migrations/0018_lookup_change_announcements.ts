import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * PostgreSQL: every change to the rows the servers cache (tokens, organizations, repositories,
 * merge queues) is announced on channel `mainline_lookups`, at the writer's commit, whoever wrote
 * it (a server, `mainline admin`, SQL by hand). SQLite needs nothing: a server notices another
 * process's commits with `PRAGMA data_version`.
 */
const TABLES = ["api_tokens", "organizations", "repositories", "merge_queues"] as const;

export const lookupChangeAnnouncements: DialectMigration = {
  async up(db, types) {
    if (types.bool !== "boolean") return;
    await sql`create or replace function mainline_lookups_changed() returns trigger
      language plpgsql as $$
      begin
        perform pg_notify('mainline_lookups', tg_table_name);
        return null;
      end
      $$`.execute(db);
    for (const table of TABLES) {
      await sql`create trigger ${sql.raw(`${table}_announce`)}
        after insert or update or delete or truncate on ${sql.table(table)}
        for each statement execute function mainline_lookups_changed()`.execute(db);
    }
  },
  async down(db, types) {
    if (types.bool !== "boolean") return;
    for (const table of TABLES) {
      await sql`drop trigger if exists ${sql.raw(`${table}_announce`)} on ${sql.table(table)}`.execute(
        db,
      );
    }
    await sql`drop function if exists mainline_lookups_changed()`.execute(db);
  },
};
