/**
 * State changes every concern shares: transitions (each a decision on the entry's timeline), runs
 * started and invalidated, verdicts counted. A localization ending undecided is here too, below
 * the queue order, because an entry leaving the queue ends it.
 */
import {
  QUEUE_ACTOR,
  type Actor,
  type BisectionGroup,
  type Entry,
  type PrState,
  type TestRun,
  type TransitionReason,
} from "../model.js";
import { recordVerdict as addVerdict } from "../speculation.js";
import { type PlanningState, entryOf } from "./state.js";

export function record(
  p: PlanningState,
  entry: Entry,
  to: PrState,
  reason: TransitionReason,
  actor: Actor = QUEUE_ACTOR,
  runId: string | null = null,
  detail: string | null = null,
): void {
  p.decisions.push({
    type: "transition",
    entryId: entry.id,
    prNumber: entry.pr.number,
    from: entry.state,
    to,
    reason,
    actor,
    runId,
    detail,
  });
}

export function transition(
  p: PlanningState,
  entry: Entry,
  to: PrState,
  reason: TransitionReason,
  runId: string | null = null,
  detail: string | null = null,
  actor: Actor = QUEUE_ACTOR,
): void {
  record(p, entry, to, reason, actor, runId, detail);
  if (entry.state === "not_ready" && to !== "not_ready") {
    const index = p.s.notReady.indexOf(entry.id);
    if (index >= 0) p.s.notReady.splice(index, 1);
  } else if (entry.state !== "not_ready" && to === "not_ready") {
    p.s.notReady.push(entry.id);
  }
  entry.state = to;
  entry.stateChangedAt = p.now;
}

/** Back to `pending` at the same position, to be tested again. */
export function toPending(
  p: PlanningState,
  entry: Entry,
  reason: TransitionReason,
  actor: Actor,
): void {
  if (entry.state === "pending" || entry.state === "not_ready") return;
  const run = entry.runId ? p.s.runs[entry.runId] : undefined;
  if (run?.status === "running" && run.unit.every((id) => id === entry.id)) {
    run.status = "cancelled";
    p.decisions.push({ type: "cancel_run", runId: run.id, reason });
  }
  entry.runId = null;
  entry.failure = null;
  transition(p, entry, "pending", reason, null, null, actor);
}

/** A run no longer tests what would land: cancel it and send its unit back to pending. */
export function invalidateRun(
  p: PlanningState,
  run: TestRun,
  reason: TransitionReason,
  actor: Actor,
  leaving: ReadonlySet<string> = new Set(),
): void {
  if (run.status === "running") {
    p.decisions.push({ type: "cancel_run", runId: run.id, reason });
  }
  run.status = "cancelled";
  run.finishedAt = p.now;
  for (const id of run.unit) {
    const entry = p.s.entries[id];
    if (!entry || leaving.has(id) || entry.runId !== run.id) continue;
    if (p.s.merging?.entryId === entry.id) continue;
    if (entry.bisection) continue;
    entry.runId = null;
    transition(p, entry, "pending", reason, null, null, actor);
  }
}

export function newRun(
  p: PlanningState,
  spec: Pick<TestRun, "kind" | "ahead" | "unit" | "attempt" | "bisectionGroup" | "failFirst">,
): TestRun {
  const id = `${p.s.nextId++}`;
  const held = new Set<number>();
  for (const other of Object.values(p.s.runs)) {
    if (other.status === "running" && other.slot !== undefined) held.add(other.slot);
  }
  let slot = 0;
  while (held.has(slot)) slot++;
  const prs = [...spec.ahead, ...spec.unit].map((entryId) => {
    const entry = entryOf(p, entryId);
    return { entryId, number: entry.pr.number, headSha: entry.pr.headSha };
  });
  const run: TestRun = {
    id,
    kind: spec.kind,
    status: "running",
    baseSha: p.s.base.headSha,
    prs,
    ahead: [...spec.ahead],
    unit: [...spec.unit],
    startedAt: p.now,
    finishedAt: null,
    bisectionGroup: spec.bisectionGroup,
    failingChecks: [],
    attempt: spec.attempt,
    ...(spec.failFirst ? { failFirst: spec.failFirst } : {}),
    slot,
  };
  p.s.runs[id] = run;
  p.decisions.push({ type: "start_run", run: copyRun(run) });
  return run;
}

function copyRun(run: TestRun): TestRun {
  return {
    ...run,
    prs: run.prs.map((pr) => ({ ...pr })),
    ahead: [...run.ahead],
    unit: [...run.unit],
    failingChecks: [...run.failingChecks],
    ...(run.failFirst
      ? { failFirst: { ...run.failFirst, checks: [...run.failFirst.checks] } }
      : {}),
  };
}

/** Counts a verdict on a unit of `prs` pull requests towards the queue's failure rate. */
export function recordVerdict(p: PlanningState, prs: number, failed: boolean): void {
  p.s.verdicts = addVerdict(p.s.verdicts, prs, failed);
}

/**
 * A localization ends undecided (an outside push, or one of its PRs left the queue): its runs
 * are cancelled and its PRs (but `leaving`) are tested again where they stand. Returns them: the
 * caller replans what was stacked on its presumption.
 */
export function dissolveGroup(
  p: PlanningState,
  group: BisectionGroup,
  reason: TransitionReason,
  leaving: string | null,
): string[] {
  Reflect.deleteProperty(p.s.bisections, group.id);
  for (const prefix of group.prefixes) {
    const run = p.s.runs[prefix.runId];
    if (run?.status !== "running") continue;
    run.status = "cancelled";
    run.finishedAt = p.now;
    p.decisions.push({ type: "cancel_run", runId: run.id, reason });
  }
  const members = group.entries.filter((id) => p.s.entries[id]?.bisection?.groupId === group.id);
  for (const id of members) {
    const entry = entryOf(p, id);
    entry.bisection = null;
    if (id === leaving) continue;
    entry.failure = null;
    entry.runId = null;
    transition(p, entry, "pending", reason, null, null);
  }
  return members;
}
