import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type {
  Decision,
  ImpactedTargets,
  QueueEvent,
  QueueSnapshot,
} from "../../src/mergequeue/model.js";
import { plan, targetsOverlap } from "../../src/mergequeue/planner/index.js";
import type { QueueConfiguration } from "../../src/mergequeue/settings.js";
import { MINUTE, PlannerHarness, defined, pullRequest } from "../helpers/planner-harness.js";

/** One step of a random history, resolved against the queue as it is when the step runs. */
type Step =
  | { kind: "submit"; priority: number | null; noBatch: boolean; targets: ImpactedTargets }
  | { kind: "resubmit"; pick: number; priority: number | null }
  | { kind: "cancel"; pick: number }
  | { kind: "restart"; pick: number }
  | { kind: "finish"; pick: number; outcome: "passed" | "failed" | "flaky" }
  | { kind: "tick"; minutes: number }
  | { kind: "base_push" }
  | { kind: "pr_push"; pick: number }
  | { kind: "settings"; patch: Partial<QueueConfiguration> }
  | { kind: "duplicate_report" };

const settingsPatch = fc.oneof(
  fc.record({ concurrency: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ batch: fc.boolean(), batchingMinSize: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ pendingFailureDepth: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ canOptimisticallyMerge: fc.boolean() }),
  fc.record({ bisectionConcurrency: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    optimizationMode: fc.constantFrom("off" as const, "bisection_skip_redundant_tests" as const),
  }),
  fc.record({ state: fc.constantFrom("running" as const, "paused" as const, "draining" as const) }),
  fc.record({ testingTimeoutMinutes: fc.constantFrom(0, 30, 90) }),
  fc.record({ speculationThresholdPercent: fc.constantFrom(0, 30, 60, 100) }),
);

const priority = fc.constantFrom(null, 0, 10, 100, 200);

/** Impacted targets of a PR in parallel mode: everything, nothing, or some of three areas. */
const targets: fc.Arbitrary<ImpactedTargets> = fc.oneof(
  { weight: 1, arbitrary: fc.constant("ALL" as const) },
  { weight: 6, arbitrary: fc.subarray(["web", "api", "docs"]) },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("submit" as const),
      priority,
      noBatch: fc.boolean(),
      targets,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("resubmit" as const), pick: fc.nat(), priority }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), pick: fc.nat() }) },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("finish" as const),
      pick: fc.nat(),
      outcome: fc.constantFrom(
        "passed" as const,
        "passed" as const,
        "failed" as const,
        "flaky" as const,
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      minutes: fc.integer({ min: 1, max: 120 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("base_push" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("pr_push" as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("settings" as const), patch: settingsPatch }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("duplicate_report" as const) }) },
);

/** The branch as the test sees it: every head, and which PR (or outside push) produced it. */
class Branch {
  heads: { sha: string; pr: number | null }[] = [{ sha: "base0", pr: null }];
  get head(): string {
    return defined(this.heads.at(-1)).sha;
  }
  /** PRs merged by the queue since `sha`; undefined when an outside push came in between. */
  landedSince(sha: string): number[] | undefined {
    const index = this.heads.findIndex((h) => h.sha === sha);
    if (index < 0) return undefined;
    const after = this.heads.slice(index + 1);
    if (after.some((h) => h.pr === null)) return undefined;
    return after.map((h) => defined(h.pr));
  }
}

interface Checker {
  harness: PlannerHarness;
  branch: Branch;
  passedRuns: Map<string, { baseSha: string; prs: number[]; unit: string[] }>;
  finished: string[];
  prCount: number;
  events: number;
  /** Parallel mode: each PR's impacted targets. */
  targets: Map<number, ImpactedTargets> | null;
}

function newChecker(parallel = false): Checker {
  return {
    harness: new PlannerHarness({
      concurrency: 2,
      testingTimeoutMinutes: 60,
      ...(parallel ? { mode: "parallel" as const } : {}),
    }),
    targets: parallel ? new Map() : null,
    branch: new Branch(),
    passedRuns: new Map(),
    finished: [],
    prCount: 0,
    events: 0,
  };
}

/** Sends an event; checks that a stored-and-reloaded copy decides exactly the same. */
function send(c: Checker, event: QueueEvent): Decision[] {
  const h = c.harness;
  const copy = JSON.parse(JSON.stringify(h.snapshot)) as QueueSnapshot;
  const replay = plan(copy, event, h.now);
  h.autoMerge = false;
  const result = h.send(event);
  expect(replay.decisions).toEqual(result.decisions);
  expect(JSON.parse(JSON.stringify(replay.snapshot))).toEqual(
    JSON.parse(JSON.stringify(result.snapshot)),
  );
  c.events += 1;
  for (const decision of result.decisions) checkDecision(c, decision);
  for (const decision of result.decisions) {
    if (decision.type === "merge") {
      const sha = `m${c.events}-${decision.prNumber}`;
      c.branch.heads.push({ sha, pr: decision.prNumber });
      h.merged.push(decision.prNumber);
      send(c, { type: "merge_finished", entryId: decision.entryId, newHeadSha: sha });
    }
  }
  return result.decisions;
}

