import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as planner from "../../src/mergequeue/planner/index.js";
import {
  SIMULATION_DEFAULTS,
  simulate,
  type SimulationOptions,
} from "../../src/mergequeue/simulator/index.js";

/**
 * The planner on random workloads that look like real repositories (issue 14): PRs that break
 * the tests, PRs that edit the same lines as one submitted just before, stacked PRs, known flaky
 * tests; in every queue mode the issue names. Whatever the workload and the settings:
 *
 * - no good PR is lost (good: passes alone on any base and conflicts with no other PR);
 * - the order is kept (nothing merges while a PR submitted before it is still queued);
 * - nothing bad merges;
 * - what lands is what was tested (each merge is cleared by a run that contains every PR
 *   landed since its base, on the head the merge expects);
 * - a PR never fails for conflicting with one behind it; stacked PRs land in order.
 *
 * Every mode: one-at-a-time and batches (failed batches localized, fail-first or not, with the
 * presumption window), priorities with urgent preemption, and parallel mode (impacted targets).
 */
const workload: fc.Arbitrary<SimulationOptions> = fc
  .record({
    prs: fc.integer({ min: 5, max: 40 }),
    perHour: fc.constantFrom(4, 20, 60),
    ciJitter: fc.constantFrom(0, 0.3),
    failFirstFraction: fc.constantFrom(1, 0.5, 0.2),
    priorities: fc.boolean(),
    parallel: fc.constantFrom(false, false, true),
    failureRate: fc.constantFrom(0, 0.1, 0.25),
    flakeRate: fc.constantFrom(0, 0.1, 0.3),
    conflictRate: fc.constantFrom(0, 0.1, 0.3),
    stackRate: fc.constantFrom(0, 0.1, 0.3),
    concurrency: fc.integer({ min: 1, max: 5 }),
    batch: fc.boolean(),
    batchSize: fc.integer({ min: 2, max: 4 }),
    batchWaitMinutes: fc.constantFrom(0, 5, 20),
    bisectionConcurrency: fc.integer({ min: 1, max: 4 }),
    pendingFailureDepth: fc.integer({ min: 0, max: 2 }),
    optimistic: fc.boolean(),
    skip: fc.boolean(),
    speculationThresholdPercent: fc.constantFrom(0, 35),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
  })
  .map((w) => ({
    ...SIMULATION_DEFAULTS,
    prs: w.prs,
    arrivals: { kind: "poisson" as const, perHour: w.perHour },
    ciMinutes: 30,
    ciJitter: w.ciJitter,
    failFirstFraction: w.failFirstFraction,
    failureRate: w.failureRate,
    flakeRate: w.flakeRate,
    flakesKnown: true,
    conflictRate: w.conflictRate,
    stackRate: w.stackRate,
    concurrency: w.concurrency,
    batch: w.batch,
    batchSize: w.batchSize,
    batchWaitMinutes: w.batchWaitMinutes,
    bisectionConcurrency: w.bisectionConcurrency,
    pendingFailureDepth: w.pendingFailureDepth,
    optimistic: w.optimistic,
    optimizationMode: w.skip ? ("bisection_skip_redundant_tests" as const) : ("off" as const),
    speculationThresholdPercent: w.speculationThresholdPercent,
    testingTimeoutMinutes: 120,
    priorities: w.priorities
      ? [
          { weight: 0.1, value: 0 },
          { weight: 0.2, value: 10 },
          { weight: 0.7, value: 100 },
        ]
      : null,
    targets: 4,
    targetsFanout: w.parallel
      ? [
          { weight: 0.6, value: 1 },
          { weight: 0.3, value: 2 },
          { weight: 0.1, value: "ALL" as const },
        ]
      : null,
    seed: w.seed,
    maxHours: 24 * 30,
  }));

describe("the planner on realistic random workloads (simulator)", () => {
  it("loses no good PR, keeps the order, merges nothing bad, lands only what was tested", () => {
    // The paths the workloads went through, so that a generator that stops reaching them shows.
    const reached = { localizations: 0, culpritsNamed: 0, parallel: 0 };
    fc.assert(
      fc.property(workload, (o) => {
        const { report } = simulate(o, planner);
        const transitions = report.details.transitions;
        reached.localizations += transitions["pending_failure:bisection_started"] ?? 0;
        reached.culpritsNamed += report.details.bisectionRuns > 0 ? report.failed : 0;
        if (o.targetsFanout !== null && report.details.bisectionRuns > 0) reached.parallel += 1;
        expect(report.stopReason).toBe("completed");
        expect(report.goodPrsEvicted).toBe(0);
        expect(report.badMerged).toBe(0);
        expect(report.details.anomalies).toEqual({
          mergeBaseMoved: 0,
          mergedUntestedCombination: 0,
          actedOnConcludedPr: 0,
          malformedRun: 0,
          runOnUnknownBase: 0,
          cancelledUnknownRun: 0,
          unknownPr: 0,
          wakeNotInFuture: 0,
          mergeTransitionMismatch: 0,
          rejectedEvents: 0,
          mergedOutOfOrder: 0,
          mergedThroughNothing: 0,
          conflictWithLaterEvicted: 0,
        });
        // Every good PR merged (none cancelled: the simulator cancels nothing).
        expect(report.merged).toBeGreaterThanOrEqual(
          report.details.goodPrs - report.details.conflictingPrs,
        );
      }),
      { numRuns: 300 },
    );
    expect(reached.localizations).toBeGreaterThan(0);
    expect(reached.culpritsNamed).toBeGreaterThan(0);
    expect(reached.parallel).toBeGreaterThan(0);
  });

  it("a conflict costs no CI run and no bisection: two conflicting PRs and one unrelated", () => {
    // Issue 14's worst case: batches cycled twenty times (62 CI runs) where serial needs three.
    const o: SimulationOptions = {
      ...SIMULATION_DEFAULTS,
      prs: 3,
      arrivals: { kind: "burst" },
      ciMinutes: 30,
      failureRate: 0,
      concurrency: 4,
      batch: true,
      batchSize: 3,
      bisectionConcurrency: 4,
      pendingFailureDepth: 1,
      optimistic: true,
      testingTimeoutMinutes: 60,
      priorities: null,
      targetsFanout: null,
      conflictRate: 0,
      seed: 1,
    };
    const conflicting = simulateWithPairs(o, [[1, 2]]);
    expect(conflicting.merged).toBe(2);
    expect(conflicting.failed).toBe(1);
    expect(conflicting.details.bisectionRuns).toBe(0);
    expect(conflicting.ciRuns).toBeLessThanOrEqual(2);
  });
});

/** A simulation whose conflicts are exactly these pairs (a test hook on the workload). */
function simulateWithPairs(o: SimulationOptions, pairs: [number, number][]) {
  return simulate({ ...o, conflictPairs: pairs }, planner).report;
}
