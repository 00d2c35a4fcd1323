import { sql, type Kysely, type RawBuilder } from "kysely";
import type { QuarantineSettings } from "../../testhealth/quarantine.js";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import type { Database } from "../schema.js";
import { quarantinedWhere } from "./test-cases.js";
import type {
  FailingEntry,
  ListedPage,
  QuarantinedEntry,
  UnhealthyEntry,
} from "../../testhealth/records.js";
import type { TestListRecords } from "../../testhealth/ports.js";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../../lib/time.js";

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
 * How whole hours `[from, to)` split into whole UTC days (read from `test_daily_stats`) and the
 * hours before the first and after the last of them (read from `test_hourly_stats`): at most 46
 * hours are read hour by hour, however long the window.
 */
export function splitHours([from, to]: Range): { days: Range | null; hours: Range[] } {
  const firstDay = Math.ceil(from / DAY) * DAY;
  const lastDay = Math.floor(to / DAY) * DAY;
  if (firstDay >= lastDay) return { days: null, hours: from < to ? [[from, to]] : [] };
  const hours: Range[] = [];
  if (from < firstDay) hours.push([from, firstDay]);
  if (lastDay < to) hours.push([lastDay, to]);
  return { days: [firstDay, lastDay], hours };
}

/** Where whole units of time are read: a table of per-test counts and its time column. */
interface UnitSource {
  table: "test_daily_stats" | "test_hourly_stats";
  column: "day" | "hour";
  /** What a unit's key in memory starts with (a day and its first hour start at one time). */
  prefix: "d" | "h";
}

/** Whole units of one source to read: `[from, to)`. */
interface UnitRange {
  source: UnitSource;
  range: Range;
}

/** A whole unit with failing rows, as found in the database: its kind (a source's prefix). */
interface UnitSignature {
  kind: string;
  unit: number;
  signature: string;
}

const DAYS: UnitSource = { table: "test_daily_stats", column: "day", prefix: "d" };
const HOURS: UnitSource = { table: "test_hourly_stats", column: "hour", prefix: "h" };

/** Failing rows of one whole day or hour of a repository: dense test indices and failures. */
interface HourFailures {
  /** `rows:failures` of the unit as read: ingestion only ever adds failures to a unit. */
  signature: string;
  tests: Int32Array;
  failures: Int32Array;
}

/**
 * What a process keeps, least recently used out: per repository, two weeks of hours (days count
 * as one each) and at most a million failing rows (8 MB); 16 repositories.
 */
const UNITS_KEPT = 14 * 24;
const ROWS_KEPT = 1_000_000;
const REPOSITORIES_KEPT = 16;
const KEY_CHUNK = 500;

/**
 * What one process keeps of a repository's failing hours. Tests get dense indices, in order of
 * first sight, so that counting is array arithmetic; their ids (for ties) never change.
 */
class RepositoryFailures {
  readonly keys: number[] = [];
  readonly ids: string[] = [];
  readonly dense = new Map<number, number>();
  /** By unit key: `d<day>` or `h<hour>`. */
  readonly units = new Map<string, HourFailures>();
  private rows = 0;
  private order: Int32Array | null = null;

  add(key: number, id: string): void {
    if (this.dense.has(key)) return;
    this.dense.set(key, this.keys.length);
    this.keys.push(key);
    this.ids.push(id);
    this.order = null;
  }

  /** Dense indices in test-id order. */
  idOrder(): Int32Array {
    if (this.order?.length === this.ids.length) return this.order;
    const ids = this.ids;
    const order = Int32Array.from(ids.map((_, i) => i).sort((a, b) => compareText(ids[a], ids[b])));
    this.order = order;
    return order;
  }

  /** A unit read from the database, most recently used. */
  remember(unit: string, failures: HourFailures): void {
    this.forget(unit);
    this.units.set(unit, failures);
    this.rows += failures.tests.length;
    while (this.units.size > UNITS_KEPT || this.rows > ROWS_KEPT) {
      const oldest = this.units.keys().next();
      if (oldest.done) break;
      this.forget(oldest.value);
    }
  }

