/**
 * The health classifier: a pure function from a test's recent runs, the repository's monitor
 * settings and the monitors' previous states to each monitor's state and the test's status. No I/O,
 * no clock: `now` is given. docs/test-health.md explains the monitors.
 */
import {
  inScope,
  type FailureCountMonitor,
  type FailureRateMonitor,
  type HealthStatus,
  type MonitorClassification,
  type MonitorSettings,
} from "./monitors.js";
import { DAY_MS as DAY, HOUR_MS as HOUR } from "../lib/time.js";

export interface ClassifierRun {
  /** When the run happened, epoch ms. */
  at: number;
  status: "passed" | "failed" | "skipped";
  commit: string;
  branch: string;
  prNumber: number | null;
  /** Runs of an upload excluded by infrastructure-failure protection never count. */
  excluded: boolean;
  /**
   * Uploaded by Mainline's own CI runner for a merge-queue run: the queue judges its failures
   * (see `judgedByQueue`).
   */
  queueRun?: boolean;
}

export interface MonitorState {
  active: boolean;
  /** Why it is active (or was, when it resolved). */
  reason: string;
  /** When `active` last changed, epoch ms. */
  changedAt: number;
  /**
   * Pass-on-retry only: the time of the latest detection. Carried forward so that callers need
   * not load a week of runs: the runs of the current commits and of the rate windows suffice.
   */
  detectedAt?: number;
}

export type MonitorStates = Readonly<Record<string, MonitorState>>;

export interface Classification {
  status: HealthStatus;
  /** The reason of the most severe active monitor; "" when healthy. */
  reason: string;
  monitors: Record<string, MonitorState>;
}

export const PASS_ON_RETRY = "pass-on-retry";

/** How long ago runs can still matter for these settings (callers load at least this much). */
export function lookbackMs(settings: MonitorSettings): number {
  return Math.max(
    settings.passOnRetry.enabled ? settings.passOnRetry.recoveryDays * DAY : 0,
    ...settings.failureRate.map((m) => m.windowHours * HOUR),
    ...settings.failureCount.map((m) => Math.max(m.windowHours, m.resolutionHours) * HOUR),
  );
}

/**
 * How far back runs must be loaded when the monitors' previous states are given: the rate and
 * count windows. Pass-on-retry needs, beyond these, only the runs of the commits being classified
 * (its latest detection is carried in its state).
 */
export function windowLookbackMs(settings: MonitorSettings): number {
  return Math.max(
    0,
    ...settings.failureRate.map(
      (m) => m.windowHours * HOUR + (m.classification === "flaky" ? COMMIT_ORDER_MARGIN_MS : 0),
    ),
    ...settings.failureCount.map((m) => Math.max(m.windowHours, m.resolutionHours) * HOUR),
  );
}

/**
 * How far before a flaky rate monitor's window its runs still place their commits in order
 * (`failureStreaks`): a re-run of a commit whose first run was up to this much older than the
 * window is ordered at that first run, before the window's newer commits.
 */
export const COMMIT_ORDER_MARGIN_MS = 6 * HOUR;

const counted = (run: ClassifierRun): boolean => !run.excluded && run.status !== "skipped";

/**
 * A failure in one of the queue's own runs on a merge-queue branch. The queue knows more about it
 * than a rate can: either the run's pull request is convicted (it broke the test: breakage), or
 * the run is retried on the same tested tree, which Mainline builds as the same commit, so that
 * a pass there is pass-on-retry. Such failures therefore never count for a failure-rate or
 * failure-count monitor that classifies tests flaky: a test broken by a pull request fails in
 * that PR's queue runs and passes in all others, which a rate would call flaky.
 */
export function judgedByQueue(run: ClassifierRun, settings: MonitorSettings): boolean {
  return (
    run.queueRun === true && run.status === "failed" && inScope(run.branch, "merge_queue", settings)
  );
}

/** Whether a run counts for a monitor that classifies tests `classification`. */
const countedFor = (
  run: ClassifierRun,
  classification: MonitorClassification,
  settings: MonitorSettings,
): boolean => counted(run) && !(classification === "flaky" && judgedByQueue(run, settings));
const percent = (fraction: number): string => `${Math.round(fraction * 100)}%`;
const hours = (h: number): string => (h % 24 === 0 && h >= 48 ? `${h / 24} days` : `${h} h`);

