import { CommanderError, Option, type Command } from "commander";
import type {
  SimulationOptions,
  SimulationProgress,
  SimulationReport,
} from "../../mergequeue/simulator/index.js";
import {
  SIMULATION_DEFAULTS,
  SimulationOptionError,
  defaultTestingTimeoutMinutes,
  parseFanOut,
  parsePriorities,
  validateOptions,
} from "../../mergequeue/simulator/options.js";
import { OPTIMIZATION_MODES, type OptimizationMode } from "../../mergequeue/settings.js";
import { CliError } from "../client.js";
import type { CliContext, CliOutput } from "../context.js";

/** Exit code of every usage error of `simulate` (a bad or missing flag). */
export const USAGE_EXIT_CODE = 2;

/** What commander hands the action: every value as typed, checked by `simulationOptions`. */
export interface SimulateFlags {
  prs?: string | undefined;
  burst?: boolean | undefined;
  arrivalsPerHour?: string | undefined;
  ciMinutes?: string | undefined;
  ciJitter?: string | undefined;
  failFirstFraction?: string | undefined;
  failureRate?: string | undefined;
  flakeRate?: string | undefined;
  flakesKnown?: boolean | undefined;
  conflictRate?: string | undefined;
  stackRate?: string | undefined;
  concurrency?: string | undefined;
  batch?: boolean | undefined;
  batchSize?: string | undefined;
  batchWaitMinutes?: string | undefined;
  bisectionConcurrency?: string | undefined;
  pendingFailureDepth?: string | undefined;
  optimistic?: boolean | undefined;
  optimizationMode?: string | undefined;
  speculationThresholdPercent?: string | undefined;
  testingTimeoutMinutes?: string | undefined;
  priorities?: string | undefined;
  targetsFanout?: string | undefined;
  targets?: string | undefined;
  maxHours?: string | undefined;
  seed?: string | undefined;
  json?: boolean | undefined;
}

function usage(message: string): never {
  throw new SimulationOptionError(message);
}

function number(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text.trim())) {
    usage(`${flag} takes a number (got "${text}").`);
  }
  return Number(text);
}

function whole(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text.trim())) usage(`${flag} takes a whole number (got "${text}").`);
  return Number(text);
}

function required<T>(flag: string, value: T | undefined): T {
  if (value === undefined) usage(`${flag} is required.`);
  return value;
}

/** The flags as simulation options; throws a SimulationOptionError naming what is wrong. */
export function simulationOptions(flags: SimulateFlags): SimulationOptions {
  const prs = required("--prs", whole("--prs", flags.prs));
  const perHour = number("--arrivals-per-hour", flags.arrivalsPerHour);
  if (flags.burst === true && perHour !== undefined) {
    usage("Give either --burst or --arrivals-per-hour, not both.");
  }
  if (flags.burst !== true && perHour === undefined) {
    usage("Give --burst (every PR at once) or --arrivals-per-hour R (a Poisson process).");
  }
  const batch = flags.batch === true;
  if (!batch && (flags.batchSize !== undefined || flags.batchWaitMinutes !== undefined)) {
    usage("--batch-size and --batch-wait-minutes need --batch.");
  }
  if (flags.targets !== undefined && flags.targetsFanout === undefined) {
    usage("--targets needs --targets-fanout (which switches the queue to parallel mode).");
  }
  const mode = flags.optimizationMode ?? SIMULATION_DEFAULTS.optimizationMode;
  if (!(OPTIMIZATION_MODES as readonly string[]).includes(mode)) {
    usage(`--optimization-mode takes ${OPTIMIZATION_MODES.join(" or ")} (got "${mode}").`);
  }
  const ciMinutes = required("--ci-minutes", number("--ci-minutes", flags.ciMinutes));
  const ciJitter = number("--ci-jitter", flags.ciJitter) ?? SIMULATION_DEFAULTS.ciJitter;
  const options: SimulationOptions = {
    prs,
    arrivals: perHour === undefined ? { kind: "burst" } : { kind: "poisson", perHour },
    ciMinutes,
    ciJitter,
    failFirstFraction:
      number("--fail-first-fraction", flags.failFirstFraction) ??
      SIMULATION_DEFAULTS.failFirstFraction,
    failureRate: required("--failure-rate", number("--failure-rate", flags.failureRate)),
    flakeRate: number("--flake-rate", flags.flakeRate) ?? SIMULATION_DEFAULTS.flakeRate,
    flakesKnown: flags.flakesKnown === true,
    conflictRate: number("--conflict-rate", flags.conflictRate) ?? SIMULATION_DEFAULTS.conflictRate,
    stackRate: number("--stack-rate", flags.stackRate) ?? SIMULATION_DEFAULTS.stackRate,
    concurrency: required("--concurrency", whole("--concurrency", flags.concurrency)),
    batch,
    batchSize: whole("--batch-size", flags.batchSize) ?? SIMULATION_DEFAULTS.batchSize,
    batchWaitMinutes:
      whole("--batch-wait-minutes", flags.batchWaitMinutes) ?? SIMULATION_DEFAULTS.batchWaitMinutes,
    bisectionConcurrency:
      whole("--bisection-concurrency", flags.bisectionConcurrency) ??
      SIMULATION_DEFAULTS.bisectionConcurrency,
    pendingFailureDepth:
      whole("--pending-failure-depth", flags.pendingFailureDepth) ??
      SIMULATION_DEFAULTS.pendingFailureDepth,
    optimistic: flags.optimistic === true,
    optimizationMode: mode as OptimizationMode,
    speculationThresholdPercent:
      whole("--speculation-threshold-percent", flags.speculationThresholdPercent) ??
      SIMULATION_DEFAULTS.speculationThresholdPercent,
    testingTimeoutMinutes:
      whole("--testing-timeout-minutes", flags.testingTimeoutMinutes) ??
      (Number.isFinite(ciMinutes) && Number.isFinite(ciJitter)
        ? defaultTestingTimeoutMinutes(ciMinutes, ciJitter)
        : 60),
    priorities: flags.priorities === undefined ? null : parsePriorities(flags.priorities),
    targets: whole("--targets", flags.targets) ?? SIMULATION_DEFAULTS.targets,
    targetsFanout: flags.targetsFanout === undefined ? null : parseFanOut(flags.targetsFanout),
    seed: required("--seed", whole("--seed", flags.seed)),
    maxHours: number("--max-hours", flags.maxHours) ?? SIMULATION_DEFAULTS.maxHours,
  };
  validateOptions(options);
  return options;
}

