import { InvalidArgumentError, Option, type Command } from "commander";
import { spawnInContext, type CliContext } from "../context.js";
import {
  addUploadOptions,
  describeProcessing,
  locate,
  readAll,
  reportsBefore,
  resolveOrg,
  send,
  type Located,
  type ReportsBefore,
  type UploadFlags,
} from "../upload/flow.js";
import { fetchFailFirst, type FailFirstFlags } from "../upload/fail-first.js";
import { getQuarantineConfig } from "../upload/protocol.js";
import {
  commandExitCode,
  decideExit,
  type CommandExit,
  type QuarantineConfig,
} from "../upload/quarantine.js";
import {
  failedTestIdentifiers,
  type ReportsSummary,
  type TestIdentifier,
} from "../../testhealth/reports.js";
import { uploadIo } from "./upload.js";

export const COMMAND_HINT =
  "mainline: put -- before the test command, e.g. mainline test --junit 'reports/*.xml' -- python3 -m pytest";

/** Signals passed on to the command; SIGINT from a terminal already reaches its whole group. */
const FORWARDED: readonly NodeJS.Signals[] = ["SIGTERM", "SIGHUP"];
const IGNORED_WHILE_RUNNING: readonly NodeJS.Signals[] = ["SIGINT", "SIGQUIT"];

/**
 * Runs the command with our standard streams. One argument is a shell command line (`"npm test
 * && echo ok"`); several are a program and its arguments, run without a shell.
 */
function runCommand(
  context: CliContext,
  argv: readonly string[],
  env: Record<string, string> = {},
): Promise<CommandExit | { spawnError: string }> {
  const [program = "", ...args] = argv;
  const child =
    argv.length === 1
      ? spawnInContext(context, program, [], { shell: true, env })
      : spawnInContext(context, program, args, { env });
  const forward = (signal: NodeJS.Signals) => {
    child.kill(signal);
  };
  const ignore = () => undefined;
  // The process's signals are ours to handle only when this run is the process.
  const signals = context.ownsProcess;
  if (signals) {
    for (const signal of FORWARDED) process.on(signal, forward);
    for (const signal of IGNORED_WHILE_RUNNING) process.on(signal, ignore);
  }
  const stopListening = () => {
    if (!signals) return;
    for (const signal of FORWARDED) process.off(signal, forward);
    for (const signal of IGNORED_WHILE_RUNNING) process.off(signal, ignore);
  };
  return new Promise((resolve) => {
    child.once("error", (error: NodeJS.ErrnoException) => {
      stopListening();
      resolve({ spawnError: error.code ?? error.message });
    });
    child.once("exit", (code, signal) => {
      stopListening();
      resolve({ code, signal });
    });
  });
}

const warn = (context: CliContext, message: string) =>
  context.stderr.write(`mainline: warning: ${message}\n`);
const note = (context: CliContext, message: string) =>
  context.stderr.write(`mainline: ${message}\n`);
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

function describeTest(test: TestIdentifier): string {
  const path = [test.parentName, test.className ?? "", test.name].filter((p) => p !== "");
  return path.join(" › ");
}

/** Upload and quarantine lookup; every failure becomes a warning (the exit rule handles it). */
async function uploadAndLookUp(
  context: CliContext,
  argv: readonly string[],
  own: number,
  flags: UploadFlags,
  before: ReportsBefore,
): Promise<{
  summary: ReportsSummary | null;
  uploaded: boolean;
  identifiers: TestIdentifier[];
  quarantine: QuarantineConfig | null;
}> {
  const io = uploadIo(context, context.stderr);
  let located: Located;
  let summary: ReportsSummary;
  try {
    located = await locate(flags, io, { writtenSince: before });
    summary = await readAll(located, io);
  } catch (error) {
    warn(context, `no results uploaded: ${messageOf(error)}`);
    return { summary: null, uploaded: false, identifiers: [], quarantine: null };
  }
  let org: string;
  try {
    org = await resolveOrg(flags, io);
    const sent = await send({ ...located, org, summary }, flags, io, {
      testCommand: argv.join(" "),
    });
    if (sent.processing !== null) io.out(describeProcessing(sent.processing));
    if (sent.uploadId === null) {
      return { summary, uploaded: false, identifiers: [], quarantine: null };
    }
  } catch (error) {
    warn(context, `the upload failed: ${messageOf(error)}`);
    return { summary, uploaded: false, identifiers: [], quarantine: null };
  }
  const identifiers = failedTestIdentifiers(summary.failed, {
    org,
    repo: located.context.repo,
    variant: located.context.variant,
    repoRoot: located.repoRoot,
  });
  // Like Trunk's uploader, ask only when there are failures that could be excused.
  if (own === 0 || identifiers.length === 0 || summary.unreadable.length > 0) {
    return { summary, uploaded: true, identifiers, quarantine: null };
  }
  try {
    const quarantine = await getQuarantineConfig(
      { url: flags.url, token: flags.token },
      {
        repo: located.context.repo,
        org,
        remoteUrls: located.context.remoteUrl === null ? [] : [located.context.remoteUrl],
        testIdentifiers: identifiers,
      },
    );
    return { summary, uploaded: true, identifiers, quarantine };
  } catch (error) {
    warn(context, `the quarantine lookup failed: ${messageOf(error)}`);
    return { summary, uploaded: true, identifiers, quarantine: null };
  }
}

