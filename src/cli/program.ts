/** The `mainline` program: every command, built for one run's context. */
import type { Command } from "commander";
import { redactSecrets } from "../lib/redact.js";
import { VERSION } from "../version.js";
import { registerAdminCommands } from "./commands/admin.js";
import { registerCiCommands } from "./commands/ci.js";
import { registerGitHubCommands } from "./commands/github.js";
import { registerGitLabCommands } from "./commands/gitlab.js";
import { registerPullRequestCommands } from "./commands/pr.js";
import { registerQueueCommands } from "./commands/queue.js";
import { registerRepoCommands } from "./commands/repo.js";
import { registerServe } from "./commands/serve.js";
import { registerSimulate } from "./commands/simulate.js";
import { registerTest } from "./commands/test.js";
import { registerTestsCommands } from "./commands/tests.js";
import { registerTicketCommands } from "./commands/tickets.js";
import { registerUpload } from "./commands/upload.js";
import { registerWebhookCommands } from "./commands/webhooks.js";
import { registerWhoAmI } from "./commands/whoami.js";
import { contextProgram, type CliContext } from "./context.js";
import { runProgram, type CliOutcome } from "./run.js";

export function buildProgram(context: CliContext): Command {
  const program = contextProgram(context)
    .name("mainline")
    .description("Mainline: test health and a merge queue that keep the main branch green.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)");
  registerServe(program, context);
  registerAdminCommands(program, context);
  registerGitHubCommands(program, context);
  registerGitLabCommands(program, context);
  registerQueueCommands(program, context);
  registerRepoCommands(program, context);
  registerWhoAmI(program, context);
  registerPullRequestCommands(program, context);
  registerCiCommands(program, context);
  registerWebhookCommands(program, context);
  registerTicketCommands(program, context);
  registerUpload(program, context);
  registerTest(program, context);
  registerTestsCommands(program, context);
  registerSimulate(program, context);
  return program;
}

/** Runs `mainline <context.argv>`; what it printed went to the context's streams. */
export function runCli(context: CliContext): Promise<CliOutcome> {
  return runProgram(buildProgram(context), context, redactSecrets);
}
