import { describe, expect, it } from "vitest";
import { parsePriority, priorityName } from "../../src/mergequeue/model.js";
import { MINUTE, PlannerHarness, defined } from "../helpers/planner-harness.js";

describe("predictive testing (background §merge-queue-2.5)", () => {
  it("tests each pull request on top of everything ahead and merges in order", () => {
    const h = new PlannerHarness({ concurrency: 3 });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    expect(h.started.map((r) => h.prsOf(r))).toEqual([[1], [1, 2], [1, 2, 3]]);
    expect(h.started.every((r) => r.baseSha === "base0")).toBe(true);
    h.at(30).pass(3);
    expect(h.merged).toEqual([]); // without optimistic merging, 3 waits for 1 and 2
    expect(h.state(3)).toBe("tests_passed");
    h.pass(1);
    expect(h.merged).toEqual([1]);
    h.pass(2);
    expect(h.merged).toEqual([1, 2, 3]);
    expect(h.history(3)).toEqual([
      "not_ready:submitted",
      "pending:ready",
      "testing:test_run_started",
      "tests_passed:tests_passed",
      "merged:merged_by_queue",
    ]);
  });

  it("keeps no more runs than the concurrency and starts the next one when a slot frees", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    expect(h.runningUnits()).toEqual([[1], [2]]);
    h.pass(1);
    expect(h.merged).toEqual([1]);
    expect(h.runningUnits()).toEqual([[2], [3]]);
    // Planned once the merge of 1 moved the branch: on the new head, with 2 ahead.
    const run3 = h.run(3);
    expect(run3.baseSha).toBe("m1");
    expect(h.prsOf(run3)).toEqual([2, 3]);
  });

  it("waits in not_ready until the pull request is mergeable and targets the branch", () => {
    const h = new PlannerHarness();
    h.submit(1, { pr: { mergeability: "in_progress" } });
    expect(h.state(1)).toBe("not_ready");
    expect(h.runningUnits()).toEqual([]);
    h.send({ type: "pr_updated", pr: { ...h.pr(1), mergeability: "mergeable" } });
    expect(h.state(1)).toBe("testing");
    h.submit(2, { pr: { baseBranch: "release" } });
    expect(h.state(2)).toBe("not_ready");
  });

  it("says review_required once while approvals are missing, and admits it when they are given", () => {
    const h = new PlannerHarness({ notReadyTimeoutHours: 2 });
    const lacking = { mergeability: "not_mergeable", reviewRequired: true } as const;
    h.submit(1, { pr: lacking });
    expect(h.history(1)).toEqual(["not_ready:submitted", "not_ready:review_required"]);
    expect(h.lastDetail(1)).toMatch(/approving reviews/);
    // Read again (another webhook), still lacking: nothing new on the timeline, and the
    // not-ready time still counts from the submission.
    h.at(60).send({ type: "pr_updated", pr: { ...h.pr(1), ...lacking } });
    expect(h.history(1)).toHaveLength(2);
    const approved = { mergeability: "mergeable", reviewRequired: false } as const;
    h.at(90).send({ type: "pr_updated", pr: { ...h.pr(1), ...approved } });
    expect(h.history(1).slice(2)).toEqual(["pending:ready", "testing:test_run_started"]);
    // A review dismissed while it is in the queue: back to not_ready, for that reason.
    h.send({ type: "pr_updated", pr: { ...h.pr(1), ...lacking } });
    expect(h.state(1)).toBe("not_ready");
    expect(h.history(1).at(-1)).toBe("not_ready:review_required");
    expect(h.history(1).filter((t) => t === "not_ready:review_required")).toHaveLength(2);
  });

  it("a pull request lacking reviews times out in not_ready from its submission", () => {
    const h = new PlannerHarness({ notReadyTimeoutHours: 2 });
    h.submit(1, { pr: { mergeability: "not_mergeable", reviewRequired: true } });
    h.tick(119);
    expect(h.state(1)).toBe("not_ready");
    h.tick(120);
    expect(h.history(1).at(-1)).toBe("cancelled:not_ready_timeout");
  });
});

describe("pending failure (background §merge-queue-2.6)", () => {
  it("holds a failure until the pull requests ahead finish, then evicts the culprit", () => {
    const h = new PlannerHarness({ concurrency: 3 });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    h.at(20).fail([2], { checks: ["unit"] });
    expect(h.state(2)).toBe("pending_failure");
    h.at(30).pass(1);
    expect(h.merged).toEqual([1]);
    expect(h.state(2)).toBe("failed");
    expect(h.history(2).at(-1)).toBe("failed:failing_required_check");
    // 3 was tested on top of 2; it is tested again without it, on the new head.
    expect(h.history(3)).toContain("pending:prerequisite_merge_item_failed");
    expect(h.prsOf(h.run(3))).toEqual([3]);
    expect(h.run(3).baseSha).toBe("m1");
    h.pass(3);
    expect(h.merged).toEqual([1, 3]);
  });

  it("presumes a failure behind a failing pull request inherited and tests it again", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.fail([2]);
    h.fail([1]);
    expect(h.state(1)).toBe("failed");
    expect(h.state(2)).toBe("testing");
    expect(h.prsOf(h.run(2))).toEqual([2]);
    h.pass(2);
    expect(h.merged).toEqual([2]);
  });

  it("names the failing checks and the run in the failed transition", () => {
    const h = new PlannerHarness();
    h.submit(7);
    const runId = h.run(7).id;
    h.fail([7], { checks: ["lint", "unit"] });
    const failed = h.log.find((d) => d.type === "transition" && d.to === "failed");
    expect(failed).toMatchObject({
      reason: "failing_required_check",
      runId,
      detail: "failed: lint, unit",
    });
  });
});

