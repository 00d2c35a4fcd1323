/**
 * How fast the queue merges on GitHub when CI takes no time (docs/benchmarks.md, "GitHub: merges
 * a minute"): what is left is GitHub's request pacing, a second between writes per installation,
 * and how the queue's writes share it with the comment, the check run and the labels. A real
 * `mainline serve` (built) against the fake GitHub (real git; its Actions-like CI passes every
 * push to `trunk-merge/**` at once), comments and status checks on, PRS good pull requests
 * submitted at once: serial (squash, the default), serial with merge commits (where the next test
 * branch is built on the tested merge that landed), then in batches of BATCH. Measured from the first submission to the
 * last merge: merged pull requests per minute. The same scenario runs on the build of BASELINE
 * (a git revision, built in a temporary worktree) and on this checkout's, in one run.
 *
 * Usage: npm run bench:github-throughput   (BENCH_PRS=<2..40>, default 12; BENCH_BATCH, default 4;
 *                                          BENCH_BASELINE=<git rev>, default bc18c5d: the
 *                                          queue before its writes had lanes of their own)
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { FakeGitHub } from "../test/helpers/fake-github/index.js";
import { integerFromEnv } from "./support/env.js";
import {
  NAME,
  OWNER,
  QUEUE,
  openGoodPullRequests,
  prepareRepository,
  startLinkedServer,
} from "./support/github.js";
import { ROOT, showServerOutput } from "./support/server.js";
import { formatTable } from "./support/table.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "github-throughput.json");
/** A multiple of BATCH: a batch short of its size waits a minute to fill, and would be measured. */
const PRS = integerFromEnv("BENCH_PRS", 12, 2, 40);
const BATCH = integerFromEnv("BENCH_BATCH", 4, 2, 20);
const BASELINE = process.env.BENCH_BASELINE ?? "bc18c5d";
/** The issue's bar: at least twice the merges a minute of the baseline. */
const TARGET_RATIO = 2;
const SCENARIO_TIMEOUT_MS = 10 * 60_000;

interface Mode {
  name: string;
  settings: Record<string, unknown>;
}

const MODES: Mode[] = [
  { name: "serial", settings: { mode: "single", concurrency: 1, batch: false } },
  {
    name: "serial, merge commits",
    settings: { mode: "single", concurrency: 1, batch: false, mergeMethod: "merge_commit" },
  },
  {
    name: `batches of ${String(BATCH)}`,
    settings: {
      mode: "single",
      concurrency: 1,
      batch: true,
      batchingMinSize: BATCH,
      batchingMaxWaitTimeMinutes: 1,
    },
  },
];

interface Result {
  build: string;
  mode: string;
  merged: number;
  wallMs: number;
  perMinute: number;
}

/**
 * Builds `rev` in a temporary worktree, on this checkout's node_modules, or on its own (`npm ci`)
 * when its dependencies differ from today's; its built entry.
 */
function buildAt(rev: string): { entry: string; cleanup: () => void } {
  const dir = path.join(os.tmpdir(), `mainline-baseline-${randomBytes(4).toString("hex")}`);
  execFileSync("git", ["worktree", "add", "--detach", "--quiet", dir, rev], { cwd: ROOT });
  const cleanup = () => {
    execFileSync("git", ["worktree", "remove", "--force", dir], { cwd: ROOT });
  };
  const build = () =>
    execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: dir, stdio: "ignore" });
  try {
    const modules = path.join(dir, "node_modules");
    execFileSync("ln", ["-s", path.join(ROOT, "node_modules"), modules]);
    try {
      build();
    } catch {
      execFileSync("rm", [modules]);
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], {
        cwd: dir,
        stdio: "ignore",
        env: {
          ...process.env,
          PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}`,
          npm_config_nodedir: path.resolve(path.dirname(process.execPath), ".."),
        },
      });
      build();
    }
    return { entry: path.join(dir, "dist", "cli", "main.js"), cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
}

async function run(build: string, entry: string, mode: Mode): Promise<Result> {
  const gh = await FakeGitHub.start({ seed: 5, validate: false });
  const app = gh.createApp({ slug: "mainline-bench" });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-ghtp-"));
  const token = randomBytes(24).toString("hex");
  try {
    await prepareRepository(gh);
    const numbers = await openGoodPullRequests(gh, PRS);
    const { server, api } = await startLinkedServer({
      gh,
      app,
      token,
      dataDir,
      builtEntry: entry,
      // CI (the fake's Actions) reports `ci` on every test branch: the check a merge needs.
      settings: { requiredStatuses: ["ci"], ...mode.settings },
    });
    try {
      const started = Date.now();
      for (const number of numbers) {
        await api.call("submitPullRequest", { ...QUEUE, pr: { number } });
      }
      let merged = 0;
      while (Date.now() - started < SCENARIO_TIMEOUT_MS) {
        merged = numbers.filter(
          (n) => gh.pullRequest(`${OWNER}/${NAME}`, n).mergedAt !== null,
        ).length;
        if (merged === numbers.length) break;
        await delay(100);
      }
      const wallMs = Date.now() - started;
      if (process.env.BENCH_DUMP) {
        const lines = gh.requests.entries
          .filter((e) => e.installationId !== null && e.atMs >= started)
          .map((e) => `${String(e.atMs - started)} ${String(e.status)} ${e.method} ${e.path}`);
        await writeFile(
          `${process.env.BENCH_DUMP}-${build.split(" ")[0] ?? ""}-${mode.name.split(" ")[0] ?? ""}.txt`,
          `${lines.join("\n")}\n`,
        );
      }
      showServerOutput(`(${build}, ${mode.name})`, server.takeOutput());
      return {
        build,
        mode: mode.name,
        merged,
        wallMs,
        perMinute: Math.round((merged / (wallMs / 60_000)) * 100) / 100,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await gh.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const current = path.join(ROOT, "dist", "cli", "main.js");
execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, stdio: "ignore" });
if (!existsSync(current)) throw new Error(`no build at ${current}`);
const baseline = buildAt(BASELINE);
const results: Result[] = [];
try {
  for (const mode of MODES) {
    for (const [build, entry] of [
      [`baseline ${BASELINE}`, baseline.entry],
      ["this checkout", current],
    ] as const) {
      process.stdout.write(`${build}, ${mode.name}…\n`);
      results.push(await run(build, entry, mode));
    }
  }
} finally {
  baseline.cleanup();
}
process.stdout.write(
  `${formatTable(
    ["build", "mode", "merged", "wall s", "merged a minute"],
    results.map((r) => [
      r.build,
      r.mode,
      `${String(r.merged)}/${String(PRS)}`,
      (r.wallMs / 1000).toFixed(1),
      r.perMinute.toFixed(2),
    ]),
    [0, 1],
  )}\n`,
);
const ratios = MODES.map((mode) => {
  const [before, after] = results.filter((r) => r.mode === mode.name);
  const ratio =
    before && after && before.perMinute > 0
      ? Math.round((after.perMinute / before.perMinute) * 100) / 100
      : 0;
  return { mode: mode.name, ratio, pass: ratio >= TARGET_RATIO && after?.merged === PRS };
});
for (const r of ratios) {
  process.stdout.write(
    `${r.mode}: ${r.ratio.toFixed(2)}× the baseline's merges a minute (target ≥ ${String(TARGET_RATIO)}×): ${r.pass ? "yes" : "no"}\n`,
  );
}
await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
await writeFile(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      prs: PRS,
      baseline: BASELINE,
      loadAverage: Math.round((os.loadavg()[0] ?? 0) * 10) / 10,
      results,
      ratios,
    },
    null,
    2,
  )}\n`,
);
