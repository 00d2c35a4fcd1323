/**
 * The simulated pull requests: when each arrives, whether it is bad, its priority and its
 * impacted targets. Drawn up front from the seed, each property from its own stream.
 */
import type { ImpactedTargets } from "../model.js";
import { Random } from "./random.js";
import type { Arrivals, Distribution, FanOut, SimulationOptions } from "./options.js";
import { HOUR_MS as MS_PER_HOUR } from "../../lib/time.js";

export interface SimulatedPr {
  number: number;
  /** Virtual time of submission, ms. */
  arrivalAt: number;
  /** Every run that contains a bad PR fails. */
  bad: boolean;
  /** null: the default priority. */
  priority: number | null;
  /** null: single mode (no targets uploaded). */
  targets: ImpactedTargets | null;
  /**
   * PRs it edits the same lines as (symmetric): whichever comes later in the queue does not
   * apply onto the other. A PR with a partner is not "good": it conflicts with a PR ahead of it.
   */
  conflictsWith: number[];
  /** The PR it is stacked on (its branch contains that PR's commits), or null. */
  stackedOn: number | null;
}

/** How far back a conflict partner or a stack parent is drawn from. */
const NEIGHBOURHOOD = 4;

const NATO = [
  "alpha",
  "bravo",
  "charlie",
  "delta",
  "echo",
  "foxtrot",
  "golf",
  "hotel",
  "india",
  "juliett",
  "kilo",
  "lima",
  "mike",
  "november",
  "oscar",
  "papa",
  "quebec",
  "romeo",
  "sierra",
  "tango",
  "uniform",
  "victor",
  "whiskey",
  "xray",
  "yankee",
  "zulu",
];

/** The names of `count` targets: alpha, bravo, … then target-27, target-28, … */
export function targetNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => NATO[i] ?? `target-${i + 1}`);
}

/** Submission times, ms, in order: all at 0, or a Poisson process (after any backlog at 0). */
export function arrivalTimes(arrivals: Arrivals, count: number, random: Random): number[] {
  const times: number[] = [];
  if (arrivals.kind === "burst") return new Array<number>(count).fill(0);
  const backlog = Math.min(arrivals.backlog ?? 0, count);
  for (let i = 0; i < backlog; i++) times.push(0);
  const meanGap = MS_PER_HOUR / arrivals.perHour;
  let at = 0;
  while (times.length < count) {
    at += random.exponential(meanGap);
    times.push(Math.round(at));
  }
  return times;
}

export function generatePullRequests(o: SimulationOptions): SimulatedPr[] {
  const arrivals = arrivalTimes(o.arrivals, o.prs, new Random(o.seed, "arrivals"));
  const badness = new Random(o.seed, "bad");
  const priorities = new Random(o.seed, "priorities");
  const fanOut = new Random(o.seed, "targets");
  const names = targetNames(o.targets);
  const prs: SimulatedPr[] = arrivals.map((arrivalAt, i) => ({
    number: i + 1,
    arrivalAt,
    bad: badness.chance(o.failureRate),
    priority: o.priorities === null ? null : priorities.weighted(o.priorities),
    targets: o.targetsFanout === null ? null : drawTargets(o.targetsFanout, names, fanOut),
    conflictsWith: [],
    stackedOn: null,
  }));
  // Conflicts and stacks, each from its own stream (so that the rest of a workload stays the
  // same when they are turned on). Stacks and conflicts never share a PR: a stack's PRs build
  // on each other's lines by design.
  const conflicts = new Random(o.seed, "conflicts");
  const stacks = new Random(o.seed, "stacks");
  const parents = new Set<number>();
  for (const [i, pr] of prs.entries()) {
    const stack = stacks.chance(o.stackRate);
    const stackPick = stacks.uniform(0, 1);
    const conflict = conflicts.chance(o.conflictRate);
    const conflictPick = conflicts.uniform(0, 1);
    const earlier = prs.slice(Math.max(0, i - NEIGHBOURHOOD), i);
    if (stack) {
      const candidates = earlier.filter((e) => e.conflictsWith.length === 0);
      const parent = candidates[Math.floor(stackPick * candidates.length)];
      if (parent) {
        pr.stackedOn = parent.number;
        parents.add(parent.number);
        // It contains the parent's change: whatever breaks the parent breaks it.
        pr.bad ||= parent.bad;
        continue;
      }
    }
    if (conflict) {
      const candidates = earlier.filter((e) => e.stackedOn === null && !parents.has(e.number));
      const partner = candidates[Math.floor(conflictPick * candidates.length)];
      if (partner) {
        pr.conflictsWith.push(partner.number);
        partner.conflictsWith.push(pr.number);
      }
    }
  }
  for (const [a, b] of o.conflictPairs ?? []) {
    const first = prs[a - 1];
    const second = prs[b - 1];
    if (!first || !second || a === b) continue;
    first.conflictsWith.push(b);
    second.conflictsWith.push(a);
  }
  return prs;
}

function drawTargets(
  fanOut: Distribution<FanOut>,
  names: readonly string[],
  random: Random,
): ImpactedTargets {
  const count = random.weighted(fanOut);
  if (count === "ALL") return "ALL";
  return random.sample(names, count);
}
