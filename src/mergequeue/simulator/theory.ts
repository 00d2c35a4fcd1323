/**
 * The throughput model of background §merge-queue-5.2 (a): one linear speculative lane, where a
 * failure invalidates everything behind it. Per CI duration the queue merges b·S(q, C) pull
 * requests, S(q, C) = (1-q)(1-(1-q)^C)/q with q = 1-(1-p)^b; flakes count into p.
 */

/** The effective failure probability of a PR: a real failure or a flake. */
export function effectiveFailureRate(failureRate: number, flakeRate: number): number {
  return 1 - (1 - failureRate) * (1 - flakeRate);
}

/** Probability that a unit of `batchSize` PRs fails. */
export function unitFailureRate(p: number, batchSize: number): number {
  return 1 - Math.pow(1 - p, batchSize);
}

/** S(q, C): expected units merged per CI duration (C when nothing ever fails). */
export function unitsPerRound(q: number, concurrency: number): number {
  if (q <= 0) return concurrency;
  // 1-(1-q)^C without cancellation for tiny q.
  return ((1 - q) * -Math.expm1(concurrency * Math.log1p(-q))) / q;
}

/** Expected merged PRs per hour: b·S(q, C)·60/T. */
export function expectedMergesPerHour(input: {
  failureRate: number;
  batchSize: number;
  concurrency: number;
  ciMinutes: number;
}): number {
  const q = unitFailureRate(input.failureRate, input.batchSize);
  return (input.batchSize * unitsPerRound(q, input.concurrency) * 60) / input.ciMinutes;
}

/**
 * The single-lane ceiling as C → ∞: (1-p)/p merges per CI duration, per hour. Infinite when
 * nothing fails (then only concurrency and CI bound the queue).
 */
export function capMergesPerHour(failureRate: number, ciMinutes: number): number {
  if (failureRate <= 0) return Number.POSITIVE_INFINITY;
  return (((1 - failureRate) / failureRate) * 60) / ciMinutes;
}