describe("pending failure depth and optimistic merging (background §merge-queue-2.6)", () => {
  it("a passing successor clears a flaky failure when optimistic merging is on", () => {
    const h = new PlannerHarness({
      concurrency: 3,
      pendingFailureDepth: 1,
      canOptimisticallyMerge: true,
    });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    h.fail([1]);
    expect(h.state(1)).toBe("pending_failure"); // depth 1: waits for 2
    h.pass(2);
    expect(h.merged).toEqual([1, 2]);
    expect(h.history(1).at(-1)).toBe("merged:merged_optimistically");
    expect(h.history(2).at(-1)).toBe("merged:merged_by_queue");
  });

  it("depth without optimistic merging only waits, then evicts and retests the successor", () => {
    const h = new PlannerHarness({ concurrency: 2, pendingFailureDepth: 1 });
    h.submit(1);
    h.submit(2);
    h.fail([1]);
    expect(h.state(1)).toBe("pending_failure");
    h.pass(2);
    expect(h.state(1)).toBe("failed");
    expect(h.merged).toEqual([]);
    expect(h.prsOf(h.run(2))).toEqual([2]);
  });

  it("with depth 0 a failure at the front is evicted at once", () => {
    const h = new PlannerHarness({ concurrency: 2, canOptimisticallyMerge: true });
    h.submit(1);
    h.submit(2);
    h.fail([1]);
    expect(h.state(1)).toBe("failed");
  });

  it("optimistic merging alone: a later pass merges everything ahead of it", () => {
    const h = new PlannerHarness({ concurrency: 3, canOptimisticallyMerge: true });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    h.pass(3);
    expect(h.merged).toEqual([1, 2, 3]);
    expect(h.history(1).at(-1)).toBe("merged:merged_optimistically");
    // The runs of 1 and 2 are no longer needed: cancelled, and late reports are ignored.
    expect(h.cancelled.size).toBe(2);
    expect(h.snapshot.entries).toEqual({});
    const before = h.log.length;
    h.send({
      type: "run_finished",
      runId: defined(h.started[0]).id,
      outcome: "failed",
      failingChecks: ["x"],
    });
    expect(h.log.length).toBe(before);
  });
});

describe("speculation on top of a held failure", () => {
  it("starts no run deeper than pendingFailureDepth behind a held failure; resumes once it is resolved", () => {
    const h = new PlannerHarness({ concurrency: 2, pendingFailureDepth: 1 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([2]); // held: 1 is still testing
    // One successor level may clear 2: 3 starts on top of it; 4 would be a second level.
    expect(h.runningUnits()).toEqual([[1], [3]]);
    expect(h.prsOf(h.run(3))).toEqual([1, 2, 3]);
    h.fail([3]);
    expect(h.runningUnits()).toEqual([[1]]);
    h.pass(1);
    expect(h.state(2)).toBe("failed");
    expect(h.runningUnits()).toEqual([[3], [4]]);
    expect(h.prsOf(h.run(4))).toEqual([3, 4]);
  });

  it("with depth 0 nothing new starts on top of a held failure", () => {
    const h = new PlannerHarness({ concurrency: 3 });
    for (const n of [1, 2, 3]) h.submit(n);
    h.pass(3);
    h.fail([2]);
    h.submit(4);
    expect(h.runningUnits()).toEqual([[1]]);
  });
});

describe("speculationThresholdPercent (Mainline's extension, background §merge-queue-8.3)", () => {
  /** A record of 100 verdicts on single pull requests, `failed` of which stood. */
  const record = (failed: number) => ({ units: 100, prs: 100, failed });

  it("a new queue speculates as deep as the concurrency: no failure seen yet", () => {
    const h = new PlannerHarness({ concurrency: 5, speculationThresholdPercent: 90 });
    for (const n of [1, 2, 3, 4, 5]) h.submit(n);
    expect(h.runningUnits()).toEqual([[1], [2], [3], [4], [5]]);
  });

  it("starts a run only while the pull requests being tested ahead of it are likely enough to pass", () => {
    const h = new PlannerHarness({ concurrency: 10, speculationThresholdPercent: 50 });
    // 11 of 110 (100 plus the prior's 10) units failed: p = 0.1, and 0.9^6 = 0.53 ≥ 0.5 > 0.9^7.
    h.snapshot.verdicts = record(11);
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) h.submit(n);
    expect(h.runningUnits()).toEqual([[1], [2], [3], [4], [5], [6], [7]]);
    // A pull request that passed no longer counts as untested: 8 starts on top of 1…7.
    h.pass(2);
    expect(h.state(2)).toBe("tests_passed");
    expect(h.prsOf(h.run(8))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(h.state(9)).toBe("pending");
    // 1 merges: 9 starts with six untested ahead (3…8).
    h.pass(1);
    expect(h.merged).toEqual([1, 2]);
    expect(h.prsOf(h.run(9))).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(h.state(10)).toBe("pending");
  });

  it("learns the failure rate from failures that stood and runs that passed", () => {
    const h = new PlannerHarness({ concurrency: 4, speculationThresholdPercent: 50 });
    for (const n of [1, 2, 3]) {
      h.submit(n);
      h.fail([n]);
      expect(h.state(n)).toBe("failed");
    }
    // Three failures against the prior's ten passed units: p ≈ 0.23, so at most two untested
    // pull requests may be ahead of a run (0.77² ≥ 0.5 > 0.77³).
    expect(h.snapshot.verdicts.failed).toBeCloseTo(2.9701, 4);
    for (const n of [4, 5, 6, 7]) h.submit(n);
    expect(h.runningUnits()).toEqual([[4], [5], [6]]);
    h.pass(4); // merges; the estimate falls to 0.21, still 0.79³ < 0.5
    expect(h.merged).toEqual([4]);
    expect(h.runningUnits()).toEqual([[5], [6], [7]]);
    expect(h.snapshot.verdicts.units).toBeCloseTo(3.9404, 4);
    h.submit(8);
    expect(h.state(8)).toBe("pending");
  });

  it("a failure that a failed predecessor explains is not counted", () => {
    const h = new PlannerHarness({ concurrency: 2, speculationThresholdPercent: 50 });
    h.submit(1);
    h.submit(2);
    h.fail([2]);
    h.fail([1]);
    expect(h.snapshot.verdicts).toMatchObject({ units: 1, failed: 1 });
    h.pass(2);
    expect(h.snapshot.verdicts.failed).toBeCloseTo(0.99, 6);
    expect(h.snapshot.verdicts.units).toBeCloseTo(1.99, 6);
  });

  it("0 (the default) fills the concurrency whatever the failure rate, as Trunk does", () => {
    const h = new PlannerHarness({ concurrency: 4 });
    h.snapshot.verdicts = record(80);
    for (const n of [1, 2, 3, 4]) h.submit(n);
    expect(h.runningUnits()).toEqual([[1], [2], [3], [4]]);
  });

  it("counts pull requests, not batches: a batch of four ahead weighs four", () => {
    const h = new PlannerHarness({
      concurrency: 4,
      batch: true,
      batchingMinSize: 4,
      speculationThresholdPercent: 50,
    });
    // p = 0.1 as above: six untested pull requests may be ahead, so one batch of four, not two.
    h.snapshot.verdicts = record(11);
    for (let n = 1; n <= 12; n++) h.submit(n);
    expect(h.runningUnits()).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]);
  });
});

