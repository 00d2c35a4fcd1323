/**
 * Localizing the failing pull request of a failed batch in one round (ADR 0034): its prefixes are
 * tested at once on top of what is ahead (cut points spread over the bisection slots when there
 * are fewer slots than prefixes); the first failing prefix cancels the longer ones, a passing one
 * clears its pull requests where they stand, and a pass/fail pair one apart names the culprit.
 * After the window failing runs take, the queue presumes the shortest failing prefix ends in the
 * culprit and refills the lane behind it; nothing merges on the presumption.
 */
import { QUEUE_ACTOR, type BisectionGroup, type Entry, type TestRun } from "../model.js";
import { type PlanningState, at, config, entryOf } from "./state.js";
import { inFlightAhead } from "./dependencies.js";
import { landedFrom } from "./merging.js";
import { dissolveGroup, newRun, record, transition } from "./state-changes.js";
import { conclude, replanRunsIncluding } from "./order.js";

/** Failing-run durations remembered for the presumption window. */
const FAILING_RUNS_KEPT = 20;
/** Observations needed before the window is learned; until then it is the batch run's length. */
const FAILING_RUNS_NEEDED = 3;

export function startBisection(p: PlanningState, run: TestRun, unit: Entry[]): void {
  const id = `b${p.s.nextId++}`;
  const group: BisectionGroup = {
    id,
    runId: run.id,
    entries: unit.map((e) => e.id),
    passed: 0,
    passedRunId: null,
    failsAt: unit.length,
    failedRunId: run.id,
    prefixes: [],
    roundStartedAt: null,
    presumedAt: null,
  };
  p.s.bisections[id] = group;
  // Its PRs keep their places in the queue: nothing behind them lands, or is tested, before the
  // culprit is known or presumed (what is tested behind them meanwhile would include it).
  for (const entry of unit) entry.bisection = { groupId: id };
  replanRunsIncluding(p, new Set(unit.map((e) => e.id)), "prerequisite_merge_item_failed");
}

export function progressBisections(p: PlanningState): void {
  const groups = Object.values(p.s.bisections);
  if (groups.length === 0) return;
  // The slots the localizations' prefix runs hold (a run of an upgraded snapshot's halving,
  // still going, holds none: its result is ignored when it comes).
  let slots = config(p).bisectionConcurrency;
  for (const group of groups) {
    // A prefix run cancelled from elsewhere (a failure ahead took what it stood on) is tested
    // again in the next round.
    group.prefixes = group.prefixes.filter((x) => p.s.runs[x.runId]?.status === "running");
    slots -= group.prefixes.length;
  }
  for (const group of groups) {
    const found = group.failsAt - group.passed <= 1;
    if (found && !unconfirmed(group)) {
      decide(p, group);
      continue;
    }
    if (config(p).state === "paused" || p.s.merging !== null) continue;
    if (found) {
      if (group.prefixes.length === 0 && slots > 0) slots -= confirm(p, group);
      continue;
    }
    if (group.prefixes.length > 0) {
      presumeIfDue(p, group);
      continue;
    }
    if (slots > 0) slots -= startRound(p, group, slots);
  }
}

/** Prefix lengths to test between what passed and what failed, spread over `slots` runs. */
export function cutPoints(passed: number, failsAt: number, slots: number): number[] {
  const gap = failsAt - passed;
  if (gap <= 1 || slots <= 0) return [];
  if (slots >= gap - 1) return Array.from({ length: gap - 1 }, (_, i) => passed + 1 + i);
  const points = new Set<number>();
  for (let i = 1; i <= slots; i++) {
    const point = passed + Math.round((i * gap) / (slots + 1));
    if (point > passed && point < failsAt) points.add(point);
  }
  return [...points].sort((a, b) => a - b);
}

function startRound(p: PlanningState, group: BisectionGroup, slots: number): number {
  const lengths = cutPoints(group.passed, group.failsAt, slots);
  if (!startPrefixes(p, group, lengths)) return 0;
  const what =
    lengths.length === 1
      ? `testing 1 prefix of batch run ${group.runId}`
      : `testing ${lengths.length} prefixes of batch run ${group.runId} at once`;
  recordStarted(p, group, () => `${what} to find the failing pull request`);
  return lengths.length;
}

