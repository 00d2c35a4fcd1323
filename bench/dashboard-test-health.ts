/**
 * The repository page's server time (docs/dashboard.md, "Repository"): 20,000 tests whose
 * aggregates stand for 700 runs each in a week (the lists benchmark's distribution: 5% flaky,
 * 1% broken, the rest failing 0.1% of their runs, so about half of them failed in the window),
 * seeded straight into the aggregate tables the page reads (it never reads raw runs), then the
 * page through `app.inject` (no network): p50/p95 of its server time and its weight.
 *
 * Usage: npx tsx bench/dashboard-test-health.ts   (BENCH_DB=sqlite|postgres, BENCH_TESTS;
 *        BENCH_PARTS=1 also times each read of the table alone). The tests' stored 7-day
 *        figures (ADR 0030) are computed once after seeding, timed apart from the views.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { createHttpServer, createServices, openMigratedDatabase } from "../src/app.js";
import { integerFromEnv } from "./support/env.js";

const TESTS = integerFromEnv("BENCH_TESTS", 20_000, 1, Number.MAX_SAFE_INTEGER);
const REQUESTS = 40;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const REPO = { host: "github.com", owner: "bench", name: "app" };
const log = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-dash-"));
  const url =
    process.env.BENCH_DB === "postgres"
      ? (process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres")
      : path.join(dir, "mainline.db");
  const searchPath = process.env.BENCH_DB === "postgres" ? `bench_dash_${Date.now()}` : undefined;
  if (searchPath) {
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`create schema ${searchPath}`);
    await client.end();
  }
  const database = await openMigratedDatabase(
    { url, dataDir: dir, ...(searchPath ? { searchPath } : {}) },
    { info: () => undefined, error: log },
  );
  try {
    const services = createServices(database, { dataDir: dir });
    const { db } = database;
    const { token, organization } =
      await services.organizations.createOrganizationWithToken("bench");
    const now = Date.now();
    const repository = await services.stores.repositories.ensure(organization.id, REPO, now);
    await services.stores.testSettings.putCodeowners(
      repository.id,
      Array.from({ length: 40 }, (_, i) => `/tests/module${i * 10}*/ @bench/team-${i}`).join("\n"),
      now,
    );
    const kind = (i: number) => (i % 100 < 5 ? "flaky" : i % 100 === 5 ? "broken" : "healthy");
    const t0 = performance.now();
    for (let at = 0; at < TESTS; at += 1000) {
      const rows = Array.from({ length: Math.min(1000, TESTS - at) }, (_, j) => {
        const i = at + j;
        const status = kind(i);
        const failed = status !== "healthy" || i % 2 === 0;
        return {
          repositoryId: repository.id,
          id: `00000000-0000-5000-8000-${i.toString(16).padStart(12, "0")}`,
          name: `test_case_${i}`,
          classname: `tests.module${Math.floor(i / 50)}.Test${Math.floor(i / 10)}`,
          parent: `tests.module${Math.floor(i / 50)}`,
          file: `tests/module${Math.floor(i / 50)}/test_${Math.floor(i / 10)}.py`,
          variant: "",
          status,
          statusReason: status === "healthy" ? "" : "Failure rate 30% over the last 24 h on main",
          statusChangedAt: now - ((i * 7919) % (7 * DAY)),
          monitorStates: "{}",
          monitorsActive: 0,
          quarantineOverride: i % 500 === 0 ? "ALWAYS_QUARANTINE" : "UNSPECIFIED",
          firstSeenAt: now - 30 * DAY,
          lastRunAt: now - HOUR,
          lastFailureAt: failed ? now - ((i * 104729) % (7 * DAY)) : null,
        };
      });
      await db.insertInto("testCases").values(rows).execute();
    }
    const today = Math.floor(now / DAY) * DAY;
    // 100 runs a day per test: flaky fail 10, broken 90, healthy 0.1% (one failure on a tenth
    // of the days).
    const failedOf = sql`case t.status when 'flaky' then 10 when 'broken' then 90 else case when (t.key * 7919 + d.n * 104729) % 10 = 0 then 1 else 0 end end`;
    const days = sql.raw(
      Array.from({ length: 31 }, (_, n) => `select ${n} as n`).join(" union all "),
    );
    await sql`
      insert into test_daily_stats (test_key, day, repository_id, passed, failed, excluded_failed)
      select t.key, cast(${today} as bigint) - d.n * cast(${DAY} as bigint), t.repository_id, 100 - ${failedOf}, ${failedOf}, 0
      from test_cases t cross join (${days}) as d`.execute(db);
    const hours = sql.raw(
      Array.from({ length: 48 }, (_, n) => `select ${n} as n`).join(" union all "),
    );
    const firstHour = Math.floor((now - 8 * DAY) / HOUR) * HOUR;
    await sql`
      insert into test_hourly_stats (test_key, hour, repository_id, passed, failed, excluded_failed)
      select t.key, cast(${firstHour} as bigint) + d.n * cast(${HOUR} as bigint), t.repository_id, 4,
        case when t.status = 'healthy' then 0 else 1 end, 0
      from test_cases t cross join (${hours}) as d`.execute(db);
    await sql`
      insert into test_pr_failures (test_key, pr_number, last_failed_at)
      select t.key, 1000 + d.n * 7 + (t.key % 5), cast(${now} as bigint) - d.n * cast(${DAY} as bigint)
      from test_cases t cross join (${days}) as d
      where t.last_failure_at is not null and d.n < 3`.execute(db);
    // The stored 7-day figures (ADR 0030), as the ingestion or the migration's backfill leaves
    // them: all of them at once, which is also what a page view pays when a whole repository's
    // figures expire together (the window moves past an hour every test counted).
    const { computeFigures, staleFigures } = await import("../src/db/figures.js");
    const tf = performance.now();
    const computed = await computeFigures(
      db,
      database.dialect,
      staleFigures(repository.id, now),
      now,
    );
    log(`computed the figures of ${computed} tests in ${Math.round(performance.now() - tf)} ms`);
    if (database.dialect === "postgres") await sql`vacuum analyze`.execute(db);
    else await sql`analyze`.execute(db);
    log(`seeded ${TESTS} tests in ${Math.round((performance.now() - t0) / 1000)} s`);

    if (process.env.BENCH_PARTS === "1") {
      const { RepositoryHealthStore } = await import("../src/db/stores/repository-health.js");
      const store = new RepositoryHealthStore(db);
      const { RepositoryTableStore } = await import("../src/db/stores/repository-table.js");
      const table = new RepositoryTableStore(database);
      const since = now - 7 * DAY;
      const settings = { quarantiningEnabled: true, autoQuarantine: true };
      const principal = await services.organizations.authenticate(token);
      for (const [label, run] of [
        ["tests", () => store.tests(repository.id, undefined, settings)],
        ["recentCounts", () => store.recentCounts(repository.id, since)],
        ["prsImpacted", () => store.prsImpacted(repository.id, since)],
        ["prsImpactedByFlaky", () => store.prsImpactedByFlaky(repository.id, since)],
        ["dailyFailures", () => store.dailyFailures(repository.id, today - 29 * DAY)],
        ["overview", () => services.testOverview.organization(principal)],
        ["table: refreshFigures", () => table.refreshFigures(repository.id, Date.now())],
        [
          "table: refreshFigures of 100 tests",
          async () => {
            await sql`update test_cases set figures_expire_at = 0 where key % 200 = 0`.execute(db);
            await table.refreshFigures(repository.id, Date.now());
          },
        ],
        ["table: tableCount", () => table.tableCount(repository.id, undefined, settings)],
        [
          "table: tablePage (failure rate, 1)",
          () => table.tablePage(repository.id, undefined, settings, "failure_rate", 0, 50),
        ],
        [
          "table: tablePage (last failure, 100)",
          () => table.tablePage(repository.id, undefined, settings, "last_failure", 4950, 50),
        ],
        ["table: testFiles", () => table.testFiles(repository.id)],
      ] as const) {
        const t = performance.now();
        for (let r = 0; r < 5; r++) await run();
        log(`  ${label}: ${((performance.now() - t) / 5).toFixed(1)} ms`);
      }
    }
    const app = await createHttpServer(services, false);
    // The process's first requests pay for themselves (the routes, the layout, the assets, the
    // page's code): made on another page, then on another repository's page, so that this
    // repository's first view is that of its data.
    const small = await services.stores.repositories.ensure(
      organization.id,
      { ...REPO, name: "warm" },
      now,
    );
    await db
      .insertInto("testCases")
      .values({
        repositoryId: small.id,
        id: "00000000-0000-5000-8000-ffffffffffff",
        name: "warm",
        classname: null,
        parent: null,
        file: "tests/warm.py",
        variant: "",
        status: "healthy",
        statusReason: "",
        statusChangedAt: now,
        monitorStates: "{}",
        monitorsActive: 0,
        quarantineOverride: "UNSPECIFIED",
        firstSeenAt: now,
        lastRunAt: now,
        lastFailureAt: now,
      })
      .execute();
    for (const url of [
      "/bench/flaky-tests/uploads?repo=bench/app",
      "/bench/flaky-tests/repo?repo=bench/warm",
    ]) {
      const tw = performance.now();
      const warm = await app.inject({ method: "GET", url, headers: { "x-api-token": token } });
      if (warm.statusCode !== 200) throw new Error(`${warm.statusCode}: ${warm.body}`);
      log(`warm-up ${url}: ${(performance.now() - tw).toFixed(1)} ms`);
    }
    for (const [label, query] of [
      ["all tests, by failure rate", ""],
      ["flaky, by PRs impacted", "&status=flaky&sort=prs_impacted"],
      ["owner and text, page 3", "&owner=@bench/team-3&q=module3&page=3"],
      ["by last failure, page 100", "&sort=last_failure&page=100"],
    ] as const) {
      const times: number[] = [];
      let bytes = 0;
      for (let r = 0; r < REQUESTS; r++) {
        const t = performance.now();
        const answer = await app.inject({
          method: "GET",
          url: `/bench/flaky-tests/repo?repo=bench/app${query}`,
          headers: { "x-api-token": token },
        });
        times.push(performance.now() - t);
        if (answer.statusCode !== 200) throw new Error(`${answer.statusCode}: ${answer.body}`);
        bytes = answer.rawPayload.length;
      }
      const cold = times[0]?.toFixed(1);
      times.sort((a, b) => a - b);
      const p = (q: number) => times[Math.ceil(q * times.length) - 1]?.toFixed(1);
      log(
        `${database.dialect} ${label}: p50 ${p(0.5)} ms, p95 ${p(0.95)} ms, first ${cold} ms, ${Math.round(bytes / 1024)} KB`,
      );
    }
    await app.close();
  } finally {
    await database.close();
    await rm(dir, { recursive: true, force: true });
    if (searchPath) {
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`drop schema ${searchPath} cascade`);
      await client.end();
    }
  }
}

await main();
