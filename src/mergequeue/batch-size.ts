/**
 * The batch size a batching queue uses: the one that maximizes expected merges per CI time at
 * the queue's own estimated failure rate (the estimate `speculationThresholdPercent` uses), from
 * one up to `batchingMinSize` as the ceiling (ADR 0034). Pure.
 *
 * A lane of C runs of b pull requests is at best a one-at-a-time lane of depth C·b, merging
 * S(p, C·b) = (1 − p)(1 − (1 − p)^(C·b)) / p per CI time; each round in which a batch fails costs
 * about L more for localizing its culprit (one round of prefixes, shortened by fail-first and
 * the presumption window), so b > 1 earns S(p, C·b) / (1 + L·F), F = 1 − (1 − p)^(C·b), and
 * b = 1 earns S(p, C). L = 0.75 is where the simulator's measurements sit (bench:merge-queue).
 */
import type { QueueConfiguration } from "./settings.js";
import { estimatedFailureRate, type VerdictRecord } from "./speculation.js";

/** Extra CI rounds a failed batch costs, as measured with one-round localization. */
export const LOCALIZATION_ROUNDS = 0.75;

/** Expected merges per CI time of a lane of `concurrency` runs of `size` pull requests. */
export function mergesPerRound(failureRate: number, concurrency: number, size: number): number {
  const depth = concurrency * size;
  if (failureRate <= 0) return depth;
  const failing = -Math.expm1(depth * Math.log1p(-failureRate));
  const served = ((1 - failureRate) * failing) / failureRate;
  return size <= 1 ? served : served / (1 + LOCALIZATION_ROUNDS * failing);
}

/** The size from 1 to `ceiling` with the most expected merges (the larger on a tie). */
export function bestBatchSize(failureRate: number, concurrency: number, ceiling: number): number {
  let best = 1;
  let bestRate = mergesPerRound(failureRate, concurrency, 1);
  for (let size = 2; size <= ceiling; size++) {
    const rate = mergesPerRound(failureRate, concurrency, size);
    if (rate >= bestRate) {
      best = size;
      bestRate = rate;
    }
  }
  return best;
}

export interface BatchSizeChoice {
  /** The size the queue forms batches of now. */
  size: number;
  /** `batchingMinSize`: the most it uses. */
  ceiling: number;
  /** The queue's estimated chance that one pull request fails its run. */
  estimatedFailureRate: number;
  /** Why, in words. */
  reason: string;
}

/** The batch size a queue with this configuration and these verdicts uses, and why. */
export function batchSizeChoice(
  configuration: Pick<QueueConfiguration, "batch" | "batchingMinSize" | "concurrency">,
  verdicts: VerdictRecord,
): BatchSizeChoice {
  const ceiling = Math.max(1, configuration.batchingMinSize);
  const rate = estimatedFailureRate(verdicts);
  if (!configuration.batch) {
    return { size: 1, ceiling, estimatedFailureRate: rate, reason: "batching is off" };
  }
  const size = bestBatchSize(rate, Math.max(1, configuration.concurrency), ceiling);
  const reason = whySize(size, ceiling, rate);
  return { size, ceiling, estimatedFailureRate: rate, reason };
}

/** Why `bestBatchSize` chose `size`, in words. */
function whySize(size: number, ceiling: number, rate: number): string {
  if (ceiling === 1) return "batchingMinSize is 1: one pull request at a time";
  if (rate === 0) {
    return `no failure has stood in the queue's recent runs: batches of ${size}, the most batchingMinSize allows`;
  }
  const percent = `${Math.round(rate * 1000) / 10} %`;
  if (size === ceiling) {
    return `batches of ${size} (the most batchingMinSize allows) merge the most at a ${percent} failure rate`;
  }
  if (size === 1) {
    return `at a ${percent} failure rate, testing one pull request at a time merges more than batches`;
  }
  return `at a ${percent} failure rate, batches of ${size} merge more than larger ones`;
}
