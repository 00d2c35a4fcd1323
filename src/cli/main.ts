/** The `mainline` executable: the CLI run against the real process. */
import { processContext } from "./context.js";
import { runCli } from "./program.js";

const outcome = await runCli(processContext());
// A failed run ends now; otherwise the process ends once nothing is left to do (`serve` runs on).
if (outcome.failed) process.exit(outcome.code);
process.exitCode = outcome.code;
