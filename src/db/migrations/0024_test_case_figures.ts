import { sql } from "kysely";
import { ALL_TESTS, computeFigures } from "../figures.js";
import type { DialectMigration } from "./types.js";

/**
 * Each test's 7-day figures stored with it (failure rate, counted runs, impacted pull requests,
 * `figures_at`, `figures_expire_at`), so that the repository page reads its tests table by index;
 * one index per sort of the table, backfilled as of the migration's time. Names sort by code point
 * as JavaScript's `<` does (`C` collation on PostgreSQL). ADR 0030 says why.
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
