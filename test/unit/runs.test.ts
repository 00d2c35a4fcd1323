import { describe, expect, it } from "vitest";
import { DEFAULT_MONITOR_SETTINGS } from "../../src/testhealth/monitors.js";
import { branchClass, isInfrastructureFailure, runTime } from "../../src/testhealth/runs.js";

const UPLOAD = Date.UTC(2026, 10, 25, 12);
const HOUR = 3_600_000;

describe("a run's time", () => {
  it("is the reported time when it lies within the 24 hours before the upload", () => {
    expect(runTime(UPLOAD - HOUR, UPLOAD)).toBe(UPLOAD - HOUR);
    expect(runTime(UPLOAD - 24 * HOUR, UPLOAD)).toBe(UPLOAD - 24 * HOUR);
    expect(runTime(UPLOAD, UPLOAD)).toBe(UPLOAD);
  });

  it("is the upload's time otherwise (missing, older, in the future, not a number)", () => {
    for (const reported of [null, UPLOAD - 24 * HOUR - 1, UPLOAD + 1, Number.NaN]) {
      expect(runTime(reported, UPLOAD)).toBe(UPLOAD);
    }
  });
});

describe("infrastructure-failure protection", () => {
  it.each([
    [{ passed: 2, failed: 8 }, true],
    [{ passed: 0, failed: 10 }, true],
    [{ passed: 3, failed: 8 }, false],
    [{ passed: 0, failed: 9 }, false],
    [{ passed: 100, failed: 399 }, false],
    [{ passed: 100, failed: 400 }, true],
  ])("%j → %s", (counts, excluded) => {
    expect(isInfrastructureFailure(counts)).toBe(excluded);
  });
});

describe("branch classes", () => {
  it.each([
    ["main", null, "stable"],
    ["master", 12, "stable"],
    ["mainline-merge/main/run-1", null, "merge_queue"],
    ["gh-readonly-queue/main/pr-1-abc", null, "merge_queue"],
    ["gtmq_42", null, "merge_queue"],
    ["feature/login", 12, "pull_request"],
    ["feature/login", null, "other"],
    ["maintenance", null, "other"],
  ] as const)("%s (PR %s) is %s", (branch, pr, expected) => {
    expect(branchClass(branch, pr, DEFAULT_MONITOR_SETTINGS)).toBe(expected);
  });
});
