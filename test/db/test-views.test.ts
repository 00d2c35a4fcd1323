import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TestViewStore } from "../../src/db/stores/test-views.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { insertTestCase, seedRepository } from "../helpers/test-cases.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T = Date.parse("2026-11-20T00:00:00.000Z");
/** "Now": 20 minutes into an hour, so that both windows start with a partial hour. */
const NOW = T + 8 * DAY + 20 * 60_000;

let database: TestDatabase;
let views: TestViewStore;
let repositoryId: string;

beforeEach(async () => {
  database = await createTestDatabase();
  views = new TestViewStore(database.handle.db, database.handle.dialect);
  repositoryId = await seedRepository(database.handle.db);
});
afterEach(async () => {
  await database.cleanup();
});

async function testCase(id: string): Promise<number> {
  return insertTestCase(database.handle.db, repositoryId, id, T);
}

let uploads = 0;
async function upload(infrastructureFailure = 0): Promise<number> {
  const row = await database.handle.db
    .insertInto("uploads")
    .values({
      id: `u${++uploads}`,
      organizationId: "o1",
      repositoryId,
      state: "processed",
      reason: null,
      createdAt: T,
      urlExpiresAt: T + HOUR,
      infrastructureFailure,
    })
    .returning("key")
    .executeTakeFirstOrThrow();
  return row.key;
}

async function run(testKey: number, uploadKey: number, at: number, status: string) {
  await database.handle.db
    .insertInto("testRuns")
    .values({
      testKey,
      uploadKey,
      fileIndex: 0,
      at,
      status,
      attempt: "final",
      durationMs: null,
      failureSignature: null,
      failureSummary: null,
      failureText: null,
    })
    .execute();
}

async function hourly(testKey: number, hour: number, passed: number, failed: number) {
  await database.handle.db
    .insertInto("testHourlyStats")
    .values({ testKey, hour, repositoryId, passed, failed, excludedFailed: 0 })
    .execute();
}

async function group(testKey: number, hour: number, signature: string, n: number, at: number) {
  await database.handle.db
    .insertInto("testFailureGroups")
    .values({
      testKey,
      hour,
      signature,
      occurrences: n,
      lastAt: at,
      summary: `${signature} at ${String(at - hour)}`,
    })
    .execute();
}

describe(`TestViewStore.figures on ${TEST_DIALECT}`, () => {
  it("counts whole hours and both windows' partial first hours exactly", async () => {
    const a = await testCase("a");
    const b = await testCase("b");
    const counted = await upload();
    const infrastructure = await upload(1);
    const weekStart = NOW - 7 * DAY; // T + 1 day + 20 min
    const dayStart = NOW - DAY; // T + 7 days + 20 min
    // Whole hours: before the week (out), the week's first whole hour, the hour holding the
    // day's start (a whole hour of the week, partial for the day: its runs decide), the day.
    await hourly(a, weekStart - 20 * 60_000, 50, 50);
    await hourly(a, weekStart + 40 * 60_000, 3, 1);
    await hourly(a, dayStart - 20 * 60_000, 4, 4);
    await hourly(a, dayStart + 40 * 60_000, 2, 2);
    await hourly(b, dayStart + 40 * 60_000 + 5 * HOUR, 0, 1);
    // Raw runs of partial hours: the week's and the day's.
    await run(a, counted, weekStart - 1, "failed"); // before the week: out
    await run(a, counted, weekStart, "failed");
    await run(a, counted, weekStart + 1, "passed");
    await run(a, infrastructure, weekStart + 2, "failed"); // excluded upload: out
    await run(a, counted, dayStart - 1, "failed"); // in the week's hour row only
    await run(a, counted, dayStart, "passed");
    await run(a, counted, dayStart + 5, "failed");
    await run(a, counted, dayStart + 6, "skipped");

    const figures = await views.figures([a, b, 999_999], NOW);
    // Week: hours 3+1, 4+4, 2+2 and runs 1 failed + 1 passed: 10 passed, 8 failed.
    expect(figures.get(a)).toMatchObject({ runs7d: 18, failureRate7d: 8 / 18 });
    // Day: hour 2+2 and runs 1 passed + 1 failed: 3 passed, 3 failed.
    expect(figures.get(a)).toMatchObject({ runs24h: 6, failureRate24h: 0.5 });
    expect(figures.get(b)).toMatchObject({ runs7d: 1, runs24h: 1, failureRate24h: 1 });
    expect(figures.get(999_999)).toMatchObject({ runs7d: 0, failureRate7d: 0 });
  });

  it("sums failure groups over the week's hours, with the summary of the latest", async () => {
    const a = await testCase("a");
    const weekStart = NOW - 7 * DAY;
    const firstHour = Math.floor(weekStart / HOUR) * HOUR;
    // The hour holding the week's start counts when its last failure is in the week.
    await group(a, firstHour, "old", 9, weekStart - 1); // last before the week: out
    await group(a, firstHour, "x", 2, weekStart + 1);
    await group(a, firstHour + 5 * HOUR, "x", 3, firstHour + 5 * HOUR + 10);
    await group(a, firstHour + 2 * HOUR, "x", 1, firstHour + 2 * HOUR + 99);
    await group(a, firstHour + 2 * HOUR, "y", 6, firstHour + 2 * HOUR + 7);
    for (const [i, signature] of ["p", "q", "r", "s"].entries()) {
      await group(a, firstHour + 3 * HOUR, signature, 1, firstHour + 3 * HOUR + i);
    }
    // Whole days after the week's start come from the daily groups (as the ingestion rolls them
    // up); the summary still from the hour of the latest failure.
    const day = Math.ceil(weekStart / DAY) * DAY;
    await group(a, day + HOUR, "y", 1, day + HOUR + 5);
    await group(a, day + 30 * HOUR, "y", 1, day + 30 * HOUR + 8);
    await database.handle.db
      .insertInto("testDailyFailureGroups")
      .values([
        { testKey: a, day, signature: "y", occurrences: 1, lastAt: day + HOUR + 5 },
        { testKey: a, day: day + DAY, signature: "y", occurrences: 1, lastAt: day + 30 * HOUR + 8 },
      ])
      .execute();
    const groups = (await views.figures([a], NOW)).get(a)?.mostCommonFailures;
    expect(groups).toEqual([
      { summary: "y at 8", occurrenceCount: 8, lastOccurrence: day + 30 * HOUR + 8 },
      { summary: "x at 10", occurrenceCount: 6, lastOccurrence: firstHour + 5 * HOUR + 10 },
      // Ties on count: the latest first.
      { summary: "s at 3", occurrenceCount: 1, lastOccurrence: firstHour + 3 * HOUR + 3 },
      { summary: "r at 2", occurrenceCount: 1, lastOccurrence: firstHour + 3 * HOUR + 2 },
      { summary: "q at 1", occurrenceCount: 1, lastOccurrence: firstHour + 3 * HOUR + 1 },
    ]);
  });
});
