import { sql, type Kysely } from "kysely";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../lib/time.js";
import type {
  DailyRunCounts,
  RepositoryHealthRecords,
  RunCounts,
  TableTestRow,
} from "../../testhealth/ports.js";
import type { QuarantineSettings } from "../../testhealth/quarantine.js";
import type { Database } from "../schema.js";
import { quarantinedWhere } from "./test-cases.js";

/** Literal, so that SQLite uses the partial index `test_daily_stats_failing_idx`. */
const FAILING_DAY = sql.raw("failed + excluded_failed > 0");

/**
 * The repository page's reads: one statement each, whatever the number of tests. The figures of the
 * tests table are read only for the tests that failed in the window (`last_failure_at`): the others
 * have no failure and no impacted pull request.
 */
export type TestStatusFilter = "flaky" | "broken" | "quarantined" | "healthy" | undefined;

/** The columns of a row of the repository page's tests table. */
export const TABLE_ROW_COLUMNS = [
  "key",
  "id",
  "name",
  "classname",
  "parent",
  "file",
  "variant",
  "status",
  "quarantineOverride",
  "lastRunAt",
  "lastFailureAt",
] as const;

/** A repository's tests with a status (or quarantined, by the repository's settings). */
export function testsOfRepository(
  db: Kysely<Database>,
  repositoryId: string,
  status: TestStatusFilter,
  quarantine: QuarantineSettings,
) {
  let query = db.selectFrom("testCases").where("repositoryId", "=", repositoryId);
  if (status === "quarantined") query = query.where((eb) => quarantinedWhere(eb, quarantine));
  else if (status !== undefined) query = query.where("status", "=", status);
  return query;
}

export class RepositoryHealthStore implements RepositoryHealthRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async tests(
    repositoryId: string,
    status: TestStatusFilter,
    quarantine: QuarantineSettings,
  ): Promise<TableTestRow[]> {
    const rows = await testsOfRepository(this.db, repositoryId, status, quarantine)
      .select(TABLE_ROW_COLUMNS)
      .execute();
    return rows.map((r) => ({
      ...r,
      lastRunAt: toNumber(r.lastRunAt),
      lastFailureAt: toNumber(r.lastFailureAt),
    }));
  }

  async recentCounts(repositoryId: string, since: number): Promise<Map<number, RunCounts>> {
    const firstHour = Math.ceil(since / HOUR) * HOUR;
    const firstDay = Math.ceil(since / DAY) * DAY;
    const { rows } = await sql<{
      testKey: number | string;
      passed: number | string;
      failed: number | string;
    }>`
      select test_key, sum(passed) as passed, sum(failed) as failed
      from (
        select test_key, passed, failed from test_hourly_stats
        where test_key in (${this.failedSince(repositoryId, since)})
          and hour >= ${firstHour} and hour < ${firstDay}
        union all
        select test_key, passed, failed from test_daily_stats
        where test_key in (${this.failedSince(repositoryId, since)}) and day >= ${firstDay}
      ) as counts
      group by test_key`.execute(this.db);
    return new Map(
      rows.map((r) => [Number(r.testKey), { passed: Number(r.passed), failed: Number(r.failed) }]),
    );
  }

  async prsImpacted(repositoryId: string, since: number): Promise<Map<number, number>> {
    const { rows } = await sql<{ testKey: number | string; n: number | string }>`
      select test_key, count(*) as n from test_pr_failures
      where test_key in (${this.failedSince(repositoryId, since)}) and last_failed_at >= ${since}
      group by test_key`.execute(this.db);
    return new Map(rows.map((r) => [Number(r.testKey), Number(r.n)]));
  }

  async prsImpactedByFlaky(repositoryId: string, since: number): Promise<number> {
    const { rows } = await sql<{ n: number | string }>`
      select count(distinct pr_number) as n from test_pr_failures
      where test_key in (
          select key from test_cases where repository_id = ${repositoryId} and status = 'flaky')
        and last_failed_at >= ${since}`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }

  async dailyFailures(repositoryId: string, fromDay: number): Promise<Map<number, number>> {
    const { rows } = await sql<{ day: number | string; failed: number | string }>`
      select day, sum(failed) as failed from test_daily_stats
      where repository_id = ${repositoryId} and day >= ${fromDay} and ${FAILING_DAY}
      group by day`.execute(this.db);
    return new Map(rows.map((r) => [Number(r.day), Number(r.failed)]));
  }

  async testDaily(testKey: number, fromDay: number): Promise<DailyRunCounts[]> {
    const rows = await this.db
      .selectFrom("testDailyStats")
      .select(["day", "passed", "failed"])
      .where("testKey", "=", testKey)
      .where("day", ">=", fromDay)
      .orderBy("day")
      .execute();
    return rows;
  }

  /** Keys of the repository's tests that failed since `since`. */
  private failedSince(repositoryId: string, since: number) {
    return sql`select key from test_cases where repository_id = ${repositoryId} and last_failure_at >= ${since}`;
  }
}

export function toNumber(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}
