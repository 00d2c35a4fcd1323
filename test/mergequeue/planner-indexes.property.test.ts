/**
 * The planner keeps derived indexes across `plan` calls (stacked PRs by the PR they contain, the
 * position of each head of the lineage). They must never change a decision: over random histories
 * with stacked PRs, pushes that change what a PR contains, failures, bisection and merges, a
 * snapshot planned on with warm indexes decides exactly as a stored-and-reloaded copy of it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { plan } from "../../src/mergequeue/planner/index.js";
import type { PullRequestInfo, QueueEvent, QueueSnapshot } from "../../src/mergequeue/model.js";
import type { QueueConfiguration } from "../../src/mergequeue/settings.js";
import { MINUTE, PlannerHarness, pullRequest } from "../helpers/planner-harness.js";

type Step =
  | { kind: "submit"; stackOn: number | null }
  | { kind: "push"; pick: number; restack: number | null; keepHead: boolean }
  | { kind: "finish"; pick: number; outcome: "passed" | "failed" | "flaky" }
  | { kind: "tick"; minutes: number }
  | { kind: "cancel"; pick: number; resubmit: boolean }
  | { kind: "base_push" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("submit" as const),
      stackOn: fc.option(fc.nat(), { nil: null }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("push" as const),
      pick: fc.nat(),
      restack: fc.option(fc.nat(), { nil: null }),
      keepHead: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("finish" as const),
      pick: fc.nat(),
      outcome: fc.constantFrom("passed" as const, "passed" as const, "failed" as const, "flaky"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      minutes: fc.integer({ min: 1, max: 90 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("cancel" as const),
      pick: fc.nat(),
      resubmit: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "base_push" as const }) },
);

const settings = fc.record({
  concurrency: fc.integer({ min: 1, max: 6 }),
  batch: fc.boolean(),
  batchingMinSize: fc.integer({ min: 1, max: 4 }),
  pendingFailureDepth: fc.integer({ min: 0, max: 2 }),
  canOptimisticallyMerge: fc.boolean(),
  bisectionConcurrency: fc.integer({ min: 1, max: 3 }),
  optimizationMode: fc.constantFrom("off" as const, "bisection_skip_redundant_tests" as const),
});

function history(config: Partial<QueueConfiguration>, steps: Step[]): void {
  const h = new PlannerHarness({ testingTimeoutMinutes: 60, ...config });
  h.autoMerge = false;
  let pushes = 0;
  let prs = 0;
  let decisions = 0;
  /** Every PR submitted, with its current record (stacked PRs contain their parent's head). */
  const records = new Map<number, PullRequestInfo>();
  const send = (event: QueueEvent): void => {
    const copy = JSON.parse(JSON.stringify(h.snapshot)) as QueueSnapshot;
    const replay = plan(copy, event, h.now);
    const result = h.send(event);
    expect(replay.decisions).toEqual(result.decisions);
    expect(JSON.parse(JSON.stringify(replay.snapshot))).toEqual(
      JSON.parse(JSON.stringify(result.snapshot)),
    );
    decisions += result.decisions.length;
    for (const decision of result.decisions) {
      if (decision.type === "merge") {
        send({
          type: "merge_finished",
          entryId: decision.entryId,
          newHeadSha: `m${decisions}-${decision.prNumber}`,
        });
      }
    }
  };
  const queued = () =>
    Object.values(h.snapshot.entries)
      .map((e) => e.pr.number)
      .sort((a, b) => a - b);
  /** What a PR stacked on a queued PR (else on any PR submitted) contains. */
  const contains = (parent: number | null) => {
    if (parent === null || prs === 0) return undefined;
    const candidates = queued();
    const record = records.get(
      candidates.length > 0 ? (candidates[parent % candidates.length] ?? 1) : (parent % prs) + 1,
    );
    if (!record) return undefined;
    return [...(record.contains ?? []), { number: record.number, headSha: record.headSha }];
  };
  for (const s of steps) {
    switch (s.kind) {
      case "submit": {
        const stacked = contains(s.stackOn);
        prs += 1;
        const pr = pullRequest(prs, stacked ? { contains: stacked } : {});
        records.set(prs, pr);
        send({
          type: "submit",
          pr,
          priority: null,
          noBatch: false,
          actor: { kind: "user", name: "p" },
        });
        break;
      }
      case "push": {
        const numbers = queued();
        const n = numbers[s.pick % Math.max(1, numbers.length)];
        const before = n === undefined ? undefined : records.get(n);
        if (!before) break;
        pushes += 1;
        // A new head (the PR leaves the queue), or the same head restacked (it stays).
        const restacked = contains(s.restack)?.filter((c) => c.number !== before.number) ?? [];
        const pr: PullRequestInfo = {
          ...before,
          headSha: s.keepHead ? before.headSha : `h${before.number}-p${pushes}`,
          contains: restacked,
        };
        records.set(before.number, pr);
        send({ type: "pr_updated", pr });
        break;
      }
      case "finish": {
        const runs = Object.values(h.snapshot.runs).filter((r) => r.status === "running");
        const run = runs[s.pick % Math.max(1, runs.length)];
        if (!run) break;
        send({
          type: "run_finished",
          runId: run.id,
          outcome: s.outcome === "passed" ? "passed" : "failed",
          failingChecks: s.outcome === "passed" ? [] : ["test"],
          ...(s.outcome === "flaky" ? { flakyOnly: true } : {}),
        });
        break;
      }
      case "tick":
        h.now += s.minutes * MINUTE;
        send({ type: "tick" });
        break;
      case "cancel": {
        const numbers = queued();
        const n = numbers[s.pick % Math.max(1, numbers.length)];
        if (n === undefined || h.snapshot.merging !== null) break;
        send({ type: "cancel", prNumber: n, actor: { kind: "user", name: "p" } });
        // Submitted again: it finds its place among the PRs stacked on it.
        const record = records.get(n);
        if (s.resubmit && record) {
          send({
            type: "submit",
            pr: record,
            priority: null,
            noBatch: false,
            actor: { kind: "user", name: "p" },
          });
        }
        break;
      }
      case "base_push":
        send({ type: "base_pushed", headSha: `outside-${decisions}-${h.now}` });
        break;
    }
  }
}

