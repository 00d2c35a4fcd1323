import { sql, type Kysely, type RawBuilder } from "kysely";
import type { FailureGroupRow, TestCaseRow, TestFigures } from "../../testhealth/records.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { BySize, compileTemplate, type QueryTemplate } from "../precompiled.js";
import type { Database } from "../schema.js";
import type { TestViewRecords } from "../../testhealth/ports.js";
import { rankFailureGroups } from "../../testhealth/failure-signatures.js";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../lib/time.js";

const KEY_CHUNK = 500;
/** Key counts whose `rowsByKey` statement is kept compiled (a list's page sizes repeat). */
const KEPT_KEY_COUNTS = 100;

interface WindowCounts {
  week: { passed: number; failed: number };
  day: { passed: number; failed: number };
}

const NO_COUNTS: WindowCounts = { week: { passed: 0, failed: 0 }, day: { passed: 0, failed: 0 } };

const ceilHour = (at: number) => Math.ceil(at / HOUR) * HOUR;

/**
 * Read side of test figures. Rates and PR counts come from the aggregates: whole hours from
 * `test_hourly_stats`, the partial first hour of a window from raw runs, so the windows are exact
 * to the millisecond while reading at most ~170 rows per test.
 */
export class TestViewStore implements TestViewRecords {
  /** `rowsByKey`'s statement by number of keys, compiled once each. */
  private readonly rowsByKeys: BySize<TestCaseRow>;
  private readonly testById: QueryTemplate<TestCaseRow>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    this.testById = compileTemplate(2, (args) =>
      db
        .selectFrom("testCases")
        .selectAll()
        .where("repositoryId", "=", args[0] as string)
        .where("id", "=", args[1] as string)
        .compile(),
    );
    this.rowsByKeys = new BySize(
      (count) =>
        compileTemplate(count, (args) =>
          db
            .selectFrom("testCases")
            .selectAll()
            .where("key", "in", args as unknown as number[])
            .compile(),
        ),
      KEPT_KEY_COUNTS,
    );
  }

  async rowsByKey(keys: readonly number[]): Promise<Map<number, TestCaseRow>> {
    const result = new Map<number, TestCaseRow>();
    for (let at = 0; at < keys.length; at += KEY_CHUNK) {
      const chunk = keys.slice(at, at + KEY_CHUNK);
      const rows = await this.rowsByKeys.get(chunk.length).run(this.db, chunk);
      for (const row of rows) result.set(row.key, row);
    }
    return result;
  }

  async findById(repositoryId: string, id: string): Promise<TestCaseRow | undefined> {
    const [row] = await this.testById.run(this.db, [repositoryId, id]);
    return row;
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
      const { counts, prs, groups } = await this.figureParts(chunk, now);
      for (const key of chunk) {
        const figures = result.get(key);
        if (!figures) continue;
        const { week: w, day: d } = counts.get(key) ?? NO_COUNTS;
        figures.runs7d = w.passed + w.failed;
        figures.runs24h = d.passed + d.failed;
        figures.failureRate7d = figures.runs7d === 0 ? 0 : w.failed / figures.runs7d;
        figures.failureRate24h = figures.runs24h === 0 ? 0 : d.failed / figures.runs24h;
        figures.prsImpacted7d = prs.get(key) ?? 0;
        figures.mostCommonFailures = rankFailureGroups(groups.get(key) ?? []);
      }
    }
    return result;
  }

  /**
   * The three parts of the tests' figures in one statement (one round trip, one plan), told
   * apart by `part`: 0, the counts of the week and the day (`counts`); 1, the pull requests
   * impacted in the week (`prsImpacted`); 2, the failure groups of the week (`failureGroups`).
   */
  private async figureParts(
    keys: readonly number[],
    now: number,
  ): Promise<{
    counts: Map<number, WindowCounts>;
    prs: Map<number, number>;
    groups: Map<number, FailureGroupRow[]>;
  }> {
    const since = now - 7 * DAY;
    const { rows } = await sql<{
      part: number | string;
      testKey: number;
      a: number | string | null;
      b: number | string | null;
      c: number | string | null;
      d: number | string | null;
      summary: string | null;
    }>`
      ${this.counts(keys, now)}
      union all
      select 1 as part, test_key, count(*) as a, 0 as b, 0 as c, 0 as d, null as summary
      from test_pr_failures
      where test_key in (${sql.join(keys)}) and last_failed_at >= ${since}
      group by test_key
      union all
      ${this.failureGroups(keys, since)}`.execute(this.db);
    const counts = new Map<number, WindowCounts>();
    const prs = new Map<number, number>();
    const groups = new Map<number, FailureGroupRow[]>();
    for (const r of rows) {
      const part = Number(r.part);
      if (part === 0) {
        counts.set(r.testKey, {
          week: { passed: Number(r.a), failed: Number(r.b) },
          day: { passed: Number(r.c), failed: Number(r.d) },
        });
      } else if (part === 1) {
        prs.set(r.testKey, Number(r.a));
      } else {
        let list = groups.get(r.testKey);
        if (!list) groups.set(r.testKey, (list = []));
        list.push({
          summary: r.summary as string,
          occurrenceCount: Number(r.a),
          lastOccurrence: Number(r.b),
        });
      }
    }
    return { counts, prs, groups };
  }

  /**
   * Counted passes and failures in `[now - 7 days, now]` and `[now - 24 h, now]`, per test, in
   * one read: whole hours from `test_hourly_stats` (the last 24 h of them count for both), the
   * partial first hour of each window from raw runs. `cross join`: SQLite must start from the
   * tests' runs in the partial hour (by test and time), not from every processed upload. Part 0
   * of `figureParts`: week passed, week failed, day passed, day failed as `a` to `d`.
   */
  private counts(keys: readonly number[], now: number): RawBuilder<unknown> {
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
    return sql`
      select 0 as part, test_key,
        sum(case when in_day < 2 then passed else 0 end) as a,
        sum(case when in_day < 2 then failed else 0 end) as b,
        sum(case when in_day > 0 then passed else 0 end) as c,
        sum(case when in_day > 0 then failed else 0 end) as d,
        null as summary
      from (
        select test_key, case when hour >= ${dayHour} then 1 else 0 end as in_day, passed, failed
        from test_hourly_stats
        where test_key in (${sql.join(keys)}) and hour >= ${weekHour}
        union all ${rawRuns(weekFrom, weekHour, 0)}
        union all ${rawRuns(dayFrom, dayHour, 2)}
      ) as counts group by test_key`;
  }

  /**
   * Failure groups of the window (to the hour), at most five per test, most frequent first.
   * Summed in the database from hours up to the first whole day after `since`, then days (ADR
   * 0008; a broken test has a row per hour and signature); the summary is the
   * one of the latest hour, whose row is found again by the hour of its `last_at` (a lookup by
   * key per group: joined, PostgreSQL would hash the whole table).
   */
  private failureGroups(keys: readonly number[], since: number): RawBuilder<unknown> {
    // Whole days from `test_daily_failure_groups` (every row of a day after `since` counts).
    const firstDay = Math.ceil(since / DAY) * DAY;
    return sql`
      select 2 as part, g.test_key, g.occurrences as a, g.last_at as b, 0 as c, 0 as d,
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
      ) as g`;
  }
}