/** `--no-fail-first`, `--fail-first-wait` (docs/fail-first.md). */
function addFailFirstOptions(command: Command): Command {
  return command
    .option(
      "--no-fail-first",
      "in a merge queue's localization run, do not fetch the failed tests to run first (MAINLINE_FAILED_TESTS_FILE)",
    )
    .addOption(
      new Option(
        "--fail-first-wait <seconds>",
        "how long to wait for the batch run's results to be processed before running with what is known",
      )
        .default(20)
        .argParser(parseWait),
    );
}

function parseWait(value: string): number {
  if (!/^\d{1,5}$/.test(value))
    throw new InvalidArgumentError("expected a whole number of seconds");
  return Number(value);
}

export function registerTest(program: Command, context: CliContext): void {
  addFailFirstOptions(
    addUploadOptions(
      program
        .command("test")
        .description(
          "Run a test command, upload its JUnit results, and pass when every failed test is quarantined",
        )
        .usage("--junit <globs...> [options] -- <command...>")
        .argument("<command...>", "the test command (after --); a single argument runs in a shell")
        .configureOutput({
          // --junit takes several globs, so only `--` can tell where the command starts; without it
          // the command's own options look like ours (`python3 -m pytest`: "unknown option '-m'").
          outputError: (message, write) => {
            write(message);
            if (!context.argv.includes("--")) write(`${COMMAND_HINT}\n`);
          },
        }),
    ),
  ).action(async (argv: string[], flags: FailFirstFlags) => {
    // Reports left from an earlier run must not speak for this one (a crash before any report
    // is written would otherwise pass on an old report's quarantined failures).
    const before = await reportsBefore(flags, uploadIo(context, context.stderr));
    // In a localization run: what failed in its batch run, for the command to run first.
    const failFirst = await fetchFailFirst(flags, uploadIo(context, context.stderr));
    const ran = await runCommand(context, argv, failFirst?.env);
    await failFirst?.remove();
    if ("spawnError" in ran) {
      note(context, `cannot run ${argv[0] ?? ""} (${ran.spawnError})`);
      context.exitCode = 127;
      return;
    }
    const own = commandExitCode(ran);
    let exitCode: number;
    try {
      const looked = await uploadAndLookUp(context, argv, own, flags, before);
      const decision = decideExit({
        command: ran,
        reports:
          looked.summary === null
            ? null
            : {
                failedTestIds: looked.identifiers.map((test) => test.id),
                complete: looked.summary.unreadable.length === 0,
              },
        uploaded: looked.uploaded,
        quarantine: looked.quarantine,
      });
      exitCode = decision.exitCode;
      if (looked.quarantine !== null) {
        const quarantined = new Set(decision.quarantined);
        for (const test of looked.identifiers) {
          note(
            context,
            `${quarantined.has(test.id) ? "quarantined" : "not quarantined"}: ${describeTest(test)} (${test.id})`,
          );
        }
      }
      if (own !== 0) {
        note(
          context,
          decision.exitCode === 0
            ? `${decision.reason ?? ""} Exiting 0 instead of ${own}.`
            : `exit code ${own}: ${decision.reason ?? ""}`,
        );
      }
    } catch (error) {
      // Never let a fault on our side change the command's outcome.
      warn(context, messageOf(error));
      exitCode = own;
    }
    context.exitCode = exitCode;
  });
}
