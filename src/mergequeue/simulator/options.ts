/**
 * What a simulation runs: the workload (pull requests, arrivals, CI) and the queue's settings,
 * the parsers of the `weight x value` distribution specs, and validation. The CLI and the
 * benchmark both build their options here, so both refuse the same nonsense in the same words.
 */
import { OPTIMIZATION_MODES, type OptimizationMode } from "../settings.js";
import { parsePriority } from "../model.js";

/** A discrete distribution: each value with its probability; the weights sum to 1. */
export type Distribution<T> = { weight: number; value: T }[];

/** How many targets a PR impacts: a count, or `ALL`. */
export type FanOut = number | "ALL";

export type Arrivals =
  /** Every PR submitted at time 0. */
  | { kind: "burst" }
  /** A Poisson process at `perHour`, after `backlog` PRs submitted at time 0. */
  | { kind: "poisson"; perHour: number; backlog?: number };

export interface SimulationOptions {
  prs: number;
  arrivals: Arrivals;
  ciMinutes: number;
  /** A run lasts T·(1 + jitter·U[-1, 1]). */
  ciJitter: number;
  /**
   * Fail-first: a localization run that fails ends after this fraction of its duration (it runs
   * the batch's failed tests first); 1: failing runs take as long as passing ones.
   */
  failFirstFraction: number;
  /** Probability that a PR is bad: every run that contains it fails. */
  failureRate: number;
  /** Probability that any run fails although nothing in it is bad. */
  flakeRate: number;
  /**
   * Flakes are known flaky tests: a run that failed only on them says so (`flakyOnly`), and a
   * rerun of the same combination does not flake again (a failure then a pass on the same tree).
   */
  flakesKnown: boolean;
  /** Probability that a PR edits the same lines as one of the few submitted just before it. */
  conflictRate: number;
  /** Probability that a PR is stacked on (built on the branch of) one submitted just before it. */
  stackRate: number;
  /** Conflicting pairs of PR numbers, in addition to those `conflictRate` draws (tests). */
  conflictPairs?: [number, number][];
  concurrency: number;
  batch: boolean;
  batchSize: number;
  batchWaitMinutes: number;
  bisectionConcurrency: number;
  pendingFailureDepth: number;
  optimistic: boolean;
  optimizationMode: OptimizationMode;
  /** Queue setting `speculationThresholdPercent` (Mainline's extension; 0: as Trunk). */
  speculationThresholdPercent: number;
  testingTimeoutMinutes: number;
  /** Priority values; null: every PR takes the default (medium). */
  priorities: Distribution<number> | null;
  /** Number of named targets the fan-out draws from. */
  targets: number;
  /** Impacted targets per PR; set: the queue runs in parallel mode. */
  targetsFanout: Distribution<FanOut> | null;
  seed: number;
  /** Virtual time after which the simulation stops; PRs still queued are `unfinished`. */
  maxHours: number;
}

export const SIMULATION_DEFAULTS = Object.freeze({
  ciJitter: 0,
  failFirstFraction: 1,
  flakeRate: 0,
  flakesKnown: false,
  conflictRate: 0,
  stackRate: 0,
  batchSize: 4,
  batchWaitMinutes: 5,
  bisectionConcurrency: 1,
  pendingFailureDepth: 0,
  optimizationMode: "off",
  speculationThresholdPercent: 0,
  targets: 4,
  maxHours: 30 * 24,
});

/** The queue's default testing timeout, raised to twice the longest CI run when that is longer. */
export function defaultTestingTimeoutMinutes(ciMinutes: number, ciJitter: number): number {
  return Math.max(60, Math.ceil(2 * ciMinutes * (1 + ciJitter)));
}

export class SimulationOptionError extends Error {}

function fail(message: string): never {
  throw new SimulationOptionError(message);
}

/**
 * Parses `0.75x1,0.15x2,0.01xALL`: comma-separated `<probability>x<value>`. The probabilities
 * must be positive and sum to 1 (within 0.001; they are then scaled to sum to exactly 1).
 */
