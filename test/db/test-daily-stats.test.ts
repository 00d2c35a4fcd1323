import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TestIngestStore } from "../../src/db/stores/test-ingest.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { insertTestCase, seedRepository } from "../helpers/test-cases.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.parse("2026-11-20T00:00:00.000Z");

let database: TestDatabase;
let ingest: TestIngestStore;
let repositoryId: string;

beforeEach(async () => {
  database = await createTestDatabase();
  ingest = new TestIngestStore(database.handle);
  repositoryId = await seedRepository(database.handle.db);
});
afterEach(async () => {
  await database.cleanup();
});

async function testCase(id: string): Promise<number> {
  return insertTestCase(database.handle.db, repositoryId, id, T);
}

let uploads = 0;
/** An upload whose runs are `[test, time, status]`, aggregated as the ingestion does. */
async function upload(runs: [number, number, string][], excluded = false): Promise<void> {
  const { key } = await database.handle.db
    .insertInto("uploads")
    .values({
      id: `u${++uploads}`,
      organizationId: "o1",
      repositoryId,
      state: "processed",
      reason: null,
      createdAt: T,
      urlExpiresAt: T + HOUR,
    })
    .returning("key")
    .executeTakeFirstOrThrow();
  await ingest.transaction(repositoryId, async (tx) => {
    await tx.insertRuns(
      runs.map(([testKey, at, status]) => ({
        testKey,
        uploadKey: key,
        fileIndex: 0,
        at,
        status: status as "passed" | "failed" | "skipped",
        attempt: "final",
        durationMs: 1,
        failureSignature: status === "failed" ? "sig" : null,
        failureSummary: status === "failed" ? `failed at ${String(at)}` : null,
        failureText: null,
      })),
    );
    await ingest.aggregateUpload(tx.trx, { key, repositoryId, prNumber: null, excluded });
  });
}

/** The hourly counts rolled up by day, and the daily counts, both in one order. */
async function bothWays() {
  const { rows } = await sql<Record<string, number | string>>`
    select test_key, (hour / ${sql.lit(DAY)}) * ${sql.lit(DAY)} as day, sum(passed) as passed,
      sum(failed) as failed, sum(excluded_failed) as excluded_failed
    from test_hourly_stats group by 1, 2 order by 1, 2`.execute(database.handle.db);
  const days = await database.handle.db
    .selectFrom("testDailyStats")
    .select(["testKey", "day", "passed", "failed", "excludedFailed"])
    .orderBy("testKey")
    .orderBy("day")
    .execute();
  const numbers = (row: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [
        k,
        typeof v === "string" && k !== "signature" ? Number(v) : v,
      ]),
    );
  const { rows: groupRows } = await sql<Record<string, number | string>>`
    select test_key, (hour / ${sql.lit(DAY)}) * ${sql.lit(DAY)} as day, signature,
      sum(occurrences) as occurrences, max(last_at) as last_at
    from test_failure_groups group by 1, 2, 3 order by 1, 2, 3`.execute(database.handle.db);
  const dailyGroups = await database.handle.db
    .selectFrom("testDailyFailureGroups")
    .select(["testKey", "day", "signature", "occurrences", "lastAt"])
    .orderBy("testKey")
    .orderBy("day")
    .orderBy("signature")
    .execute();
  return {
    rolledUp: rows.map(numbers),
    daily: days.map(numbers),
    groupsRolledUp: groupRows.map(numbers),
    dailyGroups: dailyGroups.map(numbers),
  };
}

describe(`test_daily_stats on ${TEST_DIALECT}`, () => {
  it("counts what the hourly counts do, by UTC day, excluded uploads apart", async () => {
    const a = await testCase("a");
    const b = await testCase("b");
    await upload([
      [a, T - 1, "failed"],
      [a, T, "failed"],
      [a, T + 5 * HOUR, "passed"],
      [b, T + DAY - 1, "skipped"],
      [b, T + DAY, "passed"],
    ]);
    await upload([
      [a, T + 3 * HOUR, "failed"],
      [b, T + DAY + 1, "failed"],
    ]);
    await upload(
      [
        [a, T + 2 * HOUR, "failed"],
        [a, T + 2 * HOUR, "passed"],
      ],
      true,
    );
    const { rolledUp, daily, groupsRolledUp, dailyGroups } = await bothWays();
    expect(daily).toEqual(rolledUp);
    expect(dailyGroups).toEqual(groupsRolledUp);
    expect(dailyGroups).toContainEqual({
      testKey: a,
      day: T,
      signature: "sig",
      occurrences: 2,
      lastAt: T + 3 * HOUR,
    });
    expect(daily).toContainEqual({
      testKey: a,
      day: T,
      passed: 1,
      failed: 2,
      excludedFailed: 1,
    });
  });

  it("keeps a day until every hour of it is gone", async () => {
    const a = await testCase("a");
    await upload([
      [a, T - DAY, "failed"],
      [a, T + HOUR, "failed"],
      [a, T + DAY, "failed"],
    ]);
    await ingest.pruneAggregates(T + 2 * HOUR);
    const days = await database.handle.db.selectFrom("testDailyStats").select("day").execute();
    expect(days.map((d) => d.day).sort()).toEqual([T, T + DAY]);
    await ingest.pruneAggregates(T + DAY);
    const left = await database.handle.db.selectFrom("testDailyStats").select("day").execute();
    expect(left.map((d) => d.day)).toEqual([T + DAY]);
  });
});