  /** A unit found unchanged: most recently used. */
  touch(unit: string, failures: HourFailures): void {
    this.units.delete(unit);
    this.units.set(unit, failures);
  }

  private forget(unit: string): void {
    const known = this.units.get(unit);
    if (!known) return;
    this.rows -= known.tests.length;
    this.units.delete(unit);
  }
}

/** Code-unit order, as SQLite's BINARY collation for the ASCII ids (UUIDs) of tests. */
function compareText(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  return (a ?? "") < (b ?? "") ? -1 : 1;
}

/** What an hour's failing rows are compared by: their number and their sum of failures. */
function signatureOf(rows: number | string, failures: number | string): string {
  return `${String(rows)}:${String(failures)}`;
}

/** A JSON array from the database: parsed by pg (json), text on SQLite. */
function numbers(value: unknown): number[] {
  return (typeof value === "string" ? JSON.parse(value) : value) as number[];
}

/**
 * Indices with a count above zero, most first, ties in `order` (test-id order): a counting sort,
 * linear in the number of tests, where sorting 20,000 tests with a comparator takes ~10 ms.
 */
function rankByCount(counts: Int32Array, order: Int32Array): Int32Array {
  let max = 0;
  let listed = 0;
  for (const n of counts) {
    if (n > 0) listed += 1;
    if (n > max) max = n;
  }
  if (max > 8 * counts.length + 1024) {
    // Very large counts: a comparison sort instead of a huge table of slots.
    const position = new Int32Array(order.length);
    order.forEach((index, at) => {
      position[index] = at;
    });
    const listedIndices = Int32Array.from(counts.keys()).filter((i) => (counts[i] ?? 0) > 0);
    return listedIndices.sort(
      (a, b) => (counts[b] ?? 0) - (counts[a] ?? 0) || (position[a] ?? 0) - (position[b] ?? 0),
    );
  }
  // Slots per count, from the highest count down.
  const start = new Int32Array(max + 2);
  for (const n of counts) if (n > 0) start[max - n + 1] = (start[max - n + 1] ?? 0) + 1;
  for (let c = 1; c < start.length; c++) start[c] = (start[c] ?? 0) + (start[c - 1] ?? 0);
  const result = new Int32Array(listed);
  for (const index of order) {
    const n = counts[index] ?? 0;
    if (n <= 0) continue;
    const slot = max - n;
    result[start[slot] ?? 0] = index;
    start[slot] = (start[slot] ?? 0) + 1;
  }
  return result;
}

/**
 * The read side of the three test lists: which tests are on a page, in list order, and how many
 * there are (each list orders on a figure, then the test id). list-failing-tests reads a window as
 * whole days, whole hours and raw edges, and keeps each day's and hour's failing rows in memory,
 * checked against the unit's count and sum of failures: a new way of changing aggregates must
 * change that signature too (ADR 0008).
 */
