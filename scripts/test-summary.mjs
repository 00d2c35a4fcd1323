// Adds up vitest JSON reports (and extra named checks) into the closing line CI reads:
// "N passed, N failed". A test that did not run counts as failed, and so does a report that is
// missing. Exits 1 when anything failed.
// Usage: node scripts/test-summary.mjs label:report.json ... [--check name=pass|fail ...]
import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * One vitest JSON report's figures.
 * - A test that passed or failed counts as such.
 * - A test of a file that broke (its worker crashed or was killed, its beforeAll threw, it timed
 *   out) that neither passed nor failed did not run: it counts as failed, and the line says how
 *   many did not run. (A crashed worker loses the results of the file's earlier tests too: they
 *   are among those.)
 * - A file that broke before any test of it was collected (it failed to load, its worker died
 *   while importing it) has no count of tests: it counts as one, and the line names it.
 * - A file that broke though every test of it passed (an afterAll threw) counts as one.
 * - A test skipped in a file that did not break is skipped (said, not failed).
 * A report that says it failed with nothing else to show for it still counts one.
 */
function countReport(report) {
  const counts = { passed: 0, failed: 0, notRun: 0, brokenFiles: [], skipped: 0 };
  for (const file of report.testResults ?? []) {
    const tests = file.assertionResults ?? [];
    const broke = file.status === "failed";
    let failedHere = 0;
    for (const test of tests) {
      if (test.status === "passed") counts.passed += 1;
      else if (test.status === "failed") failedHere += 1;
      else if (broke) counts.notRun += 1;
      else counts.skipped += 1;
    }
    counts.failed += failedHere;
    if (broke && tests.length === 0) counts.brokenFiles.push(file.name);
    else if (broke && failedHere === 0 && tests.every((test) => test.status === "passed")) {
      counts.brokenFiles.push(file.name);
    }
  }
  counts.failed += counts.notRun + counts.brokenFiles.length;
  if (counts.failed === 0 && !report.success) counts.failed = 1;
  return counts;
}

function describe(counts) {
  const notes = [];
  if (counts.notRun) notes.push(`${counts.notRun} of them did not run`);
  if (counts.brokenFiles.length) {
    const names = counts.brokenFiles.map((name) => path.relative(process.cwd(), name));
    notes.push(
      `${counts.brokenFiles.length} of them test files that failed to load, crashed before ` +
        `their tests were collected or errored outside a test: ${names.join(", ")}`,
    );
  }
  return (
    `${counts.passed} passed, ${counts.failed} failed` +
    (notes.length ? ` (${notes.join("; ")})` : "") +
    (counts.skipped ? `, ${counts.skipped} skipped` : "")
  );
}

function main(args) {
  let passed = 0;
  let failed = 0;
  let notRun = 0;
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
    let report;
    try {
      report = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      failed += 1;
      console.log(`${label}: no report (the run did not complete)`);
      continue;
    }
    const counts = countReport(report);
    passed += counts.passed;
    failed += counts.failed;
    notRun += counts.notRun + counts.brokenFiles.length;
    console.log(`${label}: ${describe(counts)}`);
  }
  if (notRun) console.log(`FAILED: ${notRun} tests (or test files) did not run; counted as failed`);
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
