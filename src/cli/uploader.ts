/**
 * The standalone uploader: `mainline upload` and `mainline test` alone, for CI jobs that fetch
 * one file from the Mainline they upload to (`GET /uploader/mainline-upload.mjs`) and run it with
 * plain `node`. scripts/bundle-uploader.mjs bundles this entry and everything it imports into
 * that file; nothing here may reach the server's modules (database drivers, fastify).
 */
import { Command, CommanderError } from "commander";
import { ConfigError } from "../config.js";
import { VERSION } from "../version.js";
import { CliError } from "./client.js";
import { registerTest } from "./commands/test.js";
import { registerUpload } from "./commands/upload.js";

const program = new Command()
  .name("mainline-upload")
  .description("Mainline's uploader: upload JUnit results, or run tests and upload theirs.")
  .version(VERSION)
  .showHelpAfterError("(run with --help for usage)");
registerUpload(program);
registerTest(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  if (error instanceof CliError || error instanceof ConfigError) {
    process.stderr.write(`mainline: ${error.message}\n`);
    process.exit(error instanceof ConfigError ? 2 : error.exitCode);
  }
  process.stderr.write(`mainline: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
