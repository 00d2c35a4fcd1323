/**
 * The simulated git host and CI the planner's decisions act on, carried out as a driver would:
 * test branches built (or refused for a conflict), CI runs timed and failed by the workload's
 * rules, merges made on a branch of numbered commits, each PR's fate recorded, and whatever a
 * correct planner never asks for counted as an anomaly.
 */
import type { Decision, ImpactedTargets, PullRequestInfo, QueueEvent, TestRun } from "../model.js";
import type { SimulationOptions } from "./options.js";
import { Random } from "./random.js";
import type { PrOutcome, SimulationTally } from "./report.js";
import type { SimulatedPr } from "./workload.js";
import { MINUTE_MS as MINUTE } from "../../lib/time.js";

export const TARGET_BRANCH = "main";
const FAILING_CHECK = "test";

interface RunRecord {
  startedAt: number;
  endsAt: number;
  outcome: "passed" | "failed";
  flakyOnly?: boolean;
  /** The test branch did not build: no CI run. */
  conflict?: boolean;
  state: "running" | "finished" | "cancelled";
}

interface PrRecord extends PrOutcome {
  info: PullRequestInfo;
}

type MergeDecision = Extract<Decision, { type: "merge" }>;
type TransitionDecision = Extract<Decision, { type: "transition" }>;

/** A fresh commit id: 40 hex digits, `kind` first (a = PR head, b = branch commit). */
const sha = (kind: "a" | "b", n: number): string => kind + n.toString(16).padStart(39, "0");

function overlaps(a: ImpactedTargets | null, b: ImpactedTargets | null): boolean {
  if (a === null || b === null) return true; // single mode: one lane
  if (Array.isArray(a) && a.length === 0) return false;
  if (Array.isArray(b) && b.length === 0) return false;
  if (a === "ALL" || b === "ALL") return true;
  return b.some((target) => a.includes(target));
}

function prRecord(sim: SimulatedPr): PrRecord {
  return {
    sim,
    info: {
      number: sim.number,
      title: `Simulated change #${sim.number}`,
      author: "sim",
      headSha: sha("a", sim.number),
      headBranch: `sim/pr-${sim.number}`,
      baseBranch: TARGET_BRANCH,
      mergeability: "mergeable",
      upToDate: false,
      checksPassed: true,
      state: "open",
      draft: false,
      ...(sim.stackedOn === null
        ? {}
        : { contains: [{ number: sim.stackedOn, headSha: sha("a", sim.stackedOn) }] }),
    },
    outcome: null,
    concludedAt: null,
    mergedByDecision: false,
    reason: null,
  };
}

/**
 * Each decision carried out as a driver would:
 * - `start_run`: a CI run of `run.prs` merged on `run.baseSha`; it ends after T·(1 + jitter·U)
 *   and fails (check "test") when it contains a bad PR or builds on a broken base, otherwise
 *   with the flake probability; `run_finished` is reported then.
 * - `cancel_run`: the run's pending completion is dropped.
 * - `merge`: done at once; `merge_finished` with a fresh commit is reported at the same time.
 * - `transition`: recorded; `merged`, `failed` and `cancelled` conclude the PR.
 */
export class SimulatedDriver {
  /** Every simulated PR, by number. */
  readonly prs = new Map<number, PrRecord>();
  /** What the driver reports at once (`merge_finished`, a conflict's `run_finished`), in order. */
  readonly followUps: QueueEvent[] = [];
  /** Virtual time, ms. */
  now = 0;
  /** The target branch's head. */
  head: string;

  private readonly ci: Random;
  private readonly runs = new Map<string, RunRecord>();
  /** What each run that may still clear a merge tested: its base and its PRs' numbers. */
  private readonly tested = new Map<string, { baseSha: string; prs: Int32Array }>();
  // The branch: every commit it had, in order, with the PR each merge added.
  private commits = 0;
  private readonly commitIndex: Map<string, number>;
  /** `lineage[k]` is the PR merged to make commit k (k ≥ 1). */
  private readonly lineage: (number | null)[] = [null];
  /** Index of the first commit that contains a bad PR (everything after is broken too). */
  private brokenFrom = Number.POSITIVE_INFINITY;
  /** Commit index at which each PR landed (by merge). */
  private readonly landedAt = new Map<number, number>();
  /** One lane, no priorities: queue order is submission order, and merges must keep it. */
  private readonly singleLaneOrder: boolean;
  /** The lowest PR number not yet concluded (PRs arrive in number order). */
  private lowestOpen = 1;
  private lastAreaAt = 0;

  constructor(
    private readonly o: SimulationOptions,
    generated: readonly SimulatedPr[],
    private readonly tally: SimulationTally,
    /** Schedules the end of a CI run at virtual time `at`. */
    private readonly scheduleRunEnd: (at: number, runId: string) => void,
  ) {
    this.ci = new Random(o.seed, "ci");
    for (const sim of generated) this.prs.set(sim.number, prRecord(sim));
    this.head = sha("b", this.commits);
    this.commitIndex = new Map<string, number>([[this.head, 0]]);
    this.singleLaneOrder = o.priorities === null && o.targetsFanout === null;
  }

