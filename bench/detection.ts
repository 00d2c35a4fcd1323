/**
 * Detection-quality benchmark (docs/benchmarks.md, "Detection quality"): precision and recall of
 * the flaky and broken statuses, how many runs and hours detection takes, how long a fixed test
 * stays marked, and every false positive with its reason, on seeded CI histories with known
 * truth, through the real ingestion path (bench/support/detection.ts).
 *
 * First the default monitors on every database asked for; then a sweep of the flaky monitors'
 * activation and window on SQLite (the same workload unless BENCH_SWEEP_TESTS makes it smaller).
 *
 * Usage: npm run bench:detection
 *   BENCH_TESTS (2000)          tests in the repository
 *   BENCH_DAYS (14)             simulated days
 *   BENCH_RUNS_PER_DAY (200)    CI runs a day (each: 4 shard jobs, the first on two variants)
 *   BENCH_EXTERNAL_QUEUE (0)    percent of the merge queue's runs uploaded by another CI
 *   BENCH_DATABASES (sqlite)    "sqlite", "postgresql" or both, comma-separated
 *   BENCH_SWEEP (1)             0 skips the sweep
 *   BENCH_SWEEP_TESTS           tests in the sweep's workload (default BENCH_TESTS)
 *   BENCH_SWEEP_ONLY            only the sweep's configurations whose name contains this
 *   BENCH_SEED (20261126)
 *   BENCH_RESULTS               where the JSON goes (bench/results/detection.json)
 *   BENCH_TMP (/dev/shm)        where the SQLite file and the bundles live while it runs
 */
import { existsSync } from "node:fs";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { openMigratedDatabase } from "../src/app.js";
import {
  DETECTION_WORKLOAD,
  type DetectionWorkloadOptions,
} from "../src/testhealth/detection-workload.js";
import { DEFAULT_MONITOR_SETTINGS, type MonitorSettings } from "../src/testhealth/monitors.js";
import { runDetection, type DetectionReport } from "./support/detection.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { ROOT, withThrowawayPostgres } from "./support/server.js";
import { formatTable } from "./support/table.js";

const RESULTS_FILE = path.resolve(
  ROOT,
  process.env.BENCH_RESULTS?.trim() || path.join("bench", "results", "detection.json"),
);
const SEED = integerFromEnv("BENCH_SEED", 20_261_126, 1, 2 ** 31 - 1);
const TESTS = integerFromEnv("BENCH_TESTS", DETECTION_WORKLOAD.tests, 50, 50_000);
const DAYS = integerFromEnv("BENCH_DAYS", DETECTION_WORKLOAD.days, 3, 60);
const RUNS_PER_DAY = integerFromEnv(
  "BENCH_RUNS_PER_DAY",
  DETECTION_WORKLOAD.ciRunsPerDay,
  10,
  2000,
);
const EXTERNAL_QUEUE = integerFromEnv(
  "BENCH_EXTERNAL_QUEUE",
  Math.round((DETECTION_WORKLOAD.externalQueueShare ?? 0) * 100),
  0,
  100,
);
const SWEEP = (process.env.BENCH_SWEEP ?? "1").trim() !== "0";
const SWEEP_TESTS = integerFromEnv("BENCH_SWEEP_TESTS", TESTS, 50, 50_000);
const DATABASES = listFromEnv("BENCH_DATABASES", "sqlite");
for (const name of DATABASES) {
  if (name !== "sqlite" && name !== "postgresql") {
    throw new Error(`BENCH_DATABASES takes "sqlite", "postgresql" or both (got "${name}").`);
  }
}
const BENCH_TMP =
  process.env.BENCH_TMP?.trim() || (existsSync("/dev/shm") ? "/dev/shm" : os.tmpdir());
/** Two weeks ending at a fixed midnight, so that runs are comparable between machines. */
const START_AT = Date.UTC(2026, 10, 1);

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

function workload(tests: number): DetectionWorkloadOptions {
  return {
    ...DETECTION_WORKLOAD,
    seed: SEED,
    tests,
    days: DAYS,
    ciRunsPerDay: RUNS_PER_DAY,
    externalQueueShare: EXTERNAL_QUEUE / 100,
    startAt: START_AT,
  };
}

/** The defaults with the flaky failure-rate monitors' activation and window changed. */
function flakyVariant(
  name: string,
  change: { activation?: number; windowFactor?: number; passOnRetry?: boolean },
): { name: string; monitors: MonitorSettings } {
  const base = structuredClone(DEFAULT_MONITOR_SETTINGS) as MonitorSettings;
  if (change.passOnRetry === false) base.passOnRetry.enabled = false;
  for (const monitor of base.failureRate) {
    if (monitor.classification !== "flaky") continue;
    if (change.activation !== undefined) {
      const factor = change.activation / (monitor.activation || 1);
      monitor.activation = Math.round(monitor.activation * factor * 1000) / 1000;
      monitor.resolution = Math.round(monitor.resolution * factor * 1000) / 1000;
    }
    if (change.windowFactor !== undefined) monitor.windowHours *= change.windowFactor;
  }
  return { name, monitors: base };
}

/**
 * With pass-on-retry on, it finds nearly every flaky test before a rate monitor does; the same
 * sweep without it shows what the rate monitors achieve alone (a CI that never re-runs).
 */
