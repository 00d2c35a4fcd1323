import { sql, type Kysely } from "kysely";
import type {
  RepositoryTableRecords,
  TableFiguresRow,
  TableOrder,
} from "../../testhealth/ports.js";
import type { QuarantineSettings } from "../../testhealth/quarantine.js";
import type { DatabaseHandle, DialectName } from "../connection.js";
import type { Database } from "../schema.js";
import { computeFigures, staleFigures } from "../figures.js";
import {
  TABLE_ROW_COLUMNS,
  testsOfRepository,
  toNumber,
  type TestStatusFilter as Status,
} from "./repository-health.js";

/**
 * The repository page's tests table over each test's stored 7-day figures: a page is read by the
 * index of its sort (`limit`/`offset`), not computed over every test. Names sort as JavaScript
 * compares strings (code points: `collate "C"` on PostgreSQL, binary on SQLite), and tests that
 * never failed last when sorted by last failure.
 */
export class RepositoryTableStore implements RepositoryTableRecords {
  private readonly db: Kysely<Database>;
  private readonly dialect: DialectName;

  constructor(handle: Pick<DatabaseHandle, "db" | "dialect">) {
    this.db = handle.db;
    this.dialect = handle.dialect;
  }

  async refreshFigures(repositoryId: string, now: number): Promise<void> {
    // Reading first: a page view writes only when some figures must change.
    const stale = await this.db
      .selectFrom("testCases")
      .select("key")
      .where("repositoryId", "=", repositoryId)
      .where((eb) => eb.or([eb("figuresExpireAt", "<=", now), eb("figuresAt", ">", now)]))
      .limit(1)
      .execute();
    if (stale.length === 0) return;
    await computeFigures(this.db, this.dialect, staleFigures(repositoryId, now), now);
  }

  async tablePage(
    repositoryId: string,
    status: Status,
    quarantine: QuarantineSettings,
    order: TableOrder,
    offset: number,
    limit: number,
  ): Promise<TableFiguresRow[]> {
    const postgres = this.dialect === "postgres";
    const name = sql.raw(postgres ? `"name" collate "C"` : `"name"`);
    const nullsLast = sql.raw(postgres ? " nulls last" : "");
    const orderBy =
      order === "failure_rate"
        ? sql`"week_failure_rate" desc, "week_prs_impacted" desc, ${name}, "key"`
        : order === "prs_impacted"
          ? sql`"week_prs_impacted" desc, "week_failure_rate" desc, ${name}, "key"`
          : sql`"last_failure_at" desc${nullsLast}, ${name}, "key"`;
    const rows = await this.filtered(repositoryId, status, quarantine)
      .select([...TABLE_ROW_COLUMNS, "weekFailureRate", "weekRuns", "weekPrsImpacted"])
      .orderBy(orderBy)
      .limit(limit)
      .offset(offset)
      .execute();
    return rows.map(({ weekFailureRate, weekRuns, weekPrsImpacted, ...row }) => ({
      ...row,
      lastRunAt: toNumber(row.lastRunAt),
      lastFailureAt: toNumber(row.lastFailureAt),
      failureRate7d: weekFailureRate,
      runs7d: weekRuns,
      prsImpacted7d: weekPrsImpacted,
    }));
  }

  async tableCount(
    repositoryId: string,
    status: Status,
    quarantine: QuarantineSettings,
  ): Promise<number> {
    const row = await this.filtered(repositoryId, status, quarantine)
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async testFiles(repositoryId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom("testCases")
      .select("file")
      .distinct()
      .where("repositoryId", "=", repositoryId)
      .where("file", "is not", null)
      .execute();
    return rows.map((r) => r.file).filter((file): file is string => file !== null);
  }

  private filtered(repositoryId: string, status: Status, quarantine: QuarantineSettings) {
    return testsOfRepository(this.db, repositoryId, status, quarantine);
  }
}