  /** Moves the clock to `to`, adding the time since the last move to the queue-size integral. */
  advance(to: number): void {
    this.tally.queuedArea += this.tally.queued * (to - this.lastAreaAt);
    this.lastAreaAt = to;
    this.now = to;
  }

  /** PR `number` arrives at `at`: its `submit`, or null when no such PR was generated. */
  arrive(number: number, at: number): QueueEvent | null {
    const pr = this.prs.get(number);
    if (pr === undefined) return null;
    this.advance(at);
    this.tally.queued += 1;
    this.tally.maxQueued = Math.max(this.tally.maxQueued, this.tally.queued);
    return {
      type: "submit",
      pr: { ...pr.info },
      priority: pr.sim.priority,
      noBatch: false,
      actor: { kind: "user", name: "sim" },
    };
  }

  /** What follows PR `number`'s submit in parallel mode: its impacted targets; null otherwise. */
  impactedTargets(number: number): QueueEvent | null {
    const pr = this.prs.get(number);
    if (pr?.sim.targets == null) return null;
    return {
      type: "set_impacted_targets",
      prNumber: pr.sim.number,
      headSha: pr.info.headSha,
      targets: pr.sim.targets,
    };
  }

  /** A CI run's end at `at`: its `run_finished`, or null when it no longer runs (cancelled). */
  finishRun(runId: string, at: number): QueueEvent | null {
    const run = this.runs.get(runId);
    if (run === undefined || run.state !== "running") return null;
    this.advance(at);
    run.state = "finished";
    if (run.outcome === "failed") this.tested.delete(runId);
    this.tally.ciMs += run.endsAt - run.startedAt;
    return {
      type: "run_finished",
      runId,
      outcome: run.outcome,
      failingChecks: run.outcome === "failed" ? [FAILING_CHECK] : [],
      ...(run.flakyOnly ? { flakyOnly: true } : {}),
    };
  }

  apply(decision: Decision): void {
    switch (decision.type) {
      case "start_run":
        this.tested.set(decision.run.id, {
          baseSha: decision.run.baseSha,
          prs: Int32Array.from(decision.run.prs, (item) => item.number),
        });
        this.startRun(decision.run);
        return;
      case "cancel_run":
        this.cancelRun(decision.runId);
        return;
      case "merge":
        this.merge(decision);
        return;
      case "transition":
        this.transition(decision);
        return;
      case "queue_state":
        return;
    }
  }

  private conclude(pr: PrRecord, outcome: "merged" | "failed" | "cancelled"): void {
    if (pr.outcome !== null) {
      this.tally.anomalies.actedOnConcludedPr += 1;
      return;
    }
    pr.outcome = outcome;
    pr.concludedAt = this.now;
    while (this.prs.get(this.lowestOpen)?.outcome != null) this.lowestOpen += 1;
    this.tally.concluded += 1;
    this.tally.queued -= 1;
    this.tally.lastConclusionAt = this.now;
  }

  /**
   * The test branch: the first PR, in the run's order, that edits the same lines as a PR on the
   * base or ahead of it in the run does not apply (as `git merge-tree` finds it).
   */
  private buildConflict(run: TestRun): QueueEvent | null {
    const base = this.commitIndex.get(run.baseSha) ?? 0;
    const ahead: number[] = [];
    for (const item of run.prs) {
      const partners = this.prs.get(item.number)?.sim.conflictsWith ?? [];
      if (partners.length > 0) {
        const withBase = partners.some((n) => (this.landedAt.get(n) ?? Infinity) <= base);
        const withAhead = partners.filter((n) => ahead.includes(n));
        if (withBase || withAhead.length > 0) {
          return {
            type: "run_finished",
            runId: run.id,
            outcome: "failed",
            failingChecks: [],
            reason: "merge_conflict",
            conflict: {
              prNumber: item.number,
              files: ["shared.ts"],
              conflictsWith: withBase ? [] : withAhead,
            },
          };
        }
      }
      ahead.push(item.number);
    }
    return null;
  }

