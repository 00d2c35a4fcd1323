/**
 * The merge-queue simulator: the planner on a virtual clock against a simulated git host and CI,
 * a discrete-event loop (arrivals, CI runs finishing, the planner's wake-ups) in one heap ordered
 * by virtual time. No clock, no Math.random: the same options give the same report, to the byte.
 * How each decision is carried out: `driver.ts`.
 */
import type { PlanResult, QueueEvent, QueueSnapshot } from "../model.js";
import { initialConfiguration, type QueueConfiguration } from "../settings.js";
import { SimulatedDriver, TARGET_BRANCH } from "./driver.js";
import { EventHeap } from "./heap.js";
import type { SimulationOptions } from "./options.js";
import {
  buildReport,
  newTally,
  type SimulationReport,
  type SimulationTally,
  type StopReason,
} from "./report.js";
import { generatePullRequests, type SimulatedPr } from "./workload.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../../lib/time.js";

/** Events handed to the planner at one virtual instant before the run counts as a livelock. */
const MAX_EVENTS_AT_ONE_INSTANT = 1_000_000;

/** The planner's two entry points (src/mergequeue/planner/index.ts). */
export interface Planner {
  initialSnapshot(input: {
    queueId: string;
    targetBranch: string;
    configuration: QueueConfiguration;
    headSha: string;
  }): QueueSnapshot;
  plan(snapshot: QueueSnapshot, event: QueueEvent, now: number): PlanResult;
}

export interface SimulationProgress {
  concluded: number;
  prs: number;
  virtualHours: number;
  events: number;
}

export interface SimulationHooks {
  /** Called every `progressEvery` events (default 2000). */
  onProgress?: (progress: SimulationProgress) => void;
  progressEvery?: number;
  /**
   * Called after every `plan` call with its wall time and the process's CPU time during it
   * (which other processes on the machine do not inflate), and how many PRs were queued.
   */
  onPlanTimed?: (
    event: QueueEvent["type"],
    time: { wallMs: number; cpuMs: number },
    queued: number,
  ) => void;
  /** Also send a `tick` every so many virtual minutes, whether the planner asked or not. */
  extraTickMinutes?: number;
  /**
   * Asked every 1000 events: true stops the simulation (`stopReason: "aborted"`), e.g. a
   * benchmark's wall-time budget. Leave it out wherever the report must be deterministic.
   */
  shouldStop?: () => boolean;
}

export interface SimulationResult {
  report: SimulationReport;
  /** Wall time of the run (not part of the report, which must be deterministic). */
  wallSeconds: number;
}

/** The queue configuration the options describe. */
export function simulationConfiguration(o: SimulationOptions): QueueConfiguration {
  return {
    ...initialConfiguration({
      mode: o.targetsFanout === null ? "single" : "parallel",
      concurrency: o.concurrency,
    }),
    bisectionConcurrency: o.bisectionConcurrency,
    testingTimeoutMinutes: o.testingTimeoutMinutes,
    pendingFailureDepth: o.pendingFailureDepth,
    canOptimisticallyMerge: o.optimistic,
    batch: o.batch,
    batchingMaxWaitTimeMinutes: o.batchWaitMinutes,
    batchingMinSize: o.batchSize,
    optimizationMode: o.optimizationMode,
    speculationThresholdPercent: o.speculationThresholdPercent,
  };
}

type Scheduled =
  | { at: number; kind: "arrival"; pr: number }
  | { at: number; kind: "run"; runId: string }
  | { at: number; kind: "wake"; generation: number }
  | { at: number; kind: "extra_tick" };

/** The event loop: the planner fed from one heap of timed events, its decisions carried out. */
class EventLoop {
  /** The simulated host and CI, on the loop's virtual clock. */
  readonly driver: SimulatedDriver;
  private readonly heap = new EventHeap<Scheduled>();
  private snapshot: QueueSnapshot;
  private readonly extraTickMs: number;
  private wakeGeneration = 0;
  private wakeAt: number | null = null;
  private readonly progressEvery: number;

  constructor(
    private readonly o: SimulationOptions,
    private readonly planner: Planner,
    private readonly hooks: SimulationHooks,
    generated: readonly SimulatedPr[],
    private readonly tally: SimulationTally,
  ) {
    const configuration = simulationConfiguration(o);
    this.driver = new SimulatedDriver(o, generated, tally, (at, runId) => {
      this.heap.push({ at, kind: "run", runId });
    });
    this.snapshot = planner.initialSnapshot({
      queueId: "sim",
      targetBranch: TARGET_BRANCH,
      configuration,
      headSha: this.driver.head,
    });
    for (const sim of generated) {
      this.heap.push({ at: sim.arrivalAt, kind: "arrival", pr: sim.number });
    }
    this.extraTickMs = (hooks.extraTickMinutes ?? 0) * MINUTE;
    if (this.extraTickMs > 0) this.heap.push({ at: this.extraTickMs, kind: "extra_tick" });
    this.progressEvery = Math.max(1, hooks.progressEvery ?? 2000);
  }

