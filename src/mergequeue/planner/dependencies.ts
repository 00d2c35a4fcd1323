/**
 * Dependencies in the queue order: what an entry is tested on top of. In single mode everything
 * ahead; in parallel mode the entries ahead whose impacted targets overlap, directly or through
 * each other.
 */
import type { ImpactedTargets } from "../model.js";
import {
  type PlanningState,
  at,
  config,
  entryOf,
  inFlight,
  targetsOf,
  targetsOverlap,
} from "./state.js";

/**
 * The entries ahead of `index` in the order that an entry with `targets` depends on, directly
 * or through each other (a dependency's own dependencies are part of its tested base).
 */
export function dependenciesAt(
  p: PlanningState,
  index: number,
  targets: ImpactedTargets,
): string[] {
  const order = p.s.order;
  if (config(p).mode !== "parallel") return order.slice(0, index);
  const chosen = new Set<string>();
  let frontier: ImpactedTargets[] = [targets];
  // Walk backwards once: an earlier entry is needed if it overlaps anything already needed.
  for (let i = index - 1; i >= 0; i--) {
    const id = at(order, i);
    const other = targetsOf(p, entryOf(p, id));
    if (frontier.some((t) => targetsOverlap(t, other))) {
      chosen.add(id);
      frontier = [...frontier, other];
    }
  }
  return order.slice(0, index).filter((id) => chosen.has(id));
}

/** The entries in flight that a run of `unitIds` goes on top of, in queue order. */
export function inFlightAhead(p: PlanningState, unitIds: readonly string[]): string[] {
  const order = p.s.order;
  const unitSet = new Set(unitIds);
  // A lane's batch need not be consecutive: up to its last entry.
  const lastIndex = Math.max(...unitIds.map((id) => order.indexOf(id)));
  const ahead = new Set<string>();
  for (const id of unitIds) {
    const entry = entryOf(p, id);
    for (const dep of dependenciesAt(p, order.indexOf(id), targetsOf(p, entry))) {
      if (!unitSet.has(dep) && inFlight(entryOf(p, dep))) ahead.add(dep);
    }
  }
  return order.slice(0, lastIndex + 1).filter((id) => ahead.has(id));
}
