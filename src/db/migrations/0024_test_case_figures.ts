import { sql } from "kysely";
import { ALL_TESTS, computeFigures } from "../figures.js";
import type { DialectMigration } from "./types.js";

/**
 * Each test's 7-day figures stored with it (ADR 0030), so that the repository page reads a page
 * of its tests table by index instead of computing every test's figures: the failure rate,
 * counted runs and impacted pull requests of the last 7 days, when they were computed
 * (`figures_at`) and when they stop being true as the window moves (`figures_expire_at`; 0 until
 * computed, null when nothing counted can leave the window). One index per sort of the table;
 * one to find the figures to compute again; one for the tests' distinct files (their code
 * owners). Backfilled as of the migration's time.
 *
 * The name sorts as JavaScript's `<` does (code points): the `C` collation on PostgreSQL,
 * SQLite's default binary one.
 */
export const testCaseFigures: DialectMigration = {
  async up(db, t) {
    const postgres = t.bigint === "bigint";
    await db.schema
      .alterTable("test_cases")
      .addColumn("week_failure_rate", t.double, (c) => c.notNull().defaultTo(0))
      .execute();
    for (const column of ["week_runs", "week_prs_impacted", "figures_at"]) {
      await db.schema
        .alterTable("test_cases")
        .addColumn(column, t.bigint, (c) => c.notNull().defaultTo(0))
        .execute();
    }
    await db.schema
      .alterTable("test_cases")
      .addColumn("figures_expire_at", t.bigint, (c) => c.defaultTo(0))
      .execute();
    const name = sql.raw(postgres ? `name collate "C"` : "name");
    const nullsLast = sql.raw(postgres ? " nulls last" : "");
    await sql`create index test_cases_by_failure_rate_idx on test_cases
      (repository_id, week_failure_rate desc, week_prs_impacted desc, ${name}, key)`.execute(db);
    await sql`create index test_cases_by_prs_impacted_idx on test_cases
      (repository_id, week_prs_impacted desc, week_failure_rate desc, ${name}, key)`.execute(db);
    await sql`create index test_cases_by_last_failure_idx on test_cases
      (repository_id, last_failure_at desc${nullsLast}, ${name}, key)`.execute(db);
    await sql`create index test_cases_figures_expiry_idx on test_cases
      (repository_id, figures_expire_at, figures_at)`.execute(db);
    await sql`create index test_cases_file_idx on test_cases (repository_id, file)`.execute(db);
    await computeFigures(db, postgres ? "postgres" : "sqlite", ALL_TESTS, Date.now());
  },

  async down(db) {
    for (const index of [
      "test_cases_by_failure_rate_idx",
      "test_cases_by_prs_impacted_idx",
      "test_cases_by_last_failure_idx",
      "test_cases_figures_expiry_idx",
      "test_cases_file_idx",
    ]) {
      await db.schema.dropIndex(index).execute();
    }
    for (const column of [
      "week_failure_rate",
      "week_runs",
      "week_prs_impacted",
      "figures_at",
      "figures_expire_at",
    ]) {
      await db.schema.alterTable("test_cases").dropColumn(column).execute();
    }
  },
};