export function parseDistribution<T>(
  flag: string,
  spec: string,
  parseValue: (text: string) => T | undefined,
  valueHelp: string,
): Distribution<T> {
  const parts = spec
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  if (parts.length === 0)
    fail(`${flag} needs at least one <probability>x<value>, e.g. 0.8x1,0.2x2.`);
  const rows: Distribution<T> = [];
  for (const part of parts) {
    const match = /^(\d*\.?\d+(?:e-?\d+)?)x(.+)$/i.exec(part);
    const weightText = match?.[1];
    const valueText = match?.[2];
    if (weightText === undefined || valueText === undefined) {
      fail(`${flag}: "${part}" is not <probability>x<value> (e.g. 0.75x1).`);
    }
    const weight = Number(weightText);
    if (!(weight > 0 && weight <= 1)) {
      fail(`${flag}: the probability in "${part}" must be above 0 and at most 1.`);
    }
    const value = parseValue(valueText.trim());
    if (value === undefined) fail(`${flag}: "${valueText}" in "${part}" is not ${valueHelp}.`);
    rows.push({ weight, value });
  }
  const total = rows.reduce((sum, row) => sum + row.weight, 0);
  if (Math.abs(total - 1) > 0.001) {
    fail(`${flag}: the probabilities sum to ${Number(total.toFixed(6))}, not 1.`);
  }
  return rows.map((row) => ({ weight: row.weight / total, value: row.value }));
}

export function parsePriorities(spec: string): Distribution<number> {
  return parseDistribution(
    "--priorities",
    spec,
    (text) => parsePriority(text),
    "a priority (0-255, urgent, high, medium or low)",
  );
}

export function parseFanOut(spec: string): Distribution<FanOut> {
  return parseDistribution<FanOut>(
    "--targets-fanout",
    spec,
    (text) => {
      if (text.toUpperCase() === "ALL") return "ALL";
      return /^\d{1,6}$/.test(text) ? Number(text) : undefined;
    },
    "a number of targets or ALL",
  );
}

/** Throws a SimulationOptionError naming the first option that makes no sense. */
export function validateOptions(o: SimulationOptions): void {
  const whole = (flag: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      fail(`${flag} takes a whole number from ${min} to ${max} (got ${value}).`);
    }
  };
  const fraction = (flag: string, value: number, maxExclusive = 1) => {
    if (!Number.isFinite(value) || value < 0 || value >= maxExclusive) {
      fail(`${flag} takes a number from 0 up to (not including) ${maxExclusive} (got ${value}).`);
    }
  };
  const positive = (flag: string, value: number, max: number) => {
    if (!Number.isFinite(value) || value <= 0 || value > max) {
      fail(`${flag} takes a number above 0 and at most ${max} (got ${value}).`);
    }
  };
  whole("--prs", o.prs, 1, 1_000_000);
  if (o.arrivals.kind === "poisson") {
    positive("--arrivals-per-hour", o.arrivals.perHour, 1_000_000);
    if (o.arrivals.backlog !== undefined) whole("backlog", o.arrivals.backlog, 0, o.prs);
  }
  positive("--ci-minutes", o.ciMinutes, 10_000);
  fraction("--ci-jitter", o.ciJitter);
  positive("--fail-first-fraction", o.failFirstFraction, 1);
  fraction("--failure-rate", o.failureRate);
  fraction("--flake-rate", o.flakeRate);
  fraction("--conflict-rate", o.conflictRate);
  fraction("--stack-rate", o.stackRate);
  whole("--concurrency", o.concurrency, 1, 10_000);
  whole("--batch-size", o.batchSize, 1, 10_000);
  whole("--batch-wait-minutes", o.batchWaitMinutes, 0, 100_000);
  whole("--bisection-concurrency", o.bisectionConcurrency, 1, 10_000);
  whole("--pending-failure-depth", o.pendingFailureDepth, 0, 10_000);
  whole("--speculation-threshold-percent", o.speculationThresholdPercent, 0, 100);
  whole("--testing-timeout-minutes", o.testingTimeoutMinutes, 0, 1_000_000);
  if (!OPTIMIZATION_MODES.includes(o.optimizationMode)) {
    fail(`--optimization-mode takes ${OPTIMIZATION_MODES.join(" or ")}.`);
  }
  whole("--targets", o.targets, 1, 10_000);
  for (const row of o.targetsFanout ?? []) {
    if (row.value !== "ALL" && row.value > o.targets) {
      fail(`--targets-fanout names ${row.value} targets per PR, but --targets is ${o.targets}.`);
    }
  }
  whole("--seed", o.seed, 0);
  positive("--max-hours", o.maxHours, 24 * 365 * 10);
}