const SWEEP_CONFIGS = [
  flakyVariant("activation ×0.5", { activation: 0.1 }),
  flakyVariant("activation ×1.5", { activation: 0.3 }),
  flakyVariant("window ×0.5", { windowFactor: 0.5 }),
  flakyVariant("window ×2", { windowFactor: 2 }),
  flakyVariant("rates only", { passOnRetry: false }),
  flakyVariant("rates only, activation ×0.5", { passOnRetry: false, activation: 0.1 }),
  flakyVariant("rates only, activation ×1.5", { passOnRetry: false, activation: 0.3 }),
  flakyVariant("rates only, window ×0.5", { passOnRetry: false, windowFactor: 0.5 }),
  flakyVariant("rates only, window ×2", { passOnRetry: false, windowFactor: 2 }),
].filter((config) => config.name.includes(process.env.BENCH_SWEEP_ONLY ?? ""));

async function onDatabase<T>(
  name: string,
  work: (database: Awaited<ReturnType<typeof openMigratedDatabase>>, dataDir: string) => Promise<T>,
): Promise<T> {
  // Bundles and SQLite files in memory when the machine has /dev/shm: the figures here are about
  // what detection decides, not about the disk, and fsyncs would make the history slow to replay.
  const dataDir = await mkdtemp(path.join(BENCH_TMP, "mainline-bench-detection-"));
  try {
    if (name === "sqlite") {
      const database = await openMigratedDatabase({ url: undefined, dataDir });
      try {
        return await work(database, dataDir);
      } finally {
        await database.close();
      }
    }
    return await withThrowawayPostgres(async (url) => {
      const database = await openMigratedDatabase({ url, dataDir, poolSize: 4 });
      try {
        return await work(database, dataDir);
      } finally {
        await database.close();
      }
    });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function measure(
  database: string,
  tests: number,
  monitors?: MonitorSettings,
): Promise<DetectionReport> {
  return onDatabase(database, (handle, dataDir) =>
    runDetection({
      workload: workload(tests),
      database: handle,
      dataDir,
      ...(monitors ? { monitors } : {}),
      onProgress: (done, at) => {
        if (done % 2000 === 0) {
          say(`  … ${String(done)} uploads, simulated ${new Date(at).toISOString().slice(0, 16)}`);
        }
      },
    }),
  );
}

const fmt = (value: number | null): string => (value === null ? "–" : String(value));

function table(rows: { name: string; report: DetectionReport }[]): string {
  return formatTable(
    [
      "configuration",
      "flaky P",
      "flaky R (≥5%)",
      "runs to flaky (med/p95)",
      "hours to flaky (med/p95)",
      "broken P",
      "broken R",
      "hours to broken (med/max)",
      "fixed stays marked h (med/max)",
      "broken→flaky",
    ],
    rows.map(({ name, report }) => [
      name,
      report.flaky.precision.toFixed(3),
      report.flaky.recall.toFixed(3),
      `${fmt(report.flaky.runsToDetection.median)} / ${fmt(report.flaky.runsToDetection.p95)}`,
      `${fmt(report.flaky.hoursToDetection.median)} / ${fmt(report.flaky.hoursToDetection.p95)}`,
      report.broken.precision.toFixed(3),
      report.broken.recall.toFixed(3),
      `${fmt(report.broken.hoursToDetection.median)} / ${fmt(report.broken.hoursToDetection.max)}`,
      `${fmt(report.fixedStaysMarkedHours.median)} / ${fmt(report.fixedStaysMarkedHours.max)}`,
      String(report.brokenMarkedFlaky.length),
    ]),
    [0],
  );
}

async function main(): Promise<void> {
  const results: { name: string; database: string; tests: number; report: DetectionReport }[] = [];
  for (const database of DATABASES) {
    say(
      `defaults on ${database}: ${String(TESTS)} tests, ${String(RUNS_PER_DAY)} CI runs a day, ${String(DAYS)} days, ${String(EXTERNAL_QUEUE)}% of queue runs from another CI`,
    );
    const report = await measure(database, TESTS);
    say(
      `  ${String(report.uploads)} uploads, ${String(report.runs)} runs in ${String(report.seconds)} s`,
    );
    results.push({ name: `defaults (${database})`, database, tests: TESTS, report });
  }
  if (SWEEP) {
    if (SWEEP_TESTS !== TESTS) {
      say(`sweep workload: ${String(SWEEP_TESTS)} tests`);
      results.push({
        name: "defaults (sqlite)",
        database: "sqlite",
        tests: SWEEP_TESTS,
        report: await measure("sqlite", SWEEP_TESTS),
      });
    }
    for (const config of SWEEP_CONFIGS) {
      say(`sweep: ${config.name}`);
      const report = await measure("sqlite", SWEEP_TESTS, config.monitors);
      results.push({ name: config.name, database: "sqlite", tests: SWEEP_TESTS, report });
    }
  }
  say("");
  say(table(results));
  for (const { name, report } of results) {
    say("");
    say(`${name}: recall by flake rate`);
    say(
      Object.entries(report.flaky.recallByRate)
        .map(
          ([rate, b]) =>
            `  ${rate}: ${String(b.found)}/${String(b.tests)} (${b.recall.toFixed(3)})`,
        )
        .join("\n"),
    );
    say(`${name}: false positives (${String(report.falsePositives.length)})`);
    for (const fp of report.falsePositives) {
      say(
        `  ${fp.test} [${fp.variant}] truth ${fp.truth} → ${fp.status} at ${fp.at}: ${fp.reason}`,
      );
    }
  }
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(
    RESULTS_FILE,
    `${JSON.stringify({ seed: SEED, days: DAYS, ciRunsPerDay: RUNS_PER_DAY, externalQueuePercent: EXTERNAL_QUEUE, results }, null, 2)}\n`,
  );
  say(`\nresults: ${path.relative(ROOT, RESULTS_FILE)}`);
}

await main();