describe("batching (background §merge-queue-2.7)", () => {
  it("starts a batch when the wait expires: A 0:00, B 1:00, C 2:30 → ABC at 5:00", () => {
    const h = new PlannerHarness({
      batch: true,
      batchingMinSize: 4,
      batchingMaxWaitTimeMinutes: 5,
    });
    h.at(0).submit(1);
    expect(h.last?.wakeAt).toBe(5 * MINUTE);
    h.at(1).submit(2);
    h.at(2.5).submit(3);
    expect(h.runningUnits()).toEqual([]);
    h.tick(4.9);
    expect(h.runningUnits()).toEqual([]);
    h.tick(5);
    expect(h.runningUnits()).toEqual([[1, 2, 3]]);
  });

  it("a waiting PR says what it waits for: batch forming, n of size, and by when it starts", () => {
    const h = new PlannerHarness({
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 5,
    });
    h.at(2).submit(1);
    expect(h.snapshot.entries[defined(h.snapshot.prIndex["1"])]?.waiting).toEqual({
      kind: "batch_forming",
      have: 1,
      need: 3,
      startsBy: 7 * MINUTE,
    });
    h.at(3).submit(2);
    const waiting = h.snapshot.entries[defined(h.snapshot.prIndex["2"])]?.waiting;
    expect(waiting).toMatchObject({ have: 2, need: 3, startsBy: 7 * MINUTE });
    h.tick(7);
    expect(h.runningUnits()).toEqual([[1, 2]]);
    expect(h.snapshot.entries[defined(h.snapshot.prIndex["1"])]?.waiting).toBeUndefined();
  });

  it("starts at once when the target size is reached, and merges a batch as one commit per PR", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2 });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    expect(h.runningUnits()).toEqual([[1, 2]]);
    h.pass(1, 2);
    expect(h.merged).toEqual([1, 2]);
  });

  it("tests a noBatch pull request alone at its position", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 3, concurrency: 3 });
    h.submit(1);
    h.submit(2, { noBatch: true });
    h.submit(3);
    h.tick(5);
    expect(h.runningUnits()).toEqual([[1], [2], [3]]);
  });

  it("localizes a failed batch in one round: its prefixes at once, the culprit named by a pass/fail pair", () => {
    const h = new PlannerHarness({
      batch: true,
      batchingMinSize: 4,
      bisectionConcurrency: 3,
    });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4], { checks: ["unit"] });
    expect(h.runningUnits()).toEqual([[1], [1, 2], [1, 2, 3]]);
    const prefix = h.run(1, 2, 3);
    expect(prefix.kind).toBe("bisection");
    // The check that failed runs first, with what failed in the batch run.
    expect(prefix.failFirst?.checks).toEqual(["unit"]);
    expect(h.lastDetail(1)).toBe(
      "testing 3 prefixes of batch run 5 at once to find the failing pull request",
    );
    // The first failing prefix cancels the longer ones and sends what is behind it back.
    h.fail([1, 2, 3], { checks: ["unit"] });
    expect(h.state(4)).toBe("pending");
    h.pass(1, 2);
    // The shorter prefix is not needed any more; the passing one clears #1 and #2 where they
    // stand, and the pair names #3.
    expect(h.runningUnits().filter((u) => u.length === 1 && u[0] === 1)).toEqual([]);
    expect(h.history(1).slice(-2)).toEqual([
      "tests_passed:bisection_passed",
      "merged:merged_by_queue",
    ]);
    expect(h.merged).toEqual([1, 2]);
    expect(h.state(3)).toBe("failed");
    expect(h.lastDetail(3)).toMatch(
      /^localization: run \d+ \(#1, #2\) passed; run \d+ \(#1, #2, #3\) failed unit$/,
    );
    // The lane restarts at once with #4 (in a batch that fills up for 5 minutes at most).
    expect(h.state(4)).toBe("pending");
    h.tick(5);
    expect(h.runningUnits()).toEqual([[4]]);
    expect(h.started.filter((r) => r.kind === "bisection")).toHaveLength(3);
  });

  it("spreads cut points over fewer slots than prefixes and narrows in rounds", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 4, bisectionConcurrency: 1 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4]);
    expect(h.runningUnits()).toEqual([[1, 2]]);
    h.pass(1, 2);
    expect(h.merged).toEqual([1, 2]);
    // On the branch #1 and #2 made: only what is between the pass and the failure is left.
    expect(h.runningUnits()).toEqual([[3]]);
    h.fail([3]);
    expect(h.state(3)).toBe("failed");
    expect(h.state(4)).not.toBe("failed");
    expect(h.merged).toEqual([1, 2]);
  });

  it("a PR cancelled during localization: the others are tested again where they stand", () => {
    const h = new PlannerHarness({
      batch: true,
      batchingMinSize: 4,
      bisectionConcurrency: 3,
    });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4]);
    const prefix = h.run(1, 2).id;
    h.send({ type: "cancel", prNumber: 1, actor: { kind: "user", name: "ana" } });
    expect(h.cancelled.has(prefix)).toBe(true);
    expect(Object.keys(h.snapshot.bisections)).toEqual([]);
    h.tick(5);
    for (const n of [2, 3, 4]) expect(h.state(n)).toBe("testing");
    expect(h.runningUnits()).toEqual([[2, 3, 4]]);
  });

  it("keeps the order: nothing behind a batch under localization is tested or lands first", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, concurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    expect(h.runningUnits()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    h.fail([1, 2]);
    // [3,4] was tested on top of the failed batch: it waits, at its place, for the verdict.
    expect(h.history(3)).toContain("pending:prerequisite_merge_item_failed");
    expect(h.runningUnits()).toEqual([[1]]);
    expect(h.queueOrder()).toEqual([1, 2, 3, 4]);
    h.pass(1);
    // A passing #1 and the failed batch name #2, which is tested once more, alone, before it
    // fails (a flaky batch run must not evict it); then the queue behind goes on without it.
    expect(h.merged).toEqual([1]);
    expect(h.runningUnits()).toEqual([[2]]);
    h.fail([2]);
    expect(h.state(2)).toBe("failed");
    expect(h.history(2).at(-1)).toBe("failed:failing_required_check");
    expect(h.prsOf(h.run(3, 4))).toEqual([3, 4]);
    h.pass(3, 4);
    expect(h.merged).toEqual([1, 3, 4]);
  });

  it("presumes the culprit after the window failing runs take and refills the lane behind it", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, concurrency: 2 });
    for (const n of [1, 2, 3, 4, 5, 6]) h.submit(n);
    h.at(30).fail([1, 2]);
    expect(h.runningUnits()).toEqual([[1]]);
    // No failing localization run seen yet: the window is as long as the batch run took.
    h.tick(59);
    expect(h.runningUnits()).toEqual([[1]]);
    const due = h.tick(60);
    expect(due.decisions.some((d) => d.type === "start_run")).toBe(true);
    // #1 is presumed good (in flight on its prefix run), #2 held out, the lane goes on.
    expect(h.prsOf(h.run(3, 4))).toEqual([1, 3, 4]);
    expect(h.prsOf(h.run(5, 6))).toEqual([1, 3, 4, 5, 6]);
    expect(h.state(2)).toBe("pending_failure");
    h.at(65).pass(3, 4);
    // Nothing merges on a presumption.
    expect(h.merged).toEqual([]);
    h.at(70).pass(1);
    // #2 alone once more: still held out, nothing behind it merges yet.
    expect(h.state(2)).toBe("pending_failure");
    expect(h.merged).toEqual([1]);
    h.at(75).fail([2]);
    expect(h.state(2)).toBe("failed");
    expect(h.merged).toEqual([1, 3, 4]);
  });

  it("does not evict the last pull request of a batch whose failure was a flake", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 3, bisectionConcurrency: 2 });
    for (const n of [1, 2, 3]) h.submit(n);
    h.fail([1, 2, 3]);
    h.pass(1, 2);
    // Only the batch run failed with #3: it is tested once more, and passes.
    expect(h.state(3)).toBe("pending_failure");
    expect(h.lastDetail(3)).toMatch(/testing it once more before failing it on batch run/);
    h.pass(3);
    expect(h.merged).toEqual([1, 2, 3]);
    expect(h.history(3)).not.toContain("failed:failing_required_check");
  });

  it("a shorter failing prefix withdraws the presumption and what was stacked on it", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, concurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.at(30).fail([1, 2]);
    h.tick(60);
    const stacked = h.run(3, 4).id;
    h.at(70).fail([1]);
    expect(h.cancelled.has(stacked)).toBe(true);
    expect(h.state(1)).toBe("failed");
    expect(h.lastDetail(1)).toMatch(/^localization: run \d+ \(#1\) failed test, with #1 first$/);
    // #2 was only presumed bad: it is tested again, now first in the queue.
    expect(h.state(2)).toBe("testing");
    expect(h.prsOf(h.run(2, 3))).toEqual([2, 3]);
  });

  it("learns the window from how long failing localization runs take", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, bisectionConcurrency: 1 });
    let pr = 1;
    // Three failed batches whose prefix runs fail after 6 minutes.
    for (let round = 0; round < 3; round++) {
      const t = round * 100;
      h.at(t).submit(pr);
      h.submit(pr + 1);
      h.at(t + 30).fail([pr, pr + 1]);
      h.at(t + 36).fail([pr]);
      h.at(t + 66).pass(pr + 1);
      pr += 2;
    }
    expect(h.snapshot.failingRunMs).toEqual([6, 6, 6].map((m) => m * 60_000));
    h.at(400).submit(pr);
    h.submit(pr + 1);
    h.at(430).fail([pr, pr + 1]);
    // 1.25 × the 80th percentile: 7.5 minutes, not the 30 the batch run took.
    h.tick(437);
    expect(
      h.snapshot.bisections[Object.keys(h.snapshot.bisections)[0] ?? ""]?.presumedAt,
    ).toBeNull();
    h.tick(438);
    expect(Object.values(h.snapshot.bisections)[0]?.presumedAt).toBe(438 * 60_000);
  });

  it("retries a localization run whose only failures are known flaky tests, on the timeline", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, bisectionConcurrency: 2 });
    for (const n of [1, 2]) h.submit(n);
    h.fail([1, 2]);
    const first = h.run(1).id;
    h.fail([1], { flakyOnly: true });
    // The same combination once more, not a conviction.
    const retry = h.run(1);
    expect(retry.id).not.toBe(first);
    expect(retry.kind).toBe("bisection");
    expect(retry.attempt).toBe(2);
    expect(h.history(1).at(-1)).toBe("pending_failure:retried_flaky_failure");
    h.pass(1);
    expect(h.merged).toEqual([1]);
    h.fail([2]);
    expect(h.state(2)).toBe("failed");
    // A second flaky-only failure of the same combination stands.
    const g = new PlannerHarness({ batch: true, batchingMinSize: 2, bisectionConcurrency: 2 });
    for (const n of [1, 2]) g.submit(n);
    g.fail([1, 2]);
    g.fail([1], { flakyOnly: true });
    g.fail([1], { flakyOnly: true });
    expect(g.state(1)).toBe("failed");
    expect(g.state(2)).not.toBe("failed");
  });
});

