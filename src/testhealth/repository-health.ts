/**
 * A repository's test health for the dashboard's repository page: key figures, 30 days of trends
 * and the tests table (filtered, sorted, paged). A fixed number of statements whatever the number
 * of tests: the table is read a page at a time by index over stored figures, or whole and kept in
 * memory for the filters an index cannot serve (ADR 0030 says why).
 */
import type { Clock } from "../lib/clock.js";
import { DAY_MS } from "../lib/time.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import { parseCodeowners, type Codeowners } from "./codeowners.js";
import type { HealthStatus } from "./monitors.js";
import { TestHealthOverview, type RepositoryHealth } from "./overview.js";
import type {
  DailyRunCounts,
  RepositoryHealthRecords,
  RepositoryTableRecords,
  TableFiguresRow,
  TableTestRow,
  TestSettingsRecords,
  UploadRecords,
} from "./ports.js";
import { quarantineSetting, type QuarantineOverride } from "./quarantine.js";
import type { UploadRecord } from "./records.js";
import type { RepositoryAccess } from "./repository-access.js";
import { utcDay } from "./trends.js";

export const TABLE_STATUSES = ["flaky", "broken", "quarantined", "healthy"] as const;
export type TableStatus = (typeof TABLE_STATUSES)[number];
export const TABLE_SORTS = ["failure_rate", "prs_impacted", "last_failure"] as const;
export type TableSort = (typeof TABLE_SORTS)[number];

/** Rows of the tests table per page, and uploads per page. */
export const TABLE_PAGE_SIZE = 50;
export const UPLOADS_PAGE_SIZE = 50;
const WINDOW_MS = 7 * DAY_MS;
const TREND_DAYS = 30;

export interface TestsTableQuery {
  status?: TableStatus | undefined;
  /** A code owner (`@acme/payments`), matched without regard to case. */
  owner?: string | undefined;
  /** Text in the test's name, class, suite or file, without regard to case. */
  q?: string | undefined;
  sort?: TableSort | undefined;
  /** 1-based. */
  page?: number | undefined;
}

export interface TableTest {
  row: TableTestRow;
  quarantined: boolean;
  codeowners: string[];
  /** Counted failures / counted runs over the last 7 days (0 without runs). */
  failureRate7d: number;
  /** Counted runs of the last 7 days when the test failed in them (else not read: 0). */
  runs7d: number;
  /** Whether the test ran in the last 7 days (a test without failures shows 0%, else nothing). */
  ranIn7d: boolean;
  prsImpacted7d: number;
}

export interface RepositoryPage {
  health: RepositoryHealth;
  /** Distinct pull requests a flaky test failed on in the last 7 days. */
  prsImpactedByFlaky7d: number;
  /** Per day, oldest first, ending today (UTC). */
  daily: { day: number; failures: number; flaky: number; broken: number; quarantined: number }[];
  /** Code owners of the repository's tests (for the owner filter), sorted. */
  owners: string[];
  table: {
    query: Omit<TestsTableQuery, "sort" | "page"> & { sort: TableSort; page: number };
    total: number;
    pages: number;
    rows: TableTest[];
  };
}

export interface RepositoryUploads {
  repository: Repository;
  total: number;
  page: number;
  pages: number;
  uploads: UploadRecord[];
}

export interface RepositoryHealthDependencies {
  access: Pick<RepositoryAccess, "find">;
  settings: Pick<TestSettingsRecords, "get">;
  overview: Pick<TestHealthOverview, "organization">;
  records: RepositoryHealthRecords;
  /**
   * The tests table read by index over stored figures: when given, views without an owner or text
   * filter read only their page; without it (or with those filters) the table is read whole and
   * kept in memory.
   */
  table?: RepositoryTableRecords;
  uploads: Pick<UploadRecords, "list">;
  clock: Clock;
}

const codeownersCache = new Map<string, Codeowners>();
function codeownersOf(text: string | null): Codeowners | null {
  if (!text) return null;
  let parsed = codeownersCache.get(text);
  if (!parsed) {
    if (codeownersCache.size >= 32) codeownersCache.clear();
    parsed = parseCodeowners(text);
    codeownersCache.set(text, parsed);
  }
  return parsed;
}

