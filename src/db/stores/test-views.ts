import { sql, type Kysely, type Selectable } from "kysely";
import type { DialectName } from "../connection.js";
import type { Database, TestCasesTable } from "../schema.js";

export type TestCaseRow = Selectable<TestCasesTable>;

export interface FailureGroupRow {
  summary: string;
  occurrenceCount: number;
  lastOccurrence: number;
}

/** What the API shows of a test beyond its row: rates, PRs impacted, common failures. */
export interface TestFigures {
  failureRate7d: number;
  failureRate24h: number;
  /** Runs counted in the rates (passed + failed, excluded uploads aside). */
  runs7d: number;
  runs24h: number;
  prsImpacted7d: number;
  mostCommonFailures: FailureGroupRow[];
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const KEY_CHUNK = 500;
const MAX_GROUPS = 5;

const ceilHour = (at: number) => Math.ceil(at / HOUR) * HOUR;

/**
 * Read side of test figures. Rates and PR counts come from the aggregates (ADR 0007): whole
 * hours from `test_hourly_stats`, the partial first hour of a window from raw runs, so the
 * windows are exact to the millisecond while reading at most ~170 rows per test.
 */
export class TestViewStore {
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
      const [week, day, prs, groups] = await Promise.all([
        this.counts(chunk, now - 7 * DAY, now),
        this.counts(chunk, now - DAY, now),
        this.prsImpacted(chunk, now - 7 * DAY),
        this.failureGroups(chunk, now - 7 * DAY),
      ]);
      for (const key of chunk) {
        const figures = result.get(key);
        if (!figures) continue;
        const w = week.get(key) ?? { passed: 0, failed: 0 };
        const d = day.get(key) ?? { passed: 0, failed: 0 };
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

  /** Counted passes and failures in `[from, now]`, per test. */
  private async counts(
    keys: readonly number[],
    from: number,
    now: number,
  ): Promise<Map<number, { passed: number; failed: number }>> {
    const firstHour = ceilHour(from);
    const notExcluded = this.dialect === "postgres" ? sql`false` : sql`0`;
    const { rows } = await sql<{
      testKey: number;
      passed: number | string;
      failed: number | string;
    }>`
      select test_key, sum(passed) as passed, sum(failed) as failed from (
        select test_key, passed, failed from test_hourly_stats
        where test_key in (${sql.join(keys)}) and hour >= ${firstHour}
        union all
        select r.test_key,
          case when r.status = 'passed' then 1 else 0 end,
          case when r.status = 'failed' then 1 else 0 end
        from test_runs r join uploads u on u.key = r.upload_key
        where r.test_key in (${sql.join(keys)}) and r.at >= ${from} and r.at < ${firstHour}
          and r.at <= ${now} and u.infrastructure_failure = ${notExcluded}
          and u.state = 'processed'
      ) as counts group by test_key`.execute(this.db);
    return new Map(
      rows.map((r) => [r.testKey, { passed: Number(r.passed), failed: Number(r.failed) }]),
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

  /** Failure groups of the window (to the hour), at most five per test, most frequent first. */
  private async failureGroups(
    keys: readonly number[],
    since: number,
  ): Promise<Map<number, FailureGroupRow[]>> {
    const rows = await this.db
      .selectFrom("testFailureGroups")
      .select(["testKey", "signature", "occurrences", "lastAt", "summary"])
      .where("testKey", "in", keys)
      .where("hour", ">=", Math.floor(since / HOUR) * HOUR)
      .where("lastAt", ">=", since)
      .execute();
    const byTest = new Map<number, Map<string, FailureGroupRow>>();
    for (const row of rows) {
      let groups = byTest.get(row.testKey);
      if (!groups) byTest.set(row.testKey, (groups = new Map<string, FailureGroupRow>()));
      const group = groups.get(row.signature);
      if (!group) {
        groups.set(row.signature, {
          summary: row.summary,
          occurrenceCount: row.occurrences,
          lastOccurrence: row.lastAt,
        });
      } else {
        group.occurrenceCount += row.occurrences;
        if (row.lastAt > group.lastOccurrence) {
          group.lastOccurrence = row.lastAt;
          group.summary = row.summary;
        }
      }
    }
    const result = new Map<number, FailureGroupRow[]>();
    for (const [key, groups] of byTest) {
      result.set(
        key,
        [...groups.values()]
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
