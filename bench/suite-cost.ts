/**
 * What the whole test suite costs, for two or more checkouts run back to back on this machine:
 * the sum of vitest's per-file durations (every project, both databases), the machine's busy CPU
 * seconds, the wall time and the tests that ran. Each checkout must have its dependencies
 * installed; its own `scripts/test.sh` runs it, with its own `node_modules/.bin` first on PATH.
 * For each later checkout, also the cost of the test files the first one has (`sameFiles`): the
 * suite the first checkout had, without the files added since (their tests added since to those
 * files are counted).
 *
 *   BENCH_CHECKOUTS   comma-separated checkout directories (default: this one)
 *   BENCH_RESULTS     where the JSON goes (bench/results/suite-cost.json)
 *   BENCH_REPORT_ONLY 1: run nothing, report the checkouts' last runs (.test-results/)
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { machineCpuSeconds, machineInfo } from "./support/machine.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const checkouts = (process.env.BENCH_CHECKOUTS ?? ROOT).split(",").map((c) => path.resolve(c));
const RESULTS = process.env.BENCH_RESULTS ?? path.join(ROOT, "bench", "results", "suite-cost.json");

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  testResults: { name: string; startTime: number; endTime: number; assertionResults: unknown[] }[];
}

interface Pass {
  report: string;
  files: number;
  tests: number;
  failed: number;
  perFileSeconds: number;
}

function git(dir: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { cwd: dir });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", () => {
      resolve(out.trim());
    });
  });
}

function runSuite(dir: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env,
      CI: "true",
      PATH: `${path.join(dir, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
    };
    const child = spawn("bash", ["scripts/test.sh"], {
      cwd: dir,
      env,
      stdio: ["ignore", "pipe", "inherit"],
    });
    child.stdout.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      // The suite's own progress lines only: every file's line would drown the summary.
      for (const line of text.split("\n")) if (line.startsWith("== ")) console.log(`  ${line}`);
    });
    child.on("error", reject);
    child.on("close", (code) => {
      resolve(code ?? 1);
    });
  });
}

function readReports(dir: string): { name: string; report: VitestReport }[] {
  const resultsDir = path.join(dir, ".test-results");
  return readdirSync(resultsDir)
    .filter((name) => name.endsWith(".json"))
    .map((name) => ({
      name,
      report: JSON.parse(readFileSync(path.join(resultsDir, name), "utf8")) as VitestReport,
    }));
}

/** Each test file's runs (one per project it ran in): its path in the checkout and its cost. */
function fileRuns(dir: string): { file: string; seconds: number; tests: number }[] {
  return readReports(dir).flatMap(({ report }) =>
    report.testResults.map((f) => ({
      file: path.relative(dir, f.name),
      seconds: (f.endTime - f.startTime) / 1000,
      tests: f.assertionResults.length,
    })),
  );
}

function readPasses(dir: string): Pass[] {
  return readReports(dir).map(({ name, report }) => ({
    report: name.replace(/\.json$/, ""),
    files: report.testResults.length,
    tests: report.numPassedTests + report.numFailedTests,
    failed: report.numFailedTests,
    perFileSeconds:
      Math.round(report.testResults.reduce((s, f) => s + (f.endTime - f.startTime), 0)) / 1000,
  }));
}

const loadBefore = os.loadavg()[0] ?? 0;
const runs = [];
for (const dir of checkouts) {
  const commit = await git(dir, "rev-parse", "--short", "HEAD");
  console.log(
    `${dir} at ${commit}: ${process.env.BENCH_REPORT_ONLY === "1" ? "its last run" : "running its suite"}`,
  );
  const cpuBefore = await machineCpuSeconds();
  const started = performance.now();
  const ran = process.env.BENCH_REPORT_ONLY !== "1";
  const exitCode = ran ? await runSuite(dir) : null;
  const wallSeconds = ran ? Math.round(performance.now() - started) / 1000 : null;
  const cpuAfter = ran ? await machineCpuSeconds() : null;
  const passes = readPasses(dir);
  const run = {
    checkout: dir,
    commit,
    exitCode,
    wallSeconds,
    machineBusyCpuSeconds:
      cpuBefore && cpuAfter ? Math.round((cpuAfter.busy - cpuBefore.busy) * 10) / 10 : null,
    perFileSeconds: Math.round(passes.reduce((s, p) => s + p.perFileSeconds, 0) * 10) / 10,
    tests: passes.reduce((s, p) => s + p.tests, 0),
    failed: passes.reduce((s, p) => s + p.failed, 0),
    passes,
  };
  runs.push(run);
  console.log(
    `  per-file ${String(run.perFileSeconds)} s, machine CPU ${String(run.machineBusyCpuSeconds)} s, ` +
      `wall ${String(wallSeconds)} s, ${String(run.tests)} tests (${String(run.failed)} failed)`,
  );
}

const first = runs[0];
if (first) {
  const firstFiles = new Set(fileRuns(first.checkout).map((r) => r.file));
  for (const run of runs.slice(1)) {
    const same = fileRuns(run.checkout).filter((r) => firstFiles.has(r.file));
    const sameFiles = {
      perFileSeconds: Math.round(same.reduce((s, r) => s + r.seconds, 0) * 10) / 10,
      tests: same.reduce((s, r) => s + r.tests, 0),
    };
    Object.assign(run, { sameFiles });
    console.log(
      `${run.commit}, the files ${first.commit} has: per-file ${String(sameFiles.perFileSeconds)} s ` +
        `(${(sameFiles.perFileSeconds / first.perFileSeconds).toFixed(2)}×), ${String(sameFiles.tests)} tests`,
    );
    const ratio = (a: number | null, b: number | null) =>
      a === null || b === null || b === 0 ? "–" : (a / b).toFixed(2);
    console.log(
      `${run.commit} against ${first.commit}: per-file ${ratio(run.perFileSeconds, first.perFileSeconds)}×, ` +
        `machine CPU ${ratio(run.machineBusyCpuSeconds, first.machineBusyCpuSeconds)}×, ` +
        `wall ${ratio(run.wallSeconds, first.wallSeconds)}×`,
    );
  }
}
writeFileSync(
  RESULTS,
  `${JSON.stringify({ date: new Date().toISOString(), machine: machineInfo(loadBefore), runs }, null, 2)}\n`,
);
console.log(`wrote ${RESULTS}`);
