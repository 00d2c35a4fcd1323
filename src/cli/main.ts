import { Command, CommanderError } from "commander";
import { ConfigError } from "../config.js";
import { redactSecrets } from "../lib/redact.js";
import { VERSION } from "../version.js";
import { CliError } from "./client.js";
import { registerAdminCommands } from "./commands/admin.js";
import { registerCiCommands } from "./commands/ci.js";
import { registerPullRequestCommands } from "./commands/pr.js";
import { registerQueueCommands } from "./commands/queue.js";
import { registerRepoCommands } from "./commands/repo.js";
import { registerServe } from "./commands/serve.js";
import { registerSimulate } from "./commands/simulate.js";
import { registerTest } from "./commands/test.js";
import { registerTestsCommands } from "./commands/tests.js";
import { registerUpload } from "./commands/upload.js";

export function buildProgram(): Command {
  const program = new Command()
    .name("mainline")
    .description("Mainline: test health and a merge queue that keep the main branch green.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)");
  registerServe(program);
  registerAdminCommands(program);
  registerQueueCommands(program);
  registerRepoCommands(program);
  registerPullRequestCommands(program);
  registerCiCommands(program);
  registerUpload(program);
  registerTest(program);
  registerTestsCommands(program);
  registerSimulate(program);
  return program;
}

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  if (error instanceof CliError || error instanceof ConfigError) {
    process.stderr.write(`mainline: ${redactSecrets(error.message)}\n`);
    process.exit(error instanceof ConfigError ? 2 : error.exitCode);
  }
  // Unexpected errors may echo what they were given (a URL, a connection string): no secrets.
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`mainline: ${redactSecrets(message)}\n`);
  process.exit(1);
}
