import { existsSync } from "node:fs";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit } from "../helpers/uploads.js";

const DAY = 24 * 3_600_000;
const clock = { at: Date.UTC(2026, 9, 1, 12), now: () => clock.at };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock, worker: { retentionDays: 8 } });
});
afterAll(async () => {
  await server.close();
});

async function count(table: "test_runs" | "test_hourly_stats" | "test_failure_groups") {
  const { rows } = await sql<{
    n: number | string;
  }>`select count(*) as n from ${sql.table(table)}`.execute(server.services.database.db);
  return Number(rows[0]?.n);
}

describe("retention", () => {
  it("prunes raw runs older than the retention age and keeps what the 7-day windows need", async () => {
    const start = clock.at;
    const broken = await ingest(server, Buffer.from("not a bundle"));
    const brokenRow = await server.services.stores.uploads.find(broken);
    const brokenFile = server.services.stores.bundles.resolve(brokenRow?.bundlePath ?? "");
    // A failed upload keeps its bundle for inspection…
    expect(existsSync(brokenFile)).toBe(true);
    for (let day = 0; day < 12; day++) {
      clock.at = start + day * DAY;
      await ingest(
        server,
        await bundle({
          commit: day.toString(16).padStart(40, "0"),
          uploadedAt: clock.at,
          files: [junit([{ name: "daily", status: day % 2 === 0 ? "failed" : "passed" }])],
        }),
      );
    }
    // The worker prunes by itself as (its clock's) time passes: at day 11, the runs of days
    // 0..2 are older than 8 days.
    expect(await count("test_runs")).toBe(9);
    expect((await server.services.worker.prune()).runs).toBe(0);
    // … until the retention age.
    expect(existsSync(brokenFile)).toBe(false);
    expect((await server.services.stores.uploads.find(broken))?.bundlePath).toBeNull();
    expect(await count("test_hourly_stats")).toBe(9);
    const key = (
      await server.services.database.db
        .selectFrom("testCases")
        .select("key")
        .where("name", "=", "daily")
        .executeTakeFirstOrThrow()
    ).key;
    // The window is [now - 7 days, now]: days 4..11 at 12:00, 8 runs, 4 failed (4, 6, 8, 10).
    const figures = (await server.services.stores.testViews.figures([key], clock.at)).get(key);
    expect(figures?.runs7d).toBe(8);
    expect(figures?.failureRate7d).toBe(0.5);
    // One millisecond later day 4 is out: 7 runs, 3 failed.
    const later = (await server.services.stores.testViews.figures([key], clock.at + 1)).get(key);
    expect(later?.runs7d).toBe(7);
    expect(later?.failureRate7d).toBeCloseTo(3 / 7, 10);
  });
});