describe("conflicts are not test failures (issue 14, item 2)", () => {
  it("a conflict inside a batch evicts only the PR that does not apply, naming the PR ahead; no bisection", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 3, bisectionConcurrency: 4 });
    for (const n of [1, 2, 3]) h.submit(n);
    h.conflict([1, 2, 3], 3, [1], ["src/parser.ts"]);
    expect(h.state(3)).toBe("failed");
    expect(h.history(3).at(-1)).toBe("failed:merge_conflict");
    expect(h.lastDetail(3)).toBe("conflicts with #1 (ahead of it in the queue): src/parser.ts");
    // The others go on without it, tested together, never bisected.
    expect(h.history(1)).not.toContain("pending_failure:bisection_started");
    expect(h.started.filter((r) => r.kind === "bisection")).toHaveLength(0);
    h.tick(5);
    h.pass(1, 2);
    expect(h.merged).toEqual([1, 2]);
    // One build that failed, one run: serial mode would have needed three.
    expect(h.started).toHaveLength(2);
  });

  it("a PR ahead of the unit that does not apply leaves; the unit is tested again without it", () => {
    const h = new PlannerHarness({ concurrency: 3 });
    for (const n of [1, 2, 3]) h.submit(n);
    expect(h.prsOf(h.run(3))).toEqual([1, 2, 3]);
    // The run of #3 finds that #2 does not apply onto #1 (the host names the first, in order).
    h.conflict([3], 2, [1]);
    expect(h.state(2)).toBe("failed");
    expect(h.lastDetail(2)).toContain("conflicts with #1");
    expect(h.state(1)).toBe("testing");
    expect(h.prsOf(h.run(3))).toEqual([1, 3]);
    h.pass(1);
    h.pass(3);
    expect(h.merged).toEqual([1, 3]);
  });

  it("names every PR ahead when the host cannot tell which one, and the branch when none is ahead", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    for (const n of [1, 2]) h.submit(n);
    h.conflict([2], 2);
    expect(h.lastDetail(2)).toBe("conflicts with #1 (ahead of it in the queue): src/shared.ts");
    h.conflict([1], 1, []);
    expect(h.lastDetail(1)).toBe("does not apply onto main: src/shared.ts");
  });

  it("a conflict found by a localization run evicts the PR and tests the others again", () => {
    const h = new PlannerHarness({
      batch: true,
      batchingMinSize: 4,
      bisectionConcurrency: 3,
    });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4]);
    h.conflict([1, 2, 3], 3, [2]);
    expect(h.history(3).at(-1)).toBe("failed:merge_conflict");
    expect(Object.keys(h.snapshot.bisections)).toEqual([]);
    h.tick(5);
    expect(h.runningUnits()).toEqual([[1, 2, 4]]);
  });
});