/**
 * How a process keeps a repository's table: used as it is for 20 s, then for up to 60 s while
 * it is read again behind the answer; older, read before answering. At most 16 repositories.
 */
export const TABLE_FRESH_MS = 20_000;
export const TABLE_STALE_MS = 60_000;
const TABLES_KEPT = 16;
const NO_QUARANTINE = { quarantiningEnabled: false, autoQuarantine: false };

interface TableEntry {
  /** When its read began. */
  at: number;
  table: Promise<CachedTable>;
  /** Read (a refresh may start from it). */
  ready: boolean;
  refreshing?: boolean;
}

interface CachedTable {
  failures: Map<number, number>;
  flakyPrs: number;
  owners: string[];
  /** Every test, in the order of `sort`. */
  sorted(sort: TableSort): TableTest[];
}

interface PageSummary {
  /** A test file's code owners (remembered per file). */
  ownersOf: (file: string | null) => string[];
  owners: string[];
  failures: Map<number, number>;
  flakyPrs: number;
}

function comparator(sort: TableSort): (a: TableTest, b: TableTest) => number {
  const byName = (a: TableTest, b: TableTest) =>
    a.row.name < b.row.name ? -1 : a.row.name > b.row.name ? 1 : a.row.key - b.row.key;
  return (a, b) => {
    const primary =
      sort === "failure_rate"
        ? desc(a.failureRate7d, b.failureRate7d) || desc(a.prsImpacted7d, b.prsImpacted7d)
        : sort === "prs_impacted"
          ? desc(a.prsImpacted7d, b.prsImpacted7d) || desc(a.failureRate7d, b.failureRate7d)
          : desc(a.row.lastFailureAt, b.row.lastFailureAt);
    return primary || byName(a, b);
  };
}

/** Compares numbers descending, then nulls last. */
function desc(a: number | null, b: number | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return b - a;
}

export class RepositoryHealthService {
  constructor(private readonly deps: RepositoryHealthDependencies) {}

  /**
   * What the table is computed from, per repository: every test with its figures. Reading it costs
   * a few hundred milliseconds at 20,000 tests, so a process keeps it (`TABLE_FRESH_MS`,
   * `TABLE_STALE_MS`) and forgets it at once after a change made through the dashboard's forms
   * (`invalidate`); filters, sorts and pages then cost only memory.
   */
  private readonly tables = new Map<string, TableEntry>();
  /** The indexed page's summaries per repository (`summary`). */
  private readonly summaries = new Map<string, { at: number; summary: Promise<PageSummary> }>();

  /** Forgets a repository's table (after an override or ticket changed one of its tests). */
  invalidate(repositoryId: string): void {
    this.tables.delete(repositoryId);
    this.summaries.delete(repositoryId);
  }

