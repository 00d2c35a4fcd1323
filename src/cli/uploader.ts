/**
 * The standalone uploader: `mainline upload` and `mainline test` alone, for CI jobs that fetch
 * one file from the Mainline they upload to (`GET /uploader/mainline-upload.mjs`) and run it with
 * plain `node`. scripts/bundle-uploader.mjs bundles this entry and everything it imports into
 * that file; nothing here may reach the server's modules (database drivers, fastify).
 */
import { VERSION } from "../version.js";
import { registerTest } from "./commands/test.js";
import { registerUpload } from "./commands/upload.js";
import { contextProgram, processContext } from "./context.js";
import { runProgram } from "./run.js";

const context = processContext();
const program = contextProgram(context)
  .name("mainline-upload")
  .description("Mainline's uploader: upload JUnit results, or run tests and upload theirs.")
  .version(VERSION)
  .showHelpAfterError("(run with --help for usage)");
registerUpload(program, context);
registerTest(program, context);

const outcome = await runProgram(program, context);
if (outcome.failed) process.exit(outcome.code);
process.exitCode = outcome.code;
