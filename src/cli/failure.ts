/** `pr status` of a failed pull request: why, in the terminal (getSubmittedPullRequest's `failure`). */
import { VERDICT_WORDS, type FailureVerdict } from "../testhealth/failure-verdicts.js";

export interface FailureBody {
  message: string;
  detail: string | null;
  runId: string | null;
  failedChecks: { name: string; conclusion: string; url: string | null }[];
  failedTests: {
    name: string;
    classname: string;
    file: string | null;
    summary: string | null;
    verdict: FailureVerdict;
  }[];
  failedTestsTruncated: boolean;
  testResultsPending: boolean;
  testUploads: number;
  log: { check: string; lines: string[]; truncated: boolean } | null;
}

/** The reason, the failing checks, the failing tests with whose red each is, the log's end. */
export function formatFailure(failure: FailureBody): string {
  const lines = [
    "",
    `why it failed: ${failure.message}${failure.detail ? ` (${failure.detail})` : ""}`,
  ];
  if (failure.runId !== null) lines.push(`  run ${failure.runId}`);
  for (const check of failure.failedChecks) {
    lines.push(`  check ${check.name}: ${check.conclusion}${check.url ? ` ${check.url}` : ""}`);
  }
  if (failure.failedTests.length > 0) {
    lines.push("", "failing tests");
    for (const test of failure.failedTests) {
      const name = test.classname ? `${test.classname} › ${test.name}` : test.name;
      lines.push(`  ${name} — ${VERDICT_WORDS[test.verdict]}${test.file ? ` (${test.file})` : ""}`);
      if (test.summary) lines.push(`      ${test.summary}`);
    }
    if (failure.failedTestsTruncated) lines.push("  … more tests failed than are listed");
  } else if (failure.runId !== null) {
    lines.push(
      "",
      failure.testResultsPending
        ? "failing tests: its test results are still being processed"
        : failure.testUploads === 0
          ? "failing tests: no test results were uploaded for the run"
          : "failing tests: none named by its test results",
    );
  }
  if (failure.log) {
    lines.push(
      "",
      `end of the log of ${failure.log.check}${failure.log.truncated ? " (last lines)" : ""}`,
    );
    for (const line of failure.log.lines) lines.push(`  | ${line}`);
  }
  return `${lines.join("\n")}\n`;
}