  async repository(
    principal: Principal,
    ref: RepoRef,
    query: TestsTableQuery,
  ): Promise<RepositoryPage> {
    const repository = await this.deps.access.find(principal, undefined, ref);
    const now = this.deps.clock.now();
    if (this.deps.table && !query.owner?.trim() && !query.q?.trim()) {
      return this.indexedPage(this.deps.table, principal, repository, query, now);
    }
    const [organization, table] = await Promise.all([
      this.deps.overview.organization(principal, TREND_DAYS),
      this.table(repository.id, now),
    ]);
    const health = organization.repositories.find((r) => r.repository.id === repository.id);
    if (!health) throw new Error(`repository ${repository.id} missing from its organization`);
    const quarantine = health.quarantine;
    const owner = query.owner?.trim().toLowerCase() || undefined;
    const text = query.q?.trim().toLowerCase() || undefined;
    const sort = query.sort ?? "failure_rate";
    const tests: TableTest[] = [];
    for (const test of table.sorted(sort)) {
      const { row } = test;
      const quarantined =
        quarantineSetting(
          quarantine,
          row.quarantineOverride as QuarantineOverride,
          row.status as HealthStatus,
        ) !== null;
      if (
        query.status === "quarantined"
          ? !quarantined
          : query.status !== undefined && row.status !== query.status
      ) {
        continue;
      }
      if (owner !== undefined && !test.codeowners.some((o) => o.toLowerCase() === owner)) continue;
      if (
        text !== undefined &&
        ![row.name, row.classname, row.parent, row.file].some((field) =>
          field?.toLowerCase().includes(text),
        )
      ) {
        continue;
      }
      tests.push(test.quarantined === quarantined ? test : { ...test, quarantined });
    }
    const pages = Math.max(1, Math.ceil(tests.length / TABLE_PAGE_SIZE));
    const page = Math.min(Math.max(1, query.page ?? 1), pages);
    const start = (page - 1) * TABLE_PAGE_SIZE;
    const daily = health.daily.map((d) => ({
      day: d.day,
      failures: table.failures.get(d.day) ?? 0,
      flaky: d.flaky,
      broken: d.broken,
      quarantined: quarantinedOn(health, d.flaky),
    }));
    return {
      health,
      prsImpactedByFlaky7d: table.flakyPrs,
      daily,
      owners: table.owners,
      table: {
        query: { ...query, sort, page },
        total: tests.length,
        pages,
        rows: tests.slice(start, start + TABLE_PAGE_SIZE),
      },
    };
  }

  /**
   * The page from the stored figures: the stale ones computed again first, then the count and one
   * page of rows by the sort's index; the same answer as `repository`'s table in memory, at the
   * cost of a page instead of every test.
   */
  private async indexedPage(
    table: RepositoryTableRecords,
    principal: Principal,
    repository: Repository,
    query: TestsTableQuery,
    now: number,
  ): Promise<RepositoryPage> {
    const since = now - WINDOW_MS;
    await table.refreshFigures(repository.id, now);
    const [organization, summary] = await Promise.all([
      this.deps.overview.organization(principal, TREND_DAYS),
      this.summary(table, repository.id, now),
    ]);
    const health = organization.repositories.find((r) => r.repository.id === repository.id);
    if (!health) throw new Error(`repository ${repository.id} missing from its organization`);
    const quarantine = health.quarantine;
    const sort = query.sort ?? "failure_rate";
    const { ownersOf, failures, flakyPrs } = summary;
    const total = await table.tableCount(repository.id, query.status, quarantine);
    const pages = Math.max(1, Math.ceil(total / TABLE_PAGE_SIZE));
    const page = Math.min(Math.max(1, query.page ?? 1), pages);
    const found = await table.tablePage(
      repository.id,
      query.status,
      quarantine,
      sort,
      (page - 1) * TABLE_PAGE_SIZE,
      TABLE_PAGE_SIZE,
    );
    const rows = found.map((stored): TableTest => {
      const row = tableRow(stored);
      return {
        row,
        quarantined:
          quarantineSetting(
            quarantine,
            row.quarantineOverride as QuarantineOverride,
            row.status as HealthStatus,
          ) !== null,
        codeowners: ownersOf(row.file),
        failureRate7d: stored.failureRate7d,
        runs7d: stored.runs7d,
        ranIn7d: stored.runs7d > 0 || (row.lastRunAt !== null && row.lastRunAt >= since),
        prsImpacted7d: stored.prsImpacted7d,
      };
    });
    return {
      health,
      prsImpactedByFlaky7d: flakyPrs,
      daily: health.daily.map((d) => ({
        day: d.day,
        failures: failures.get(d.day) ?? 0,
        flaky: d.flaky,
        broken: d.broken,
        quarantined: quarantinedOn(health, d.flaky),
      })),
      owners: summary.owners,
      table: { query: { ...query, sort, page }, total, pages, rows },
    };
  }

