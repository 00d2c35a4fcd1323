// Adds up vitest JSON reports (and extra named checks) into the closing line CI reads:
// "N passed, N failed". A report that is missing counts as one failure.
// Usage: node scripts/test-summary.mjs label:report.json ... [--check name=pass|fail ...]
import { readFileSync } from "node:fs";

/**
 * One vitest JSON report's figures. A test file that failed to load, or whose suite failed outside
 * any test (a beforeAll that threw), has no failed test of its own: it counts as one failure, in
 * the report's line as in the total. A report that says it failed with nothing to show for it
 * still counts one.
 */
function countReport(report) {
  const erroredFiles = (report.testResults ?? []).filter(
    (file) =>
      file.status === "failed" &&
      !(file.assertionResults ?? []).some((test) => test.status === "failed"),
  ).length;
  let failed = report.numFailedTests + erroredFiles;
  if (failed === 0 && !report.success) failed = 1;
  return {
    passed: report.numPassedTests,
    failed,
    erroredFiles,
    skipped: report.numPendingTests + report.numTodoTests,
  };
}

let passed = 0;
let failed = 0;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--check") {
    const [name, outcome] = args[++i].split("=");
    if (outcome === "pass") passed += 1;
    else failed += 1;
    console.log(`${name}: ${outcome === "pass" ? "passed" : "FAILED"}`);
    continue;
  }
  const [label, file] = arg.split(":");
  try {
    const report = JSON.parse(readFileSync(file, "utf8"));
    const counts = countReport(report);
    passed += counts.passed;
    failed += counts.failed;
    console.log(
      `${label}: ${counts.passed} passed, ${counts.failed} failed` +
        (counts.erroredFiles
          ? ` (${counts.erroredFiles} of them test files that failed to load or errored outside a test)`
          : "") +
        (counts.skipped ? `, ${counts.skipped} skipped` : ""),
    );
  } catch {
    failed += 1;
    console.log(`${label}: no report (the run did not complete)`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
