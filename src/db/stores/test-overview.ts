import { sql, type Kysely } from "kysely";
import type { QuarantineOverride } from "../../testhealth/quarantine.js";
import type {
  OverrideCountRow,
  RepositoryWithQuarantine,
  StatusCountRow,
  TestOverviewRecords,
} from "../../testhealth/ports.js";
import type { StatusChange } from "../../testhealth/trends.js";
import type { Database } from "../schema.js";

/**
 * The organization-wide figures of the dashboard's home: a fixed number of statements whatever
 * the number of repositories or tests (no query per repository). Counts are grouped in the
 * database from the status and override indexes of `test_cases`; the trend reads only the status
 * changes of its window (`test_status_history_changes_idx`), each with the status before it.
 */
export class TestOverviewStore implements TestOverviewRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async repositories(organizationId: string): Promise<RepositoryWithQuarantine[]> {
    const rows = await this.db
      .selectFrom("repositories")
      .leftJoin("repositoryTestSettings", "repositoryTestSettings.repositoryId", "repositories.id")
      .select([
        "repositories.id",
        "repositories.organizationId",
        "repositories.host",
        "repositories.owner",
        "repositories.name",
        "repositories.createdAt",
        "repositoryTestSettings.quarantiningEnabled",
        "repositoryTestSettings.autoQuarantine",
      ])
      .where("repositories.organizationId", "=", organizationId)
      .orderBy("repositories.lookupKey")
      .execute();
    return rows.map(({ quarantiningEnabled, autoQuarantine, ...repository }) => ({
      repository,
      quarantine:
        quarantiningEnabled === null || autoQuarantine === null
          ? null
          : {
              quarantiningEnabled: Boolean(quarantiningEnabled),
              autoQuarantine: Boolean(autoQuarantine),
            },
    }));
  }

  /**
   * Tests per repository (all of them, from the `(repository_id, id)` index, grouped in index
   * order) and the flaky and broken ones (a range of the status index each): no hashing of every
   * test's row.
   */
  async statusCounts(repositoryIds: readonly string[]): Promise<StatusCountRow[]> {
    if (repositoryIds.length === 0) return [];
    const [totals, unhealthy] = await Promise.all([
      this.db
        .selectFrom("testCases")
        .select(["repositoryId", (eb) => eb.fn.countAll<number | string>().as("n")])
        .where("repositoryId", "in", [...repositoryIds])
        .groupBy("repositoryId")
        .execute(),
      this.db
        .selectFrom("testCases")
        .select(["repositoryId", "status", (eb) => eb.fn.countAll<number | string>().as("n")])
        .where("repositoryId", "in", [...repositoryIds])
        .where("status", "in", ["flaky", "broken"])
        .groupBy(["repositoryId", "status"])
        .execute(),
    ]);
    return [
      ...totals.map((r) => ({ repositoryId: r.repositoryId, status: "*", count: Number(r.n) })),
      ...unhealthy.map((r) => ({
        repositoryId: r.repositoryId,
        status: r.status,
        count: Number(r.n),
      })),
    ];
  }

  /**
   * Tests with an override per repository and override, and how many of them are flaky: from the
   * override index (grouped by status too, SQLite would rather scan the status index).
   */
  async overrideCounts(repositoryIds: readonly string[]): Promise<OverrideCountRow[]> {
    if (repositoryIds.length === 0) return [];
    const rows = await this.db
      .selectFrom("testCases")
      .select([
        "repositoryId",
        "quarantineOverride",
        (eb) => eb.fn.countAll<number | string>().as("n"),
        sql<number | string>`sum(case when status = 'flaky' then 1 else 0 end)`.as("flaky"),
      ])
      .where("repositoryId", "in", [...repositoryIds])
      .where("quarantineOverride", "in", ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE"])
      .groupBy(["repositoryId", "quarantineOverride"])
      .execute();
    return rows.map((r) => ({
      repositoryId: r.repositoryId,
      override: r.quarantineOverride as QuarantineOverride,
      count: Number(r.n),
      flaky: Number(r.flaky),
    }));
  }

  /**
   * The window's status changes are read from their time index (few: a test changes status
   * rarely), each test's repository by its key, and the status before each change from the
   * test's previous change by `(test_key, at)`. Driving from the tests instead would read every
   * test of the organization (a hash join over all of them on PostgreSQL).
   */
  async statusChanges(repositoryIds: readonly string[], since: number): Promise<StatusChange[]> {
    if (repositoryIds.length === 0) return [];
    const { rows } = await sql<{
      repositoryId: string;
      at: number | string;
      status: string;
      previous: string | null;
    }>`
      select c.repository_id, c.at, c.status,
        (select p.status from test_status_history p
          where p.test_key = c.test_key and p.kind = 'status' and p.at < c.at
          order by p.at desc limit 1) as previous
      from (
        select h.test_key, h.at, h.status,
          (select t.repository_id from test_cases t where t.key = h.test_key) as repository_id
        from test_status_history h
        where h.kind = 'status' and h.at >= ${since}
      ) as c
      where c.repository_id in (${sql.join([...repositoryIds])})
      order by c.at`.execute(this.db);
    return rows.map((r) => ({
      repositoryId: r.repositoryId,
      at: Number(r.at),
      status: r.status,
      previous: r.previous,
    }));
  }
}