  /**
   * What the indexed page shows besides its rows (code owners, daily failures, pull requests
   * impacted by flaky tests), kept per repository like the table (`TABLE_FRESH_MS`).
   */
  private summary(
    table: RepositoryTableRecords,
    repositoryId: string,
    now: number,
  ): Promise<PageSummary> {
    const known = this.summaries.get(repositoryId);
    if (known && now - known.at >= 0 && now - known.at < TABLE_FRESH_MS) return known.summary;
    const summary = this.readSummary(table, repositoryId, now);
    const entry = { at: now, summary };
    this.summaries.delete(repositoryId);
    this.summaries.set(repositoryId, entry);
    while (this.summaries.size > TABLES_KEPT) {
      const oldest = this.summaries.keys().next();
      if (oldest.done) break;
      this.summaries.delete(oldest.value);
    }
    summary.catch(() => {
      if (this.summaries.get(repositoryId) === entry) this.summaries.delete(repositoryId);
    });
    return summary;
  }

  private async readSummary(
    table: RepositoryTableRecords,
    repositoryId: string,
    now: number,
  ): Promise<PageSummary> {
    const since = now - WINDOW_MS;
    const firstDay = utcDay(now) - (TREND_DAYS - 1) * DAY_MS;
    const [settings, flakyPrs, failures, files] = await Promise.all([
      this.deps.settings.get(repositoryId),
      this.deps.records.prsImpactedByFlaky(repositoryId, since),
      this.deps.records.dailyFailures(repositoryId, firstDay),
      table.testFiles(repositoryId),
    ]);
    const codeowners = codeownersOf(settings.codeowners);
    const byFile = new Map<string, string[]>();
    const ownersOf = (file: string | null): string[] => {
      if (!file || !codeowners) return [];
      let owners = byFile.get(file);
      if (!owners) byFile.set(file, (owners = codeowners.ownersOf(file)));
      return owners;
    };
    const allOwners = new Set<string>();
    for (const file of files) for (const o of ownersOf(file)) allOwners.add(o);
    return { ownersOf, owners: [...allOwners].sort(), failures, flakyPrs };
  }

  /** The repository's table, from this process's memory when recent enough. */
  private table(repositoryId: string, now: number): Promise<CachedTable> {
    const known = this.tables.get(repositoryId);
    const age = known ? now - known.at : Infinity;
    if (known && age >= 0 && age < TABLE_FRESH_MS) return known.table;
    if (known?.ready && age >= 0 && age < TABLE_STALE_MS) {
      // Answer with what is known and read again behind it: steady use never waits for a read.
      if (!known.refreshing) {
        known.refreshing = true;
        // After this answer is on its way (SQLite's reads hold the process while they run).
        void new Promise<void>((resolve) => setImmediate(resolve))
          .then(() => this.readTable(repositoryId, now))
          .then(
            (table) => {
              if (this.tables.get(repositoryId) === known) {
                this.remember(repositoryId, {
                  at: now,
                  table: Promise.resolve(table),
                  ready: true,
                });
              }
            },
            () => {
              known.refreshing = false;
            },
          );
      }
      return known.table;
    }
    const table = this.readTable(repositoryId, now);
    const entry: TableEntry = { at: now, table, ready: false };
    this.remember(repositoryId, entry);
    table.then(
      () => {
        entry.ready = true;
      },
      () => {
        if (this.tables.get(repositoryId) === entry) this.tables.delete(repositoryId);
      },
    );
    return table;
  }

  private remember(repositoryId: string, entry: TableEntry): void {
    this.tables.delete(repositoryId);
    this.tables.set(repositoryId, entry);
    while (this.tables.size > TABLES_KEPT) {
      const oldest = this.tables.keys().next();
      if (oldest.done) break;
      this.tables.delete(oldest.value);
    }
  }

