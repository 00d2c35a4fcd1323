/**
 * What a CLI run reads and writes, passed to every command instead of `process`: its arguments,
 * environment, working directory and output streams. `main.ts` builds one from the real process;
 * tests build one per run, so that the CLI runs in-process (see `runCli` in program.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { EventEmitter } from "node:events";
import { Command } from "commander";

/** Where a command writes text (a stream, or a collector in tests). */
export interface CliOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
  hasColors?(): boolean;
}

export interface CliContext {
  /** The user's arguments (without `node` and the script). */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  /**
   * True when this run is the process itself: a command may then let a child inherit the
   * standard streams and listen to the process's signals. In-process runs (tests) are not.
   */
  readonly ownsProcess: boolean;
  /** The exit code a command chose without failing (`mainline test` passes on its command's). */
  exitCode: number | undefined;
}

/** The context of the real process (the CLI's entry points). */
export function processContext(): CliContext {
  return {
    argv: process.argv.slice(2),
    env: process.env,
    cwd: process.cwd(),
    stdout: process.stdout,
    stderr: process.stderr,
    ownsProcess: true,
    exitCode: undefined,
  };
}

function hasColors(output: CliOutput, env: CliContext["env"]): boolean {
  // The conventions commander follows for process.stdout, read from the context's environment.
  if (env.NO_COLOR || env.FORCE_COLOR === "0" || env.FORCE_COLOR === "false") return false;
  if (env.FORCE_COLOR || env.CLICOLOR_FORCE !== undefined) return true;
  return output.isTTY === true && (output.hasColors?.() ?? false);
}

/** A terminal's width; commander's default (80) for anything else. */
function helpWidth(output: CliOutput): number {
  return (output.isTTY === true ? output.columns : undefined) ?? 80;
}

/**
 * A commander `Command` whose options' `.env(…)` variables come from the context's environment
 * (commander itself reads `process.env`), and whose subcommands are built the same way.
 */
class ContextCommand extends Command {
  constructor(
    private readonly context: CliContext,
    name?: string,
  ) {
    super(name);
  }

  override createCommand(name?: string): Command {
    return new ContextCommand(this.context, name);
  }

  /** Replaces commander's method of that name, which does the same with `process.env`. */
  _parseOptionsEnv(): void {
    const env = this.context.env;
    for (const option of this.options) {
      const name = option.envVar;
      if (name === undefined || !(name in env)) continue;
      const key = option.attributeName();
      // Values from the command line (or set by code) win over the environment.
      const source = this.getOptionValueSource(key);
      if (
        this.getOptionValue(key) !== undefined &&
        !["default", "config", "env"].includes(source ?? "")
      ) {
        continue;
      }
      // Commander's commands are event emitters (its typings leave that out).
      const events = this as unknown as EventEmitter;
      if (option.required || option.optional) events.emit(`optionEnv:${option.name()}`, env[name]);
      else events.emit(`optionEnv:${option.name()}`);
    }
  }
}

/**
 * The root command of a run: it writes to the context's streams and throws a `CommanderError`
 * where commander would exit the process (help, version, usage errors). Set up before any
 * subcommand is added, so that every subcommand inherits it.
 */
export function contextProgram(context: CliContext): Command {
  return new ContextCommand(context).exitOverride().configureOutput({
    writeOut: (text) => context.stdout.write(text),
    writeErr: (text) => context.stderr.write(text),
    getOutHelpWidth: () => helpWidth(context.stdout),
    getErrHelpWidth: () => helpWidth(context.stderr),
    getOutHasColors: () => hasColors(context.stdout, context.env),
    getErrHasColors: () => hasColors(context.stderr, context.env),
  });
}

/**
 * Starts a child process of a command in the context's directory and environment. In the real
 * process it writes to the inherited standard streams (a terminal stays a terminal); in-process,
 * its output is passed on to the context's streams.
 */
export function spawnInContext(
  context: CliContext,
  file: string,
  args: readonly string[],
  options: { shell?: boolean; stdin?: "ignore" | "inherit"; env?: Record<string, string> } = {},
): ChildProcess {
  const child = spawn(file, args, {
    cwd: context.cwd,
    env: { ...context.env, ...options.env },
    shell: options.shell ?? false,
    stdio: context.ownsProcess
      ? [options.stdin ?? "inherit", "inherit", "inherit"]
      : ["ignore", "pipe", "pipe"],
  });
  child.stdout?.setEncoding("utf8").on("data", (text: string) => context.stdout.write(text));
  child.stderr?.setEncoding("utf8").on("data", (text: string) => context.stderr.write(text));
  return child;
}
