import { sql, type Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { noParallelListScans } from "../../src/db/migrations/0027_no_parallel_list_scans.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { splitHours, splitWindow, TestListStore } from "../../src/db/stores/test-lists.js";
import {
  TEST_DIALECT,
  createTestDatabase,
  statementRecorder,
  type TestDatabase,
} from "../helpers/database.js";
import { insertTestCase, seedRepository } from "../helpers/test-cases.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.parse("2026-11-20T00:00:00.000Z");

let database: TestDatabase;
let store: TestListStore;
let repositoryId: string;
let otherRepositoryId: string;

beforeEach(async () => {
  database = await createTestDatabase();
  store = new TestListStore(database.handle.db, database.handle.dialect);
  repositoryId = await seedRepository(database.handle.db);
  const repositories = new RepositoryStore(database.handle.db);
  otherRepositoryId = (await repositories.ensure("o1", { host: "h", owner: "o", name: "m" }, 1)).id;
});
afterEach(async () => {
  await database.cleanup();
});

async function testCase(
  id: string,
  values: Record<string, unknown> = {},
  repository = repositoryId,
): Promise<number> {
  return insertTestCase(database.handle.db, repository, id, T, values);
}

let uploadCounter = 0;
async function upload(state: string, repository = repositoryId): Promise<number> {
  const row = await database.handle.db
    .insertInto("uploads")
    .values({
      id: `u${++uploadCounter}`,
      organizationId: "o1",
      repositoryId: repository,
      state,
      reason: null,
      createdAt: T,
      urlExpiresAt: T + HOUR,
    })
    .returning("key")
    .executeTakeFirstOrThrow();
  return row.key;
}

async function failedRun(testKey: number, uploadKey: number, at: number) {
  await database.handle.db
    .insertInto("testRuns")
    .values({
      testKey,
      uploadKey,
      fileIndex: 0,
      at,
      status: "failed",
      attempt: "final",
      durationMs: null,
      failureSignature: null,
      failureSummary: null,
      failureText: null,
    })
    .execute();
}

async function hourly(
  testKey: number,
  hour: number,
  failed: number,
  excludedFailed = 0,
  repository = repositoryId,
) {
  await database.handle.db
    .insertInto("testHourlyStats")
    .values({ testKey, hour, repositoryId: repository, passed: 1, failed, excludedFailed })
    .execute();
}

/** A row of `test_daily_stats` (what the ingestion derives along with the hourly rows). */
async function daily(testKey: number, day: number, failed: number, excludedFailed = 0) {
  await database.handle.db
    .insertInto("testDailyStats")
    .values({ testKey, day, repositoryId, passed: 1, failed, excludedFailed })
    .execute();
}

describe("splitWindow", () => {
  it("splits a window into whole hours and partial edges", () => {
    expect(splitWindow(T, T + 2 * HOUR)).toEqual({ hours: [T, T + 2 * HOUR], edges: [] });
    // No whole hour inside: raw runs only (never more than two partial hours).
    expect(splitWindow(T + 1, T + 2 * HOUR - 1)).toEqual({
      hours: null,
      edges: [[T + 1, T + 2 * HOUR - 1]],
    });
    expect(splitWindow(T + 1, T + 3 * HOUR - 1)).toEqual({
      hours: [T + HOUR, T + 2 * HOUR],
      edges: [
        [T + 1, T + HOUR],
        [T + 2 * HOUR, T + 3 * HOUR - 1],
      ],
    });
    expect(splitWindow(T + 10, T + 20)).toEqual({ hours: null, edges: [[T + 10, T + 20]] });
    expect(splitWindow(T + HOUR - 1, T + HOUR + 1)).toEqual({
      hours: null,
      edges: [[T + HOUR - 1, T + HOUR + 1]],
    });
  });
});

describe("splitHours", () => {
  it("splits whole hours into whole days and the hours around them", () => {
    expect(splitHours([T, T + 3 * HOUR])).toEqual({ days: null, hours: [[T, T + 3 * HOUR]] });
    expect(splitHours([T, T + DAY])).toEqual({ days: [T, T + DAY], hours: [] });
    expect(splitHours([T - 2 * HOUR, T + 2 * DAY + HOUR])).toEqual({
      days: [T, T + 2 * DAY],
      hours: [
        [T - 2 * HOUR, T],
        [T + 2 * DAY, T + 2 * DAY + HOUR],
      ],
    });
    expect(splitHours([T + HOUR, T + DAY + HOUR])).toEqual({
      days: null,
      hours: [[T + HOUR, T + DAY + HOUR]],
    });
    expect(splitHours([T, T])).toEqual({ days: null, hours: [] });
  });
});

describe(`TestListStore on ${TEST_DIALECT}`, () => {
  it("failing: whole hours from the aggregates, edges from processed uploads' failed runs only", async () => {
    const a = await testCase("a");
    const b = await testCase("b");
    const c = await testCase("c");
    const d = await testCase("d");
    const elsewhere = await testCase("z", {}, otherRepositoryId);
    const processed = await upload("processed");
    const processing = await upload("processing");
    // Whole hour T+1h: a 2 failures + 1 excluded, b 1; a healthy hour row of c counts nothing.
    await hourly(a, T + HOUR, 2, 1);
    await hourly(b, T + HOUR, 1);
    await hourly(c, T + HOUR, 0);
    await hourly(elsewhere, T + HOUR, 5, 0, otherRepositoryId);
    // Edges [T+30m, T+1h) and [T+2h, T+2h30m).
    await failedRun(b, processed, T + 30 * 60_000);
    await failedRun(b, processed, T + 2 * HOUR);
    await failedRun(c, processed, T + 2 * HOUR + 30 * 60_000 - 1);
    await failedRun(c, processed, T + 2 * HOUR + 30 * 60_000); // at the end: out
    await failedRun(d, processing, T + 2 * HOUR + 60_000); // not processed: out
    await failedRun(d, processed, T + 30 * 60_000 - 1); // before the start: out

    const window = { start: T + 30 * 60_000, end: T + 2 * HOUR + 30 * 60_000 };
    const page = await store.failing(repositoryId, window, 0, 10);
    expect(page).toEqual({
      total: 3,
      rows: [
        { key: a, failures: 3 },
        { key: b, failures: 3 },
        { key: c, failures: 1 },
      ],
    });
    expect(await store.failing(repositoryId, window, 1, 1)).toEqual({
      total: 3,
      rows: [{ key: b, failures: 3 }],
    });
    // An offset past the end: no rows, the right total.
    expect(await store.failing(repositoryId, window, 10, 5)).toEqual({ total: 3, rows: [] });
    expect(await store.failing(repositoryId, { start: T, end: T + 1 }, 0, 5)).toEqual({
      total: 0,
      rows: [],
    });
  });

  it("failing: sees hours changed since an earlier answer", async () => {
    const a = await testCase("a");
    const b = await testCase("b");
    await hourly(a, T, 1);
    const window = { start: T, end: T + 3 * HOUR };
    expect(await store.failing(repositoryId, window, 0, 10)).toEqual({
      total: 1,
      rows: [{ key: a, failures: 1 }],
    });
    // One more failure in a known row, a new failing row, a new hour.
    await database.handle.db
      .updateTable("testHourlyStats")
      .set({ failed: 2 })
      .where("testKey", "=", a)
      .execute();
    await hourly(b, T, 0, 1);
    await hourly(b, T + 2 * HOUR, 3);
    expect(await store.failing(repositoryId, window, 0, 10)).toEqual({
      total: 2,
      rows: [
        { key: b, failures: 4 },
        { key: a, failures: 2 },
      ],
    });
    // Retention removes a whole hour.
    await database.handle.db.deleteFrom("testHourlyStats").where("hour", "=", T).execute();
    expect(await store.failing(repositoryId, window, 0, 10)).toEqual({
      total: 1,
      rows: [{ key: b, failures: 3 }],
    });
  });

  it("failing: pages over one order (failures, then id), whether the hours are known or not", async () => {
    // Ids inserted out of id order, many ties; hours read cold, warm, and after a change.
    const names = Array.from(
      { length: 40 },
      (_, i) => `t${String((i * 17) % 40).padStart(2, "0")}`,
    );
    const keys = new Map<string, number>();
    for (const name of names) keys.set(name, await testCase(name));
    for (const [i, name] of names.entries()) {
      const key = keys.get(name) ?? 0;
      await hourly(key, T, 1 + (i % 3));
      if (i % 4 === 0) await hourly(key, T + HOUR, 1, i % 8 === 0 ? 1 : 0);
    }
    const window = { start: T, end: T + 2 * HOUR };
    const expected = async () => {
      const rows = await database.handle.db
        .selectFrom("testHourlyStats")
        .innerJoin("testCases", "testCases.key", "testHourlyStats.testKey")
        .select(["testCases.id", "testHourlyStats.testKey", "failed", "excludedFailed"])
        .where("testHourlyStats.repositoryId", "=", repositoryId)
        .execute();
      const totals = new Map<number, { id: string; failures: number }>();
      for (const row of rows) {
        const total = totals.get(row.testKey) ?? { id: row.id, failures: 0 };
        total.failures += row.failed + row.excludedFailed;
        totals.set(row.testKey, total);
      }
      return [...totals]
        .filter(([, t]) => t.failures > 0)
        .sort(([, a], [, b]) => b.failures - a.failures || (a.id < b.id ? -1 : 1))
        .map(([key, t]) => ({ key, failures: t.failures }));
    };
    const walk = async (pages: TestListStore, size: number) => {
      const rows = [];
      for (let offset = 0; ; offset += size) {
        const page = await pages.failing(repositoryId, window, offset, size);
        expect(page.total).toBe(40);
        rows.push(...page.rows);
        if (page.rows.length < size) return rows;
      }
    };
    const order = await expected();
    expect(await walk(store, 7)).toEqual(order); // cold, then warm page by page
    expect(await walk(store, 40)).toEqual(order);
    // Another process (a store of its own) answers the same pages.
    expect(await walk(new TestListStore(database.handle.db, database.handle.dialect), 3)).toEqual(
      order,
    );
    // A new test with a tie and one more failure for a known one: the same order as computed.
    await hourly(await testCase("t15a"), T + HOUR, 2);
    await database.handle.db
      .updateTable("testHourlyStats")
      .set({ failed: 9 })
      .where("testKey", "=", keys.get("t39") ?? 0)
      .where("hour", "=", T)
      .execute();
    const changed = await expected();
    expect(changed[0]).toMatchObject({ key: keys.get("t39") });
    const rows = [];
    for (let offset = 0; offset < 41; offset += 6) {
      const page = await store.failing(repositoryId, window, offset, 6);
      expect(page.total).toBe(41);
      rows.push(...page.rows);
    }
    expect(rows).toEqual(changed);
  });

  it("failing: whole days from the daily counts, the hours around them hourly, edges raw", async () => {
    const a = await testCase("a");
    const b = await testCase("b");
    const c = await testCase("c");
    const processed = await upload("processed");
    // Window [T - 90 min, T + 2 days + 90 min): hours [T - 1h, T) and [T + 2d, T + 2d + 1h),
    // days T and T + 1d, raw edges [T - 90m, T - 1h) and [T + 2d + 1h, T + 2d + 90m).
    const window = { start: T - 90 * 60_000, end: T + 2 * DAY + 90 * 60_000 };
    await daily(a, T, 2, 1);
    await daily(a, T + DAY, 1);
    await daily(b, T + DAY, 0); // a healthy day counts nothing
    await daily(c, T + 2 * DAY, 9); // the day after the window's last whole day: its hours count
    await daily(c, T - DAY, 9); // the day before: its hours count
    await hourly(b, T - HOUR, 2);
    await hourly(c, T - 2 * HOUR, 5); // before the window's first whole hour: out
    await hourly(c, T + 2 * DAY, 1);
    await hourly(c, T + 2 * DAY + HOUR, 7); // partial at the end: raw runs decide
    await failedRun(c, processed, T - 90 * 60_000);
    await failedRun(c, processed, T + 2 * DAY + 90 * 60_000 - 1);
    await failedRun(b, processed, T + 2 * DAY + 90 * 60_000); // at the end: out
    const expected = {
      total: 3,
      rows: [
        { key: a, failures: 4 },
        { key: c, failures: 3 },
        { key: b, failures: 2 },
      ],
    };
    const { plugin, statements } = statementRecorder();
    const counted = new TestListStore(
      database.handle.db.withPlugin(plugin),
      database.handle.dialect,
    );
    expect(await counted.failing(repositoryId, window, 0, 10)).toEqual(expected);
    expect(statements.length).toBeGreaterThan(1); // the units' rows and the tests' ids
    statements.length = 0;
    // From memory: every unit's signature and the edges in one statement, one round trip.
    expect(await counted.failing(repositoryId, window, 0, 10)).toEqual(expected);
    expect(statements).toHaveLength(1);
    statements.length = 0;
    // A day that changed is read again, and only it.
    await database.handle.db
      .updateTable("testDailyStats")
      .set({ failed: 6 })
      .where("testKey", "=", b)
      .where("day", "=", T + DAY)
      .execute();
    expect(await counted.failing(repositoryId, window, 0, 10)).toEqual({
      total: 3,
      rows: [
        { key: b, failures: 8 },
        { key: a, failures: 4 },
        { key: c, failures: 3 },
      ],
    });
    expect(statements).toHaveLength(2);
    expect(statements[1]).toContain("as tests");
  });

  // SQLite has no parallel plans.
  if (TEST_DIALECT === "postgres")
    it("failing: PostgreSQL plans the lists' scans without parallel workers, however cheap they are", async () => {
      const a = await testCase("a");
      for (let i = 0; i < 200; i++) await hourly(a, T + i * HOUR, 1);
      const db = database.handle.db;
      const { rows: options } = await sql<{ relname: string; reloptions: string[] | null }>`
        select relname, reloptions from pg_class
        where relnamespace = current_schema()::regnamespace
          and relname in ('test_daily_stats', 'test_hourly_stats', 'test_runs')
        order by relname`.execute(db);
      expect(options).toEqual(
        ["test_daily_stats", "test_hourly_stats", "test_runs"].map((relname) => ({
          relname,
          reloptions: ["parallel_workers=0"],
        })),
      );
      // Parallel plans made free: PostgreSQL would choose one for these scans but for the setting.
      const plans = await db.connection().execute(async (connection) => {
        await sql`begin`.execute(connection);
        try {
          await sql`set local parallel_setup_cost = 0; set local parallel_tuple_cost = 0;
            set local min_parallel_table_scan_size = 0; set local min_parallel_index_scan_size = 0;
            set local enable_indexscan = off; set local enable_bitmapscan = off`.execute(
            connection,
          );
          const explain = async (query: string) =>
            (await sql.raw<{ "QUERY PLAN": string }>(`explain ${query}`).execute(connection)).rows
              .map((row) => row["QUERY PLAN"])
              .join("\n");
          const hourlyPlan = await explain(
            "select hour, count(*) from test_hourly_stats where failed > 0 group by hour",
          );
          await sql`alter table test_hourly_stats reset (parallel_workers)`.execute(connection);
          const unsetPlan = await explain(
            "select hour, count(*) from test_hourly_stats where failed > 0 group by hour",
          );
          return { hourlyPlan, unsetPlan };
        } finally {
          await sql`rollback`.execute(connection);
        }
      });
      expect(plans.unsetPlan).toMatch(/Gather/); // the check can fail
      expect(plans.hourlyPlan).not.toMatch(/Gather|Parallel/);
      // The migration's down leaves the tables as PostgreSQL's defaults have them.
      await noParallelListScans.down(db as unknown as Kysely<unknown>, columnTypes("postgres"));
      const { rows: after } = await sql<{ reloptions: string[] | null }>`
        select reloptions from pg_class
        where relnamespace = current_schema()::regnamespace
          and relname in ('test_daily_stats', 'test_hourly_stats', 'test_runs')`.execute(db);
      expect(after).toEqual([{ reloptions: null }, { reloptions: null }, { reloptions: null }]);
    });

  it("failing: orders huge counts too", async () => {
    const keys = [await testCase("c"), await testCase("b"), await testCase("a")];
    await hourly(keys[0] ?? 0, T, 5_000_000);
    await hourly(keys[1] ?? 0, T, 7);
    await hourly(keys[2] ?? 0, T, 7);
    expect(await store.failing(repositoryId, { start: T, end: T + HOUR }, 0, 10)).toEqual({
      total: 3,
      rows: [
        { key: keys[0], failures: 5_000_000 },
        { key: keys[2], failures: 7 },
        { key: keys[1], failures: 7 },
      ],
    });
  });

  it("unhealthy: by PRs impacted since now - 7 days, then by id", async () => {
    const now = T + 10 * 24 * HOUR;
    const x = await testCase("x", { status: "flaky" });
    const y = await testCase("y", { status: "flaky" });
    const w = await testCase("w", { status: "flaky" });
    await testCase("v", { status: "broken" });
    await testCase("u", { status: "healthy" });
    const prs = [
      { testKey: y, prNumber: 1, lastFailedAt: now - 1 },
      { testKey: y, prNumber: 2, lastFailedAt: now - 7 * 24 * HOUR },
      { testKey: x, prNumber: 3, lastFailedAt: now - 7 * 24 * HOUR - 1 }, // too old
      { testKey: w, prNumber: 3, lastFailedAt: now },
    ];
    await database.handle.db.insertInto("testPrFailures").values(prs).execute();
    expect(await store.unhealthy(repositoryId, "flaky", now, 0, 10)).toEqual({
      total: 3,
      rows: [
        { key: y, prsImpacted7d: 2 },
        { key: w, prsImpacted7d: 1 },
        { key: x, prsImpacted7d: 0 },
      ],
    });
    expect(await store.unhealthy(repositoryId, "flaky", now, 5, 10)).toEqual({
      total: 3,
      rows: [],
    });
    expect((await store.unhealthy(repositoryId, "broken", now, 0, 10)).total).toBe(1);
  });

  it("quarantined: the rule of the settings, most recently quarantined first, then by id", async () => {
    const always = await testCase("q1", {
      quarantineOverride: "ALWAYS_QUARANTINE",
      overrideAt: T + 5,
      statusChangedAt: T + 100,
    });
    const auto1 = await testCase("q3", { status: "flaky", statusChangedAt: T + 7 });
    const auto2 = await testCase("q2", { status: "flaky", statusChangedAt: T + 7 });
    await testCase("q4", { status: "flaky", quarantineOverride: "NEVER_QUARANTINE" });
    await testCase("q5", { status: "broken", statusChangedAt: T + 50 });
    const on = { quarantiningEnabled: true, autoQuarantine: true };
    expect(await store.quarantined(repositoryId, on, 0, 10)).toEqual({
      total: 3,
      rows: [
        { key: auto2, quarantinedAt: T + 7 },
        { key: auto1, quarantinedAt: T + 7 },
        { key: always, quarantinedAt: T + 5 },
      ],
    });
    expect(
      await store.quarantined(
        repositoryId,
        { quarantiningEnabled: true, autoQuarantine: false },
        0,
        10,
      ),
    ).toEqual({ total: 1, rows: [{ key: always, quarantinedAt: T + 5 }] });
    expect(
      await store.quarantined(
        repositoryId,
        { quarantiningEnabled: false, autoQuarantine: true },
        0,
        10,
      ),
    ).toEqual({ total: 0, rows: [] });
    expect(await store.quarantined(repositoryId, on, 3, 10)).toEqual({ total: 3, rows: [] });
  });
});
