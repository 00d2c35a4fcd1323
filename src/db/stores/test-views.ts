import { sql, type Kysely } from "kysely";
import type { FailureGroupRow, TestCaseRow, TestFigures } from "../../testhealth/records.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import type { Database } from "../schema.js";
import type { TestViewRecords } from "../../testhealth/ports.js";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../lib/time.js";

const KEY_CHUNK = 500;
const MAX_GROUPS = 5;

interface WindowCounts {
  week: { passed: number; failed: number };
  day: { passed: number; failed: number };
}

const NO_COUNTS: WindowCounts = { week: { passed: 0, failed: 0 }, day: { passed: 0, failed: 0 } };

const ceilHour = (at: number) => Math.ceil(at / HOUR) * HOUR;

/**
 * Read side of test figures. Rates and PR counts come from the aggregates (ADR 0007): whole
 * hours from `test_hourly_stats`, the partial first hour of a window from raw runs, so the
 * windows are exact to the millisecond while reading at most ~170 rows per test.
 */
export class TestViewStore implements TestViewRecords {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async rowsByKey(keys: readonly number[]): Promise<Map<number, TestCaseRow>> {
    const result = new Map<number, TestCaseRow>();
    for (let at = 0; at < keys.length; at += KEY_CHUNK) {
      const rows = await this.db
        .selectFrom("testCases")
        .selectAll()
        .where("key", "in", keys.slice(at, at + KEY_CHUNK))
        .execute();
      for (const row of rows) result.set(row.key, row);
    }
    return result;
  }

  async findById(repositoryId: string, id: string): Promise<TestCaseRow | undefined> {
    return this.db
      .selectFrom("testCases")
      .selectAll()
      .where("repositoryId", "=", repositoryId)
      .where("id", "=", id)
      .executeTakeFirst();
  }

  async figures(keys: readonly number[], now: number): Promise<Map<number, TestFigures>> {
    const result = new Map<number, TestFigures>();
    for (const key of keys) {
      result.set(key, {
        failureRate7d: 0,
        failureRate24h: 0,
        runs7d: 0,
        runs24h: 0,
        prsImpacted7d: 0,
        mostCommonFailures: [],
      });
    }
    for (let at = 0; at < keys.length; at += KEY_CHUNK) {
      const chunk = keys.slice(at, at + KEY_CHUNK);
      const [counts, prs, groups] = await Promise.all([
        this.counts(chunk, now),
        this.prsImpacted(chunk, now - 7 * DAY),
        this.failureGroups(chunk, now - 7 * DAY),
      ]);
      for (const key of chunk) {
        const figures = result.get(key);
        if (!figures) continue;
        const { week: w, day: d } = counts.get(key) ?? NO_COUNTS;
        figures.runs7d = w.passed + w.failed;
        figures.runs24h = d.passed + d.failed;
        figures.failureRate7d = figures.runs7d === 0 ? 0 : w.failed / figures.runs7d;
        figures.failureRate24h = figures.runs24h === 0 ? 0 : d.failed / figures.runs24h;
        figures.prsImpacted7d = prs.get(key) ?? 0;
        figures.mostCommonFailures = groups.get(key) ?? [];
      }
    }
    return result;
  }

