import { sql, type Kysely, type RawBuilder } from "kysely";
import type { QuarantineSettings } from "../../testhealth/quarantine.js";
import type { Database } from "../schema.js";
import { quarantinedWhere } from "./test-cases.js";

/** One page of a list: the rows' keys in list order, with the figure each list sorts by. */
export interface ListedPage<T> {
  total: number;
  rows: T[];
}

export interface FailingEntry {
  key: number;
  /** Failed runs in the window (every failed attempt, infrastructure-failure uploads included). */
  failures: number;
}

export interface UnhealthyEntry {
  key: number;
  /** Distinct PRs with a counted failure in the last 7 days (`test_pr_failures`). */
  prsImpacted7d: number;
}

export interface QuarantinedEntry {
  key: number;
  /** `override_at` for an ALWAYS_QUARANTINE override, else `status_changed_at`. */
  quarantinedAt: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Literals, not parameters: a partial index is only used when the query repeats its predicate
 * word for word (SQLite), and PostgreSQL must see an expression in SELECT and GROUP BY as equal.
 */
const FAILING_HOUR = sql.raw("failed + excluded_failed > 0");
const FAILED = sql.raw("'failed'");
const PROCESSED = sql.raw("'processed'");

type Range = readonly [from: number, to: number];

/**
 * How a window `[start, end)` splits into whole hours (read from `test_hourly_stats`) and the
 * partial hours at its edges (read from raw failed runs), so that counts are exact to the
 * millisecond while no more than two hours of raw runs are ever read.
 */
export function splitWindow(start: number, end: number): { hours: Range | null; edges: Range[] } {
  const firstHour = Math.ceil(start / HOUR) * HOUR;
  const lastHour = Math.floor(end / HOUR) * HOUR;
  if (firstHour >= lastHour) return { hours: null, edges: start < end ? [[start, end]] : [] };
  const edges: Range[] = [];
  if (start < firstHour) edges.push([start, firstHour]);
  if (lastHour < end) edges.push([lastHour, end]);
  return { hours: [firstHour, lastHour], edges };
}

/**
 * The read side of the three test lists (api.md, contract §3): which tests are on a page, in
 * list order, and how many there are. Every list orders on a figure, then on the test id, and
 * pages with LIMIT/OFFSET over that total order; the caller reads the rows and figures of the
 * page's tests by key.
 */
export class TestListStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Tests with at least one failed run at a time in `[start, end)`, most failures first. The
   * count is exact: whole hours come from `test_hourly_stats` (counted and excluded failures,
   * through its partial index of failing hours), the partial hours at both edges from the
   * processed uploads' failed runs (through the partial index of failed runs by time).
   */
  async failing(
    repositoryId: string,
    window: { start: number; end: number },
    offset: number,
    limit: number,
  ): Promise<ListedPage<FailingEntry>> {
    const counted = this.failureCounts(repositoryId, window.start, window.end);
    if (counted === null) return { total: 0, rows: [] };
    const { rows } = await sql<{
      key: number;
      failures: number | string;
      totalRows: number | string;
    }>`
      with failures as (${counted})
      select f.test_key as key, f.failures, count(*) over () as total_rows
      from failures f join test_cases t on t.key = f.test_key
      order by f.failures desc, t.id
      limit ${limit} offset ${offset}`.execute(this.db);
    const total =
      rows[0]?.totalRows ??
      (offset === 0 ? 0 : await this.count(sql`select test_key from (${counted}) as c`));
    return {
      total: Number(total),
      rows: rows.map((r) => ({ key: r.key, failures: Number(r.failures) })),
    };
  }

  /** `select test_key, failures` for the window, or null when the window is empty. */
  private failureCounts(
    repositoryId: string,
    start: number,
    end: number,
  ): RawBuilder<unknown> | null {
    const { hours, edges } = splitWindow(start, end);
    const parts: RawBuilder<unknown>[] = [];
    if (hours) {
      parts.push(sql`
        select test_key, failed + excluded_failed as n from test_hourly_stats
        where repository_id = ${repositoryId} and hour >= ${hours[0]} and hour < ${hours[1]}
          and ${FAILING_HOUR}`);
    }
    for (const [from, to] of edges) {
      parts.push(sql`
        select r.test_key, 1 as n
        from test_runs r
          join test_cases t on t.key = r.test_key
          join uploads u on u.key = r.upload_key
        where r.status = ${FAILED} and r.at >= ${from} and r.at < ${to}
          and t.repository_id = ${repositoryId} and u.state = ${PROCESSED}`);
    }
    if (parts.length === 0) return null;
    return sql`select test_key, sum(n) as failures from (${sql.join(parts, sql` union all `)}) as counted
      group by test_key`;
  }

  /**
   * Tests whose status is `status`, most PRs impacted in the 7 days before `now` first (the
   * same count as `TestViewStore.figures`).
   */
  async unhealthy(
    repositoryId: string,
    status: "flaky" | "broken",
    now: number,
    offset: number,
    limit: number,
  ): Promise<ListedPage<UnhealthyEntry>> {
    const since = now - 7 * DAY;
    const { rows } = await sql<{
      key: number;
      prsImpacted: number | string;
      totalRows: number | string;
    }>`
      select t.key,
        (select count(*) from test_pr_failures p
          where p.test_key = t.key and p.last_failed_at >= ${since}) as prs_impacted,
        count(*) over () as total_rows
      from test_cases t
      where t.repository_id = ${repositoryId} and t.status = ${status}
      order by prs_impacted desc, t.id
      limit ${limit} offset ${offset}`.execute(this.db);
    const total =
      rows[0]?.totalRows ??
      (offset === 0
        ? 0
        : await this.count(
            sql`select key from test_cases where repository_id = ${repositoryId} and status = ${status}`,
          ));
    return {
      total: Number(total),
      rows: rows.map((r) => ({ key: r.key, prsImpacted7d: Number(r.prsImpacted) })),
    };
  }

  /** Quarantined tests (contract §3's rule), most recently quarantined first. */
  async quarantined(
    repositoryId: string,
    settings: QuarantineSettings,
    offset: number,
    limit: number,
  ): Promise<ListedPage<QuarantinedEntry>> {
    if (!settings.quarantiningEnabled) return { total: 0, rows: [] };
    const base = this.db
      .selectFrom("testCases")
      .where("testCases.repositoryId", "=", repositoryId)
      .where((eb) => quarantinedWhere(eb, settings));
    const quarantinedAt = sql<number>`case when test_cases.quarantine_override = 'ALWAYS_QUARANTINE'
      then coalesce(test_cases.override_at, test_cases.status_changed_at)
      else test_cases.status_changed_at end`;
    const rows = await base
      .select((eb) => [
        "testCases.key",
        quarantinedAt.as("quarantinedAt"),
        eb.fn.countAll<number | string>().over().as("totalRows"),
      ])
      .orderBy("quarantinedAt", "desc")
      .orderBy("testCases.id")
      .limit(limit)
      .offset(offset)
      .execute();
    let total = rows[0]?.totalRows;
    if (total === undefined) {
      total =
        offset === 0
          ? 0
          : (
              await base
                .select((eb) => eb.fn.countAll<number | string>().as("n"))
                .executeTakeFirstOrThrow()
            ).n;
    }
    return {
      total: Number(total),
      rows: rows.map((r) => ({ key: r.key, quarantinedAt: r.quarantinedAt })),
    };
  }

  private async count(query: RawBuilder<unknown>): Promise<number> {
    const { rows } = await sql<{
      n: number | string;
    }>`select count(*) as n from (${query}) as q`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }
}