/** Names left-aligned, figures right-aligned, notes left-aligned. */
export function formatTable(rows: [string, string, string][]): string {
  const widths = [0, 1, 2].map((column) =>
    Math.max(...rows.map((row) => row[column]?.length ?? 0)),
  );
  return rows
    .map(([name, value, note]) =>
      `${name.padEnd(widths[0] ?? 0)}  ${value.padStart(widths[1] ?? 0)}  ${note}`.trimEnd(),
    )
    .join("\n");
}

const show = (value: number | null, unit = ""): string =>
  value === null ? "-" : `${value}${unit}`;
const percent = (part: number, whole: number): string =>
  whole > 0 ? `${Math.round((part / whole) * 1000) / 10}%` : "-";

/** The report as a human reads it: the settings on one line, then the figures. */
export function humanReport(report: SimulationReport, wallSeconds: number): string {
  const s = report.settings;
  const d = report.details;
  const setting = Object.entries(s)
    .filter(([, value]) => value !== null && value !== false)
    .map(([key, value]) => (value === true ? key : `${key}=${String(value)}`))
    .join(" ");
  const anomalies = Object.entries(d.anomalies).filter(([, count]) => count > 0);
  const rows: [string, string, string][] = [
    ["merged", String(report.merged), percent(report.merged, report.prs)],
    ["failed", String(report.failed), `${report.goodPrsEvicted} of them good PRs (evicted)`],
    ["cancelled", String(report.cancelled), ""],
    [
      "unfinished",
      String(report.unfinished),
      report.stopReason === "completed" ? "" : `stopped: ${report.stopReason}`,
    ],
    ["merged per hour", String(report.mergedPerHour), "first arrival to last conclusion"],
    ["expected per hour", String(report.expectedPerHour), "round model b·S(q,C)·60/T"],
    [
      "theoretical cap per hour",
      show(report.theoreticalCapPerHour),
      "single lane (1-p)/p·60/T, p with flakes",
    ],
    [
      "CI runs",
      String(report.ciRuns),
      `${d.ciRunsCancelled} cancelled, ${d.bisectionRuns} bisection, ${d.ciHours} CI hours`,
    ],
    ["CI runs per merged", show(report.ciRunsPerMerged), ""],
    ["p50 minutes in queue", show(report.p50MinutesInQueue), "submit to merged"],
    ["p95 minutes in queue", show(report.p95MinutesInQueue), ""],
    ["bad PRs merged", String(report.badMerged), `${d.badPrs} bad PRs submitted`],
    ["max queued", String(d.maxQueued), `mean ${d.meanQueued}`],
    ["virtual hours", String(report.virtualHours), ""],
    ["events", String(report.events), ""],
    ["wall seconds", String(Math.round(wallSeconds * 100) / 100), ""],
  ];
  for (const [name, count] of anomalies) rows.push([`anomaly: ${name}`, String(count), ""]);
  return `Simulated ${setting}\n\n${formatTable(rows)}\n`;
}

