/** Time is injected everywhere so that domain logic and tests never read the wall clock directly. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** RFC 3339, UTC, milliseconds: how the API writes times. */
export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
