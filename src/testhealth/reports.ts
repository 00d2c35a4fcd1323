/**
 * Reads the JUnit reports before they are uploaded: test counts for the summary and the failed
 * tests for the quarantine lookup (with the ids the server gives them). Each file is streamed through the parser; only a compact copy
 * of each test case is kept (no output, no stack traces) so that repeated records can be merged.
 */
import { createReadStream } from "node:fs";
import {
  JunitParseError,
  mergeRepeatedTestcases,
  parseJunit,
  type ParsedTestCase,
} from "./junit/index.js";
import { testId } from "./identity.js";
import { repoRelativeFile } from "./report-paths.js";
import { type RepoRef, repoFullName } from "../organizations/repositories.js";

export interface TestCounts {
  passed: number;
  failed: number;
  skipped: number;
}

/** A test whose outcome in this run is a failure (its final attempt failed). */
export interface FailedTest {
  name: string;
  classname: string;
  parent: string;
  file: string | null;
  idAttribute: string | null;
  /** The failure's message (or type), shortened; null when the report gives none. */
  message: string | null;
}

export interface ReportSummary {
  counts: TestCounts;
  failed: FailedTest[];
}

export interface UnreadableReport {
  path: string;
  reason: string;
}

export interface ReportsSummary extends ReportSummary {
  files: number;
  /** Files that are not JUnit reports we can read; their tests are not counted. */
  unreadable: UnreadableReport[];
}

const MESSAGE_LIMIT = 300;

/** Counts and failures of one file's test cases (repeated records merged first). Pure. */
export function summarizeCases(cases: readonly ParsedTestCase[]): ReportSummary {
  const counts: TestCounts = { passed: 0, failed: 0, skipped: 0 };
  const failed: FailedTest[] = [];
  for (const testCase of mergeRepeatedTestcases(cases)) {
    const outcome = testCase.attempts.at(-1);
    if (outcome === undefined) continue;
    counts[outcome.status]++;
    if (outcome.status === "failed") {
      const failure = outcome.failure;
      const message = failure?.message ?? failure?.type ?? null;
      failed.push({
        name: testCase.name,
        classname: testCase.classname,
        parent: testCase.parent,
        file: testCase.file,
        idAttribute: testCase.idAttribute,
        message: message === null ? null : message.slice(0, MESSAGE_LIMIT),
      });
    }
  }
  return { counts, failed };
}

/**
 * Drops what the summary does not need; keeps whether output was present, because the rule for
 * hollow repeated records (junit/attempts.ts) looks at it.
 */
function compact(testCase: ParsedTestCase): ParsedTestCase {
  return {
    ...testCase,
    attempts: testCase.attempts.map((attempt) => ({
      ...attempt,
      systemOut: attempt.systemOut === null ? null : "",
      systemErr: attempt.systemErr === null ? null : "",
      failure:
        attempt.failure === null
          ? null
          : {
              type: attempt.failure.type?.slice(0, MESSAGE_LIMIT) ?? null,
              message: attempt.failure.message?.slice(0, MESSAGE_LIMIT) ?? null,
              text: null,
            },
    })),
  };
}

/** One report: its summary, or why it cannot be read (then nothing of it counts). */
export async function readReport(filePath: string): Promise<ReportSummary | { error: string }> {
  const cases: ParsedTestCase[] = [];
  try {
    for await (const testCase of parseJunit(createReadStream(filePath)))
      cases.push(compact(testCase));
  } catch (error) {
    if (error instanceof JunitParseError) return { error: error.reason };
    return { error: error instanceof Error ? error.message : String(error) };
  }
  return summarizeCases(cases);
}

export type Progress = (done: number, total: number) => void;

export async function readReports(
  paths: readonly string[],
  onProgress: Progress = () => undefined,
): Promise<ReportsSummary> {
  const summary: ReportsSummary = {
    files: paths.length,
    counts: { passed: 0, failed: 0, skipped: 0 },
    failed: [],
    unreadable: [],
  };
  let done = 0;
  for (const filePath of paths) {
    const report = await readReport(filePath);
    if ("error" in report) {
      summary.unreadable.push({ path: filePath, reason: report.error });
    } else {
      summary.counts.passed += report.counts.passed;
      summary.counts.failed += report.counts.failed;
      summary.counts.skipped += report.counts.skipped;
      summary.failed.push(...report.failed);
    }
    onProgress(++done, paths.length);
  }
  return summary;
}

/** `12 tests (10 passed, 1 failed, 1 skipped)`. */
export function describeCounts(counts: TestCounts): string {
  const total = counts.passed + counts.failed + counts.skipped;
  return `${total} test${total === 1 ? "" : "s"} (${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped)`;
}

/** One entry of getQuarantineConfig's `testIdentifiers` (Trunk's mixed casing). */
export interface TestIdentifier {
  name: string;
  parentName: string;
  className: string | null;
  file: string | null;
  id: string;
  timestamp_millis: null;
  is_quarantined: boolean;
  failure_message: string | null;
  variant: string;
}

/** Whose tests these are: their ids depend on it. */
export interface TestRunIdentity {
  org: string;
  repo: RepoRef;
  variant: string;
  /** Where the repository was checked out: absolute file paths under it count relative to it. */
  repoRoot?: string | null;
}

/** The failed tests with their ids (as the server computes them), each id once. */
export function failedTestIdentifiers(
  failed: readonly FailedTest[],
  identity: TestRunIdentity,
): TestIdentifier[] {
  const byId = new Map<string, TestIdentifier>();
  for (const test of failed) {
    const id = testId({
      org: identity.org,
      repoFullName: repoFullName(identity.repo),
      file: repoRelativeFile(test.file, identity.repoRoot ?? null),
      classname: test.classname,
      parent: test.parent,
      name: test.name,
      variant: identity.variant,
      idAttribute: test.idAttribute,
    });
    if (byId.has(id)) continue;
    byId.set(id, {
      name: test.name,
      parentName: test.parent,
      className: test.classname === "" ? null : test.classname,
      file: repoRelativeFile(test.file, identity.repoRoot ?? null),
      id,
      timestamp_millis: null,
      is_quarantined: false,
      failure_message: test.message,
      variant: identity.variant,
    });
  }
  return [...byId.values()];
}
