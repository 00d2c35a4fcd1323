// Adds up vitest JSON reports (and extra named checks) into the closing line CI reads:
// "N passed, N failed". A report that is missing counts as one failure.
// Usage: node scripts/test-summary.mjs label:report.json ... [--check name=pass|fail ...]
import { readFileSync } from "node:fs";

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
    const skipped = report.numPendingTests + report.numTodoTests;
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    if (report.numFailedTests === 0 && !report.success) failed += 1; // e.g. a file failed to load
    console.log(
      `${label}: ${report.numPassedTests} passed, ${report.numFailedTests} failed` +
        (skipped ? `, ${skipped} skipped` : ""),
    );
  } catch {
    failed += 1;
    console.log(`${label}: no report (the run did not complete)`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
