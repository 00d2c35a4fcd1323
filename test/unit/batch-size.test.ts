/**
 * The adaptive batch size (ADR 0034): the size up to `batchingMinSize` that merges the most at the
 * queue's estimated failure rate, and the cut points a localization spreads over its slots.
 */
import { describe, expect, it } from "vitest";
import { batchSizeChoice, bestBatchSize, mergesPerRound } from "../../src/mergequeue/batch-size.js";
import { cutPoints } from "../../src/mergequeue/planner/bisection.js";
import {
  NO_VERDICTS,
  recordVerdict,
  type VerdictRecord,
} from "../../src/mergequeue/speculation.js";

/** Verdicts of `units` units of `size` PRs, `failed` of them failed (oldest first). */
function verdicts(units: number, size: number, failed: number): VerdictRecord {
  let record: VerdictRecord = { ...NO_VERDICTS };
  for (let i = 0; i < units; i++) record = recordVerdict(record, size, i < failed);
  return record;
}

describe("the batch size follows the failure rate", () => {
  it("batches fully when nothing fails, one at a time when much fails", () => {
    expect(bestBatchSize(0, 10, 8)).toBe(8);
    expect(bestBatchSize(0.01, 10, 8)).toBe(8);
    expect(bestBatchSize(0.05, 10, 4)).toBe(4);
    expect(bestBatchSize(0.1, 10, 4)).toBe(1);
    expect(bestBatchSize(0.3, 10, 8)).toBe(1);
  });

  it("falls back to one at a time around 7 % at concurrency 10", () => {
    const switchAt = [0.05, 0.06, 0.07, 0.08, 0.09].find((p) => bestBatchSize(p, 10, 4) === 1);
    expect(switchAt).toBeGreaterThanOrEqual(0.07);
    expect(switchAt).toBeLessThanOrEqual(0.08);
  });

  it("never exceeds the ceiling, and one slot of concurrency still batches at a low rate", () => {
    for (const p of [0, 0.001, 0.02]) expect(bestBatchSize(p, 1, 3)).toBeLessThanOrEqual(3);
    expect(bestBatchSize(0.001, 1, 3)).toBe(3);
  });

  it("models a batched lane as a deeper one-at-a-time lane that pays for localization", () => {
    // b = 1 is S(p, C); nothing failing is C·b per round.
    expect(mergesPerRound(0.05, 10, 1)).toBeCloseTo((0.95 * (1 - 0.95 ** 10)) / 0.05, 9);
    expect(mergesPerRound(0, 10, 4)).toBe(40);
    const failing = 1 - 0.95 ** 40;
    expect(mergesPerRound(0.05, 10, 4)).toBeCloseTo(
      (0.95 * failing) / 0.05 / (1 + 0.75 * failing),
      9,
    );
  });

  it("says on the queue which size it uses and why, from the queue's own verdicts", () => {
    const config = { batch: true, batchingMinSize: 4, concurrency: 10 };
    const fresh = batchSizeChoice(config, NO_VERDICTS);
    expect(fresh).toMatchObject({ size: 4, ceiling: 4, estimatedFailureRate: 0 });
    expect(fresh.reason).toBe(
      "no failure has stood in the queue's recent runs: batches of 4, the most batchingMinSize allows",
    );
    const some = batchSizeChoice(config, verdicts(100, 4, 2));
    expect(some.size).toBe(4);
    expect(some.reason).toMatch(
      /^batches of 4 \(the most batchingMinSize allows\) merge the most at a \d+(\.\d)? % failure rate$/,
    );
    // Half of recent single PRs failed: one at a time.
    const failing = batchSizeChoice(config, verdicts(100, 1, 50));
    expect(failing.size).toBe(1);
    expect(failing.reason).toMatch(
      /^at a \d+(\.\d)? % failure rate, testing one pull request at a time merges more than batches$/,
    );
    expect(batchSizeChoice({ ...config, batch: false }, NO_VERDICTS)).toMatchObject({
      size: 1,
      reason: "batching is off",
    });
  });
});

describe("cut points of a localization round", () => {
  it("tests every prefix when the slots allow", () => {
    expect(cutPoints(0, 4, 3)).toEqual([1, 2, 3]);
    expect(cutPoints(0, 4, 10)).toEqual([1, 2, 3]);
    expect(cutPoints(2, 6, 3)).toEqual([3, 4, 5]);
  });

  it("spreads fewer slots evenly, and one slot halves", () => {
    expect(cutPoints(0, 8, 1)).toEqual([4]);
    expect(cutPoints(0, 8, 3)).toEqual([2, 4, 6]);
    expect(cutPoints(4, 8, 1)).toEqual([6]);
  });

  it("has nothing to test once the culprit is bracketed or without a slot", () => {
    expect(cutPoints(3, 4, 5)).toEqual([]);
    expect(cutPoints(0, 4, 0)).toEqual([]);
  });
});
