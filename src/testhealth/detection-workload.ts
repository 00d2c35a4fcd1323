/**
 * Seeded CI histories with known truth (healthy, flaky, broken on main, on a variant or on a pull
 * request's branch, fixed later), for `bench:detection`: shard jobs on main, pull requests and the
 * merge queue, re-runs, retries inside uploads, outages. Deterministic for a seed: no clock, no
 * Math.random.
 */
import { randomHex, seededRandom } from "../lib/seeded-random.js";
import { HOUR_MS as HOUR, MINUTE_MS as MINUTE } from "../lib/time.js";

export interface DetectionWorkloadOptions {
  seed: number;
  tests: number;
  days: number;
  ciRunsPerDay: number;
  /** Shard jobs per CI run; each uploads its own report. */
  shards: number;
  startAt: number;
  /** Flake probabilities the flaky tests are spread over. */
  flakeRates: readonly number[];
  /** Share of tests of each kind (the rest are healthy). */
  shares: {
    flaky: number;
    broken: number;
    regression: number;
    variantBroken: number;
    branchBroken: number;
  };
  branchMix: { main: number; pullRequest: number; mergeQueue: number };
  /** Chance that a failed job is re-run on the same commit (at most `maxReruns` times). */
  rerunChance: number;
  maxReruns: number;
  /** Chance that one upload is an infrastructure outage. */
  outageRate: number;
  /**
   * Share of merge-queue runs tested and uploaded by another CI system on GitHub's queue branches
   * (`gh-readonly-queue/…`), whose failures the classifier counts like any other; the rest come
   * from Mainline's own runner, whose failures the queue judges. Spread evenly over the queue's
   * runs without drawing random numbers, so that it changes no other part of the history.
   */
  externalQueueShare?: number;
}

export const DETECTION_WORKLOAD: Readonly<Omit<DetectionWorkloadOptions, "seed" | "startAt">> =
  Object.freeze({
    tests: 2000,
    days: 14,
    ciRunsPerDay: 200,
    shards: 4,
    flakeRates: [0.01, 0.02, 0.05, 0.1, 0.2, 0.3],
    shares: {
      flaky: 0.06,
      broken: 0.005,
      regression: 0.01,
      variantBroken: 0.003,
      branchBroken: 0.01,
    },
    branchMix: { main: 0.3, pullRequest: 0.5, mergeQueue: 0.2 },
    rerunChance: 0.7,
    maxReruns: 2,
    outageRate: 0.005,
    externalQueueShare: 0,
  });

/** The variants: every shard runs on the first, the first shard also on the second. */
export const VARIANTS = ["linux", "windows"] as const;
export type Variant = (typeof VARIANTS)[number];
/** Client version of the merge queue's uploads: Mainline's built-in CI runner. */
export const QUEUE_CLIENT = "mainline-ci 1.0.0";
export const EXTERNAL_CLIENT = "trunk-analytics-cli 0.7.8";

export type DetectionTruth =
  | { kind: "healthy" }
  | { kind: "flaky"; rate: number }
  | { kind: "broken"; since: number }
  | { kind: "regression"; since: number; until: number }
  | { kind: "variant-broken"; since: number; variant: Variant }
  | { kind: "branch-broken"; pr: number; since: number; until: number };

export interface DetectionTest {
  name: string;
  classname: string;
  file: string;
  shard: number;
  truth: DetectionTruth;
}

export interface DetectionCase {
  test: number;
  /** Outcome of each attempt in order; more than one when the job retried it in the upload. */
  attempts: ("passed" | "failed")[];
}

export interface DetectionUpload {
  /** When its CI run started: uploads come in this order (re-runs and shards end later). */
  startedAt: number;
  at: number;
  commit: string;
  branch: string;
  prNumber: number | null;
  variant: Variant;
  job: string;
  clientVersion: string;
  kind: "main" | "pr" | "mq";
  attempt: number;
  outage: boolean;
  /** The merge-queue run tests a pull request that broke a test (the queue convicts it). */
  convicted: boolean;
  cases: DetectionCase[];
}

export interface DetectionWorkload {
  options: DetectionWorkloadOptions;
  tests: DetectionTest[];
  endAt: number;
  uploads(): Generator<DetectionUpload>;
}

/** Pull requests open at once; each CI run on a PR picks one of them. */
const OPEN_PULL_REQUESTS = 40;
const FIRST_PR = 1000;

