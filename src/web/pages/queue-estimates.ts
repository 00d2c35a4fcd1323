/**
 * The merge queue pages' estimates in words: what a queued pull request waits for and when it
 * should start, when it should merge (or why there is no estimate), and how far a run in flight
 * is against its expected duration. Every time is relative to the page's `now`.
 */
import type { BoardEntry, BoardRun, QueueBoard } from "../../mergequeue/dashboard.js";
import { describeWaiting } from "../../mergequeue/waiting.js";
import {
  clockTime as at,
  formatSpan as span,
  muted,
  plural,
  relativeTime as relative,
} from "../format.js";
import { markup, type SafeHtml } from "../html.js";

type Waits = Pick<BoardEntry, "waiting" | "waitsFor" | "localization" | "expectedStartAt">;

/**
 * The queue table's words on a pull request's wait, kept short (a row of 200): its part in a
 * localization, the planner's reason, or "waits for a free slot, starts in 3 min".
 */
export function rowWaitingText(entry: Waits, now: number): SafeHtml | string | undefined {
  const { waiting, waitsFor, localization, expectedStartAt } = entry;
  if (localization || waiting) return waitingText(entry, now);
  if (waitsFor?.kind === "paused") return "held: the queue is paused";
  if (expectedStartAt === null) return undefined;
  const start = relative(expectedStartAt, now);
  return waitsFor?.kind === "free_slot"
    ? markup`waits for a free slot, starts ${start}`
    : markup`starts ${start}`;
}

/** What a pull request waits for (or its part in a localization), and when it should start. */
export function waitingText(entry: Waits, now: number): SafeHtml | string | undefined {
  const { waiting, waitsFor, localization } = entry;
  if (localization) {
    const batch = `batch run ${localization.runId}`;
    if (localization.role === "presumed_culprit") return `presumed to fail ${batch}`;
    if (localization.role === "presumed_good")
      return `presumed good in the localization of ${batch}`;
    return `a suspect in the localization of ${batch}`;
  }
  // A batch forming says when it starts at the latest; any other wait gets the expected start.
  if (waiting?.kind === "batch_forming") {
    return markup`batch forming: ${waiting.have} of ${waiting.need}, starts ${relative(waiting.startsBy, now)} at the latest`;
  }
  const start =
    entry.expectedStartAt === null
      ? ""
      : markup`expected to start ${relative(entry.expectedStartAt, now)}`;
  let why: string | undefined;
  if (waiting) why = describeWaiting({ reason: waiting.kind, prNumbers: waiting.prNumbers });
  else if (waitsFor?.kind === "paused") why = "held while the queue is paused";
  else if (waitsFor?.kind === "free_slot") {
    why = `waiting for a free slot (${plural(waitsFor.runsInFlight, "run")} in flight, ${waitsFor.concurrency} at once)`;
  }
  if (why === undefined) return start === "" ? undefined : start;
  return start === "" ? why : markup`${why}; ${start}`;
}

/** The queue table's estimate: a time, or why there is none. */
export function mergeEstimate(entry: BoardEntry, now: number): SafeHtml {
  if (entry.estimatedMergeAt !== null) {
    return markup`${relative(entry.estimatedMergeAt, now)} <span class="muted">(${at(entry.estimatedMergeAt, now)})</span>`;
  }
  if (entry.noEstimate === "paused") return muted("paused: no estimate");
  if (entry.noEstimate === "no_history") return muted("no estimate yet");
  return muted("—");
}

/** The pull request page's place line: its estimated merge, or why there is none. */
export function placeEstimate(entry: BoardEntry, now: number): SafeHtml {
  if (entry.estimatedMergeAt !== null) {
    return markup` · estimated merge <strong>${relative(entry.estimatedMergeAt, now)}</strong> (${at(entry.estimatedMergeAt, now)})`;
  }
  if (entry.noEstimate === "paused") return markup` · Paused: no estimate`;
  if (entry.noEstimate === "no_history") {
    return markup` · no estimate yet (no finished run to estimate from)`;
  }
  return markup``;
}

/**
 * A run in flight: "started 12:04 UTC · running 12 min of about 8 min expected — 4 min over;
 * should end in 4 min (about 12:20 UTC)".
 */
export function runProgress(run: BoardRun, now: number): SafeHtml {
  const running = `running ${span(Math.max(0, now - run.startedAt))}`;
  const started = markup`started ${at(run.startedAt, now)}`;
  if (run.expectedMs === null || run.estimatedEndAt === null) {
    return markup`${started} · ${running}; no estimate yet`;
  }
  const over =
    run.overrunMs === null
      ? ""
      : markup` — <strong class="overrun">${span(run.overrunMs)} over</strong>`;
  const expected = run.expectedMs < 1000 ? "under a second" : `about ${span(run.expectedMs)}`;
  return markup`${started} · ${running} of ${expected} expected${over}; should end ${relative(run.estimatedEndAt, now)} (about ${at(run.estimatedEndAt, now)})`;
}

/** The state line's words on estimates: paused, nothing to estimate from, or a run's duration. */
export function estimateSummary(board: QueueBoard): string {
  const typical =
    board.typicalRunMs === null
      ? "no finished run yet to estimate from"
      : `a run takes ${board.typicalRunMs < 1000 ? "under a second" : `about ${span(board.typicalRunMs)}`} (median of the last ${plural(board.estimateSample, "run")})`;
  if (board.queue.configuration.state !== "paused") return typical;
  return `Paused: no estimate (nothing merges and no run starts until it resumes) · ${typical}`;
}
