/**
 * A generated CI workload (background §test-health-1.14: flaky and broken truths, main, PR and
 * merge-queue branches, re-runs, outages) uploaded through the HTTP protocol, one bundle per CI
 * run with the clock at the run's time. The stored statuses must equal what the pure classifier
 * says when it sees every run (replayed upload by upload, as the service does), and match the
 * truth where the truth is clear.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  classify,
  type ClassifierRun,
  type MonitorStates,
} from "../../src/testhealth/classifier.js";
import { DEFAULT_MONITOR_SETTINGS } from "../../src/testhealth/monitors.js";
import { isInfrastructureFailure } from "../../src/testhealth/runs.js";
import { generateWorkload, renderJunit, DEFAULT_WORKLOAD } from "../../src/testhealth/workload.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest } from "../helpers/uploads.js";

const START = Date.UTC(2026, 10, 1);
const clock = { at: START, now: () => clock.at };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ clock });
});
afterAll(async () => {
  await server.close();
});

describe("a generated workload through HTTP uploads", () => {
  it("ends with the statuses the classifier gives over every run, and finds the truth", async () => {
    const workload = generateWorkload({
      ...DEFAULT_WORKLOAD,
      seed: 7,
      startAt: START,
      tests: 120,
      runs: 100,
      flakyShare: 0.1,
      brokenShare: 0.03,
      outageRate: 0.02,
    });
    const runs: ClassifierRun[][] = workload.tests.map(() => []);
    let expectedStates: MonitorStates[] = workload.tests.map(() => ({}));
    let expected: string[] = [];
    for (const upload of workload.uploads()) {
      clock.at = upload.at;
      await ingest(
        server,
        await bundle({
          commit: upload.commit,
          branch: upload.branch,
          ...(upload.prNumber !== null ? { pr: upload.prNumber } : {}),
          uploadedAt: upload.at,
          files: [renderJunit(workload.tests, upload)],
        }),
      );
      const failed = upload.results.filter((r) => r.status === "failed").length;
      const excluded = isInfrastructureFailure({ failed, passed: upload.results.length - failed });
      for (const result of upload.results) {
        runs[result.test]?.push({
          at: upload.at,
          status: result.status,
          commit: upload.commit,
          branch: upload.branch,
          prNumber: upload.prNumber,
          excluded,
        });
      }
      const results = workload.tests.map((_, i) =>
        classify(runs[i] ?? [], DEFAULT_MONITOR_SETTINGS, expectedStates[i] ?? {}, upload.at),
      );
      expectedStates = results.map((r) => r.monitors);
      expected = results.map((r) => r.status);
    }
    await server.services.worker.sweep();

    const rows = await server.services.database.db
      .selectFrom("testCases")
      .select(["name", "status"])
      .execute();
    const stored = new Map(rows.map((r) => [r.name, r.status]));
    expect(stored.size).toBe(workload.tests.length);
    const mismatches = workload.tests
      .map((test, i) => [test.name, stored.get(test.name), expected[i]] as const)
      .filter(([, got, want]) => got !== want);
    expect(mismatches).toEqual([]);

    workload.tests.forEach((test, i) => {
      if (test.truth.kind === "healthy") expect(expected[i], test.name).toBe("healthy");
      if (test.truth.kind === "flaky" && test.truth.failProbability >= 0.2) {
        expect(expected[i], test.name).not.toBe("healthy");
      }
    });
    expect(expected.filter((s) => s !== "healthy").length).toBeGreaterThan(5);
  }, 240_000);
});
