import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from "kysely";
import type { HealthStatus } from "../../testhealth/monitors.js";
import type { QuarantineOverride, QuarantineSettings } from "../../testhealth/quarantine.js";
import type { TestStanding } from "../../testhealth/records.js";
import type { Database } from "../schema.js";
import type { TestCaseRecords } from "../../testhealth/ports.js";

/**
 * The quarantine rule as SQL over `test_cases`:
 * `enabled && (override == ALWAYS || (override != NEVER && auto && status == flaky))`.
 */
export function quarantinedWhere(
  eb: ExpressionBuilder<Database, "testCases">,
  settings: QuarantineSettings,
): Expression<SqlBool> {
  if (!settings.quarantiningEnabled) return sql<SqlBool>`1 = 0`;
  return eb.or([
    eb("testCases.quarantineOverride", "=", "ALWAYS_QUARANTINE"),
    ...(settings.autoQuarantine
      ? [
          eb.and([
            eb("testCases.quarantineOverride", "<>", "NEVER_QUARANTINE"),
            eb("testCases.status", "=", "flaky"),
          ]),
        ]
      : []),
  ]);
}

/** Test cases of repositories: what the Flaky Tests API reads and the overrides it writes. */
export class TestCaseStore implements TestCaseRecords {
  constructor(private readonly db: Kysely<Database>) {}

  /** Ids of every quarantined test of the repository (getQuarantineConfig). */
  async quarantinedIds(repositoryId: string, settings: QuarantineSettings): Promise<string[]> {
    if (!settings.quarantiningEnabled) return [];
    const rows = await this.db
      .selectFrom("testCases")
      .select("id")
      .where("repositoryId", "=", repositoryId)
      .where((eb) => quarantinedWhere(eb, settings))
      .orderBy("id")
      .execute();
    return rows.map((r) => r.id);
  }

  /** Which of these tests are known flaky or quarantined now (the merge queue's flaky retry). */
  async flakyOrQuarantined(
    repositoryId: string,
    ids: readonly string[],
    settings: QuarantineSettings,
  ): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .selectFrom("testCases")
      .select("id")
      .where("repositoryId", "=", repositoryId)
      .where("id", "in", [...ids])
      .where((eb) => eb.or([eb("status", "=", "flaky"), quarantinedWhere(eb, settings)]))
      .execute();
    return new Set(rows.map((r) => r.id));
  }

  async standing(repositoryId: string, ids: readonly string[]): Promise<TestStanding[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom("testCases")
      .select(["id", "status", "quarantineOverride", "firstSeenAt"])
      .where("repositoryId", "=", repositoryId)
      .where("id", "in", [...ids])
      .execute();
    return rows.map((row) => ({
      id: row.id,
      status: row.status as HealthStatus,
      quarantineOverride: row.quarantineOverride as QuarantineOverride,
      firstSeenAt: row.firstSeenAt,
    }));
  }
}
