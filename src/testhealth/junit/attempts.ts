/**
 * Repeated `<testcase>` records of one test in one file are attempts of it in one run;
 * `mergeRepeatedTestcases` folds them into one test case. A hollow record (no result, output or
 * properties; no or zero time: pytest-rerunfailures' failed attempt) is FAILED when a later record
 * failed or when it has no `time` and is not the last: never a fake pass-on-retry (ADR 0006).
 */
import type { AttemptKind, ParsedAttempt, ParsedTestCase } from "./types.js";

/** File, classname, outermost suite, name: the identity parts that a file can repeat. */
export function testIdentityKey(testCase: ParsedTestCase): string {
  return JSON.stringify([testCase.file ?? "", testCase.classname, testCase.parent, testCase.name]);
}

/**
 * Groups records by identity (first appearance decides the order of the output) and merges each
 * group. Pure; the input is not modified. Identity spans the file, so call it on all the cases of
 * one file (or one outermost suite: the suite name is part of the identity).
 */
export function mergeRepeatedTestcases(cases: readonly ParsedTestCase[]): ParsedTestCase[] {
  const groups = new Map<string, ParsedTestCase[]>();
  for (const testCase of cases) {
    const key = testIdentityKey(testCase);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [testCase]);
    else group.push(testCase);
  }
  return [...groups.values()].map(mergeGroup);
}

function mergeGroup(records: ParsedTestCase[]): ParsedTestCase {
  const [first] = records;
  if (first === undefined) throw new Error("empty identity group");
  if (records.length === 1) return first;
  const finals = records.map((record, index) => finalAttempt(record, records, index));
  const outcome = finals.at(-1)?.status ?? "passed";
  const attempts: ParsedAttempt[] = [];
  records.forEach((record, index) => {
    const last = index === records.length - 1;
    for (const attempt of record.attempts) {
      const own = attempt.kind === "final" ? (finals[index] ?? attempt) : attempt;
      attempts.push(last && attempt.kind === "final" ? own : asEarlierAttempt(own, outcome));
    }
  });
  return { ...first, attempts };
}

/** A record's own final attempt, or the failed attempt a hollow record stands for. */
function finalAttempt(
  record: ParsedTestCase,
  records: readonly ParsedTestCase[],
  index: number,
): ParsedAttempt | undefined {
  const attempt = record.attempts.at(-1);
  if (attempt === undefined || !isHollow(record)) return attempt;
  const later = records.slice(index + 1);
  const laterFailure = later.some((r) => r.attempts.at(-1)?.status === "failed" && !isHollow(r));
  const placeholder = attempt.durationMs === null && later.length > 0;
  return laterFailure || placeholder ? { ...attempt, status: "failed" } : attempt;
}

/** Only a `final` attempt is the test's outcome; earlier ones are flaky (it passed) or reruns. */
function asEarlierAttempt(attempt: ParsedAttempt, outcome: ParsedAttempt["status"]): ParsedAttempt {
  if (attempt.kind !== "final") return attempt;
  const kind: AttemptKind = outcome === "passed" ? "flaky" : "rerun";
  return { ...attempt, kind };
}

/** No result, retry or output elements, no properties, and no time or zero time. */
export function isHollow(record: ParsedTestCase): boolean {
  const [only, ...more] = record.attempts;
  if (only === undefined || more.length > 0) return false;
  return (
    only.status === "passed" &&
    only.systemOut === null &&
    only.systemErr === null &&
    record.properties === undefined &&
    (only.durationMs === null || only.durationMs === 0)
  );
}
