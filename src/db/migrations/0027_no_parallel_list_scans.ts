import { sql } from "kysely";
import type { DialectMigration } from "./types.js";

/** The tables whose scans the Flaky Tests lists and the tests' figures make on every request. */
const TABLES = ["test_daily_stats", "test_hourly_stats", "test_runs"] as const;

/**
 * PostgreSQL: scans of the per-day and per-hour counts and of the raw runs are planned without
 * parallel workers. Every read Mainline makes of them is bounded by an index to a repository and a
 * time range, and takes a few milliseconds; starting workers for it costs more than that on a busy
 * server, and a request would otherwise have to turn them off for itself (a transaction and a
 * setting: two more round trips). An operator who wants parallel scans for their own analytics
 * can `alter table … reset (parallel_workers)`. SQLite has no parallel plans.
 */
export const noParallelListScans: DialectMigration = {
  async up(db, types) {
    if (types.bool !== "boolean") return;
    for (const table of TABLES) {
      await sql`alter table ${sql.table(table)} set (parallel_workers = 0)`.execute(db);
    }
  },
  async down(db, types) {
    if (types.bool !== "boolean") return;
    for (const table of TABLES) {
      await sql`alter table ${sql.table(table)} reset (parallel_workers)`.execute(db);
    }
  },
};