describe("stacked pull requests (issue 14, item 7)", () => {
  const on = (...numbers: number[]) => ({
    pr: { contains: numbers.map((n) => ({ number: n, headSha: `h${n}` })) },
  });

  it("a PR is not tested ahead of a queued PR whose commits it contains", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(2, on(1)); // stacked on #1, submitted first
    expect(h.prsOf(h.run(2))).toEqual([2]);
    h.submit(1);
    // #1 goes ahead of the PR stacked on it; #2's run, which lacked #1's place, starts again.
    expect(h.queueOrder()).toEqual([1, 2]);
    expect(h.history(2)).toContain("pending:stacked_pr_ahead");
    expect(h.prsOf(h.run(2))).toEqual([1, 2]);
    h.pass(2);
    h.pass(1);
    expect(h.merged).toEqual([1, 2]);
  });

  it("a PR whose commits all landed inside a PR stacked on it is merged, not failed", () => {
    const h = new PlannerHarness({ concurrency: 1 });
    h.submit(1);
    h.submit(2, on(1));
    h.fail([1], { checks: ["test"] }); // say a flaky test, not retried
    expect(h.state(1)).toBe("failed");
    h.pass(2);
    expect(h.merged).toEqual([2]);
    // Submitted again, the parent's change is on the branch already: merged without a run.
    const runs = h.started.length;
    h.submit(1);
    expect(h.state(1)).toBe("merged");
    expect(h.history(1).at(-1)).toBe("merged:merged_through_stack");
    expect(h.lastDetail(1)).toBe("its commits landed with #2");
    expect(h.started).toHaveLength(runs);
  });

  it("a parent pushed to after its child landed is tested like any PR", () => {
    const h = new PlannerHarness({ concurrency: 1 });
    h.submit(2, on(1));
    h.pass(2);
    h.submit(1, { pr: { headSha: "h1-amended" } });
    expect(h.state(1)).toBe("testing");
  });
});

