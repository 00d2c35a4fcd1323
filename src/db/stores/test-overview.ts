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

  async statusCounts(organizationId: string): Promise<StatusCountRow[]> {
    const rows = await this.db
      .selectFrom("testCases")
      .select(["repositoryId", "status", (eb) => eb.fn.countAll<number | string>().as("n")])
      .where("repositoryId", "in", (eb) =>
        eb.selectFrom("repositories").select("id").where("organizationId", "=", organizationId),
      )
      .groupBy(["repositoryId", "status"])
      .execute();
    return rows.map((r) => ({
      repositoryId: r.repositoryId,
      status: r.status,
      count: Number(r.n),
    }));
  }

  async overrideCounts(organizationId: string): Promise<OverrideCountRow[]> {
    const rows = await this.db
      .selectFrom("testCases")
      .select([
        "repositoryId",
        "status",
        "quarantineOverride",
        (eb) => eb.fn.countAll<number | string>().as("n"),
      ])
      .where("repositoryId", "in", (eb) =>
        eb.selectFrom("repositories").select("id").where("organizationId", "=", organizationId),
      )
      .where("quarantineOverride", "in", ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE"])
      .groupBy(["repositoryId", "status", "quarantineOverride"])
      .execute();
    return rows.map((r) => ({
      repositoryId: r.repositoryId,
      status: r.status,
      override: r.quarantineOverride as QuarantineOverride,
      count: Number(r.n),
    }));
  }

  /**
   * `cross join`: SQLite starts from the window's changes (few) rather than from every test of
   * the organization; the status before each change is the test's previous change, found by
   * `(test_key, at)`.
   */
  async statusChanges(organizationId: string, since: number): Promise<StatusChange[]> {
    const { rows } = await sql<{
      repositoryId: string;
      at: number | string;
      status: string;
      previous: string | null;
    }>`
      select t.repository_id, h.at, h.status,
        (select p.status from test_status_history p
          where p.test_key = h.test_key and p.kind = 'status' and p.at < h.at
          order by p.at desc limit 1) as previous
      from test_status_history h cross join test_cases t
      where h.kind = 'status' and h.at >= ${since} and t.key = h.test_key
        and t.repository_id in (
          select id from repositories where organization_id = ${organizationId})
      order by h.at`.execute(this.db);
    return rows.map((r) => ({
      repositoryId: r.repositoryId,
      at: Number(r.at),
      status: r.status,
      previous: r.previous,
    }));
  }
}
