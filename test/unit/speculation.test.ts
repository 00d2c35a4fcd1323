import { describe, expect, it } from "vitest";
import {
  NO_VERDICTS,
  estimatedFailureRate,
  passChance,
  recordVerdict,
  worthSpeculating,
  type VerdictRecord,
} from "../../src/mergequeue/speculation.js";

function verdicts(list: { prs: number; failed: boolean }[]): VerdictRecord {
  return list.reduce((r, v) => recordVerdict(r, v.prs, v.failed), NO_VERDICTS);
}

describe("the queue's failure-rate estimate", () => {
  it("is 0 before any failure, so a new queue speculates fully", () => {
    expect(estimatedFailureRate(NO_VERDICTS)).toBe(0);
    expect(estimatedFailureRate(verdicts([{ prs: 1, failed: false }]))).toBe(0);
  });

  it("gives the same per-PR rate for single pull requests and for batches", () => {
    // 1,000 units with failures spread evenly at the expected rate of p = 0.05.
    const single: { prs: number; failed: boolean }[] = [];
    const batched: { prs: number; failed: boolean }[] = [];
    const q4 = 1 - 0.95 ** 4;
    for (let i = 0; i < 1000; i++) {
      single.push({ prs: 1, failed: (i * 0.05) % 1 > ((i + 1) * 0.05) % 1 });
      batched.push({ prs: 4, failed: (i * q4) % 1 > ((i + 1) * q4) % 1 });
    }
    expect(estimatedFailureRate(verdicts(single))).toBeCloseTo(0.05, 2);
    expect(estimatedFailureRate(verdicts(batched))).toBeCloseTo(0.05, 2);
  });

  it("forgets old verdicts: a run of passes after failures brings it down", () => {
    const failing = verdicts(
      Array.from({ length: 50 }, (_, i) => ({ prs: 1, failed: i % 2 === 0 })),
    );
    const recovered = verdicts([
      ...Array.from({ length: 50 }, (_, i) => ({ prs: 1, failed: i % 2 === 0 })),
      ...Array.from({ length: 300 }, () => ({ prs: 1, failed: false })),
    ]);
    expect(estimatedFailureRate(failing)).toBeGreaterThan(0.3);
    expect(estimatedFailureRate(recovered)).toBeLessThan(0.05);
  });
});

describe("whether a speculative run is worth starting", () => {
  it("multiplies the pass chances of the pull requests ahead", () => {
    expect(passChance(0.1, 0)).toBe(1);
    expect(passChance(0.1, 2)).toBeCloseTo(0.81, 10);
  });

  it("always starts the front run, and every run when the threshold is 0", () => {
    // Every unit failed: p = 100 / 110, one pull request ahead passes 9 % of the time.
    const bad: VerdictRecord = { units: 100, prs: 100, failed: 100 };
    expect(worthSpeculating(100, bad, 0)).toBe(true);
    expect(worthSpeculating(0, bad, 50)).toBe(true);
    expect(worthSpeculating(9, bad, 1)).toBe(true);
    expect(worthSpeculating(10, bad, 1)).toBe(false);
  });

  it("compares the chance with the threshold in percent", () => {
    // p = 11 / (100 + 10) = 0.1: 0.9^6 = 0.531, 0.9^7 = 0.478.
    const record: VerdictRecord = { units: 100, prs: 100, failed: 11 };
    expect(worthSpeculating(50, record, 6)).toBe(true);
    expect(worthSpeculating(50, record, 7)).toBe(false);
  });
});