function makeTests(options: DetectionWorkloadOptions, next: () => number): DetectionTest[] {
  const endAt = options.startAt + options.days * 24 * HOUR;
  const span = endAt - options.startAt;
  // Breakage lands after the first day, so the history starts with healthy runs.
  const sometime = () => options.startAt + 24 * HOUR + Math.floor(next() * (span - 48 * HOUR));
  const { flaky, broken, regression, variantBroken, branchBroken } = options.shares;
  const perShard = Math.ceil(options.tests / options.shards);
  return Array.from({ length: options.tests }, (_, i) => {
    const shard = Math.floor(i / perShard);
    const module = `module${Math.floor(i / 50)}`;
    const draw = next();
    let truth: DetectionTruth = { kind: "healthy" };
    let edge = flaky;
    if (draw < edge) {
      const rate = options.flakeRates[Math.floor(next() * options.flakeRates.length)] ?? 0.1;
      truth = { kind: "flaky", rate };
    } else if (draw < (edge += broken)) {
      truth = { kind: "broken", since: sometime() };
    } else if (draw < (edge += regression)) {
      const since = sometime();
      truth = { kind: "regression", since, until: since + (2 + Math.floor(next() * 28)) * HOUR };
    } else if (draw < (edge += variantBroken) && shard === 0) {
      truth = { kind: "variant-broken", since: sometime(), variant: "windows" };
    } else if (draw < edge + branchBroken) {
      const since = sometime();
      truth = {
        kind: "branch-broken",
        pr: FIRST_PR + Math.floor(next() * 100_000),
        since,
        until: since + (3 + Math.floor(next() * 20)) * HOUR,
      };
    }
    return {
      name: `test_case_${i}`,
      classname: `tests.${module}.Test${Math.floor(i / 10)}`,
      file: `tests/${module}/test_${Math.floor(i / 10)}.py`,
      shard,
      truth,
    };
  });
}

/** Whether a test fails for reasons other than flakiness in this run. */
function brokenIn(
  truth: DetectionTruth,
  at: number,
  variant: Variant,
  prNumber: number | null,
  convictedTests: ReadonlySet<number>,
  test: number,
): boolean {
  switch (truth.kind) {
    case "broken":
      return at >= truth.since;
    case "regression":
      return at >= truth.since && at < truth.until;
    case "variant-broken":
      return at >= truth.since && variant === truth.variant;
    case "branch-broken":
      return (
        (prNumber === truth.pr && at >= truth.since && at < truth.until) || convictedTests.has(test)
      );
    default:
      return false;
  }
}

const FAILURES = [
  "AssertionError: expected 200 to equal 500",
  "TimeoutError: operation timed out after 5000 ms",
  "Error: connect ECONNREFUSED 127.0.0.1:5432",
  "expected element #submit to be visible",
];
export const failureMessage = (test: number): string =>
  FAILURES[test % FAILURES.length] ?? "failed";

