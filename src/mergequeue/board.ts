/**
 * A queue's board, pure: the entries in queue order with their positions, the runs in flight on
 * top of what, the localizations, and the estimates (when each run should end, when each pull
 * request should merge, when a pending one should start and why it waits). What the queue page,
 * the pull request page's place line and their live updates show.
 */
import { MINUTE_MS } from "../lib/time.js";
import type { Entry, PrState, QueueSnapshot, WaitingReason } from "./model.js";
import { batchSizeChoice } from "./batch-size.js";
import { localizationsOf, undecidedEntries, type LocalizationView } from "./localizations.js";

/**
 * A run past its expected end is expected to end at least this share of a typical run from now,
 * or as long again as it has overrun so far, whichever is longer (but not after its testing
 * timeout): the longer it overruns, the less the typical duration says about it.
 */
export const OVERRUN_MARGIN = 0.25;

/** Why an entry has no merge estimate. */
export type NoEstimate =
  /** The queue is paused: nothing merges and no run starts until it resumes. */
  | "paused"
  /** No run finished in the estimate's window: nothing to estimate from yet. */
  | "no_history"
  /** A failure held open (`pending_failure`): whether it merges at all is undecided. */
  | "outcome_open"
  /** Not ready: it has no place in the queue. */
  | "not_ready";

/**
 * Why a pending entry waits, when the planner gave no reason of its own (`waiting`): the queue is
 * paused, or every one of its `concurrency` slots holds a run.
 */
export type BoardWait =
  { kind: "paused" } | { kind: "free_slot"; runsInFlight: number; concurrency: number };

export interface BoardEntry {
  id: string;
  number: number;
  title: string;
  author: string;
  state: PrState;
  stateChangedAt: number;
  priorityValue: number;
  /** 1-based place among the pull requests that are ready; null for `not_ready`. */
  position: number | null;
  /** The run testing it now (as part of that run's unit). */
  runId: string | null;
  /** The planner's reason for holding it (a batch forming, a bisection ahead). */
  waiting: WaitingReason | null;
  /** A pending one's reason to wait when the planner gave none: paused, or no free slot. */
  waitsFor: BoardWait | null;
  /** Under localization: which one (the failed batch run) and what the queue makes of it now. */
  localization: {
    runId: string;
    role: "suspect" | "presumed_good" | "presumed_culprit";
  } | null;
  /** A pending one: epoch ms at which its run should start (its wave's start); else null. */
  expectedStartAt: number | null;
  /** Epoch ms at which it should merge, from recent run durations; null when unknown. */
  estimatedMergeAt: number | null;
  /** Why `estimatedMergeAt` is null (null when there is one). */
  noEstimate: NoEstimate | null;
}

export interface BoardRun {
  id: string;
  kind: "main" | "bisection";
  /** The target branch's commit the run starts from. */
  baseSha: string;
  /** Pull requests merged first because they are ahead (the run does not decide about them). */
  ahead: number[];
  /** The pull requests it decides about: one, a batch, or a part of a batch under bisection. */
  unit: number[];
  startedAt: number;
  attempt: number;
  /** How long it should take: the typical run (the queue's checks carry no timings of their own). */
  expectedMs: number | null;
  /** When it should end: never before now (see `OVERRUN_MARGIN` once it overruns); null when unknown. */
  estimatedEndAt: number | null;
  /** How long it has run past its expected end; null when it has not (or nothing is expected). */
  overrunMs: number | null;
  /** A prefix run of a localization: the failed batch run it localizes. */
  localizes: string | null;
}

/** A failed batch whose failing pull request is being localized. */
export type BoardBisection = LocalizationView;

export interface Board {
  entries: BoardEntry[];
  runs: BoardRun[];
  bisections: BoardBisection[];
}

/**
 * When a run that started at `startedAt` should end: a typical run after it started; once past
 * that, it has overrun and the end moves on with `now` (see `OVERRUN_MARGIN`), bounded by its
 * testing timeout while that is still ahead (`timeoutMinutes`, 0 for none).
 */
export function runEstimate(
  startedAt: number,
  typicalRunMs: number | null,
  timeoutMinutes: number,
  now: number,
): Pick<BoardRun, "estimatedEndAt" | "overrunMs"> {
  if (typicalRunMs === null) return { estimatedEndAt: null, overrunMs: null };
  const expectedEnd = startedAt + typicalRunMs;
  if (now <= expectedEnd) return { estimatedEndAt: expectedEnd, overrunMs: null };
  const overrunMs = now - expectedEnd;
  let end = now + Math.max(overrunMs, Math.round(typicalRunMs * OVERRUN_MARGIN));
  const deadline = timeoutMinutes > 0 ? startedAt + timeoutMinutes * MINUTE_MS : null;
  if (deadline !== null && deadline > now) end = Math.min(end, deadline);
  return { estimatedEndAt: end, overrunMs };
}

/**
 * The board of a snapshot: entries in queue order (ready ones by position, then `not_ready`),
 * the runs in flight and the localizations, with estimates. A run in flight ends a typical
 * duration after it started, later once it overruns (`runEstimate`); a pull request passed
 * merges now; pending ones wait for slots of `concurrency` runs of the batch size in use, each a
 * typical duration, after the runs in flight; merges happen in order, so no estimate is earlier
 * than the one ahead. A paused queue merges nothing and starts nothing: no merge estimate at all
 * (its runs in flight still end). Pull requests whose outcome is open (`pending_failure`) or
 * unready have none, and without a typical duration nothing does.
 */
