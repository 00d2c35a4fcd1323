import { describe, expect, it } from "vitest";
import {
  classify,
  type ClassifierRun,
  type MonitorStates,
} from "../../src/testhealth/classifier.js";
import { parseJunitText } from "../../src/testhealth/junit/index.js";
import { DEFAULT_MONITOR_SETTINGS } from "../../src/testhealth/monitors.js";
import { isInfrastructureFailure } from "../../src/testhealth/runs.js";
import {
  DEFAULT_WORKLOAD,
  generateWorkload,
  renderJunit,
  type WorkloadOptions,
} from "../../src/testhealth/workload.js";

const START = Date.UTC(2026, 10, 1);
const options = (overrides: Partial<WorkloadOptions> = {}): WorkloadOptions => ({
  ...DEFAULT_WORKLOAD,
  seed: 7,
  startAt: START,
  tests: 200,
  runs: 30,
  ...overrides,
});

describe("generated workloads", () => {
  it("are the same for the same seed and differ for another", () => {
    const a = generateWorkload(options());
    const b = generateWorkload(options());
    const c = generateWorkload(options({ seed: 8 }));
    const first = [...a.uploads()];
    expect([...b.uploads()]).toEqual(first);
    expect(b.tests).toEqual(a.tests);
    expect([...c.uploads()]).not.toEqual(first);
  });

  it("re-run failed jobs on the same commit, and mark outages that protection excludes", () => {
    const uploads = [...generateWorkload(options({ outageRate: 0.2, runs: 60 })).uploads()];
    const reruns = uploads.filter((u) => u.attempt > 1);
    expect(reruns.length).toBeGreaterThan(0);
    for (const rerun of reruns) {
      expect(
        uploads.some((u) => u.commit === rerun.commit && u.attempt === rerun.attempt - 1),
      ).toBe(true);
    }
    const outages = uploads.filter((u) => u.outage);
    expect(outages.length).toBeGreaterThan(0);
    for (const outage of outages) {
      const failed = outage.results.filter((r) => r.status === "failed").length;
      expect(isInfrastructureFailure({ failed, passed: outage.results.length - failed })).toBe(
        true,
      );
    }
  });

  it("render as JUnit that our parser reads back exactly", async () => {
    const workload = generateWorkload(options({ tests: 120, runs: 3 }));
    for (const upload of workload.uploads()) {
      const cases = await parseJunitText(renderJunit(workload.tests, upload));
      expect(cases).toHaveLength(upload.results.length);
      cases.forEach((parsed, i) => {
        const result = upload.results[i];
        const test = workload.tests[result?.test ?? -1];
        expect(parsed).toMatchObject({
          name: test?.name,
          classname: test?.classname,
          parent: test?.suite,
          file: test?.file,
        });
        expect(parsed.attempts.at(-1)?.status).toBe(result?.status);
        expect(parsed.attempts.at(-1)?.startedAt).toBe(upload.at);
      });
    }
  });

  it("classified end to end: healthy tests stay healthy; broken and very flaky tests are found", () => {
    const workload = generateWorkload(
      options({ tests: 300, runs: 400, flakyShare: 0.1, brokenShare: 0.02, outageRate: 0.02 }),
    );
    const runs: ClassifierRun[][] = workload.tests.map(() => []);
    let now = START;
    for (const upload of workload.uploads()) {
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
      now = Math.max(now, upload.at);
    }
    const states: MonitorStates = {};
    const statuses = workload.tests.map(
      (_, i) => classify(runs[i] ?? [], DEFAULT_MONITOR_SETTINGS, states, now).status,
    );
    workload.tests.forEach((test, i) => {
      if (test.truth.kind === "healthy") expect(statuses[i], test.name).toBe("healthy");
      // Broken well before the end: enough failing runs on main in the last day.
      if (test.truth.kind === "broken" && now - test.truth.since > 2 * 86_400_000) {
        expect(statuses[i], test.name).toBe("broken");
      }
      if (test.truth.kind === "flaky" && test.truth.failProbability >= 0.2) {
        expect(statuses[i], test.name).not.toBe("healthy");
      }
    });
  });
});
