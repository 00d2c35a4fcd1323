/**
 * Runs a CLI program against a context and turns how it ended into an exit code: no
 * `process.exit`, so that the same run works in the real process (main.ts) and in-process.
 */
import { CommanderError, type Command } from "commander";
import { ConfigError } from "../config.js";
import { UnsupportedNodeError } from "../lib/node-support.js";
import { CliError } from "./client.js";
import type { CliContext } from "./context.js";

export interface CliOutcome {
  code: number;
  /** The run ended by an error (a usage error, a failed command), not with a chosen exit code. */
  failed: boolean;
}

export async function runProgram(
  program: Command,
  context: CliContext,
  clean: (message: string) => string = (message) => message,
): Promise<CliOutcome> {
  try {
    await program.parseAsync([...context.argv], { from: "user" });
    return { code: context.exitCode ?? 0, failed: false };
  } catch (error) {
    // Commander has written its message (or the help, or the version) already.
    if (error instanceof CommanderError) {
      return { code: error.exitCode, failed: error.exitCode !== 0 };
    }
    if (
      error instanceof CliError ||
      error instanceof ConfigError ||
      error instanceof UnsupportedNodeError
    ) {
      context.stderr.write(`mainline: ${clean(error.message)}\n`);
      return { code: error instanceof ConfigError ? 2 : error.exitCode, failed: true };
    }
    // Unexpected errors may echo what they were given (a URL, a connection string): no secrets.
    const message = error instanceof Error ? error.message : String(error);
    context.stderr.write(`mainline: ${clean(message)}\n`);
    return { code: 1, failed: true };
  }
}