/**
 * Prefix runs of these lengths, on top of what will land before them (PRs cleared already
 * included), so that each still matches the branch when they have merged; in parallel mode only
 * on what it depends on. Only on what has passed: a prefix's failure must be its own (not a PR
 * ahead still being tested, nor another localization's presumption). False: none started yet.
 */
function startPrefixes(p: PlanningState, group: BisectionGroup, lengths: number[]): boolean {
  const plans = lengths.map((length) => {
    const unit = group.entries.slice(group.passed, length);
    return { length, unit, ahead: inFlightAhead(p, unit) };
  });
  if (plans.length === 0 || plans.some((plan) => plan.unit.length === 0)) return false;
  if (plans.some((plan) => !plan.ahead.every((id) => proven(p, id)))) return false;
  const failed = p.s.runs[group.failedRunId];
  for (const { length, unit, ahead } of plans) {
    const run = newRun(p, {
      kind: "bisection",
      ahead,
      unit,
      attempt: 1,
      bisectionGroup: group.id,
      failFirst: { fromRunId: group.failedRunId, checks: [...(failed?.failingChecks ?? [])] },
    });
    group.prefixes.push({ length, runId: run.id });
  }
  group.roundStartedAt = p.now;
  return true;
}

/** On the timeline of each pull request still undecided: the localization's next step. */
function recordStarted(p: PlanningState, group: BisectionGroup, detail: (entry: Entry) => string) {
  for (const id of undecided(p, group)) {
    const entry = entryOf(p, id);
    record(
      p,
      entry,
      entry.state,
      "bisection_started",
      QUEUE_ACTOR,
      group.failedRunId,
      detail(entry),
    );
  }
}

/**
 * Whether the culprit found rests on the batch run alone: everything before it passed, and the
 * only run that failed with it is the one that started the search. A flaky failure of that run
 * would evict a good pull request (the last of the batch), so it is tested once more first.
 */
function unconfirmed(group: BisectionGroup): boolean {
  return group.failedRunId === group.runId;
}

/** The culprit's prefix tested again on what passed: its failure, or a flake. */
function confirm(p: PlanningState, group: BisectionGroup): number {
  if (!startPrefixes(p, group, [group.failsAt])) return 0;
  recordStarted(
    p,
    group,
    (entry) =>
      `everything before #${String(entry.pr.number)} passed: testing it once more before failing it on batch run ${group.runId} alone`,
  );
  return 1;
}

/** Entries of the group still waiting for its verdict (not cleared, not sent back). */
function undecided(p: PlanningState, group: BisectionGroup): string[] {
  return group.entries
    .slice(group.passed, group.failsAt)
    .filter((id) => p.s.entries[id]?.bisection?.groupId === group.id);
}

/** The entry a localization presumes is its culprit, held out of the lane meanwhile. */
export function presumedCulprit(p: PlanningState, entry: Entry): boolean {
  const group = entry.bisection ? p.s.bisections[entry.bisection.groupId] : undefined;
  return group?.presumedAt != null && group.entries[group.failsAt - 1] === entry.id;
}

/** How long to wait for a shorter prefix to fail before presuming it will not. */
export function presumptionWindow(p: PlanningState, group: BisectionGroup): number {
  const seen = p.s.failingRunMs ?? [];
  if (seen.length >= FAILING_RUNS_NEEDED) {
    const sorted = [...seen].sort((a, b) => a - b);
    return Math.ceil(1.25 * at(sorted, Math.ceil(0.8 * sorted.length) - 1));
  }
  // Until then, as long as the batch run took: failing runs are not known to end early.
  const failed = p.s.runs[group.runId];
  const took = failed?.finishedAt != null ? failed.finishedAt - failed.startedAt : 0;
  return took > 0 ? took : Infinity;
}

/** When the group's presumption is due (null: not pending). */
export function presumptionDue(p: PlanningState, group: BisectionGroup): number | null {
  if (group.presumedAt !== null || group.roundStartedAt === null) return null;
  if (!group.prefixes.some((prefix) => prefix.length === group.failsAt - 1)) return null;
  const due = group.roundStartedAt + presumptionWindow(p, group);
  return Number.isFinite(due) ? due : null;
}

function presumeIfDue(p: PlanningState, group: BisectionGroup): void {
  const due = presumptionDue(p, group);
  if (due === null || p.now < due) return;
  group.presumedAt = p.now;
  for (const id of group.entries.slice(group.passed, group.failsAt - 1)) {
    const entry = p.s.entries[id];
    if (entry?.bisection?.groupId === group.id) entry.bisection.presumedGood = true;
  }
}

