import type { Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { testCaseFigures } from "../../src/db/migrations/0024_test_case_figures.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { RepositoryHealthStore } from "../../src/db/stores/repository-health.js";
import { RepositoryTableStore } from "../../src/db/stores/repository-table.js";
import { TestIngestStore } from "../../src/db/stores/test-ingest.js";
import type { TableFiguresRow, TableOrder } from "../../src/testhealth/ports.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { insertTestCase, seedRepository } from "../helpers/test-cases.js";

/**
 * Each test's stored 7-day figures (ADR 0030) against the figures the repository page computes
 * from the aggregates (`RepositoryHealthStore.recentCounts`/`prsImpacted`): equal after an
 * upload is ingested, at every moment as the window rolls over the counted hours, days and pull
 * requests, and in the order of each sort, filter and page.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
/** Not on an hour: the window's edges fall inside hours and days. */
const T = Date.parse("2026-11-20T10:17:23.456Z");
const ALL = { quarantiningEnabled: true, autoQuarantine: true };

let database: TestDatabase;
let ingest: TestIngestStore;
let table: RepositoryTableStore;
let health: RepositoryHealthStore;
let repositoryId: string;

beforeEach(async () => {
  database = await createTestDatabase();
  ingest = new TestIngestStore(database.handle);
  table = new RepositoryTableStore(database.handle);
  health = new RepositoryHealthStore(database.handle.db);
  repositoryId = await seedRepository(database.handle.db);
});
afterEach(async () => {
  await database.cleanup();
});

let uploads = 0;
/** An upload of `runs` (`[test, time, status]`) processed at `now` as the ingestion does. */
async function upload(
  runs: [number, number, "passed" | "failed"][],
  now: number,
  pr: number | null = null,
): Promise<void> {
  const { key } = await database.handle.db
    .insertInto("uploads")
    .values({
      id: `u${++uploads}`,
      organizationId: "o1",
      repositoryId,
      state: "processed",
      reason: null,
      createdAt: now,
      urlExpiresAt: now + HOUR,
      prNumber: pr,
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
        status,
        attempt: "final",
        durationMs: 1,
        failureSignature: status === "failed" ? "sig" : null,
        failureSummary: status === "failed" ? "boom" : null,
        failureText: null,
      })),
    );
    await ingest.aggregateUpload(tx.trx, { key, repositoryId, prNumber: pr, excluded: false });
    await ingest.refreshFigures(tx.trx, [key], now);
  });
}

interface Figures {
  rate: number;
  runs: number;
  prs: number;
}

/** The figures as the page computed them before they were stored, by test key. */
async function computed(now: number): Promise<Map<number, Figures>> {
  const since = now - WEEK;
  const rows = await health.tests(repositoryId, undefined, ALL);
  const counts = await health.recentCounts(repositoryId, since);
  const prs = await health.prsImpacted(repositoryId, since);
  return new Map(
    rows.map((row) => {
      const count = counts.get(row.key);
      const runs = count ? count.passed + count.failed : 0;
      const rate = count && runs > 0 ? count.failed / runs : 0;
      return [row.key, { rate, runs, prs: prs.get(row.key) ?? 0 }];
    }),
  );
}

/** Every test's stored figures, read as the page reads them. */
async function stored(): Promise<Map<number, Figures>> {
  const rows = await table.tablePage(repositoryId, undefined, ALL, "failure_rate", 0, 1000);
  return new Map(
    rows.map((r) => [r.key, { rate: r.failureRate7d, runs: r.runs7d, prs: r.prsImpacted7d }]),
  );
}

/** A week and a half of runs of five tests, on and off pull requests, spread over hours. */
let lastUpload = 0;
async function history(): Promise<number[]> {
  const db = database.handle.db;
  const keys = [
    await insertTestCase(db, repositoryId, "alpha", T - 10 * DAY),
    await insertTestCase(db, repositoryId, "beta", T - 10 * DAY),
    await insertTestCase(db, repositoryId, "gamma", T - 10 * DAY),
    await insertTestCase(db, repositoryId, "delta", T - 10 * DAY),
    await insertTestCase(db, repositoryId, "epsilon", T - 10 * DAY),
  ];
  const [alpha, beta, gamma, delta, epsilon] = keys as [number, number, number, number, number];
  // Every 7 hours and 13 minutes over 10 days; alpha fails every third run, beta every fifth,
  // gamma once long ago, delta never, epsilon only in the last two days.
  for (let i = 0, at = T - 10 * DAY; at < T; i++, at += 7 * HOUR + 13 * 60_000) {
    const runs: [number, number, "passed" | "failed"][] = [
      [alpha, at, i % 3 === 0 ? "failed" : "passed"],
      [beta, at + 1, i % 5 === 0 ? "failed" : "passed"],
      [gamma, at + 2, i === 2 ? "failed" : "passed"],
      [delta, at + 3, "passed"],
    ];
    if (at > T - 2 * DAY) runs.push([epsilon, at + 4, i % 2 === 0 ? "failed" : "passed"]);
    await upload(runs, at + 5, i % 4 === 0 ? 100 + (i % 3) : null);
    lastUpload = at + 5;
  }
  return keys;
}