function checkDecision(c: Checker, decision: Decision): void {
  const h = c.harness;
  if (decision.type !== "merge") return;
  if (c.targets) {
    checkLaneMerge(c, decision);
    return;
  }
  // Merges happen at the front of the queue, on the head they expect.
  expect(decision.expectedBaseSha).toBe(c.branch.head);
  expect(h.snapshot.order[0]).toBe(decision.entryId);
  if (decision.reason === "merged_directly") return;
  // Nothing merges unless what lands was tested: a passed run whose PRs, after those that
  // landed since its base, start with this one.
  const run = defined(
    c.passedRuns.get(decision.runId ?? ""),
    `passed run for #${decision.prNumber}`,
  );
  const landed = defined(c.branch.landedSince(run.baseSha), `base of run ${decision.runId}`);
  expect(run.prs.slice(0, landed.length + 1)).toEqual([...landed, decision.prNumber]);
  if (!h.snapshot.configuration.canOptimisticallyMerge) {
    // Without optimistic merging, only a run of its own unit clears it.
    expect(run.unit).toContain(decision.entryId);
  }
}

/**
 * Parallel mode: a merge is first in its lane (nothing ahead of it shares a target), and the run
 * that cleared it tested everything of its lane that has landed since the run's base: every PR
 * the run put before it that it depends on has landed, and whatever else landed meanwhile is
 * independent of what the run has still to land.
 */
function checkLaneMerge(c: Checker, decision: Extract<Decision, { type: "merge" }>): void {
  const h = c.harness;
  const lanes = defined(c.targets);
  const targetsOf = (n: number): ImpactedTargets => lanes.get(n) ?? "ALL";
  expect(decision.expectedBaseSha).toBe(c.branch.head);
  const mine = targetsOf(decision.prNumber);
  const position = h.snapshot.order.indexOf(decision.entryId);
  for (const id of h.snapshot.order.slice(0, position)) {
    const ahead = defined(h.snapshot.entries[id]).pr.number;
    expect(
      targetsOverlap(targetsOf(ahead), mine),
      `#${decision.prNumber} merged past #${ahead}`,
    ).toBe(false);
  }
  if (decision.reason === "merged_directly") return;
  const run = defined(
    c.passedRuns.get(decision.runId ?? ""),
    `passed run for #${decision.prNumber}`,
  );
  expect(run.prs).toContain(decision.prNumber);
  const landed = new Set(
    defined(c.branch.landedSince(run.baseSha), `base of run ${decision.runId}`),
  );
  const before = run.prs.slice(0, run.prs.indexOf(decision.prNumber));
  for (const n of before) {
    if (targetsOverlap(targetsOf(n), mine)) {
      expect(
        landed.has(n),
        `#${decision.prNumber} merged before #${n}, which its run put first`,
      ).toBe(true);
    }
  }
  const toLand = run.prs.filter((n) => !landed.has(n));
  for (const n of landed) {
    if (run.prs.includes(n)) continue;
    for (const rest of toLand) {
      expect(
        targetsOverlap(targetsOf(n), targetsOf(rest)),
        `#${n} landed under run ${decision.runId}`,
      ).toBe(false);
    }
  }
}

function running(c: Checker) {
  return Object.values(c.harness.snapshot.runs).filter((r) => r.status === "running");
}

function queued(c: Checker): number[] {
  return Object.values(c.harness.snapshot.entries)
    .map((e) => e.pr.number)
    .sort((a, b) => a - b);
}

function apply(c: Checker, s: Step): void {
  const h = c.harness;
  const actor = { kind: "user" as const, name: "prop" };
  const pickQueued = (pick: number) => {
    const numbers = queued(c);
    return numbers.length === 0 ? undefined : numbers[pick % numbers.length];
  };
  switch (s.kind) {
    case "submit": {
      c.prCount += 1;
      c.targets?.set(c.prCount, s.targets);
      send(c, {
        type: "submit",
        pr: pullRequest(c.prCount),
        priority: s.priority,
        noBatch: s.noBatch,
        actor,
      });
      if (c.targets && h.snapshot.prIndex[String(c.prCount)] !== undefined) {
        send(c, {
          type: "set_impacted_targets",
          prNumber: c.prCount,
          headSha: h.pr(c.prCount).headSha,
          targets: s.targets,
        });
      }
      return;
    }
    case "resubmit": {
      const n = pickQueued(s.pick);
      if (n !== undefined)
        send(c, { type: "submit", pr: h.pr(n), priority: s.priority, noBatch: false, actor });
      return;
    }
    case "cancel":
    case "restart": {
      const n = pickQueued(s.pick);
      if (n !== undefined) send(c, { type: s.kind, prNumber: n, actor });
      return;
    }
    case "finish": {
      const runs = running(c);
      if (runs.length === 0) return;
      const run = defined(runs[s.pick % runs.length]);
      c.finished.push(run.id);
      if (s.outcome === "passed") {
        c.passedRuns.set(run.id, {
          baseSha: run.baseSha,
          prs: run.prs.map((p) => p.number),
          unit: run.unit,
        });
        send(c, { type: "run_finished", runId: run.id, outcome: "passed", failingChecks: [] });
      } else {
        send(c, {
          type: "run_finished",
          runId: run.id,
          outcome: "failed",
          failingChecks: ["test"],
          ...(s.outcome === "flaky" ? { flakyOnly: true } : {}),
        });
      }
      return;
    }
    case "tick":
      h.now += s.minutes * MINUTE;
      send(c, { type: "tick" });
      return;
    case "base_push": {
      const sha = `outside-${c.events}`;
      c.branch.heads.push({ sha, pr: null });
      send(c, { type: "base_pushed", headSha: sha });
      return;
    }
    case "pr_push": {
      const n = pickQueued(s.pick);
      if (n !== undefined)
        send(c, { type: "pr_updated", pr: { ...h.pr(n), headSha: `h${n}-${c.events}` } });
      return;
    }
    case "settings":
      send(c, {
        type: "settings_changed",
        configuration: { ...h.snapshot.configuration, ...s.patch },
      });
      return;
    case "duplicate_report": {
      const runId = c.finished.at(-1);
      if (runId) send(c, { type: "run_finished", runId, outcome: "passed", failingChecks: [] });
      return;
    }
  }
}