export function generateDetectionWorkload(options: DetectionWorkloadOptions): DetectionWorkload {
  const tests = makeTests(options, seededRandom(options.seed));
  const endAt = options.startAt + options.days * 24 * HOUR;
  const spacing = Math.floor((24 * HOUR) / options.ciRunsPerDay);
  const branchBroken = tests
    .map((test, index) => ({ test, index }))
    .filter(({ test }) => test.truth.kind === "branch-broken");
  return {
    options,
    tests,
    endAt,
    *uploads() {
      const next = seededRandom(options.seed ^ 0x5bd1e995);
      let mergeQueueRun = 0;
      /** Broken PRs that entered the queue (once each: convicted, they leave it). */
      const queued = new Set<number>();
      /** Speculative queue runs stacked on a convicted PR fail too, until the queue evicts it. */
      let stacked: { tests: Set<number>; runs: number } | null = null;
      for (let startedAt = options.startAt; startedAt < endAt - HOUR; startedAt += spacing) {
        const draw = next();
        const { main, pullRequest } = options.branchMix;
        const kind = draw < main ? "main" : draw < main + pullRequest ? "pr" : "mq";
        const pool = FIRST_PR + Math.floor((startedAt - options.startAt) / (6 * HOUR));
        let prNumber = kind === "pr" ? pool + Math.floor(next() * OPEN_PULL_REQUESTS) : null;
        let convictedTests = new Set<number>();
        let convicted = false;
        if (kind === "pr") {
          // A PR that broke a test pushes while it is broken: its CI runs show the failure.
          const open = branchBroken.filter(
            ({ test }) =>
              test.truth.kind === "branch-broken" &&
              startedAt >= test.truth.since &&
              startedAt < test.truth.until,
          );
          const pick =
            open.length > 0 && next() < 0.3 ? open[Math.floor(next() * open.length)] : undefined;
          if (pick && pick.test.truth.kind === "branch-broken") prNumber = pick.test.truth.pr;
        }
        let branch = kind === "main" ? "main" : `feature/pr-${String(prNumber)}`;
        let external = kind !== "mq";
        if (kind === "mq") {
          mergeQueueRun += 1;
          const share = options.externalQueueShare ?? 0;
          external = Math.floor(mergeQueueRun * share) !== Math.floor((mergeQueueRun - 1) * share);
          branch = external
            ? `gh-readonly-queue/main/run-${String(mergeQueueRun)}`
            : `mainline-merge/main/run-${String(mergeQueueRun)}`;
          if (stacked && stacked.runs > 0) {
            convictedTests = stacked.tests;
            convicted = true;
            stacked.runs -= 1;
          } else {
            stacked = null;
            // A broken PR enters the queue once, while broken: its run fails and the one or two
            // runs stacked on it fail too, then the queue convicts it and evicts it.
            const entering = branchBroken.filter(
              ({ test }) =>
                test.truth.kind === "branch-broken" &&
                startedAt >= test.truth.since &&
                startedAt < test.truth.until,
            );
            const pick = entering.find(({ index }) => !queued.has(index));
            if (pick) {
              queued.add(pick.index);
              convictedTests = new Set([pick.index]);
              convicted = true;
              stacked = { tests: convictedTests, runs: 1 + Math.floor(next() * 2) };
            }
          }
        }
        const commit = randomHex(next, 40);
        const variants: Variant[] = ["linux", "windows"];
        for (let shard = 0; shard < options.shards; shard++) {
          for (const variant of variants) {
            if (variant !== "linux" && shard !== 0) continue;
            const members = tests
              .map((test, index) => ({ test, index }))
              .filter(({ test }) => test.shard === shard);
            const retriesInside = shard === options.shards - 1 && options.shards > 1;
            for (let attempt = 1; attempt <= options.maxReruns + 1; attempt++) {
              const at = startedAt + (attempt - 1) * 20 * MINUTE + shard * MINUTE;
              const outage = next() < options.outageRate;
              const cases: DetectionCase[] = members.map(({ test, index }) => {
                const attempts: ("passed" | "failed")[] = [];
                // Breakage comes with commits: every attempt on this commit sees the same code.
                const broken = brokenIn(
                  test.truth,
                  startedAt,
                  variant,
                  prNumber,
                  convictedTests,
                  index,
                );
                for (let retry = 0; retry < (retriesInside ? 3 : 1); retry++) {
                  const failed =
                    (outage && next() < 0.95) ||
                    broken ||
                    (test.truth.kind === "flaky" && next() < test.truth.rate);
                  attempts.push(failed ? "failed" : "passed");
                  if (!failed) break;
                }
                return { test: index, attempts };
              });
              yield {
                startedAt,
                at,
                commit,
                branch,
                prNumber: kind === "main" ? null : prNumber,
                variant,
                job: `test (${variant}, shard ${String(shard + 1)}/${String(options.shards)})`,
                clientVersion: external ? EXTERNAL_CLIENT : QUEUE_CLIENT,
                kind,
                attempt,
                outage,
                convicted,
                cases,
              };
              const failed = cases.some((c) => c.attempts.at(-1) === "failed");
              // A queue does not re-run a failed run: it bisects and convicts.
              if (!failed || kind === "mq" || next() >= options.rerunChance) break;
            }
          }
        }
      }
    },
  };
}

const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/**
 * One upload as a JUnit report: pytest-style records; a test retried inside the upload carries
 * `flakyFailure` elements when a retry passed and `rerunFailure` elements when none did
 * (Maven Surefire's shape).
 */
export function renderDetectionJunit(
  tests: readonly DetectionTest[],
  upload: DetectionUpload,
): string {
  const timestamp = new Date(upload.at).toISOString();
  const parts = ['<?xml version="1.0" encoding="utf-8"?>', "<testsuites>"];
  const failures = upload.cases.filter((c) => c.attempts.at(-1) === "failed").length;
  parts.push(
    `<testsuite name="tests" tests="${String(upload.cases.length)}" failures="${String(failures)}" timestamp="${timestamp}">`,
  );
  for (const item of upload.cases) {
    const test = tests[item.test];
    if (!test) continue;
    const attributes = `classname="${escapeXml(test.classname)}" name="${escapeXml(test.name)}" file="${escapeXml(test.file)}" time="0.1"`;
    const message = escapeXml(failureMessage(item.test));
    const last = item.attempts.at(-1);
    const earlier = item.attempts.slice(0, -1);
    if (last === "passed" && earlier.length === 0) {
      parts.push(`<testcase ${attributes}/>`);
    } else if (last === "passed") {
      const flaky = earlier
        .map(() => `<flakyFailure message="${message}" type="AssertionError"/>`)
        .join("");
      parts.push(`<testcase ${attributes}>${flaky}</testcase>`);
    } else {
      const reruns = earlier
        .map(() => `<rerunFailure message="${message}" type="AssertionError"/>`)
        .join("");
      parts.push(
        `<testcase ${attributes}><failure message="${message}">${message}\n    at ${escapeXml(test.file)}:42</failure>${reruns}</testcase>`,
      );
    }
  }
  parts.push("</testsuite>", "</testsuites>");
  return parts.join("\n");
}
