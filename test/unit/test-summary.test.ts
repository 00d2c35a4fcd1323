/**
 * scripts/test-summary.mjs over real vitest JSON reports: a test file that fails to load, one
 * whose beforeAll throws and one whose worker dies count as failures on their database's line as in
 * the closing total, so the lines always add up to the total; a test that did not run is failed.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/process.js";

const run = promisify(execFile);
let dir: string;

/** Runs vitest on the given test files in a directory of their own; resolves with its JSON report's path. */
async function vitestReport(name: string, files: Record<string, string>): Promise<string> {
  const root = path.join(dir, name);
  await run("mkdir", ["-p", root]);
  await writeFile(
    path.join(root, "vitest.config.mjs"),
    `export default { test: { pool: "forks" } };\n`,
  );
  for (const [file, text] of Object.entries(files)) await writeFile(path.join(root, file), text);
  const report = path.join(root, "report.json");
  await run(
    process.execPath,
    [
      path.join(REPO_ROOT, "node_modules/vitest/vitest.mjs"),
      "run",
      "--root",
      root,
      "--config",
      path.join(root, "vitest.config.mjs"),
      "--reporter=json",
      `--outputFile.json=${report}`,
    ],
    { cwd: REPO_ROOT },
  ).catch(() => undefined); // a failing run exits 1; the report is what matters
  return report;
}

async function summarize(...args: string[]): Promise<{ code: number; lines: string[] }> {
  const result = await run(process.execPath, ["scripts/test-summary.mjs", ...args], {
    cwd: REPO_ROOT,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (error: unknown) => {
      const failed = error as { code: number; stdout: string };
      return { code: failed.code, stdout: failed.stdout };
    },
  );
  return { code: result.code, lines: result.stdout.trim().split("\n") };
}

const counts = (line: string | undefined) => {
  const match = /(\d+) passed, (\d+) failed/.exec(line ?? "");
  if (!match) throw new Error(`not a summary line: ${String(line)}`);
  return { passed: Number(match[1]), failed: Number(match[2]) };
};

let broken: string;
let clean: string;
let crashed: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "mainline-summary-"));
  [broken, clean, crashed] = await Promise.all([
    vitestReport("broken", {
      "loads.test.mjs": `import { it } from "vitest";\nit("passes", () => {});\n`,
      "missing-import.test.mjs": `import "./not-there.mjs";\nimport { it } from "vitest";\nit("never runs", () => {});\n`,
      "setup-throws.test.mjs": `import { beforeAll, it } from "vitest";\nbeforeAll(() => { throw new Error("setup broke"); });\nit("skipped", () => {});\n`,
    }),
    vitestReport("clean", {
      "loads.test.mjs": `import { it } from "vitest";\nit("passes", () => {});\nit("too", () => {});\n`,
    }),
    // A worker that dies mid-file, as one did when a native module aborted the process.
    vitestReport("crashed", {
      "loads.test.mjs": `import { it } from "vitest";\nit("passes", () => {});\n`,
      "dies.test.mjs": [
        `import { it } from "vitest";`,
        `it("kills its worker", () => { process.kill(process.pid, "SIGKILL"); });`,
        `it("second", () => {});`,
        `it("third", () => {});`,
      ].join("\n"),
      "dies-on-import.test.mjs": `import { it } from "vitest";\nprocess.kill(process.pid, "SIGKILL");\nit("never", () => {});\n`,
    }),
  ]);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("scripts/test-summary.mjs", () => {
  it("counts files that failed to load or errored on their database's line and in the total", async () => {
    const { code, lines } = await summarize(`sqlite:${broken}`, `postgres:${broken}`);
    expect(code).toBe(1);
    const sqlite = counts(lines.find((l) => l.startsWith("sqlite:")));
    const postgres = counts(lines.find((l) => l.startsWith("postgres:")));
    const total = counts(lines.at(-1));
    expect(sqlite).toEqual({ passed: 1, failed: 2 });
    expect(postgres).toEqual(sqlite);
    expect(total).toEqual({ passed: 2, failed: 4 });
    expect(lines.find((l) => l.startsWith("sqlite:"))).toContain("missing-import.test.mjs");
    expect(lines.find((l) => l.startsWith("sqlite:"))).toContain("1 of them did not run");
  });

  it("counts the tests of a crashed worker as failed, says how many did not run, exits 1", async () => {
    const { code, lines } = await summarize(`sqlite:${crashed}`);
    expect(code).toBe(1);
    const sqlite = lines.find((l) => l.startsWith("sqlite:"));
    // dies.test.mjs: its three tests were collected and did not run; dies-on-import: one.
    expect(counts(sqlite)).toEqual({ passed: 1, failed: 4 });
    expect(sqlite).toContain("3 of them did not run");
    expect(sqlite).toContain("dies-on-import.test.mjs");
    expect(lines).toContain("FAILED: 4 tests (or test files) did not run; counted as failed");
    expect(counts(lines.at(-1))).toEqual({ passed: 1, failed: 4 });
  });

  it("says 0 failed and exits 0 when everything passed", async () => {
    const { code, lines } = await summarize(`sqlite:${clean}`, `postgres:${clean}`);
    expect(lines.at(-1)).toBe("4 passed, 0 failed");
    expect(counts(lines[0])).toEqual({ passed: 2, failed: 0 });
    expect(code).toBe(0);
  });

  it("counts a missing report and a failed check", async () => {
    const { code, lines } = await summarize(
      `sqlite:${clean}`,
      `postgres:${path.join(dir, "none.json")}`,
      "--check",
      "eslint=fail",
    );
    expect(lines).toContain("postgres: no report (the run did not complete)");
    expect(lines.at(-1)).toBe("2 passed, 2 failed");
    expect(code).toBe(1);
  });
});