  private startRun(run: TestRun): void {
    const { o, tally } = this;
    const conflict = this.buildConflict(run);
    if (conflict !== null) {
      // No CI run: the driver reports the conflict at once.
      tally.conflictBuilds += 1;
      this.runs.set(run.id, {
        startedAt: this.now,
        endsAt: this.now,
        outcome: "failed",
        conflict: true,
        state: "finished",
      });
      this.tested.delete(run.id);
      this.followUps.push(conflict);
      return;
    }
    tally.ciRuns += 1;
    if (run.kind === "bisection") tally.bisectionRuns += 1;
    tally.prsInRuns += run.prs.length;
    tally.unitsInRuns += run.unit.length;
    let bad = false;
    let malformed = this.runs.has(run.id);
    for (const item of run.prs) {
      const pr = this.prs.get(item.number);
      if (pr === undefined || pr.info.headSha !== item.headSha) malformed = true;
      else if (pr.sim.bad) bad = true;
    }
    if (malformed) tally.anomalies.malformedRun += 1;
    const base = this.commitIndex.get(run.baseSha);
    if (base === undefined) tally.anomalies.runOnUnknownBase += 1;
    else if (base >= this.brokenFrom) bad = true;
    // Both draws always happen, so that one run's contents never shift another run's luck.
    const flaked = this.ci.chance(o.flakeRate);
    const duration = Math.max(
      1,
      Math.round(o.ciMinutes * MINUTE * (1 + o.ciJitter * this.ci.uniform(-1, 1))),
    );
    // Known flaky tests fail at most once on the same combination: its rerun passes.
    const flakes = flaked && (!o.flakesKnown || run.attempt === 1);
    // Fail-first: a localization run of a bad prefix runs the batch's failed tests first.
    const endsAfter =
      bad && run.failFirst !== undefined
        ? Math.max(1, Math.round(duration * o.failFirstFraction))
        : duration;
    const record: RunRecord = {
      startedAt: this.now,
      endsAt: this.now + endsAfter,
      outcome: bad || flakes ? "failed" : "passed",
      flakyOnly: o.flakesKnown && flakes && !bad,
      state: "running",
    };
    this.runs.set(run.id, record);
    this.scheduleRunEnd(record.endsAt, run.id);
  }

  private cancelRun(runId: string): void {
    const run = this.runs.get(runId);
    if (run?.conflict === true) return;
    if (run === undefined || run.state !== "running") {
      this.tally.anomalies.cancelledUnknownRun += 1;
      return;
    }
    run.state = "cancelled";
    this.tested.delete(runId);
    this.tally.ciRunsCancelled += 1;
    this.tally.ciMs += this.now - run.startedAt;
  }

  /** The run that cleared a merge must contain every same-lane PR merged since its base. */
  private checkTested(runId: string | null, pr: PrRecord): void {
    if (runId === null) return;
    const run = this.tested.get(runId);
    if (run === undefined) return;
    const base = this.commitIndex.get(run.baseSha);
    if (base === undefined) return;
    const numbers = new Set(run.prs);
    if (!numbers.has(pr.sim.number)) {
      this.tally.anomalies.mergedUntestedCombination += 1;
      return;
    }
    for (let k = base + 1; k < this.lineage.length; k++) {
      const number = this.lineage[k];
      if (number === null || number === undefined) continue;
      const earlier = this.prs.get(number);
      if (earlier && overlaps(earlier.sim.targets, pr.sim.targets) && !numbers.has(number)) {
        this.tally.anomalies.mergedUntestedCombination += 1;
        return;
      }
    }
  }

  /** Done at once: a new commit on the branch, and its `merge_finished`. */
  private merge(decision: MergeDecision): void {
    const { tally } = this;
    const pr = this.prs.get(decision.prNumber);
    if (pr === undefined) {
      tally.anomalies.unknownPr += 1;
      return;
    }
    if (pr.outcome !== null || pr.mergedByDecision) tally.anomalies.actedOnConcludedPr += 1;
    if (decision.expectedBaseSha !== this.head) tally.anomalies.mergeBaseMoved += 1;
    if (this.singleLaneOrder && this.lowestOpen < pr.sim.number) {
      tally.anomalies.mergedOutOfOrder += 1;
    }
    this.checkTested(decision.runId, pr);
    pr.mergedByDecision = true;
    tally.merges += 1;
    if (pr.sim.bad) {
      tally.badMerged += 1;
      this.brokenFrom = Math.min(this.brokenFrom, this.commits + 1);
    }
    this.commits += 1;
    this.head = sha("b", this.commits);
    this.commitIndex.set(this.head, this.commits);
    this.landedAt.set(pr.sim.number, this.commits);
    this.lineage.push(pr.sim.number);
    this.followUps.push({
      type: "merge_finished",
      entryId: decision.entryId,
      newHeadSha: this.head,
    });
  }

  /** Recorded; `merged`, `failed` and `cancelled` conclude the PR. */
  private transition(decision: TransitionDecision): void {
    const { tally } = this;
    const key = `${decision.to}:${decision.reason}`;
    tally.transitions[key] = (tally.transitions[key] ?? 0) + 1;
    const pr = this.prs.get(decision.prNumber);
    if (pr === undefined) {
      tally.anomalies.unknownPr += 1;
      return;
    }
    if (decision.to !== "merged" && decision.to !== "failed" && decision.to !== "cancelled") {
      return;
    }
    pr.reason = decision.reason;
    if (decision.reason === "merged_through_stack") {
      // Its commits landed inside a PR stacked on it, which must have merged.
      const child = [...this.prs.values()].find(
        (c) => c.sim.stackedOn === pr.sim.number && c.mergedByDecision,
      );
      if (child === undefined) tally.anomalies.mergedThroughNothing += 1;
      pr.mergedByDecision = true;
    }
    if (
      decision.reason === "merge_conflict" &&
      this.singleLaneOrder &&
      pr.sim.conflictsWith.every((n) => n > pr.sim.number)
    ) {
      tally.anomalies.conflictWithLaterEvicted += 1;
    }
    this.conclude(pr, decision.to);
  }
}
