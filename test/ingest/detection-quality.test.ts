import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDetection, type DetectionReport } from "../../bench/support/detection.js";
import { DETECTION_WORKLOAD } from "../../src/testhealth/detection-workload.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

/**
 * The detection benchmark's workload, small (bench/detection.ts runs it at full size): seeded CI
 * histories with known truth through the real ingestion path, at the default monitors. Fails
 * when detection quality falls below what docs/benchmarks.md promises.
 */
let database: TestDatabase;
let report: DetectionReport;

beforeAll(async () => {
  database = await createTestDatabase();
  report = await runDetection({
    database: database.handle,
    dataDir: database.dataDir,
    batchWithinMs: 15 * 60_000,
    workload: {
      ...DETECTION_WORKLOAD,
      seed: 7,
      tests: 120,
      days: 3,
      ciRunsPerDay: 32,
      shards: 2,
      startAt: Date.UTC(2026, 10, 1),
      // Half the queue's runs come from another CI, whose failures the queue does not judge.
      externalQueueShare: 0.5,
      // More of every kind than the full-size workload, so that a small history has enough.
      shares: {
        flaky: 0.15,
        broken: 0.03,
        regression: 0.04,
        variantBroken: 0.06,
        branchBroken: 0.05,
      },
    },
  });
}, 120_000);

afterAll(async () => {
  await database.cleanup();
});

describe("detection quality at the default monitors", () => {
  it("the workload has every kind of test and of CI run", () => {
    expect(report.flaky.truePositives).toBeGreaterThanOrEqual(10);
    expect(report.broken.truePositives).toBeGreaterThanOrEqual(5);
    for (const kind of ["healthy", "broken", "regression", "variant-broken", "branch-broken"]) {
      expect(report.truths[kind], kind).toBeGreaterThan(0);
    }
    for (const shape of [
      "uploads on main",
      "uploads on pull requests",
      "uploads on the merge queue",
      "re-runs of a failed job",
      "infrastructure outages",
      "merge-queue runs of a convicted PR",
      "merge-queue runs of a convicted PR from another CI",
      "uploads of variant windows",
      "uploads with retries inside",
    ]) {
      expect(report.shapes[shape], shape).toBeGreaterThan(0);
    }
  });

  it("finds flaky tests of 5% or more with precision ≥ 0.98 and recall ≥ 0.95", () => {
    expect(report.falsePositives.filter((fp) => fp.status === "flaky")).toEqual([]);
    expect(report.flaky.precision).toBeGreaterThanOrEqual(0.98);
    expect(report.flaky.recall).toBeGreaterThanOrEqual(0.95);
  });

  it("never marks a test broken by a commit flaky (also not from merge-queue runs)", () => {
    expect(report.brokenMarkedFlaky).toEqual([]);
  });

  it("marks a broken test broken within a day of stable-branch runs, and nothing else", () => {
    expect(report.broken.recall).toBe(1);
    expect(report.broken.precision).toBe(1);
    expect(report.broken.hoursToDetection.max).toBeLessThanOrEqual(24);
  });
});
