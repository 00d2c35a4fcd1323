import type { Command } from "commander";
import { CliError } from "../client.js";
import type { CliContext, CliOutput } from "../context.js";
import {
  addUploadOptions,
  describeProcessing,
  locate,
  readAll,
  resolveOrg,
  send,
  type Io,
  type UploadFlags,
} from "../upload/flow.js";

/** The upload flow's IO: results as lines on `out`, warnings on the context's standard error. */
export function uploadIo(context: CliContext, out: CliOutput): Io {
  return {
    cwd: context.cwd,
    env: context.env,
    out: (line) => out.write(`${line}\n`),
    err: context.stderr,
  };
}

export function registerUpload(program: Command, context: CliContext): void {
  addUploadOptions(
    program
      .command("upload")
      .description("Upload JUnit XML results to Mainline (Trunk's bundle format)"),
  ).action(async (flags: UploadFlags) => {
    const io = uploadIo(context, context.stdout);
    // Everything that can be checked here is, before the server is asked anything.
    const located = await locate(flags, io, { everyGlobMatches: true });
    const summary = await readAll(located, io, { onlyJunit: true });
    const org = await resolveOrg(flags, io);
    const sent = await send({ ...located, org, summary }, flags, io);
    if (sent.processing === null) return;
    if (sent.processing.state === "failed") {
      throw new CliError(
        `Upload ${sent.uploadId ?? ""} failed: ${sent.processing.reason ?? "no reason given"}`,
      );
    }
    io.out(describeProcessing(sent.processing));
  });
}
