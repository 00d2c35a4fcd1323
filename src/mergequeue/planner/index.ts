/**
 * The merge-queue planner: a pure function from a queue's state and one event to the decisions to
 * carry out (start or cancel runs, merge, change states), with Trunk's semantics (background
 * §merge-queue-2). No I/O, clock or randomness: the same input gives the same result. `plan`
 * changes the snapshot it is given and returns it.
 */
import type { PlanResult, QueueEvent, QueueSnapshot } from "../model.js";
import type { QueueConfiguration } from "../settings.js";
import { SNAPSHOT_VERSION } from "../snapshot.js";
import { NO_VERDICTS } from "../speculation.js";
import { startPlanning, type PlanLimits } from "./state.js";
import { apply } from "./events.js";
import { settle } from "./settling.js";
import { wakeAt } from "./housekeeping.js";

export { targetsOverlap, type PlanLimits } from "./state.js";

export function initialSnapshot(input: {
  queueId: string;
  targetBranch: string;
  configuration: QueueConfiguration;
  headSha: string;
}): QueueSnapshot {
  return {
    version: SNAPSHOT_VERSION,
    queueId: input.queueId,
    targetBranch: input.targetBranch,
    configuration: input.configuration,
    base: { headSha: input.headSha, merges: [], anchorSha: input.headSha },
    entries: {},
    prIndex: {},
    notReady: [],
    uploadedTargets: {},
    order: [],
    runs: {},
    bisections: {},
    merging: null,
    nextSeq: 1,
    nextId: 1,
    verdicts: { ...NO_VERDICTS },
    landedThrough: {},
  };
}

/** `limits`: what the server bounds whatever the queue's settings (none by default). */
export function plan(
  snapshot: QueueSnapshot,
  event: QueueEvent,
  now: number,
  limits: PlanLimits = {},
): PlanResult {
  const p = startPlanning(snapshot, now, limits);
  apply(p, event);
  if (!p.rejection) settle(p);
  return {
    snapshot,
    decisions: p.decisions,
    wakeAt: wakeAt(p),
    concluded: p.concluded,
    rejection: p.rejection,
  };
}