  /**
   * Counted passes and failures in `[now - 7 days, now]` and `[now - 24 h, now]`, per test, in
   * one read: whole hours from `test_hourly_stats` (the last 24 h of them count for both), the
   * partial first hour of each window from raw runs. `cross join`: SQLite must start from the
   * tests' runs in the partial hour (by test and time), not from every processed upload.
   */
  private async counts(keys: readonly number[], now: number): Promise<Map<number, WindowCounts>> {
    const weekFrom = now - 7 * DAY;
    const dayFrom = now - DAY;
    const [weekHour, dayHour] = [ceilHour(weekFrom), ceilHour(dayFrom)];
    const notExcluded = sqlDialect(this.dialect).false;
    const rawRuns = (from: number, to: number, inDay: number) => sql`
      select r.test_key, ${sql.lit(inDay)} as in_day,
        case when r.status = 'passed' then 1 else 0 end as passed,
        case when r.status = 'failed' then 1 else 0 end as failed
      from test_runs r cross join uploads u
      where u.key = r.upload_key
        and r.test_key in (${sql.join(keys)}) and r.at >= ${from} and r.at < ${to}
        and r.at <= ${now} and u.infrastructure_failure = ${notExcluded}
        and u.state = 'processed'`;
    // In the week (whole hours and its partial hour) and in the day (whole hours from the day's
    // first whole hour, and the day's partial hour, which the week counts as a whole hour).
    const { rows } = await sql<{
      testKey: number;
      weekPassed: number | string;
      weekFailed: number | string;
      dayPassed: number | string;
      dayFailed: number | string;
    }>`
      select test_key,
        sum(case when in_day < 2 then passed else 0 end) as week_passed,
        sum(case when in_day < 2 then failed else 0 end) as week_failed,
        sum(case when in_day > 0 then passed else 0 end) as day_passed,
        sum(case when in_day > 0 then failed else 0 end) as day_failed
      from (
        select test_key, case when hour >= ${dayHour} then 1 else 0 end as in_day, passed, failed
        from test_hourly_stats
        where test_key in (${sql.join(keys)}) and hour >= ${weekHour}
        union all ${rawRuns(weekFrom, weekHour, 0)}
        union all ${rawRuns(dayFrom, dayHour, 2)}
      ) as counts group by test_key`.execute(this.db);
    return new Map(
      rows.map((r) => [
        r.testKey,
        {
          week: { passed: Number(r.weekPassed), failed: Number(r.weekFailed) },
          day: { passed: Number(r.dayPassed), failed: Number(r.dayFailed) },
        },
      ]),
    );
  }

  private async prsImpacted(keys: readonly number[], since: number): Promise<Map<number, number>> {
    const rows = await this.db
      .selectFrom("testPrFailures")
      .select(["testKey", (eb) => eb.fn.countAll<number>().as("n")])
      .where("testKey", "in", keys)
      .where("lastFailedAt", ">=", since)
      .groupBy("testKey")
      .execute();
    return new Map(rows.map((r) => [r.testKey, r.n]));
  }

  /**
   * Failure groups of the window (to the hour), at most five per test, most frequent first.
   * Summed in the database from hours up to the first whole day after `since`, then days (ADR
   * 0008; a broken test has a row per hour and signature); the summary is the
   * one of the latest hour, whose row is found again by the hour of its `last_at` (a lookup by
   * key per group: joined, PostgreSQL would hash the whole table).
   */
  private async failureGroups(
    keys: readonly number[],
    since: number,
  ): Promise<Map<number, FailureGroupRow[]>> {
    // Whole days from `test_daily_failure_groups` (every row of a day after `since` counts).
    const firstDay = Math.ceil(since / DAY) * DAY;
    const { rows } = await sql<{
      testKey: number;
      signature: string;
      occurrences: number | string;
      lastAt: number | string;
      summary: string;
    }>`
      select g.test_key, g.signature, g.occurrences, g.last_at,
        (select s.summary from test_failure_groups s
          where s.test_key = g.test_key and s.hour = (g.last_at / ${sql.lit(HOUR)}) * ${sql.lit(HOUR)}
            and s.signature = g.signature) as summary
      from (
        select test_key, signature, sum(occurrences) as occurrences, max(last_at) as last_at
        from (
          select test_key, signature, occurrences, last_at from test_failure_groups
          where test_key in (${sql.join(keys)}) and hour >= ${Math.floor(since / HOUR) * HOUR}
            and hour < ${firstDay} and last_at >= ${since}
          union all
          select test_key, signature, occurrences, last_at from test_daily_failure_groups
          where test_key in (${sql.join(keys)}) and day >= ${firstDay}
        ) as hours_and_days
        group by test_key, signature
      ) as g`.execute(this.db);
    const byTest = new Map<number, FailureGroupRow[]>();
    for (const row of rows) {
      let groups = byTest.get(row.testKey);
      if (!groups) byTest.set(row.testKey, (groups = []));
      groups.push({
        summary: row.summary,
        occurrenceCount: Number(row.occurrences),
        lastOccurrence: Number(row.lastAt),
      });
    }
    const result = new Map<number, FailureGroupRow[]>();
    for (const [key, groups] of byTest) {
      result.set(
        key,
        groups
          .sort(
            (a, b) =>
              b.occurrenceCount - a.occurrenceCount ||
              b.lastOccurrence - a.lastOccurrence ||
              a.summary.localeCompare(b.summary),
          )
          .slice(0, MAX_GROUPS),
      );
    }
    return result;
  }
}