/** Every PR ends in exactly one terminal state or is still queued; nothing after the end. */
function checkLifecycles(c: Checker): void {
  const h = c.harness;
  const terminal = new Map<string, number>();
  for (const d of h.log) {
    if (d.type !== "transition") continue;
    expect(terminal.has(d.entryId), `#${d.prNumber} changed after it concluded`).toBe(false);
    if (d.to === "merged" || d.to === "failed" || d.to === "cancelled")
      terminal.set(d.entryId, d.prNumber);
  }
  const entries = new Set(
    h.log.filter((d) => d.type === "transition").map((d) => (d as { entryId: string }).entryId),
  );
  for (const id of entries) {
    expect(
      terminal.has(id) !== (h.snapshot.entries[id] !== undefined),
      `entry ${id} lost or doubled`,
    ).toBe(true);
  }
  // Each PR merged at most once.
  expect(new Set(h.merged).size).toBe(h.merged.length);
}

/** Plays a random history, then lets every run pass until the queue is empty; checks throughout. */
function randomHistory(steps: Step[], parallel: boolean): void {
  const c = newChecker(parallel);
  for (const s of steps) apply(c, s);
  checkLifecycles(c);
  send(c, {
    type: "settings_changed",
    configuration: { ...c.harness.snapshot.configuration, state: "running" },
  });
  for (let i = 0; i < 500 && queued(c).length > 0; i++) {
    if (running(c).length === 0) {
      c.harness.now += 10 * MINUTE;
      send(c, { type: "tick" });
      continue;
    }
    apply(c, { kind: "finish", pick: 0, outcome: "passed" });
  }
  expect(queued(c)).toEqual([]);
  checkLifecycles(c);
}

describe("planner invariants over random histories", () => {
  it("merges only what was tested, in order; every PR ends once; replays decide the same", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        randomHistory(steps, false);
      }),
      { numRuns: Number(process.env.PLANNER_RUNS ?? 300) },
    );
  });

  it("parallel lanes: merges are first in their lane and tested with what landed there", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        randomHistory(steps, true);
      }),
      { numRuns: Number(process.env.PLANNER_RUNS ?? 300) },
    );
  });

  it("with depth and optimistic merging, a flaky failure cleared by a later pass never evicts", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 2, max: 6 }),
        fc.array(fc.record({ pick: fc.nat(), flake: fc.boolean() }), {
          minLength: 5,
          maxLength: 150,
        }),
        (depth, concurrency, finishes) => {
          const c = newChecker();
          const h = c.harness;
          send(c, {
            type: "settings_changed",
            configuration: {
              ...h.snapshot.configuration,
              concurrency,
              pendingFailureDepth: depth,
              canOptimisticallyMerge: true,
            },
          });
          for (let n = 0; n < 12; n++)
            apply(c, { kind: "submit", priority: null, noBatch: false, targets: "ALL" });
          // Entries that a passing run included while they were held for a failure.
          const cleared = new Set<string>();
          for (const f of finishes) {
            const runs = running(c);
            if (runs.length === 0) break;
            const run = defined(runs[f.pick % runs.length]);
            if (!f.flake) {
              for (const pr of run.prs) {
                if (h.snapshot.entries[pr.entryId]?.state === "pending_failure")
                  cleared.add(pr.entryId);
              }
            }
            apply(c, {
              kind: "finish",
              pick: runs.indexOf(run),
              outcome: f.flake ? "failed" : "passed",
            });
          }
          for (const d of h.log) {
            if (d.type === "transition" && d.to === "failed") {
              expect(
                cleared.has(d.entryId),
                `#${d.prNumber} evicted although a later run passed with it`,
              ).toBe(false);
            }
          }
          checkLifecycles(c);
        },
      ),
      { numRuns: Number(process.env.PLANNER_RUNS ?? 300) },
    );
  });
});
