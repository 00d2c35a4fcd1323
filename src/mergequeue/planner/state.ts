/**
 * The state one `plan` call works on: the snapshot it changes in place, the event's time and what
 * the call produces. The planner's modules are plain functions over it (the parameter `p`); the
 * lookups they all share are here.
 */
import type { Decision, Entry, ImpactedTargets, PlanResult, QueueSnapshot } from "../model.js";
import type { QueueConfiguration } from "../settings.js";

export interface PlanningState {
  /** The queue's snapshot, changed in place. */
  readonly s: QueueSnapshot;
  /** The event's time: the planner reads no clock. */
  readonly now: number;
  readonly decisions: Decision[];
  readonly concluded: Entry[];
  rejection: PlanResult["rejection"];
  /** Earliest time a batch that is filling up must start anyway. */
  batchDeadline: number | null;
  readonly limits: PlanLimits;
}

/** What the server running the queue bounds, whatever the queue's own settings say. */
export interface PlanLimits {
  /** The longest a batch waits to fill (MAINLINE_BATCH_WAIT_LIMIT_SECONDS); unset: no bound. */
  batchWaitMs?: number | undefined;
}

/** The state of a `plan` call on `snapshot` for an event at `now`. */
export function startPlanning(
  snapshot: QueueSnapshot,
  now: number,
  limits: PlanLimits = {},
): PlanningState {
  return {
    s: snapshot,
    now,
    decisions: [],
    concluded: [],
    rejection: null,
    batchDeadline: null,
    limits,
  };
}

/** The configuration in force (an event or the end of a mode switch replaces it). */
export function config(p: PlanningState): QueueConfiguration {
  return p.s.configuration;
}

/** An entry the caller knows is queued. */
export function entryOf(p: PlanningState, id: string): Entry {
  const entry = p.s.entries[id];
  if (!entry) throw new Error(`planner: unknown entry ${id}`);
  return entry;
}

/** The queued entry of a pull request, if it is queued. */
export function byNumber(p: PlanningState, prNumber: number): Entry | undefined {
  const id = p.s.prIndex[String(prNumber)];
  return id === undefined ? undefined : p.s.entries[id];
}

/** Two target sets overlap: `ALL` overlaps everything but `[]`, `[]` overlaps nothing. */
export function targetsOverlap(a: ImpactedTargets, b: ImpactedTargets): boolean {
  if (Array.isArray(a) && a.length === 0) return false;
  if (Array.isArray(b) && b.length === 0) return false;
  if (a === "ALL" || b === "ALL") return true;
  const set = new Set(a);
  return b.some((target) => set.has(target));
}

/** Impacted targets of an entry; in single mode everything depends on everything. */
export function targetsOf(p: PlanningState, entry: Entry): ImpactedTargets {
  if (config(p).mode !== "parallel") return "ALL";
  return entry.impactedTargets ?? "ALL";
}

/**
 * Entries whose changes a new run includes: those in flight, not those under localization unless
 * the queue presumes them good.
 */
export function inFlight(entry: Entry): boolean {
  return (
    (entry.bisection === null || entry.bisection.presumedGood === true) &&
    (entry.state === "testing" ||
      entry.state === "tests_passed" ||
      entry.state === "pending_failure")
  );
}

/** The element at `index`, which the caller knows exists. */
export function at<T>(list: readonly T[], index: number): T {
  const value = list[index];
  if (value === undefined) throw new Error(`planner: no element at ${index}`);
  return value;
}