describe("priorities (background §merge-queue-2.9, docs/contract.md §5)", () => {
  it("urgent tests now: A restarts behind it, B goes back to pending", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1); // A
    h.submit(2); // B
    h.submit(3); // C
    h.submit(4, { priority: 0 }); // D urgent
    expect(h.queueOrder()).toEqual([4, 1, 2, 3]);
    expect(h.runningUnits()).toEqual([[4], [1]]);
    expect(h.prsOf(h.run(1))).toEqual([4, 1]);
    expect(h.state(2)).toBe("pending");
    expect(h.history(2)).toContain("pending:preempted_by_urgent");
  });

  it("high priority goes before pending pull requests but interrupts nothing", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    h.submit(4, { priority: 10 });
    expect(h.queueOrder()).toEqual([1, 2, 4, 3]);
    expect(h.cancelled.size).toBe(0);
    h.pass(1);
    expect(h.runningUnits()).toEqual([[2], [4]]);
  });

  it("first come, first served within a priority; resubmission changes the priority", () => {
    const h = new PlannerHarness({ concurrency: 1 });
    h.submit(1);
    h.submit(2, { priority: 200 });
    h.submit(3, { priority: 200 });
    h.submit(4);
    expect(h.queueOrder()).toEqual([1, 4, 2, 3]);
    h.submit(3, { priority: 10 });
    expect(h.queueOrder()).toEqual([1, 3, 4, 2]);
    expect(h.history(3).at(-1)).toBe("pending:resubmitted");
  });

  it("parses names and numbers; names the nearest level", () => {
    expect(parsePriority("URGENT")).toBe(0);
    expect(parsePriority("low")).toBe(200);
    expect(parsePriority("42")).toBe(42);
    expect(parsePriority(256)).toBeUndefined();
    expect(parsePriority("soon")).toBeUndefined();
    expect(priorityName(5)).toBe("urgent");
    expect(priorityName(55)).toBe("high");
    expect(priorityName(150)).toBe("medium");
    expect(priorityName(255)).toBe("low");
  });
});

describe("timeouts (background §merge-queue-2.10)", () => {
  it("a run past testingTimeoutMinutes is cancelled and counts as a failure", () => {
    const h = new PlannerHarness({ testingTimeoutMinutes: 30 });
    h.submit(1);
    const runId = h.run(1).id;
    expect(h.last?.wakeAt).toBe(30 * MINUTE);
    h.tick(29);
    expect(h.state(1)).toBe("testing");
    h.tick(30);
    expect(h.cancelled.has(runId)).toBe(true);
    expect(h.history(1).at(-1)).toBe("failed:test_run_timeout");
  });

  it("a pull request not ready for notReadyTimeoutHours is cancelled", () => {
    const h = new PlannerHarness({ notReadyTimeoutHours: 2 });
    h.submit(1, { pr: { mergeability: "not_mergeable" } });
    h.tick(119);
    expect(h.state(1)).toBe("not_ready");
    h.tick(120);
    expect(h.history(1).at(-1)).toBe("cancelled:not_ready_timeout");
  });
});

