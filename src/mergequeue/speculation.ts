/**
 * How likely a speculative run is to be used: the queue's recent failure rate per pull request,
 * learnt from the verdicts of its own runs, and the chance that everything still being tested ahead
 * of a new run passes (ADR 0012). Pure; the record lives in the queue's snapshot.
 */

/** Decayed counts of the queue's verdicts on the units (PRs or batches) it tested. */
export interface VerdictRecord {
  /** Units that got a verdict: a passed run, or a failure that stood. */
  units: number;
  /** The pull requests in those units. */
  prs: number;
  /** Units whose failure stood: evicted, or sent to bisection. */
  failed: number;
}

export const NO_VERDICTS: Readonly<VerdictRecord> = Object.freeze({ units: 0, prs: 0, failed: 0 });

/** Each verdict weighs this much less than the one after it: about the last 100 count. */
const DECAY = 0.99;

/**
 * Units that count as passed before any verdict: a new queue speculates fully (as with the
 * setting off), and its first failures move the estimate gently.
 */
const PRIOR_PASSED_UNITS = 10;

export function recordVerdict(record: VerdictRecord, prs: number, failed: boolean): VerdictRecord {
  return {
    units: record.units * DECAY + 1,
    prs: record.prs * DECAY + prs,
    failed: record.failed * DECAY + (failed ? 1 : 0),
  };
}

/**
 * The estimated chance that one pull request fails its queue run. A unit of `s` pull requests
 * fails when any of them does, with 1 − (1 − p)^s; the estimate inverts that for the mean unit
 * size, so batches and single pull requests give the same `p`.
 */
export function estimatedFailureRate(record: VerdictRecord): number {
  if (record.failed <= 0) return 0;
  const unitRate = Math.min(1, record.failed / (record.units + PRIOR_PASSED_UNITS));
  const meanSize = record.units > 0 ? Math.max(1, record.prs / record.units) : 1;
  return 1 - (1 - unitRate) ** (1 / meanSize);
}

/** The chance that `prsAhead` pull requests still being tested all pass. */
export function passChance(failureRate: number, prsAhead: number): number {
  if (prsAhead <= 0) return 1;
  return (1 - failureRate) ** prsAhead;
}

/**
 * Whether a run with `prsAhead` untested pull requests ahead of it is worth starting under
 * `speculationThresholdPercent` (0: always, as in Trunk).
 */
export function worthSpeculating(
  thresholdPercent: number,
  record: VerdictRecord,
  prsAhead: number,
): boolean {
  if (thresholdPercent <= 0 || prsAhead <= 0) return true;
  return passChance(estimatedFailureRate(record), prsAhead) * 100 >= thresholdPercent;
}
