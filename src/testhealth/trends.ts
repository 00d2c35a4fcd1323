/**
 * Daily counts of flaky and broken tests, rebuilt backwards from today's counts and the status
 * changes of the window (pure: the dashboard's 30-day trends). The count of a day is the number
 * of tests in that status at the end of the day (UTC); the last day is today, up to now.
 */
import { DAY_MS } from "../lib/time.js";
import type { HealthStatus } from "./monitors.js";

/** One status change of a test: what it became at `at`, and what it was before (null: new). */
export interface StatusChange {
  repositoryId: string;
  at: number;
  status: string;
  previous: string | null;
}

export interface StatusCounts {
  flaky: number;
  broken: number;
}

export interface DailyStatusCounts extends StatusCounts {
  /** Start of the UTC day, epoch ms. */
  day: number;
}

const TRACKED: readonly (HealthStatus & keyof StatusCounts)[] = ["flaky", "broken"];

/** The start of the UTC day `at` falls in. */
export function utcDay(at: number): number {
  return Math.floor(at / DAY_MS) * DAY_MS;
}

/**
 * `days` daily counts, oldest first, ending with today. `current` are the counts now; each change
 * after a day's end is undone to get that day's counts (a change at `at` moved one test from
 * `previous`, or healthy when new, to `status`). Counts never go below zero: a change whose test
 * was since deleted cannot be undone exactly.
 */
export function dailyStatusCounts(
  current: StatusCounts,
  changes: readonly Pick<StatusChange, "at" | "status" | "previous">[],
  days: number,
  now: number,
): DailyStatusCounts[] {
  const today = utcDay(now);
  const first = today - (days - 1) * DAY_MS;
  // Net change per day (how a day's changes moved each count), for the days of the window.
  const delta = new Map<number, StatusCounts>();
  for (const change of changes) {
    if (change.at > now) continue;
    const day = utcDay(change.at);
    let d = delta.get(day);
    if (!d) delta.set(day, (d = { flaky: 0, broken: 0 }));
    for (const status of TRACKED) {
      if (change.status === status) d[status] += 1;
      if ((change.previous ?? "healthy") === status) d[status] -= 1;
    }
  }
  const result: DailyStatusCounts[] = [];
  const running: StatusCounts = { ...current };
  for (let day = today; day >= first; day -= DAY_MS) {
    result.push({
      day,
      flaky: Math.max(0, running.flaky),
      broken: Math.max(0, running.broken),
    });
    const d = delta.get(day);
    if (d) {
      running.flaky -= d.flaky;
      running.broken -= d.broken;
    }
  }
  return result.reverse();
}
