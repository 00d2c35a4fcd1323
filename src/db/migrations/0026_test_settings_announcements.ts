import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/**
 * PostgreSQL: a change to a repository's test-health settings is announced on `mainline_lookups`
 * (migration 0018's function, the table's name as payload), so that every server drops the settings
 * it caches, and nothing else. SQLite needs nothing (`PRAGMA data_version`).
 */
export const testSettingsAnnouncements: DialectMigration = {
  async up(db, types) {
    if (types.bool !== "boolean") return;
    await sql`create trigger repository_test_settings_announce
      after insert or update or delete or truncate on repository_test_settings
      for each statement execute function mainline_lookups_changed()`.execute(db);
  },
  async down(db, types) {
    if (types.bool !== "boolean") return;
    await sql`drop trigger if exists repository_test_settings_announce on repository_test_settings`.execute(
      db,
    );
  },
};