describe("queue states (docs/contract.md §5)", () => {
  it("paused: runs in flight finish and are recorded, nothing starts or merges; resume merges", () => {
    const h = new PlannerHarness({ concurrency: 1 });
    h.submit(1);
    h.submit(2);
    h.send({
      type: "settings_changed",
      configuration: { ...h.snapshot.configuration, state: "paused" },
    });
    h.pass(1);
    expect(h.state(1)).toBe("tests_passed");
    expect(h.merged).toEqual([]);
    expect(h.runningUnits()).toEqual([]);
    h.send({
      type: "settings_changed",
      configuration: { ...h.snapshot.configuration, state: "running" },
    });
    expect(h.merged).toEqual([1]);
    expect(h.runningUnits()).toEqual([[2]]);
  });

  it("switching modes: drains, then the new mode applies and the queue runs", () => {
    const h = new PlannerHarness();
    h.submit(1);
    h.send({
      type: "settings_changed",
      configuration: {
        ...h.snapshot.configuration,
        state: "switching_modes",
        pendingMode: "parallel",
      },
    });
    h.pass(1);
    expect(h.merged).toEqual([1]);
    const change = h.log.find((d) => d.type === "queue_state");
    expect(change).toMatchObject({
      configuration: { state: "running", mode: "parallel", pendingMode: null },
    });
    expect(h.snapshot.configuration.mode).toBe("parallel");
  });
});

describe("parallel mode (background §merge-queue-2.8)", () => {
  it("targets uploaded before the submission count for that commit only", () => {
    const h = new PlannerHarness({ mode: "parallel", concurrency: 2 });
    h.send({ type: "set_impacted_targets", prNumber: 1, headSha: "h1", targets: ["web"] });
    h.send({ type: "set_impacted_targets", prNumber: 2, headSha: "old", targets: ["api"] });
    h.submit(1);
    h.submit(2);
    expect(h.state(1)).toBe("testing");
    expect(h.state(2)).toBe("not_ready"); // its upload was for another commit
    h.send({ type: "set_impacted_targets", prNumber: 2, headSha: "h2", targets: ["api"] });
    expect(h.state(2)).toBe("testing");
    expect(h.prsOf(h.run(2))).toEqual([2]); // independent of 1
  });

  it("keeps a batch in its lane: independent PRs between are left for their own batch", () => {
    const h = new PlannerHarness({
      mode: "parallel",
      concurrency: 4,
      batch: true,
      batchingMinSize: 2,
    });
    const targets: Record<number, string[]> = {
      1: ["web"],
      2: ["api"],
      3: ["web"],
      4: ["api"],
      5: ["web", "api"],
    };
    for (const n of [1, 2, 3, 4, 5]) {
      h.send({
        type: "set_impacted_targets",
        prNumber: n,
        headSha: `h${n}`,
        targets: targets[n] ?? [],
      });
      h.submit(n);
    }
    expect(h.runningUnits()).toEqual([
      [1, 3],
      [2, 4],
    ]);
    expect(h.queueOrder()).toEqual([1, 2, 3, 4, 5]);
    // #5 spans both lanes: its batch goes on top of both.
    h.tick(5);
    expect(h.prsOf(h.run(5))).toEqual([1, 2, 3, 4, 5]);
    // Lanes merge independently: #2 and #4 need not wait for #1 and #3.
    h.pass(2, 4);
    expect(h.merged).toEqual([2, 4]);
    h.pass(1, 3);
    h.pass(5);
    expect(h.merged).toEqual([2, 4, 1, 3, 5]);
  });

  it("builds lanes from impacted targets: C on top of A and B, D alone", () => {
    const h = new PlannerHarness({ mode: "parallel", concurrency: 4 });
    const targets: Record<number, string[] | "ALL"> = {
      1: ["frontend"],
      2: ["backend"],
      3: ["frontend", "backend"],
      4: ["docs"],
    };
    for (const n of [1, 2, 3, 4]) {
      h.submit(n);
      expect(h.state(n)).toBe("not_ready");
      h.send({
        type: "set_impacted_targets",
        prNumber: n,
        headSha: `h${n}`,
        targets: targets[n] ?? [],
      });
    }
    expect(h.started.map((r) => h.prsOf(r))).toEqual([[1], [2], [1, 2, 3], [4]]);
    h.pass(4);
    expect(h.merged).toEqual([4]); // independent lane merges without waiting for 1–3
    h.pass(2);
    expect(h.merged).toEqual([4, 2]);
    h.pass(1);
    h.pass(3);
    expect(h.merged).toEqual([4, 2, 1, 3]);
  });
});