  /** Runs until every PR concluded or something stops it; says what did. */
  run(): StopReason {
    const { o, driver, tally, hooks } = this;
    const maxMs = o.maxHours * HOUR;
    let stopReason: StopReason | null = null;
    let iterations = 0;
    let instant = -1;
    let eventsAtInstant = 0;
    while (tally.concluded < o.prs) {
      const next = this.heap.pop();
      if (next === undefined) {
        stopReason = "stalled";
        break;
      }
      if (next.at > maxMs) {
        driver.advance(maxMs);
        stopReason = "time_cap";
        break;
      }
      const event = this.eventFor(next);
      if (event === null) continue;
      if (driver.now !== instant) {
        instant = driver.now;
        eventsAtInstant = 0;
      }
      eventsAtInstant += 1;
      if (eventsAtInstant > MAX_EVENTS_AT_ONE_INSTANT) {
        stopReason = "livelock";
        break;
      }
      iterations += 1;
      if (iterations % 1000 === 0 && hooks.shouldStop?.() === true) {
        stopReason = "aborted";
        break;
      }
      this.deliver(event);
      if (next.kind === "arrival") {
        const targets = driver.impactedTargets(next.pr);
        if (targets !== null) this.deliver(targets);
      }
      this.drainFollowUps();
    }
    stopReason ??= "completed";
    if (stopReason === "completed") driver.advance(tally.lastConclusionAt);
    this.reportProgress();
    return stopReason;
  }

  /** The event a scheduled item stands for, the clock moved to it; null when it lapsed. */
  private eventFor(next: Scheduled): QueueEvent | null {
    switch (next.kind) {
      case "arrival":
        return this.driver.arrive(next.pr, next.at);
      case "run":
        return this.driver.finishRun(next.runId, next.at);
      case "wake":
        if (next.generation !== this.wakeGeneration) return null; // replaced by a later wakeAt
        this.driver.advance(next.at);
        this.wakeAt = null;
        return { type: "tick" };
      case "extra_tick":
        this.driver.advance(next.at);
        this.heap.push({ at: next.at + this.extraTickMs, kind: "extra_tick" });
        return { type: "tick" };
    }
  }

  private setWake(at: number | null): void {
    if (at === null) {
      if (this.wakeAt !== null) this.wakeGeneration += 1;
      this.wakeAt = null;
      return;
    }
    const now = this.driver.now;
    if (at <= now) this.tally.anomalies.wakeNotInFuture += 1;
    const when = Math.max(at, now);
    if (when === this.wakeAt) return;
    this.wakeGeneration += 1;
    this.wakeAt = when;
    this.heap.push({ at: when, kind: "wake", generation: this.wakeGeneration });
  }

  private deliver(event: QueueEvent): void {
    const { tally, planner } = this;
    const now = this.driver.now;
    tally.events += 1;
    tally.eventsByType[event.type] = (tally.eventsByType[event.type] ?? 0) + 1;
    let result: PlanResult;
    const timed = this.hooks.onPlanTimed;
    if (timed) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      result = planner.plan(this.snapshot, event, now);
      const wallMs = performance.now() - started;
      const used = process.cpuUsage(cpu);
      timed(event.type, { wallMs, cpuMs: (used.user + used.system) / 1000 }, tally.queued);
    } else {
      result = planner.plan(this.snapshot, event, now);
    }
    this.snapshot = result.snapshot;
    if (result.rejection !== null) tally.anomalies.rejectedEvents += 1;
    for (const decision of result.decisions) this.driver.apply(decision);
    this.setWake(result.wakeAt);
    if (tally.events % this.progressEvery === 0) this.reportProgress();
  }

  private drainFollowUps(): void {
    const followUps = this.driver.followUps;
    for (let event = followUps.shift(); event !== undefined; event = followUps.shift()) {
      this.deliver(event);
    }
  }

  private reportProgress(): void {
    const { concluded, events } = this.tally;
    this.hooks.onProgress?.({
      concluded,
      prs: this.o.prs,
      virtualHours: this.driver.now / HOUR,
      events,
    });
  }
}

export function simulate(
  options: SimulationOptions,
  planner: Planner,
  hooks: SimulationHooks = {},
): SimulationResult {
  const wallStarted = performance.now();
  const generated = generatePullRequests(options);
  const tally = newTally();
  const loop = new EventLoop(options, planner, hooks, generated, tally);
  const stopReason = loop.run();
  const { driver } = loop;
  const report = buildReport(
    options,
    generated,
    driver.prs.values(),
    tally,
    stopReason,
    driver.now,
  );
  return { report, wallSeconds: (performance.now() - wallStarted) / 1000 };
}