export function computeBoard(
  snapshot: QueueSnapshot | undefined,
  typicalRunMs: number | null,
  now: number,
): Board {
  if (!snapshot) return { entries: [], runs: [], bisections: [] };
  const { configuration } = snapshot;
  const paused = configuration.state === "paused";
  const numberOf = (id: string) => snapshot.entries[id]?.pr.number ?? 0;
  const running = Object.values(snapshot.runs).filter((run) => run.status === "running");
  const runs: BoardRun[] = running
    .sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id))
    .map((run) => {
      // Pull requests ahead may have merged meanwhile (and left the snapshot): the run knows them.
      const inRun = new Map(run.prs.map((p) => [p.entryId, p.number]));
      const number = (id: string) => inRun.get(id) ?? numberOf(id);
      return {
        id: run.id,
        kind: run.kind,
        baseSha: run.baseSha,
        ahead: run.ahead.map(number),
        unit: run.unit.map(number),
        startedAt: run.startedAt,
        attempt: run.attempt,
        expectedMs: typicalRunMs,
        ...runEstimate(run.startedAt, typicalRunMs, configuration.testingTimeoutMinutes, now),
        localizes:
          run.bisectionGroup === null
            ? null
            : (snapshot.bisections[run.bisectionGroup]?.runId ?? null),
      };
    });
  const runById = new Map(runs.map((r) => [r.id, r]));
  const bisections = localizationsOf(snapshot);
  const localizing = new Map<string, BoardEntry["localization"]>();
  for (const group of Object.values(snapshot.bisections)) {
    const culprit = group.presumedAt === null ? undefined : group.entries[group.failsAt - 1];
    for (const id of undecidedEntries(snapshot, group)) {
      const presumedGood = snapshot.entries[id]?.bisection?.presumedGood === true;
      localizing.set(id, {
        runId: group.runId,
        role: id === culprit ? "presumed_culprit" : presumedGood ? "presumed_good" : "suspect",
      });
    }
  }

  // Pending ones go in slots of `concurrency` runs of the batch size in use.
  const concurrency = Math.max(1, configuration.concurrency);
  const slotSize = concurrency * batchSizeChoice(configuration, snapshot.verdicts).size;
  const mainInFlight = running.filter((r) => r.kind === "main").length;
  const inFlightEnd = runs.reduce<number | null>(
    (latest, r) => (r.estimatedEndAt === null ? latest : Math.max(latest ?? 0, r.estimatedEndAt)),
    null,
  );
  let pendingSeen = 0;
  let floor = now;
  const entries: BoardEntry[] = [];
  /** What the board shows of every entry, queued or not ready. */
  const shownOf = (id: string, entry: Entry) => ({
    id,
    number: entry.pr.number,
    title: entry.pr.title,
    author: entry.pr.author,
    state: entry.state,
    stateChangedAt: entry.stateChangedAt,
    priorityValue: entry.priorityValue,
  });
  snapshot.order.forEach((id, index) => {
    const entry = snapshot.entries[id];
    if (!entry) return;
    const run = entry.runId ? runById.get(entry.runId) : undefined;
    const localization = localizing.get(id) ?? null;
    const waiting = entry.waiting ?? null;
    let eta: number | null = null;
    let start: number | null = null;
    if (entry.state === "tests_passed") eta = now;
    else if (entry.state === "testing" && run) eta = run.estimatedEndAt;
    else if (entry.state === "pending" && typicalRunMs !== null) {
      const wave = Math.floor(pendingSeen / slotSize);
      start = (inFlightEnd ?? now) + wave * typicalRunMs;
      eta = start + typicalRunMs;
      pendingSeen += 1;
    }
    if (paused) {
      eta = null;
      start = null;
    }
    if (eta !== null) {
      eta = Math.max(eta, floor);
      floor = eta;
    }
    let waitsFor: BoardWait | null = null;
    if (entry.state === "pending" && waiting === null && localization === null) {
      if (paused) waitsFor = { kind: "paused" };
      else if (mainInFlight >= concurrency) {
        waitsFor = { kind: "free_slot", runsInFlight: mainInFlight, concurrency };
      }
    }
    entries.push({
      ...shownOf(id, entry),
      position: index + 1,
      runId: entry.runId,
      waiting,
      waitsFor,
      localization,
      expectedStartAt: start,
      estimatedMergeAt: eta,
      noEstimate:
        eta !== null
          ? null
          : paused
            ? "paused"
            : entry.state === "pending_failure"
              ? "outcome_open"
              : "no_history",
    });
  });
  for (const id of snapshot.notReady) {
    const entry = snapshot.entries[id];
    if (!entry) continue;
    entries.push({
      ...shownOf(id, entry),
      position: null,
      runId: null,
      waiting: null,
      waitsFor: null,
      localization: null,
      expectedStartAt: null,
      estimatedMergeAt: null,
      noEstimate: "not_ready",
    });
  }
  return { entries, runs, bisections };
}