/** The branches runs were on, most frequent first: "main" or "main, master". */
function branchesOf(runs: readonly ClassifierRun[]): string {
  const counts = new Map<string, number>();
  for (const run of runs) {
    if (run.branch !== "") counts.set(run.branch, (counts.get(run.branch) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 3)
    .map(([branch]) => branch)
    .join(", ");
}

/** ` on main, release/1` — nothing when the runs name no branch. */
function onBranches(runs: readonly ClassifierRun[]): string {
  const branches = branchesOf(runs);
  return branches ? ` on ${branches}` : "";
}

function transition(
  previous: MonitorState | undefined,
  active: boolean,
  reason: string,
  now: number,
): MonitorState {
  if (previous && previous.active === active) {
    return { active, reason: active ? reason : previous.reason, changedAt: previous.changedAt };
  }
  return { active, reason: active || !previous ? reason : previous.reason, changedAt: now };
}

/**
 * Pass-on-retry: a commit with at least one failed and one passed run. Every run that completes
 * such a pair (its commit already had the opposite result) is a detection; the monitor resolves
 * `recoveryDays` after the latest one. Defined run by run, so a caller that loads only the
 * windows and the current commit's runs, and carries `detectedAt`, gets the same answer as one
 * that loads everything (the runs of older commits were complete when they were classified).
 */
function passOnRetry(
  runs: readonly ClassifierRun[],
  settings: MonitorSettings,
  previous: MonitorState | undefined,
  now: number,
): MonitorState {
  const seen = new Map<string, { passed: boolean; failed: boolean }>();
  let latest: { at: number; commit: string; run: ClassifierRun } | undefined;
  for (const run of runs) {
    if (!counted(run)) continue;
    const results = seen.get(run.commit) ?? { passed: false, failed: false };
    const completes = run.status === "passed" ? results.failed : results.passed;
    if (run.status === "passed") results.passed = true;
    else results.failed = true;
    seen.set(run.commit, results);
    if (completes && (!latest || run.at >= latest.at)) {
      latest = { at: run.at, commit: run.commit, run };
    }
  }
  const where = latest
    ? `branch ${latest.run.branch}${latest.run.prNumber !== null ? `, PR #${latest.run.prNumber}` : ""}`
    : "";
  let detectedAt = latest?.at;
  let reason = latest
    ? `Failed and passed on the same commit ${latest.commit.slice(0, 7)} (${where})`
    : "";
  // A detection older than the runs given (or equal to one of them) is remembered in the state.
  const carried = previous?.detectedAt;
  if (carried !== undefined && (detectedAt === undefined || carried > detectedAt)) {
    detectedAt = carried;
    reason = previous?.reason ?? reason;
  }
  const recovery = settings.passOnRetry.recoveryDays * DAY;
  const active =
    settings.passOnRetry.enabled && detectedAt !== undefined && now - detectedAt < recovery;
  const state = transition(previous, active, reason, now);
  return detectedAt === undefined ? state : { ...state, detectedAt };
}

/**
 * Separate streaks of failures: failures with a pass between them, in the order of the commits
 * (each commit where its first run in `ordering` falls, its runs together). Commit order, not run order: a
 * re-run of an older commit that ends after a newer commit's run is not a pass between that
 * newer commit's failures.
 */
export function failureStreaks(
  runs: readonly ClassifierRun[],
  ordering: readonly ClassifierRun[] = runs,
): number {
  const firstAt = new Map<string, number>();
  for (const run of ordering) {
    const seen = firstAt.get(run.commit);
    if (seen === undefined || run.at < seen) firstAt.set(run.commit, run.at);
  }
  const ordered = [...runs].sort(
    (a, b) =>
      (firstAt.get(a.commit) ?? a.at) - (firstAt.get(b.commit) ?? b.at) ||
      a.commit.localeCompare(b.commit) ||
      compareRuns(a, b),
  );
  let streaks = 0;
  let inStreak = false;
  for (const run of ordered) {
    if (run.status === "failed") {
      if (!inStreak) streaks += 1;
      inStreak = true;
    } else if (run.status === "passed") {
      inStreak = false;
    }
  }
  return streaks;
}

/**
 * Failure rate over a rolling window, with hysteresis between activation and resolution. A
 * monitor that classifies tests flaky activates only on intermittent failures (at least two
 * streaks).
 */
function failureRate(
  monitor: FailureRateMonitor,
  runs: readonly ClassifierRun[],
  settings: MonitorSettings,
  previous: MonitorState | undefined,
  now: number,
): MonitorState {
  const window = runs.filter(
    (run) =>
      countedFor(run, monitor.classification, settings) &&
      run.at <= now &&
      now - run.at < monitor.windowHours * HOUR &&
      inScope(run.branch, monitor.scope, settings),
  );
  const failed = window.filter((run) => run.status === "failed").length;
  const rate = window.length === 0 ? 0 : failed / window.length;
  const enough = window.length >= monitor.minRuns;
  const wasActive = monitor.enabled && previous?.active === true;
  // Flakiness is failing now and then: a test whose failures in the window form one unbroken
  // streak changed behaviour once (broken by a commit, maybe fixed by a later one): breakage,
  // which the broken monitors judge, not flakiness.
  const intermittent =
    monitor.classification !== "flaky" ||
    failureStreaks(
      window,
      runs.filter(
        (run) =>
          countedFor(run, monitor.classification, settings) &&
          run.at <= now &&
          now - run.at < monitor.windowHours * HOUR + COMMIT_ORDER_MARGIN_MS &&
          inScope(run.branch, monitor.scope, settings),
      ),
    ) >= 2;
  let active: boolean;
  if (!monitor.enabled) active = false;
  else if (!wasActive) active = enough && rate >= monitor.activation && intermittent;
  // Once active it stays so until the rate falls below resolution on enough runs, or the test
  // stops running in scope for a whole window (stale).
  else active = window.length > 0 && !(enough && rate < monitor.resolution);
  const reason =
    window.length === 0
      ? `No runs in scope over the last ${hours(monitor.windowHours)}`
      : `Failure rate ${percent(rate)} (${failed} of ${window.length} runs) over the last ${hours(monitor.windowHours)}${onBranches(window)}`;
  return transition(previous, active, reason, now);
}

/** N failures within a window; resolves after a quiet period with no failure. */
function failureCount(
  monitor: FailureCountMonitor,
  runs: readonly ClassifierRun[],
  settings: MonitorSettings,
  previous: MonitorState | undefined,
  now: number,
): MonitorState {
  const failures = runs
    .filter(
      (run) =>
        countedFor(run, monitor.classification, settings) &&
        run.status === "failed" &&
        run.at <= now &&
        inScope(run.branch, monitor.scope, settings),
    )
    .sort((a, b) => a.at - b.at);
  const inWindow = failures.filter((run) => now - run.at < monitor.windowHours * HOUR);
  const last = failures.at(-1);
  const quietFor = last ? now - last.at : Infinity;
  const wasActive = monitor.enabled && previous?.active === true;
  const active =
    monitor.enabled &&
    (inWindow.length >= monitor.failures ||
      (wasActive && quietFor < monitor.resolutionHours * HOUR));
  const reason =
    inWindow.length === 0
      ? `No failures in scope within ${hours(monitor.windowHours)}`
      : `${inWindow.length} failure${inWindow.length === 1 ? "" : "s"} within ${hours(monitor.windowHours)}${onBranches(inWindow)}`;
  return transition(previous, active, reason, now);
}

const SEVERITY: Record<MonitorClassification, number> = { broken: 2, flaky: 1 };

/** A total order, so that the outcome (reasons included) never depends on the input's order. */
function compareRuns(a: ClassifierRun, b: ClassifierRun): number {
  return (
    a.at - b.at ||
    a.commit.localeCompare(b.commit) ||
    a.branch.localeCompare(b.branch) ||
    a.status.localeCompare(b.status) ||
    (a.prNumber ?? -1) - (b.prNumber ?? -1) ||
    Number(a.excluded) - Number(b.excluded) ||
    Number(a.queueRun === true) - Number(b.queueRun === true)
  );
}

/** Evaluates every monitor; the status is the most severe active one (broken > flaky). */
export function classify(
  unordered: readonly ClassifierRun[],
  settings: MonitorSettings,
  previous: MonitorStates,
  now: number,
): Classification {
  const runs = [...unordered].sort(compareRuns);
  const monitors: Record<string, MonitorState> = {};
  const classifications: { classification: MonitorClassification; state: MonitorState }[] = [];

  const retry = passOnRetry(runs, settings, previous[PASS_ON_RETRY], now);
  monitors[PASS_ON_RETRY] = retry;
  classifications.push({ classification: "flaky", state: retry });
  for (const monitor of settings.failureRate) {
    const state = failureRate(monitor, runs, settings, previous[monitor.id], now);
    monitors[monitor.id] = state;
    classifications.push({ classification: monitor.classification, state });
  }
  for (const monitor of settings.failureCount) {
    const state = failureCount(monitor, runs, settings, previous[monitor.id], now);
    monitors[monitor.id] = state;
    classifications.push({ classification: monitor.classification, state });
  }

  let status: HealthStatus = "healthy";
  let reason = "";
  for (const { classification, state } of classifications) {
    if (!state.active) continue;
    if (status === "healthy" || SEVERITY[classification] > SEVERITY[status]) {
      status = classification;
      reason = state.reason;
    }
  }
  return { status, reason, monitors };
}