describe(`stored 7-day figures on ${TEST_DIALECT}`, () => {
  it("are the computed ones once an upload is ingested", async () => {
    await history();
    // As of the last upload, whose ingestion computed every test's figures.
    const figures = await stored();
    expect(figures).toEqual(await computed(lastUpload));
    // Later, those that the window moved past are computed again first, as a page view does.
    await table.refreshFigures(repositoryId, T);
    expect(await stored()).toEqual(await computed(T));
    // Not all zeros: the comparison says something.
    expect([...figures.values()].filter((f) => f.rate > 0 && f.prs > 0).length).toBeGreaterThan(1);
  });

  it("stay the computed ones as the window rolls, computed again only when they expire", async () => {
    await history();
    const db = database.handle.db;
    const times = [
      ...(await db.selectFrom("testHourlyStats").select("hour").execute()).map((r) => r.hour),
      ...(await db.selectFrom("testDailyStats").select("day").execute()).map((r) => r.day),
      ...(await db.selectFrom("testPrFailures").select("lastFailedAt").execute()).map(
        (r) => r.lastFailedAt,
      ),
    ];
    // Each counted moment's last instant in the window and the one after, then every 37 minutes.
    const moments = new Set<number>();
    for (const at of times) {
      if (at + WEEK >= T) {
        moments.add(at + WEEK);
        moments.add(at + WEEK + 1);
      }
    }
    for (let now = T; now < T + 8 * DAY; now += 37 * 60_000) moments.add(now);
    let changed = 0;
    let previous = await stored();
    for (const now of [...moments].sort((a, b) => a - b)) {
      await table.refreshFigures(repositoryId, now);
      const figures = await stored();
      expect(figures, new Date(now).toISOString()).toEqual(await computed(now));
      if (JSON.stringify([...figures]) !== JSON.stringify([...previous])) changed++;
      previous = figures;
    }
    expect(changed).toBeGreaterThan(10);
    // A week after the last run nothing is left in the window.
    expect([...previous.values()].every((f) => f.rate === 0 && f.prs === 0)).toBe(true);
  });

  it("are computed again after a later upload, not before they expire", async () => {
    const [alpha] = (await history()) as [number];
    const figuresAt = async () =>
      (
        await database.handle.db
          .selectFrom("testCases")
          .select("figuresAt")
          .where("key", "=", alpha)
          .executeTakeFirstOrThrow()
      ).figuresAt;
    const at = await figuresAt();
    await table.refreshFigures(repositoryId, at + 1);
    expect(await figuresAt()).toBe(at);
    await upload([[alpha, T + 10 * 60_000, "failed"]], T + 11 * 60_000, 200);
    expect(await figuresAt()).toBe(T + 11 * 60_000);
    const figures = await stored();
    expect(figures.get(alpha)).toEqual((await computed(T + 11 * 60_000)).get(alpha));
    await table.refreshFigures(repositoryId, T + 11 * 60_000);
    expect(await stored()).toEqual(await computed(T + 11 * 60_000));
  });

  it("are computed when never computed, or computed for a later time", async () => {
    const keys = await history();
    await database.handle.db
      .updateTable("testCases")
      .set({ figuresExpireAt: 0, weekFailureRate: 0, weekRuns: 0, weekPrsImpacted: 0 })
      .where("key", "=", keys[0] as number)
      .execute();
    await table.refreshFigures(repositoryId, T);
    expect(await stored()).toEqual(await computed(T));
    // Viewed at an earlier time than they were computed for (a clock set back).
    await table.refreshFigures(repositoryId, T - 3 * DAY);
    expect(await stored()).toEqual(await computed(T - 3 * DAY));
  });

  it("are backfilled by migration 0024 as of its time; down removes them", async () => {
    await history();
    const db = database.handle.db as unknown as Kysely<unknown>;
    const types = columnTypes(database.handle.dialect);
    await testCaseFigures.down(db, types);
    const before = Date.now();
    await testCaseFigures.up(db, types);
    const after = Date.now();
    const at = await database.handle.db.selectFrom("testCases").select("figuresAt").execute();
    expect(at.length).toBe(5);
    const figuresAt = at[0]?.figuresAt ?? 0;
    expect(at.every((r) => r.figuresAt === figuresAt)).toBe(true);
    expect(figuresAt).toBeGreaterThanOrEqual(before);
    expect(figuresAt).toBeLessThanOrEqual(after);
    expect(await stored()).toEqual(await computed(figuresAt));
    // Viewed at the data's own time (before the backfill's), they are computed for it.
    await table.refreshFigures(repositoryId, T);
    expect(await stored()).toEqual(await computed(T));
  });
});