  private async readTable(repositoryId: string, now: number): Promise<CachedTable> {
    const since = now - WINDOW_MS;
    const firstDay = utcDay(now) - (TREND_DAYS - 1) * DAY_MS;
    const [settings, rows, counts, prs, flakyPrs, failures] = await Promise.all([
      this.deps.settings.get(repositoryId),
      this.deps.records.tests(repositoryId, undefined, NO_QUARANTINE),
      this.deps.records.recentCounts(repositoryId, since),
      this.deps.records.prsImpacted(repositoryId, since),
      this.deps.records.prsImpactedByFlaky(repositoryId, since),
      this.deps.records.dailyFailures(repositoryId, firstDay),
    ]);
    const codeowners = codeownersOf(settings.codeowners);
    const ownersByFile = new Map<string, string[]>();
    const ownersOf = (file: string | null): string[] => {
      if (!file || !codeowners) return [];
      let owners = ownersByFile.get(file);
      if (!owners) ownersByFile.set(file, (owners = codeowners.ownersOf(file)));
      return owners;
    };
    const allOwners = new Set<string>();
    const tests = rows.map((row): TableTest => {
      const owners = ownersOf(row.file);
      for (const o of owners) allOwners.add(o);
      const count = counts.get(row.key);
      const runs = count ? count.passed + count.failed : 0;
      return {
        row,
        quarantined: false,
        codeowners: owners,
        failureRate7d: count && runs > 0 ? count.failed / runs : 0,
        runs7d: runs,
        ranIn7d: runs > 0 || (row.lastRunAt !== null && row.lastRunAt >= since),
        prsImpacted7d: prs.get(row.key) ?? 0,
      };
    });
    const sorted = new Map<TableSort, TableTest[]>();
    return {
      failures,
      flakyPrs,
      owners: [...allOwners].sort(),
      sorted(sort) {
        let list = sorted.get(sort);
        if (!list) sorted.set(sort, (list = [...tests].sort(comparator(sort))));
        return list;
      },
    };
  }

  /** A repository's uploads, newest first, a page at a time (1-based). */
  async uploads(principal: Principal, ref: RepoRef, page: number): Promise<RepositoryUploads> {
    const repository = await this.deps.access.find(principal, undefined, ref);
    const wanted = Math.max(1, page);
    let { total, uploads } = await this.deps.uploads.list(
      repository.id,
      (wanted - 1) * UPLOADS_PAGE_SIZE,
      UPLOADS_PAGE_SIZE,
    );
    const pages = Math.max(1, Math.ceil(total / UPLOADS_PAGE_SIZE));
    let shown = wanted;
    if (wanted > pages) {
      shown = pages;
      ({ total, uploads } = await this.deps.uploads.list(
        repository.id,
        (pages - 1) * UPLOADS_PAGE_SIZE,
        UPLOADS_PAGE_SIZE,
      ));
    }
    return { repository, total, page: shown, pages, uploads };
  }

  /** A test's counted passes and failures per day over the last 30 days, every day present. */
  async testDaily(testKey: number): Promise<DailyRunCounts[]> {
    const today = utcDay(this.deps.clock.now());
    const firstDay = today - (TREND_DAYS - 1) * DAY_MS;
    const rows = await this.deps.records.testDaily(testKey, firstDay);
    const byDay = new Map(rows.map((r) => [r.day, r]));
    const result: DailyRunCounts[] = [];
    for (let day = firstDay; day <= today; day += DAY_MS) {
      const row = byDay.get(day);
      result.push({ day, passed: row?.passed ?? 0, failed: row?.failed ?? 0 });
    }
    return result;
  }
}

/** The table's row of a test read with its figures. */
function tableRow(stored: TableFiguresRow): TableTestRow {
  return {
    key: stored.key,
    id: stored.id,
    name: stored.name,
    classname: stored.classname,
    parent: stored.parent,
    file: stored.file,
    variant: stored.variant,
    status: stored.status,
    quarantineOverride: stored.quarantineOverride,
    lastRunAt: stored.lastRunAt,
    lastFailureAt: stored.lastFailureAt,
  };
}

/**
 * Quarantined tests on a day with `flaky` flaky tests: today's overrides applied to that day's
 * flaky count (the overrides' own history is not replayed).
 */
function quarantinedOn(health: RepositoryHealth, flaky: number): number {
  const settings = health.quarantine;
  if (!settings.quarantiningEnabled) return 0;
  if (!settings.autoQuarantine) return health.quarantined;
  // today: quarantined = always + flaky - alwaysFlaky - neverFlaky; shift by the flaky difference.
  return Math.max(0, health.quarantined + (flaky - health.flaky));
}