/** A queued entry a passed run has cleared (or that is merging now). */
function proven(p: PlanningState, id: string): boolean {
  return p.s.entries[id]?.state === "tests_passed" || p.s.merging?.entryId === id;
}

/**
 * Whether a failed prefix run's failure is its prefix's: everything it was stacked on has since
 * merged, or is still cleared and queued. One that left otherwise may have been the cause.
 */
function failureIsOwn(p: PlanningState, run: TestRun): boolean {
  const from = landedFrom(p, run.baseSha);
  if (from === undefined) return false;
  const merged = new Set(p.s.base.merges.slice(from).map((m) => m.entryId));
  return run.ahead.every((id) => (p.s.entries[id] ? proven(p, id) : merged.has(id)));
}

export function bisectionResult(p: PlanningState, run: TestRun, passed: boolean): void {
  const group = run.bisectionGroup ? p.s.bisections[run.bisectionGroup] : undefined;
  const prefix = group?.prefixes.find((x) => x.runId === run.id);
  if (!group || !prefix) return;
  group.prefixes = group.prefixes.filter((x) => x !== prefix);
  if (passed) prefixPassed(p, group, prefix.length, run);
  // Inconclusive: the prefix is tested again in the next round.
  else if (failureIsOwn(p, run)) prefixFailed(p, group, prefix.length, run);
}

function prefixFailed(p: PlanningState, group: BisectionGroup, length: number, run: TestRun): void {
  if (run.failure?.reason !== "test_run_timeout" && p.now > run.startedAt) {
    const seen = [...(p.s.failingRunMs ?? []), p.now - run.startedAt];
    p.s.failingRunMs = seen.slice(-FAILING_RUNS_KEPT);
  }
  // A longer prefix than the shortest known to fail says nothing new, unless it confirms the
  // batch run's failure.
  if (length > group.failsAt || (length === group.failsAt && !unconfirmed(group))) return;
  group.failsAt = length;
  group.failedRunId = run.id;
  cancelPrefixes(p, group, (x) => x.length > length);
  if (group.presumedAt !== null) {
    // The presumption was wrong: what was stacked on it tested the real culprit with it.
    group.presumedAt = null;
    const presumed = new Set<string>();
    for (const id of group.entries) {
      const entry = p.s.entries[id];
      if (entry?.bisection?.groupId !== group.id) continue;
      if (entry.bisection.presumedGood === true) presumed.add(id);
      entry.bisection = { groupId: group.id };
    }
    // Main runs and other localizations' runs stacked on it, failed ones included (their
    // failure may be the real culprit's), are tested again.
    replanRunsIncluding(p, presumed, "prerequisite_merge_item_failed", group.id);
  }
  sendBack(p, group, length, run.id, "behind the failing prefix");
}

function prefixPassed(p: PlanningState, group: BisectionGroup, length: number, run: TestRun): void {
  cancelPrefixes(p, group, (x) => x.length < length);
  // Tested on exactly what is ahead of them: the run clears them where they stand, like a main
  // run. Should what lands ahead differ from what it tested, they are tested again in place.
  const cleared = group.entries
    .slice(group.passed, length)
    .filter((id) => p.s.entries[id]?.bisection?.groupId === group.id);
  for (const id of cleared) {
    const entry = entryOf(p, id);
    entry.bisection = null;
    entry.failure = null;
    entry.runId = run.id;
    entry.unit = cleared;
    transition(p, entry, "tests_passed", "bisection_passed", run.id);
  }
  group.passed = Math.max(group.passed, length);
  group.passedRunId = run.id;
  if (group.passed >= group.failsAt) {
    // A longer prefix passed than one that failed: that failure was not the batch's culprit
    // (a flake). Nobody is evicted on it; the rest is tested again in the queue.
    cancelPrefixes(p, group, () => true);
    sendBack(p, group, group.passed, run.id, "a longer prefix passed");
    Reflect.deleteProperty(p.s.bisections, group.id);
  }
}