describe("changes from outside the queue (background §merge-queue-2.4)", () => {
  it("a push to a queued pull request cancels it (pr_pushed_to) and retests those behind", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.send({ type: "pr_updated", pr: { ...h.pr(1), headSha: "h1-new" } });
    expect(h.history(1).at(-1)).toBe("cancelled:pr_pushed_to");
    expect(h.history(2)).toContain("pending:prerequisite_merge_item_removed");
    expect(h.prsOf(h.run(2))).toEqual([2]);
  });

  it("closing, drafting or retargeting a pull request cancels it", () => {
    const h = new PlannerHarness({ concurrency: 3 });
    h.submit(1);
    h.submit(2);
    h.submit(3);
    h.send({ type: "pr_updated", pr: { ...h.pr(1), state: "closed" } });
    h.send({ type: "pr_updated", pr: { ...h.pr(2), draft: true } });
    h.send({ type: "pr_updated", pr: { ...h.pr(3), baseBranch: "release" } });
    expect([h.history(1).at(-1), h.history(2).at(-1), h.history(3).at(-1)]).toEqual([
      "cancelled:pr_closed",
      "cancelled:pr_draft",
      "cancelled:pr_base_branch_changed",
    ]);
  });

  it("a push to the target branch restarts everything in flight on the new head", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.fail([2]);
    const before = h.started.map((r) => r.id);
    h.send({ type: "base_pushed", headSha: "outside" });
    expect(h.cancelled.has(defined(before[0]))).toBe(true);
    expect(h.runningUnits()).toEqual([[1], [2]]);
    expect(h.started.slice(-2).every((r) => r.baseSha === "outside")).toBe(true);
    expect(h.history(2)).toContain("pending:restarted_on_new_base");
    // The report of our own merge's head, late: nothing happens.
    const log = h.log.length;
    h.send({ type: "base_pushed", headSha: "outside" });
    expect(h.log.length).toBe(log);
  });

  it("a pull request merged by hand is recorded as merged_manually", () => {
    const h = new PlannerHarness();
    h.submit(1);
    h.send({ type: "pr_updated", pr: { ...h.pr(1), state: "merged" } });
    expect(h.history(1).at(-1)).toBe("merged:merged_manually");
  });
});

describe("commands", () => {
  it("cancel removes a pull request; an unknown one is refused and changes nothing", () => {
    const h = new PlannerHarness();
    h.submit(1);
    h.send({ type: "cancel", prNumber: 1, actor: { kind: "user", name: "ana" } });
    const cancelled = h.log.at(-1);
    expect(cancelled).toMatchObject({
      to: "cancelled",
      reason: "cancelled_by_user",
      actor: { name: "ana" },
    });
    const result = h.send({ type: "cancel", prNumber: 1, actor: { kind: "user", name: "ana" } });
    expect(result.rejection?.code).toBe("not_found");
    expect(result.decisions).toEqual([]);
  });

  it("restart tests a pull request again in place, without moving it", () => {
    const h = new PlannerHarness({ concurrency: 1 });
    h.submit(1);
    h.submit(2);
    const first = h.run(1).id;
    h.send({ type: "restart", prNumber: 1, actor: { kind: "user", name: "ana" } });
    expect(h.cancelled.has(first)).toBe(true);
    expect(h.run(1).id).not.toBe(first);
    expect(h.queueOrder()).toEqual([1, 2]);
    expect(h.history(1)).toContain("pending:restarted_by_user");
  });

  it("restart of a held failure tests it again", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.fail([2]);
    h.send({ type: "restart", prNumber: 2, actor: { kind: "user", name: "ana" } });
    expect(h.state(2)).toBe("testing");
  });

  it("duplicate and unknown run reports are harmless", () => {
    const h = new PlannerHarness();
    h.submit(1);
    const runId = h.run(1).id;
    h.pass(1);
    const log = h.log.length;
    h.send({ type: "run_finished", runId, outcome: "failed", failingChecks: ["x"] });
    h.send({ type: "run_finished", runId: "nope", outcome: "passed", failingChecks: [] });
    expect(h.log.length).toBe(log);
    expect(h.merged).toEqual([1]);
  });
});

describe("flaky failures and merge failures", () => {
  it("a failure made only of known flaky tests is retried once before pending_failure", () => {
    const h = new PlannerHarness();
    h.submit(1);
    h.fail([1], { flakyOnly: true });
    expect(h.state(1)).toBe("testing");
    expect(h.history(1).at(-1)).toBe("testing:retried_flaky_failure");
    h.fail([1], { flakyOnly: true });
    expect(h.state(1)).toBe("failed");
  });

  it("a merge the host refuses fails the pull request and replans those behind", () => {
    const h = new PlannerHarness({ concurrency: 2 });
    h.autoMerge = false;
    h.submit(1);
    h.submit(2);
    const result = h.pass(1);
    const merge = defined(result.decisions.find((d) => d.type === "merge"));
    expect(merge).toMatchObject({ prNumber: 1, expectedBaseSha: "base0", method: "squash" });
    h.send({
      type: "merge_failed",
      entryId: "entryId" in merge ? merge.entryId : "",
      reason: "merge_conflict",
      message: "conflict in a.txt",
    });
    expect(h.history(1).at(-1)).toBe("failed:merge_conflict");
    expect(h.prsOf(h.run(2))).toEqual([2]);
  });
});

describe("direct merge (background §merge-queue-2.11)", () => {
  it("merges an up-to-date pull request with green checks into an empty queue without a run", () => {
    const h = new PlannerHarness({ directMergeMode: "always" });
    h.submit(1, { pr: { upToDate: true, checksPassed: true } });
    expect(h.started).toEqual([]);
    expect(h.history(1).at(-1)).toBe("merged:merged_directly");
  });

  it("tests it normally when it is behind, its checks are not green, or the queue is busy", () => {
    const h = new PlannerHarness({ directMergeMode: "always", concurrency: 3 });
    h.submit(1, { pr: { upToDate: false } });
    h.submit(2, { pr: { upToDate: true, checksPassed: false } });
    h.submit(3, { pr: { upToDate: true, checksPassed: true } });
    expect(h.runningUnits()).toEqual([[1], [2], [3]]);
  });
});