export class TestListStore implements TestListRecords {
  private readonly repositories = new Map<string, RepositoryFailures>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Tests with at least one failed run at a time in `[start, end)` (every failed attempt of a
   * processed upload, infrastructure failures included), most failures first, ties by test id.
   */
  async failing(
    repositoryId: string,
    window: { start: number; end: number },
    offset: number,
    limit: number,
  ): Promise<ListedPage<FailingEntry>> {
    const repository = this.repositoryFailures(repositoryId);
    const { hours, edges } = splitWindow(window.start, window.end);
    const { days, hours: hourRanges } = hours ? splitHours(hours) : { days: null, hours: [] };
    const units: UnitRange[] = [
      ...(days ? [{ source: DAYS, range: days }] : []),
      ...hourRanges.map((range) => ({ source: HOURS, range })),
    ];
    const { signatures, edgeRows } = await this.signaturesAndEdges(repositoryId, units, edges);
    const hourData: HourFailures[] = [];
    for (const source of [DAYS, HOURS]) {
      hourData.push(
        ...(await this.wholeUnits(
          repositoryId,
          repository,
          source,
          signatures.filter((s) => s.kind === source.prefix),
        )),
      );
    }
    await this.learnTests(
      repositoryId,
      repository,
      edgeRows.map((r) => r.testKey),
    );

    const totals = new Int32Array(repository.keys.length);
    for (const hour of hourData) {
      const { tests, failures } = hour;
      for (let i = 0; i < tests.length; i++) {
        const index = tests[i] ?? 0;
        totals[index] = (totals[index] ?? 0) + (failures[i] ?? 0);
      }
    }
    for (const row of edgeRows) {
      const index = repository.dense.get(row.testKey);
      if (index !== undefined) totals[index] = (totals[index] ?? 0) + row.failures;
    }
    const listed = rankByCount(totals, repository.idOrder());
    return {
      total: listed.length,
      rows: Array.from(listed.subarray(offset, offset + limit), (index) => ({
        key: repository.keys[index] ?? 0,
        failures: totals[index] ?? 0,
      })),
    };
  }

  private repositoryFailures(repositoryId: string): RepositoryFailures {
    let repository = this.repositories.get(repositoryId);
    if (repository) {
      this.repositories.delete(repositoryId);
    } else {
      repository = new RepositoryFailures();
      if (this.repositories.size >= REPOSITORIES_KEPT) {
        const oldest = this.repositories.keys().next();
        if (!oldest.done) this.repositories.delete(oldest.value);
      }
    }
    this.repositories.set(repositoryId, repository);
    return repository;
  }

  /**
   * In one statement (one round trip): the signature of each whole unit (day or hour) with
   * failing rows in the given ranges, and the failed runs of processed uploads in the partial
   * hours at the window's edges, per test. The edges' runs are found by time (partial index of
   * failed runs), then their uploads by key: `cross join` keeps SQLite from starting at the
   * repository's uploads and reading all of their runs.
   */
  private async signaturesAndEdges(
    repositoryId: string,
    units: readonly UnitRange[],
    edges: readonly Range[],
  ): Promise<{ signatures: UnitSignature[]; edgeRows: { testKey: number; failures: number }[] }> {
    const parts = units.map(({ source, range: [from, to] }) => {
      const unit = sql.ref(source.column);
      return sql`select ${sql.lit(source.prefix)} as kind, ${unit} as unit,
        count(*) as a, sum(failed + excluded_failed) as b
        from ${sql.table(source.table)}
        where repository_id = ${repositoryId} and ${unit} >= ${from} and ${unit} < ${to}
          and ${FAILING_HOUR}
        group by ${unit}`;
    });
    if (edges.length > 0) {
      const runs = edges.map(
        ([from, to]) => sql`
          select r.test_key from test_runs r cross join uploads u
          where u.key = r.upload_key and r.status = ${FAILED} and r.at >= ${from} and r.at < ${to}
            and u.repository_id = ${repositoryId} and u.state = ${PROCESSED}`,
      );
      parts.push(sql`select 'e' as kind, test_key as unit, count(*) as a, 0 as b
        from (${sql.join(runs, sql` union all `)}) as edge
        group by test_key`);
    }
    if (parts.length === 0) return { signatures: [], edgeRows: [] };
    const { rows } = await sql<{
      kind: string;
      unit: number | string;
      a: number | string;
      b: number | string;
    }>`${sql.join(parts, sql` union all `)}`.execute(this.db);
    const signatures: UnitSignature[] = [];
    const edgeRows: { testKey: number; failures: number }[] = [];
    for (const row of rows) {
      if (row.kind === "e") {
        edgeRows.push({ testKey: Number(row.unit), failures: Number(row.a) });
      } else {
        signatures.push({
          kind: row.kind,
          unit: Number(row.unit),
          signature: signatureOf(row.a, row.b),
        });
      }
    }
    return { signatures, edgeRows };
  }