describe("the planner's derived indexes", () => {
  it("never change a decision: warm snapshots decide as reloaded copies", () => {
    fc.assert(
      fc.property(
        settings,
        fc.array(step, { minLength: 1, maxLength: 200, size: "max" }),
        (config, steps) => {
          history(config, steps);
        },
      ),
      { numRuns: Number(process.env.PLANNER_RUNS ?? 60) },
    );
  });

  it("follows a PR restacked without a new head, both ways", () => {
    const h = new PlannerHarness({ testingTimeoutMinutes: 60, concurrency: 1 });
    h.send({
      type: "settings_changed",
      configuration: { ...h.snapshot.configuration, state: "paused" },
    });
    const numbers = () => h.snapshot.order.map((id) => h.snapshot.entries[id]?.pr.number);
    const resubmit1 = () => {
      h.send({ type: "cancel", prNumber: 1, actor: { kind: "user", name: "p" } });
      h.submit(1);
    };
    h.submit(1);
    h.submit(2);
    // #2 now contains #1's head: a resubmitted #1 goes ahead of it, not to the back.
    h.send({
      type: "pr_updated",
      pr: pullRequest(2, { contains: [{ number: 1, headSha: "h1" }] }),
    });
    resubmit1();
    expect(numbers()).toEqual([1, 2]);
    // And no longer: back to submission order.
    h.send({ type: "pr_updated", pr: pullRequest(2, { contains: [] }) });
    resubmit1();
    expect(numbers()).toEqual([2, 1]);
  });

  it("keeps a run planned on a head inside the lineage while older runs hold its start", () => {
    const h = new PlannerHarness({ testingTimeoutMinutes: 60, concurrency: 4 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    const runOf = (n: number) => {
      const id = h.snapshot.prIndex[String(n)];
      return h.snapshot.entries[id ?? ""]?.runId ?? "";
    };
    const pass = (n: number) =>
      h.send({ type: "run_finished", runId: runOf(n), outcome: "passed", failingChecks: [] });
    pass(1);
    // #5 is planned on the head #1 made; #4's run still holds the lineage back to the start.
    h.submit(5);
    const fifth = runOf(5);
    expect(h.snapshot.runs[fifth]?.baseSha).toBe(h.snapshot.base.headSha);
    pass(2);
    pass(3);
    expect(h.snapshot.base.merges.length).toBeGreaterThanOrEqual(3);
    pass(4);
    pass(5);
    expect(h.merged).toEqual([1, 2, 3, 4, 5]);
    expect(h.cancelled.has(fifth)).toBe(false);
  });
});
