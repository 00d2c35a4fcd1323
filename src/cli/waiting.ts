/** What a waiting pull request waits for, as the CLI words it: times on the local clock. */
import { WAITING_KINDS, describeWaiting, type WaitingKind } from "../mergequeue/waiting.js";

/** The API's `waitingFor` of a pull request. */
export interface WaitingForBody {
  reason: string;
  message: string;
  until?: string;
  batch?: { have: number; need: number };
  prNumbers?: number[];
  runId?: string;
}

const pad2 = (n: number) => String(n).padStart(2, "0");

/** A time on the local clock: `15:19`, with the date when it is not today. */
export function localClockTime(epochMs: number, now = Date.now()): string {
  const at = new Date(epochMs);
  const time = `${pad2(at.getHours())}:${pad2(at.getMinutes())}`;
  if (at.toDateString() === new Date(now).toDateString()) return time;
  return `${String(at.getFullYear())}-${pad2(at.getMonth() + 1)}-${pad2(at.getDate())} ${time}`;
}

/** The reasons the CLI words itself (the others carry no time: the server's words do). */
const worded = (reason: string): reason is Exclude<WaitingKind, "under_localization"> =>
  reason !== "under_localization" && (WAITING_KINDS as readonly string[]).includes(reason);

/**
 * "batch forming: 1 of 3, starts by 15:19 at the latest", in local time; a localization, or a
 * reason this CLI does not know, is shown as the server words it.
 */
export function describeWaitingFor(waiting: WaitingForBody, now = Date.now()): string {
  if (!worded(waiting.reason)) return waiting.message;
  const until = waiting.until === undefined ? Number.NaN : Date.parse(waiting.until);
  return describeWaiting(
    {
      reason: waiting.reason,
      ...(Number.isNaN(until) ? {} : { until }),
      ...(waiting.batch ? { batch: waiting.batch } : {}),
      ...(waiting.prNumbers ? { prNumbers: waiting.prNumbers } : {}),
    },
    (ms) => localClockTime(ms, now),
  );
}