  /**
   * The failing rows of each whole unit (day or hour) of `source` found with `signatures`: from
   * memory when the unit's signature in the database is the one remembered, else read again
   * (with the signature of what was read, so that rows added meanwhile are read on the next
   * request).
   */
  private async wholeUnits(
    repositoryId: string,
    repository: RepositoryFailures,
    source: UnitSource,
    signatures: readonly UnitSignature[],
  ): Promise<HourFailures[]> {
    const table = sql.table(source.table);
    const unit = sql.ref(source.column);
    const result: HourFailures[] = [];
    const stale: number[] = [];
    for (const row of signatures) {
      const key = `${source.prefix}${String(row.unit)}`;
      const known = repository.units.get(key);
      if (known?.signature === row.signature) {
        repository.touch(key, known);
        result.push(known);
      } else {
        stale.push(row.unit);
      }
    }
    const dialect = sqlDialect(this.dialect);
    const arrays = sql`${dialect.jsonArrayAgg(sql`test_key`, sql`test_key`)} as tests,
      ${dialect.jsonArrayAgg(sql`failed + excluded_failed`, sql`test_key`)} as failures`;
    for (let at = 0; at < stale.length; at += KEY_CHUNK) {
      // The range lets PostgreSQL seek in the index; the list filters.
      const chunk = stale.slice(at, at + KEY_CHUNK);
      const { rows } = await sql<{ unit: number; tests: unknown; failures: unknown }>`
        select ${unit} as unit, ${arrays} from ${table}
        where repository_id = ${repositoryId} and ${unit} >= ${Math.min(...chunk)}
          and ${unit} <= ${Math.max(...chunk)} and ${unit} in (${sql.join(chunk)})
          and ${FAILING_HOUR}
        group by ${unit}`.execute(this.db);
      const read = rows.map((row) => ({
        unit: row.unit,
        tests: numbers(row.tests),
        failures: numbers(row.failures),
      }));
      await this.learnTests(
        repositoryId,
        repository,
        read.flatMap((r) => r.tests),
      );
      for (const { unit: start, tests, failures } of read) {
        // A test deleted meanwhile has no index: its rows are left out.
        const kept = tests.flatMap((key, i) => {
          const index = repository.dense.get(key);
          return index === undefined ? [] : [i];
        });
        const data: HourFailures = {
          signature: signatureOf(
            tests.length,
            failures.reduce((sum, n) => sum + n, 0),
          ),
          tests: Int32Array.from(kept, (i) => repository.dense.get(tests[i] ?? 0) ?? 0),
          failures: Int32Array.from(kept, (i) => failures[i] ?? 0),
        };
        repository.remember(`${source.prefix}${String(start)}`, data);
        result.push(data);
      }
    }
    return result;
  }

  /**
   * Dense indices and ids of tests seen for the first time: all of the repository's tests at
   * once when many are new (a first request), else those by key.
   */
  private async learnTests(
    repositoryId: string,
    repository: RepositoryFailures,
    keys: readonly number[],
  ): Promise<void> {
    const unknown = [...new Set(keys.filter((key) => !repository.dense.has(key)))];
    if (unknown.length > KEY_CHUNK) {
      const rows = await this.db
        .selectFrom("testCases")
        .select(["key", "id"])
        .where("repositoryId", "=", repositoryId)
        .execute();
      for (const row of rows) repository.add(row.key, row.id);
      return;
    }
    if (unknown.length === 0) return;
    const rows = await this.db
      .selectFrom("testCases")
      .select(["key", "id"])
      .where("key", "in", unknown)
      .execute();
    for (const row of rows) repository.add(row.key, row.id);
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

  /** Quarantined tests (`quarantinedWhere`), most recently quarantined first. */
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
