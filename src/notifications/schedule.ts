/**
 * When a delivery is attempted: Svix's schedule by default (immediately, 5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h, 10 h, each after the previous failure), then it has failed. Configurable as a list of
 * durations (MAINLINE_WEBHOOKS_RETRY_SCHEDULE, e.g. `0,5s,5m,30m,2h,5h,10h,10h`).
 */
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from "../lib/time.js";

export const DEFAULT_RETRY_SCHEDULE: readonly number[] = [
  0,
  5 * SECOND_MS,
  5 * MINUTE_MS,
  30 * MINUTE_MS,
  2 * HOUR_MS,
  5 * HOUR_MS,
  10 * HOUR_MS,
  10 * HOUR_MS,
];

const UNITS: Record<string, number> = {
  ms: 1,
  s: SECOND_MS,
  m: MINUTE_MS,
  h: HOUR_MS,
  d: DAY_MS,
};

/** A duration such as `250ms`, `5s`, `30m`, `2h`, `5d` or `0`; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) return undefined;
  const [, amount = "", unit] = match;
  if (unit === undefined && amount !== "0") return undefined;
  return Number(amount) * (unit === undefined ? 1 : (UNITS[unit] ?? 1));
}

/**
 * A schedule of 1 to 20 comma-separated durations (the first is the wait before the first
 * attempt); a message naming what is wrong otherwise.
 */
export function parseSchedule(text: string): number[] | string {
  const parts = text.split(",");
  if (parts.length < 1 || parts.length > 20) return "must list 1 to 20 durations";
  const delays: number[] = [];
  for (const part of parts) {
    const delay = parseDuration(part);
    if (delay === undefined || delay > 7 * DAY_MS) {
      return `has "${part.trim().slice(0, 20)}", not a duration such as 0, 250ms, 5s, 5m, 2h or 1d (at most 7d)`;
    }
    delays.push(delay);
  }
  return delays;
}

/** The wait before attempt `attempts + 1` after `attempts` failed; undefined: none is left. */
export function nextDelay(schedule: readonly number[], attempts: number): number | undefined {
  return schedule[attempts];
}
