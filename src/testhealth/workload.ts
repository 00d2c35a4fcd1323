/**
 * A seeded generator of realistic CI test results (background §test-health-1.14): tests with a
 * latent truth (healthy, flaky, broken from some time on), CI runs on main, pull requests and
 * merge-queue branches, re-runs and infrastructure outages. Used by benchmarks and end-to-end
 * tests; deterministic for a seed (no Math.random, no clock).
 */
import { randomHex, seededRandom } from "../lib/seeded-random.js";
import { MINUTE_MS } from "../lib/time.js";

export interface WorkloadOptions {
  seed: number;
  tests: number;
  /** Simulated CI runs (uploads before re-runs). */
  runs: number;
  startAt: number;
  /** Time between two CI runs, ms. */
  runSpacingMs: number;
  flakyShare: number;
  brokenShare: number;
  flakeProbabilities: readonly number[];
  branchMix: { main: number; pullRequest: number; mergeQueue: number };
  /** A failed job is re-run on the same commit up to this many times. */
  maxReruns: number;
  /** Probability that a run is an infrastructure outage (most tests fail). */
  outageRate: number;
}

export const DEFAULT_WORKLOAD: Readonly<Omit<WorkloadOptions, "seed" | "startAt">> = Object.freeze({
  tests: 1000,
  runs: 100,
  runSpacingMs: 15 * MINUTE_MS,
  flakyShare: 0.05,
  brokenShare: 0.01,
  flakeProbabilities: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5],
  branchMix: { main: 0.3, pullRequest: 0.5, mergeQueue: 0.2 },
  maxReruns: 2,
  outageRate: 0.01,
});

export type TestTruth =
  | { kind: "healthy" }
  | { kind: "flaky"; failProbability: number }
  | { kind: "broken"; since: number };

export interface GeneratedTest {
  suite: string;
  classname: string;
  name: string;
  file: string;
  truth: TestTruth;
}

export interface GeneratedResult {
  test: number;
  status: "passed" | "failed" | "skipped";
  durationMs: number;
  message: string | null;
}

export interface GeneratedUpload {
  at: number;
  commit: string;
  branch: string;
  prNumber: number | null;
  job: string;
  /** 1 for the first run of a commit's job, 2.. for re-runs. */
  attempt: number;
  outage: boolean;
  results: GeneratedResult[];
}

export interface Workload {
  tests: GeneratedTest[];
  uploads(): Generator<GeneratedUpload>;
}

const FAILURES = [
  "AssertionError: expected 200 to equal 500",
  "TimeoutError: operation timed out after 5000 ms",
  "Error: connect ECONNREFUSED 127.0.0.1:5432",
  "expected element #submit to be visible",
];

function makeTests(options: WorkloadOptions, next: () => number): GeneratedTest[] {
  const end = options.startAt + options.runs * options.runSpacingMs;
  return Array.from({ length: options.tests }, (_, i) => {
    const module = `module${Math.floor(i / 50)}`;
    const draw = next();
    let truth: TestTruth = { kind: "healthy" };
    if (draw < options.brokenShare) {
      truth = {
        kind: "broken",
        since: options.startAt + Math.floor(next() * (end - options.startAt)),
      };
    } else if (draw < options.brokenShare + options.flakyShare) {
      const p = options.flakeProbabilities[Math.floor(next() * options.flakeProbabilities.length)];
      truth = { kind: "flaky", failProbability: p ?? 0.1 };
    }
    return {
      suite: `tests.${module}`,
      classname: `tests.${module}.Test${Math.floor(i / 10)}`,
      name: `test_case_${i}`,
      file: `tests/${module}/test_${Math.floor(i / 10)}.py`,
      truth,
    };
  });
}

function outcome(test: GeneratedTest, at: number, outage: boolean, next: () => number) {
  const failed =
    (outage && next() < 0.95) ||
    (test.truth.kind === "broken" && at >= test.truth.since) ||
    (test.truth.kind === "flaky" && next() < test.truth.failProbability);
  return failed;
}

export function generateWorkload(options: WorkloadOptions): Workload {
  const tests = makeTests(options, seededRandom(options.seed));
  return {
    tests,
    *uploads() {
      const next = seededRandom(options.seed ^ 0x5bd1e995);
      let pr = 100;
      for (let run = 0; run < options.runs; run++) {
        const startedAt = options.startAt + run * options.runSpacingMs;
        const draw = next();
        const { main, pullRequest } = options.branchMix;
        const kind = draw < main ? "main" : draw < main + pullRequest ? "pr" : "mq";
        const prNumber = kind === "pr" ? pr + Math.floor(next() * 20) : null;
        if (kind === "pr" && next() < 0.1) pr += 1;
        const branch =
          kind === "main"
            ? "main"
            : kind === "pr"
              ? `feature/pr-${prNumber}`
              : `trunk-merge/main/${run}`;
        const commit = randomHex(next, 40);
        const outage = next() < options.outageRate;
        for (let attempt = 1; attempt <= options.maxReruns + 1; attempt++) {
          const at = startedAt + (attempt - 1) * MINUTE_MS;
          const results: GeneratedResult[] = tests.map((test, index) => {
            const failed = outcome(test, at, outage && attempt === 1, next);
            return {
              test: index,
              status: failed ? "failed" : "passed",
              durationMs: Math.floor(next() * 2000),
              message: failed ? (FAILURES[index % FAILURES.length] ?? "failed") : null,
            };
          });
          yield {
            at,
            commit,
            branch,
            prNumber,
            job: `ci/test (${kind})`,
            attempt,
            outage: outage && attempt === 1,
            results,
          };
          if (!results.some((r) => r.status === "failed")) break;
        }
      }
    },
  };
}

const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** One upload as a pytest-style JUnit report (one suite per module, `file` attributes). */
export function renderJunit(tests: readonly GeneratedTest[], upload: GeneratedUpload): string {
  const bySuite = new Map<string, GeneratedResult[]>();
  for (const result of upload.results) {
    const suite = tests[result.test]?.suite ?? "tests";
    const list = bySuite.get(suite) ?? [];
    list.push(result);
    bySuite.set(suite, list);
  }
  const timestamp = new Date(upload.at).toISOString();
  const parts = ['<?xml version="1.0" encoding="utf-8"?>', "<testsuites>"];
  for (const [suite, results] of bySuite) {
    const failures = results.filter((r) => r.status === "failed").length;
    parts.push(
      `<testsuite name="${escapeXml(suite)}" tests="${results.length}" failures="${failures}" timestamp="${timestamp}">`,
    );
    for (const result of results) {
      const test = tests[result.test];
      if (!test) continue;
      const attributes = `classname="${escapeXml(test.classname)}" name="${escapeXml(test.name)}" file="${escapeXml(test.file)}" time="${(result.durationMs / 1000).toFixed(3)}"`;
      if (result.status === "passed") parts.push(`<testcase ${attributes}/>`);
      else if (result.status === "skipped")
        parts.push(`<testcase ${attributes}><skipped/></testcase>`);
      else {
        const message = escapeXml(result.message ?? "failed");
        parts.push(
          `<testcase ${attributes}><failure message="${message}">${message}\n    at ${escapeXml(test.file)}:42</failure></testcase>`,
        );
      }
    }
    parts.push("</testsuite>");
  }
  parts.push("</testsuites>");
  return parts.join("\n");
}
