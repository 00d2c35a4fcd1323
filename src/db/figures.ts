import { sql, type QueryExecutorProvider, type RawBuilder } from "kysely";
import type { DialectName } from "./connection.js";
import { sqlDialect } from "./dialect.js";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../lib/time.js";

/** The figures' window: the last 7 days. */
export const FIGURES_WINDOW_MS = 7 * DAY;

/**
 * Which tests to compute: a condition on `test_cases` under the alias it is given (the same
 * condition appears in several subqueries, each with its own alias).
 */
export type FiguresTarget = (alias: string) => RawBuilder<unknown>;

/**
 * Computes and stores the 7-day figures of the `target` tests as of `now`: the failure rate,
 * counted runs and impacted pull requests the repository page sorts by, exactly as
 * `RepositoryHealthStore.recentCounts`/`prsImpacted` compute them (hours from the window's first
 * whole hour up to its first whole day, whole days after; only tests that failed in the window, the
 * others have zeros), with when they stop being true as time passes: the first moment one of the
 * counted hours, days or pull-request failures, or the last failure, leaves the window
 * (`figures_expire_at`; null when nothing counted can leave: zeros stay zeros until a run arrives,
 * and the ingestion computes the figures of every test it gives runs).
 *
 * One statement. A row whose figures or last failure changed since the statement's snapshot
 * (an upload's transaction committed meanwhile on PostgreSQL) is left as the newer writer left
 * it.
 */
export async function computeFigures(
  db: QueryExecutorProvider,
  dialect: DialectName,
  target: FiguresTarget,
  now: number,
): Promise<number> {
  const d = sqlDialect(dialect);
  const since = now - FIGURES_WINDOW_MS;
  const firstHour = Math.ceil(since / HOUR) * HOUR;
  const firstDay = Math.ceil(since / DAY) * DAY;
  const failing = sql`select fk.key from test_cases fk where ${target("fk")} and fk.last_failure_at >= ${since}`;
  const window = sql.raw(String(FIGURES_WINDOW_MS + 1));
  const result = await sql`
    update test_cases set
      week_failure_rate = case when f.last_failure_at >= ${since} and f.runs > 0
        then ${d.double(sql`f.failed`)} / ${d.double(sql`f.runs`)} else 0 end,
      week_runs = case when f.last_failure_at >= ${since} then coalesce(f.runs, 0) else 0 end,
      week_prs_impacted = case when f.last_failure_at >= ${since} then coalesce(f.prs, 0) else 0 end,
      figures_at = ${now},
      figures_expire_at = case when f.last_failure_at >= ${since}
        then ${d.least(
          sql`coalesce(f.counted_from, f.last_failure_at)`,
          sql`coalesce(f.prs_from, f.last_failure_at)`,
          sql`f.last_failure_at`,
        )} + ${window}
        else null end
    from (
      select t.key, t.last_failure_at, t.figures_at, c.failed, c.runs, c.counted_from, p.prs, p.prs_from
      from test_cases t
      left join (
        select test_key, sum(failed) as failed, sum(passed) + sum(failed) as runs, min(at) as counted_from
        from (
          select test_key, passed, failed, hour as at from test_hourly_stats
          where test_key in (${failing}) and hour >= ${firstHour} and hour < ${firstDay}
          union all
          select test_key, passed, failed, day as at from test_daily_stats
          where test_key in (${failing}) and day >= ${firstDay}
        ) as counts
        group by test_key
      ) as c on c.test_key = t.key
      left join (
        select test_key, count(*) as prs, min(last_failed_at) as prs_from from test_pr_failures
        where test_key in (${failing}) and last_failed_at >= ${since}
        group by test_key
      ) as p on p.test_key = t.key
      where ${target("t")}
    ) as f
    where test_cases.key = f.key and test_cases.figures_at = f.figures_at
      and coalesce(test_cases.last_failure_at, -1) = coalesce(f.last_failure_at, -1)`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/** The tests of a repository whose stored figures are not those of `now`. */
export function staleFigures(repositoryId: string, now: number): FiguresTarget {
  return (alias) => {
    const a = sql.raw(alias);
    return sql`${a}.repository_id = ${repositoryId} and (${a}.figures_expire_at <= ${now} or ${a}.figures_at > ${now})`;
  };
}

/** Every test (the migration's backfill). */
export const ALL_TESTS: FiguresTarget = () => sql`1 = 1`;
