import { openPullRequestInfo } from "../../src/mergequeue/simulator/memory-host.js";
import { initialSnapshot, plan, type PlanLimits } from "../../src/mergequeue/planner/index.js";
import type {
  Decision,
  PlanResult,
  PrState,
  PullRequestInfo,
  QueueEvent,
  QueueSnapshot,
  TestRun,
} from "../../src/mergequeue/model.js";
import { initialConfiguration, type QueueConfiguration } from "../../src/mergequeue/settings.js";

export const MINUTE = 60_000;

/** The value, which a test has just established exists. */
export function defined<T>(value: T | undefined | null, what = "value"): T {
  if (value === undefined || value === null) throw new Error(`expected a ${what}`);
  return value;
}

export function pullRequest(
  number: number,
  overrides: Partial<PullRequestInfo> = {},
): PullRequestInfo {
  return openPullRequestInfo(number, { headSha: `h${number}`, ...overrides });
}

/**
 * Drives the pure planner the way the driver does, on a virtual clock: merges complete at once
 * (each producing a new head), every decision is kept for assertions.
 */
export class PlannerHarness {
  snapshot: QueueSnapshot;
  now = 0;
  readonly log: Decision[] = [];
  readonly states = new Map<number, PrState>();
  readonly merged: number[] = [];
  readonly started: TestRun[] = [];
  readonly cancelled = new Set<string>();
  last: PlanResult | undefined;
  autoMerge = true;
  private mergeCount = 0;

  /** `limits`: what the server bounds, as `MergeQueueEngine` passes them to `plan`. */
  constructor(
    settings: Partial<QueueConfiguration> = {},
    private readonly limits: PlanLimits = {},
  ) {
    this.snapshot = initialSnapshot({
      queueId: "q",
      targetBranch: "main",
      configuration: { ...initialConfiguration({}), ...settings },
      headSha: "base0",
    });
  }

  send(event: QueueEvent): PlanResult {
    const result = plan(this.snapshot, event, this.now, this.limits);
    this.snapshot = result.snapshot;
    this.last = result;
    this.log.push(...result.decisions);
    const merges: Extract<Decision, { type: "merge" }>[] = [];
    for (const decision of result.decisions) {
      if (decision.type === "transition") this.states.set(decision.prNumber, decision.to);
      if (decision.type === "start_run") this.started.push(decision.run);
      if (decision.type === "cancel_run") this.cancelled.add(decision.runId);
      if (decision.type === "merge") merges.push(decision);
    }
    if (this.autoMerge) {
      for (const merge of merges) {
        this.merged.push(merge.prNumber);
        this.send({
          type: "merge_finished",
          entryId: merge.entryId,
          newHeadSha: `m${++this.mergeCount}`,
        });
      }
    }
    return result;
  }

  submit(
    number: number,
    options: { priority?: number; noBatch?: boolean; pr?: Partial<PullRequestInfo> } = {},
  ) {
    return this.send({
      type: "submit",
      pr: pullRequest(number, options.pr),
      priority: options.priority ?? null,
      noBatch: options.noBatch ?? false,
      actor: { kind: "user", name: "dev" },
    });
  }

  at(minutes: number): this {
    this.now = minutes * MINUTE;
    return this;
  }

  tick(minutes: number) {
    this.at(minutes);
    return this.send({ type: "tick" });
  }

  /** The running run whose unit is exactly these PRs. */
  run(...unit: number[]): TestRun {
    const run = Object.values(this.snapshot.runs).find(
      (r) =>
        r.status === "running" &&
        r.unit.length === unit.length &&
        r.unit.every((id, i) => this.snapshot.entries[id]?.pr.number === unit[i]),
    );
    if (!run) {
      const running = this.runningUnits()
        .map((u) => `[${u.join(",")}]`)
        .join(" ");
      throw new Error(`no running run for [${unit.join(",")}]; running: ${running}`);
    }
    return run;
  }

  prsOf(run: TestRun): number[] {
    return run.prs.map((pr) => pr.number);
  }

  runningUnits(): number[][] {
    return Object.values(this.snapshot.runs)
      .filter((r) => r.status === "running")
      .map((r) => r.prs.filter((p) => r.unit.includes(p.entryId)).map((p) => p.number));
  }

  pass(...unit: number[]) {
    return this.send({
      type: "run_finished",
      runId: this.run(...unit).id,
      outcome: "passed",
      failingChecks: [],
    });
  }

  fail(unit: number[], options: { flakyOnly?: boolean; checks?: string[] } = {}) {
    return this.send({
      type: "run_finished",
      runId: this.run(...unit).id,
      outcome: "failed",
      failingChecks: options.checks ?? ["test"],
      ...(options.flakyOnly ? { flakyOnly: true } : {}),
    });
  }

  /** The test branch of the run of `unit` could not be built: `prNumber` did not apply. */
  conflict(unit: number[], prNumber: number, conflictsWith?: number[], files = ["src/shared.ts"]) {
    return this.send({
      type: "run_finished",
      runId: this.run(...unit).id,
      outcome: "failed",
      failingChecks: [],
      reason: "merge_conflict",
      conflict: { prNumber, files, ...(conflictsWith ? { conflictsWith } : {}) },
    });
  }

  /** The detail of a PR's last transition. */
  lastDetail(number: number): string | null {
    const last = this.log.findLast(
      (d): d is Extract<Decision, { type: "transition" }> =>
        d.type === "transition" && d.prNumber === number,
    );
    return last?.detail ?? null;
  }

  state(number: number): PrState | undefined {
    return this.states.get(number);
  }

  /** Transitions of one PR, as `to:reason`. */
  history(number: number): string[] {
    return this.log
      .filter(
        (d): d is Extract<Decision, { type: "transition" }> =>
          d.type === "transition" && d.prNumber === number,
      )
      .map((d) => `${d.to}:${d.reason}`);
  }

  /** The pull request of a queued entry, by number. */
  pr(number: number): PullRequestInfo {
    const entry = Object.values(this.snapshot.entries).find((e) => e.pr.number === number);
    if (!entry) throw new Error(`#${number} is not queued`);
    return entry.pr;
  }

  queueOrder(): number[] {
    return this.snapshot.order.map((id) => this.snapshot.entries[id]?.pr.number ?? -1);
  }
}