/** Entries from `length` on leave the group undecided, back to pending where they stand. */
function sendBack(
  p: PlanningState,
  group: BisectionGroup,
  length: number,
  runId: string,
  why: string,
): void {
  for (const id of group.entries.slice(length)) {
    const entry = p.s.entries[id];
    if (entry?.bisection?.groupId !== group.id) continue;
    entry.bisection = null;
    entry.failure = null;
    entry.runId = null;
    transition(p, entry, "pending", "bisection_inconclusive", runId, `tested again: ${why}`);
  }
  group.entries = group.entries.slice(0, Math.max(length, group.passed));
}

function cancelPrefixes(
  p: PlanningState,
  group: BisectionGroup,
  which: (prefix: { length: number; runId: string }) => boolean,
): void {
  for (const prefix of group.prefixes.filter(which)) {
    const run = p.s.runs[prefix.runId];
    if (run?.status === "running") {
      run.status = "cancelled";
      run.finishedAt = p.now;
      p.decisions.push({ type: "cancel_run", runId: run.id, reason: "bisection_passed" });
    }
  }
  group.prefixes = group.prefixes.filter((prefix) => !which(prefix));
}

/** A run and the pull requests it tested, in words: "run 12 (#3, #4)". */
function described(run: TestRun): string {
  return `run ${run.id} (${run.prs.map((pr) => `#${pr.number}`).join(", ")})`;
}

/** The evidence against a culprit in words: the passing and the failing run. */
function evidence(p: PlanningState, group: BisectionGroup, culprit: Entry): string {
  const failed = p.s.runs[group.failedRunId];
  const checks = failed?.failingChecks ?? [];
  const what =
    checks.length > 0
      ? `failed ${checks.join(", ")}`
      : (failed?.failure?.detail ?? culprit.failure?.detail ?? "failed");
  const failing = failed ? described(failed) : `run ${group.failedRunId}`;
  const passedRun = group.passedRunId ? p.s.runs[group.passedRunId] : undefined;
  if (!passedRun) return `localization: ${failing} ${what}, with #${culprit.pr.number} first`;
  return `localization: ${described(passedRun)} passed; ${failing} ${what}`;
}

function decide(p: PlanningState, group: BisectionGroup): void {
  cancelPrefixes(p, group, () => true);
  Reflect.deleteProperty(p.s.bisections, group.id);
  const id = group.entries[group.failsAt - 1];
  const culprit = id === undefined ? undefined : p.s.entries[id];
  if (!culprit || culprit.bisection?.groupId !== group.id) return;
  culprit.bisection = null;
  const failed = p.s.runs[group.failedRunId];
  conclude(
    p,
    culprit,
    "failed",
    failed?.failure?.reason ?? culprit.failure?.reason ?? "failing_required_check",
    QUEUE_ACTOR,
    group.failedRunId,
    evidence(p, group, culprit),
  );
}

/** A prefix run's flaky-only failure: the same prefix once more, on the same tree. */
export function retryBisectionRun(p: PlanningState, run: TestRun): boolean {
  const group = run.bisectionGroup ? p.s.bisections[run.bisectionGroup] : undefined;
  const prefix = group?.prefixes.find((x) => x.runId === run.id);
  if (!group || !prefix) return false;
  const retry = newRun(p, {
    kind: "bisection",
    ahead: run.ahead.filter((id) => p.s.entries[id] !== undefined),
    unit: run.unit.filter((id) => p.s.entries[id] !== undefined),
    attempt: run.attempt + 1,
    bisectionGroup: group.id,
    ...(run.failFirst ? { failFirst: run.failFirst } : {}),
  });
  prefix.runId = retry.id;
  for (const id of retry.unit) {
    const entry = entryOf(p, id);
    entry.flakyRetries += 1;
    record(
      p,
      entry,
      entry.state,
      "retried_flaky_failure",
      QUEUE_ACTOR,
      retry.id,
      `only known flaky tests failed in localization run ${run.id}; retrying once`,
    );
  }
  return true;
}

/** A prefix run's test branch could not be built: that prefix is dropped from the round. */
export function prefixNotBuilt(p: PlanningState, run: TestRun): void {
  const group = run.bisectionGroup ? p.s.bisections[run.bisectionGroup] : undefined;
  if (group) group.prefixes = group.prefixes.filter((x) => x.runId !== run.id);
}

/** An outside push: every localization ends, its PRs are tested again where they stand. */
export function dissolveBisection(p: PlanningState, group: BisectionGroup): void {
  const members = dissolveGroup(p, group, "restarted_on_new_base", null);
  replanRunsIncluding(p, new Set(members), "restarted_on_new_base", group.id);
}