/** A bar on standard error, once the run has taken longer than two seconds. */
function progressBar(stream: CliOutput): {
  update: (progress: SimulationProgress) => void;
  done: () => void;
} {
  const started = Date.now();
  let drawn = false;
  let lastDraw = 0;
  return {
    update(progress) {
      const now = Date.now();
      if (now - started < 2000 || now - lastDraw < 100) return;
      lastDraw = now;
      drawn = true;
      const share = progress.prs > 0 ? progress.concluded / progress.prs : 1;
      const width = 30;
      const filled = Math.round(share * width);
      stream.write(
        `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${Math.floor(share * 100)}% ` +
          `${progress.concluded}/${progress.prs} PRs, ${progress.virtualHours.toFixed(1)} virtual h`,
      );
    },
    done() {
      if (drawn) stream.write("\r\x1b[K");
    },
  };
}

export function registerSimulate(program: Command, context: CliContext): void {
  program
    .command("simulate")
    .description(
      "Run the merge-queue planner on a simulated workload (virtual time, seeded) and report throughput",
    )
    .option("--prs <n>", "pull requests to submit")
    .option("--burst", "submit every PR at time 0")
    .option("--arrivals-per-hour <r>", "submit PRs as a Poisson process at this rate")
    .option("--ci-minutes <t>", "duration of a CI run, minutes")
    .option("--ci-jitter <f>", "a run lasts T·(1 + f·U[-1,1]) (default 0)")
    .option(
      "--fail-first-fraction <f>",
      "a failing localization run ends after this fraction of T (it runs the failed tests first; default 1)",
    )
    .option("--failure-rate <p>", "probability that a PR is bad (its runs always fail)")
    .option("--flake-rate <f>", "probability that a run fails anyway (default 0)")
    .option("--flakes-known", "flakes are known flaky tests: reported, and a rerun passes")
    .option(
      "--conflict-rate <p>",
      "probability that a PR edits the same lines as one just before it (default 0)",
    )
    .option(
      "--stack-rate <p>",
      "probability that a PR is stacked on one just before it (default 0)",
    )
    .option("--concurrency <c>", "queue setting: PRs (units) tested at once")
    .option("--batch", "queue setting: test PRs in batches")
    .option("--batch-size <b>", "queue setting: target batch size (default 4)")
    .option("--batch-wait-minutes <w>", "queue setting: longest wait for a batch (default 5)")
    .option(
      "--bisection-concurrency <k>",
      "queue setting: runs at once while bisecting (default 1)",
    )
    .option(
      "--pending-failure-depth <d>",
      "queue setting: successors a failure waits for (default 0)",
    )
    .option("--optimistic", "queue setting: merge optimistically")
    .addOption(
      new Option("--optimization-mode <mode>", "queue setting (default off)").choices(
        OPTIMIZATION_MODES,
      ),
    )
    .option(
      "--speculation-threshold-percent <n>",
      "queue setting: start a run only if it is at least this likely to be used (default 0: always)",
    )
    .option(
      "--testing-timeout-minutes <m>",
      "queue setting (default 60, or twice the longest CI run when longer)",
    )
    .option(
      "--priorities <spec>",
      "priority mix, e.g. 0.05x0,0.2x10,0.75x100 (default: all medium)",
    )
    .option(
      "--targets-fanout <spec>",
      "impacted targets per PR, e.g. 0.75x1,0.15x2,0.09x3,0.01xALL (parallel mode)",
    )
    .option("--targets <n>", "named targets the fan-out draws from (default 4)")
    .option("--max-hours <h>", "stop after this much virtual time (default 720)")
    .option("--seed <s>", "seed of every random draw (same seed, same report)")
    .option("--json", "print one JSON object (deterministic) instead of the table")
    .addHelpText(
      "after",
      `
Example:
  mainline simulate --prs 3000 --arrivals-per-hour 40 --ci-minutes 30 --failure-rate 0.05 \\
    --concurrency 10 --seed 1`,
    )
    .exitOverride((error) => {
      // Usage errors exit 2, like every other flag problem of this command; help exits 0.
      if (error.exitCode === 0) throw error;
      throw new CommanderError(USAGE_EXIT_CODE, error.code, error.message);
    })
    .action(async (flags: SimulateFlags) => {
      let options: SimulationOptions;
      try {
        options = simulationOptions(flags);
      } catch (error) {
        if (error instanceof SimulationOptionError) {
          throw new CliError(error.message, USAGE_EXIT_CODE);
        }
        throw error;
      }
      const { simulate } = await import("../../mergequeue/simulator/simulate.js");
      const planner = await import("../../mergequeue/planner/index.js");
      const bar = context.stderr.isTTY ? progressBar(context.stderr) : null;
      const { report, wallSeconds } = simulate(options, planner, {
        ...(bar ? { onProgress: bar.update } : {}),
      });
      bar?.done();
      if (flags.json === true) {
        context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      } else {
        context.stdout.write(humanReport(report, wallSeconds));
      }
    });
}
