import type { Command } from "commander";
import { callApi } from "../client.js";
import type { CliContext } from "../context.js";
import { formatTable } from "../table.js";
import { address, addressOptions, client, type QueueOptions } from "./queue.js";

interface CiRunView {
  runId: string;
  status: string;
  sha: string;
  prNumbers: number[];
  checks: { name: string; status: string }[];
  error: { reason: string; message: string } | null;
  createdAt: string;
}

/** `ci runs`: one row per run, its checks as `name=status`. */
export function formatCiRuns(runs: CiRunView[]): string {
  return formatTable([
    ["RUN", "STATUS", "PRS", "SHA", "CREATED", "CHECKS"],
    ...runs.map((run) => [
      run.runId,
      run.status,
      run.prNumbers.map((n) => `#${String(n)}`).join(" "),
      run.sha.slice(0, 10),
      run.createdAt,
      run.error
        ? `${run.error.reason}: ${run.error.message}`
        : run.checks.map((c) => `${c.name}=${c.status}`).join(" "),
    ]),
  ]);
}

export function registerCiCommands(program: Command, context: CliContext): void {
  const ci = program
    .command("ci")
    .description("The built-in CI runner's runs and logs for a merge queue (HTTP API)");

  addressOptions(ci.command("runs").description("List the queue's recent test runs"))
    .option("--take <n>", "how many (1 to 100, default 20)", (v) => Number(v))
    .option("--json", "print the API's JSON")
    .action(async (o: QueueOptions & { take?: number }) => {
      const body = await callApi<{ runs: CiRunView[] }>(client(o), "local/listCiRuns", {
        ...address(o),
        ...(o.take === undefined ? {} : { take: o.take }),
      });
      if (o.json) context.stdout.write(JSON.stringify(body, null, 2) + "\n");
      else if (body.runs.length === 0) context.stderr.write("No runs.\n");
      else context.stdout.write(formatCiRuns(body.runs));
    });

  addressOptions(ci.command("logs").description("Print the log of one check of a run"))
    .argument("<run>", "the run id (see `mainline ci runs`)")
    .argument("<check>", "the check's name in .mainline.yml")
    .action(async (runId: string, check: string, o: QueueOptions) => {
      const { log } = await callApi<{ log: string }>(client(o), "local/getCiLog", {
        ...address(o),
        runId,
        check,
      });
      context.stdout.write(log);
    });
}