describe(`the tests table by index on ${TEST_DIALECT}`, () => {
  /** The page's order, stated: the sort's figure descending, then name and key. */
  function expected(rows: TableFiguresRow[], order: TableOrder): number[] {
    const desc = (a: number | null, b: number | null) =>
      a === b ? 0 : a === null ? 1 : b === null ? -1 : b - a;
    return [...rows]
      .sort(
        (a, b) =>
          (order === "failure_rate"
            ? desc(a.failureRate7d, b.failureRate7d) || desc(a.prsImpacted7d, b.prsImpacted7d)
            : order === "prs_impacted"
              ? desc(a.prsImpacted7d, b.prsImpacted7d) || desc(a.failureRate7d, b.failureRate7d)
              : desc(a.lastFailureAt, b.lastFailureAt)) ||
          (a.name < b.name ? -1 : a.name > b.name ? 1 : a.key - b.key),
      )
      .map((r) => r.key);
  }

  it("pages every sort and status in the page's order, overrides applied at once", async () => {
    const db = database.handle.db;
    // Equal rates and names in several cases and scripts, where collations disagree.
    const names = ["b", "B", "a", "_z", "é", "e", "Z", "a", "ab", "A b"];
    const keys: number[] = [];
    for (const [i, name] of names.entries()) {
      keys.push(
        await insertTestCase(db, repositoryId, `t${i}`, T - DAY, {
          name,
          status: i % 3 === 0 ? "flaky" : "healthy",
          quarantineOverride: i === 4 ? "ALWAYS_QUARANTINE" : "UNSPECIFIED",
        }),
      );
    }
    const runs: [number, number, "passed" | "failed"][] = keys.flatMap((key, i) => [
      [key, T - DAY + i, i % 2 === 0 ? "failed" : "passed"],
      [key, T - DAY + 100 + i, i % 4 === 0 ? "failed" : "passed"],
    ]);
    await upload(runs.slice(0, 10), T - DAY + 1000, 7);
    await upload(runs.slice(10), T - DAY + 2000, 8);
    const all = await table.tablePage(repositoryId, undefined, ALL, "failure_rate", 0, 100);
    expect(all).toHaveLength(names.length);
    for (const order of ["failure_rate", "prs_impacted", "last_failure"] as const) {
      for (const status of [undefined, "flaky", "healthy", "quarantined"] as const) {
        const matching = all.filter((r) =>
          status === "quarantined"
            ? r.quarantineOverride === "ALWAYS_QUARANTINE" ||
              (r.quarantineOverride !== "NEVER_QUARANTINE" && r.status === "flaky")
            : status === undefined || r.status === status,
        );
        const want = expected(matching, order);
        const pages: number[] = [];
        for (let offset = 0; offset < want.length + 3; offset += 3) {
          const page = await table.tablePage(repositoryId, status, ALL, order, offset, 3);
          pages.push(...page.map((r) => r.key));
        }
        expect(pages, `${order} ${String(status)}`).toEqual(want);
        expect(await table.tableCount(repositoryId, status, ALL)).toBe(want.length);
      }
    }
    // A test quarantined by override is listed as such at once (no cache in between).
    await db
      .updateTable("testCases")
      .set({ quarantineOverride: "NEVER_QUARANTINE" })
      .where("status", "=", "flaky")
      .execute();
    const quarantined = await table.tablePage(
      repositoryId,
      "quarantined",
      ALL,
      "failure_rate",
      0,
      50,
    );
    expect(quarantined.map((r) => r.key)).toEqual([keys[4]]);
    expect(await table.testFiles(repositoryId)).toEqual([]);
  });
});
