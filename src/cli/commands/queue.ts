import { InvalidArgumentError, Option, type Command } from "commander";
import type { RepoRef } from "../../organizations/repositories.js";
import { CliError, callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { parseRepoArg } from "../repo-arg.js";
import { describeWaitingFor, type WaitingForBody } from "../waiting.js";

type Kind = "integer" | "boolean" | "text";

/** Every updateQueue setting as a CLI flag: `--testing-timeout-minutes 30` → testingTimeoutMinutes. */
const SETTINGS: { key: string; kind: Kind; help: string }[] = [
  { key: "state", kind: "text", help: "running | paused | draining" },
  { key: "mode", kind: "text", help: "single | parallel" },
  { key: "concurrency", kind: "integer", help: "pull requests tested at once" },
  { key: "bisectionConcurrency", kind: "integer", help: "test runs at once while bisecting" },
  { key: "testingTimeoutMinutes", kind: "integer", help: "0 disables the timeout" },
  { key: "pendingFailureDepth", kind: "integer", help: "0 removes a failed PR at once" },
  { key: "canOptimisticallyMerge", kind: "boolean", help: "true | false" },
  { key: "batch", kind: "boolean", help: "true | false" },
  { key: "batchingMaxWaitTimeMinutes", kind: "integer", help: "minutes to wait for a batch" },
  { key: "batchingMinSize", kind: "integer", help: "target batch size" },
  { key: "mergeMethod", kind: "text", help: "merge_commit | squash | rebase" },
  { key: "commentsEnabled", kind: "boolean", help: "true | false" },
  { key: "commandsEnabled", kind: "boolean", help: "true | false" },
  { key: "createPrsForTestingBranches", kind: "boolean", help: "true | false" },
  { key: "statusCheckEnabled", kind: "boolean", help: "true | false" },
  { key: "directMergeMode", kind: "text", help: "off | always" },
  { key: "optimizationMode", kind: "text", help: "off | bisection_skip_redundant_tests" },
  { key: "extensionEnabled", kind: "boolean", help: "true | false" },
  { key: "enqueueingLabel", kind: "text", help: "label that submits a PR" },
  { key: "labelCommandsEnabled", kind: "boolean", help: "true | false" },
  { key: "stateLabelsEnabled", kind: "boolean", help: "true | false" },
  { key: "notReadyTimeoutHours", kind: "integer", help: "0 waits forever" },
  {
    key: "speculationThresholdPercent",
    kind: "integer",
    help: "0 always fills concurrency (Trunk); N: start a run only if it is at least N% likely to be used",
  },
];

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function parseValue(kind: Kind): (value: string) => unknown {
  switch (kind) {
    case "integer":
      return (value) => {
        if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number");
        return Number(value);
      };
    case "boolean":
      return (value) => {
        if (value !== "true" && value !== "false")
          throw new InvalidArgumentError("expected true or false");
        return value === "true";
      };
    case "text":
      return (value) => value;
  }
}

export interface QueueOptions {
  repo: RepoRef;
  branch: string;
  url: string;
  token?: string;
  json?: boolean;
}

/** --repo, --branch (the target branch), --url and --token, as every remote command takes them. */
export function addressOptions(command: Command): Command {
  return command
    .requiredOption(
      "--repo <host/owner/name>",
      "the repository: owner/name on Mainline's local git host (acme/app = local/acme/app), else host/owner/name (github.com/acme/app)",
      parseRepoArg,
    )
    .option("--branch <branch>", "the target branch", "main")
    .addOption(
      new Option("--url <url>", "Mainline's address")
        .env("MAINLINE_URL")
        .default("http://127.0.0.1:8080"),
    )
    .addOption(new Option("--token <token>", "API token").env("MAINLINE_TOKEN"));
}

export const client = (o: QueueOptions): ClientOptions => ({ url: o.url, token: o.token });
export const address = (o: QueueOptions) => ({ repo: o.repo, targetBranch: o.branch });

/** getQueue's `batchSize` (Mainline's extension). */
interface BatchSizeBody {
  size: number;
  ceiling: number;
  reason: string;
}

/** getQueue's `localizations` (Mainline's extension), as far as the CLI shows them. */
interface LocalizationBody {
  runId: string;
  cleared?: number[];
  summary: string;
}

const prList = (numbers: readonly number[]) => numbers.map((n) => `#${String(n)}`).join(", ");

/** "3 of at most 4: at a 2.3 % failure rate, …"; with batching off, one at a time. */
function describeBatchSize(body: Record<string, unknown>): string | undefined {
  const choice = body.batchSize as BatchSizeBody | undefined;
  if (choice) {
    return `${String(choice.size)} of at most ${String(choice.ceiling)}: ${choice.reason}`;
  }
  return body.batch === false ? "1: batching is off" : undefined;
}

function printSettings(
  context: CliContext,
  body: Record<string, unknown>,
  json: boolean | undefined,
): void {
  if (json) {
    context.stdout.write(JSON.stringify(body, null, 2) + "\n");
    return;
  }
  const described = new Set(["enqueuedPullRequests", "batchSize", "localizations"]);
  const width = Math.max(...Object.keys(body).map((k) => k.length));
  const line = (label: string, text: string) =>
    context.stdout.write(`${label.padEnd(width)}  ${text}\n`);
  for (const [key, value] of Object.entries(body)) {
    if (!described.has(key)) line(key, JSON.stringify(value));
  }
  const queued = body.enqueuedPullRequests;
  // The rest is what getQueue says the queue is doing (updateQueue answers the settings only).
  if (!Array.isArray(queued)) return;
  const batchSize = describeBatchSize(body);
  if (batchSize !== undefined) line("batchSize", batchSize);
  // A server before Mainline's localizations sends none.
  for (const localization of (body.localizations ?? []) as LocalizationBody[]) {
    const cleared = localization.cleared ?? [];
    line(
      "localization",
      `${localization.summary}${cleared.length > 0 ? `; cleared ${prList(cleared)}` : ""}`,
    );
  }
  line("enqueued", `${queued.length} pull request(s)`);
  // Those the queue holds on purpose say what they wait for; a suspect, which localization.
  for (const pr of queued as { prNumber?: number; waitingFor?: WaitingForBody }[]) {
    const waiting = pr.waitingFor;
    if (!waiting) continue;
    const label = `#${String(pr.prNumber ?? "?")}`;
    const text =
      waiting.reason === "under_localization" && waiting.runId !== undefined
        ? `under localization: a suspect of failed batch run ${waiting.runId}`
        : describeWaitingFor(waiting);
    context.stdout.write(`${label.padStart(width)}  ${text}\n`);
  }
}

export function registerQueueCommands(program: Command, context: CliContext): void {
  const queue = program
    .command("queue")
    .description("Create, read, change and delete merge queues (through the HTTP API)");

  addressOptions(queue.command("create").description("Create a merge queue"))
    .option("--mode <mode>", "single | parallel")
    .option("--concurrency <n>", "pull requests tested at once", parseValue("integer"))
    .action(async (o: QueueOptions & { mode?: string; concurrency?: number }) => {
      const answer = await callApi<{ warnings?: { message: string }[] }>(client(o), "createQueue", {
        ...address(o),
        ...(o.mode !== undefined ? { mode: o.mode } : {}),
        ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
      });
      context.stderr.write(`Created the merge queue for ${o.branch}.\n`);
      // Mainline's extension: the queue exists but cannot work yet (its host is not connected).
      for (const warning of answer.warnings ?? []) {
        context.stderr.write(`mainline: warning: ${warning.message}\n`);
      }
    });

  addressOptions(
    queue.command("get").description("Show a merge queue's settings and pull requests"),
  )
    .option("--json", "print the API's JSON")
    .action(async (o: QueueOptions) => {
      printSettings(context, await callApi(client(o), "getQueue", address(o)), o.json);
    });

  const update = addressOptions(
    queue
      .command("update")
      .description("Change settings or state; unnamed settings stay as they are"),
  );
  for (const setting of SETTINGS) {
    update.option(`--${kebab(setting.key)} <value>`, setting.help, parseValue(setting.kind));
  }
  update
    .option("--required-statuses <names>", "comma-separated statuses that must pass (override)")
    .option("--delete-required-statuses", "remove the required-statuses override")
    .option("--json", "print the API's JSON")
    .action(async (o: QueueOptions & Record<string, unknown>) => {
      const body: Record<string, unknown> = address(o);
      for (const setting of SETTINGS) {
        if (o[setting.key] !== undefined) body[setting.key] = o[setting.key];
      }
      if (typeof o.requiredStatuses === "string") {
        const names = o.requiredStatuses
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
        if (names.length === 0) {
          // An empty override would require nothing; that is never what an empty flag means.
          throw new CliError(
            "--required-statuses needs at least one name; use --delete-required-statuses to remove the override.",
          );
        }
        body.requiredStatuses = names;
      }
      if (o.deleteRequiredStatuses === true) body.deleteRequiredStatuses = true;
      printSettings(context, await callApi(client(o), "updateQueue", body), o.json);
    });

  addressOptions(queue.command("delete").description("Delete an empty merge queue")).action(
    async (o: QueueOptions) => {
      await callApi(client(o), "deleteQueue", address(o));
      context.stderr.write(`Deleted the merge queue for ${o.branch}.\n`);
    },
  );
}
