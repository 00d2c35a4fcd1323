import { formatTable } from "../table.js";
import { InvalidArgumentError, type Command } from "commander";
import { CliError, callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { address, addressOptions, client, type QueueOptions } from "./queue.js";
import { parseLocalRepoArg } from "../repo-arg.js";
import { serverOptions } from "./repo.js";
import { repositoryName, type RepoRef } from "../../organizations/repositories.js";
import { describeWaitingFor, type WaitingForBody } from "../waiting.js";
import { formatFailure, type FailureBody } from "../failure.js";
import { describeReason } from "../../mergequeue/reasons.js";

/** A pull request number: digits (a leading `#` is allowed), at most 4294967295. */
export function parsePrNumber(value: string): number {
  const digits = value.trim().replace(/^#/, "");
  if (!/^\d{1,10}$/.test(digits) || Number(digits) > 4294967295) {
    throw new InvalidArgumentError("expected a pull request number, e.g. 123");
  }
  return Number(digits);
}

function parseTake(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("expected a whole number from 1 to 100");
  return Number(value);
}

/** One of submitPullRequest's warnings (Mainline's extension). */
interface SubmitWarning {
  code: string;
  message: string;
  file?: string;
  line?: number;
}

/** `file:line: message` where the warning names a file, else its message. */
function describeWarning(warning: SubmitWarning): string {
  if (warning.file === undefined) return warning.message;
  const line = warning.line === undefined ? "" : `:${String(warning.line)}`;
  return `${warning.file}${line}: ${warning.message}`;
}

/** The fields of a mergeItem the human output shows (the API's JSON has them all). */
interface MergeItem {
  id?: string;
  state?: string;
  stateChangedAt?: string;
  priorityValue?: number;
  priorityName?: string;
  usedDefaultPriorityName?: string;
  skipTheLine?: boolean;
  noBatch?: boolean;
  prNumber?: number;
  prTitle?: string;
  prSha?: string;
  prBaseBranch?: string;
  prAuthor?: string;
  waitingFor?: WaitingForBody;
}

interface TimelineItem {
  at: string;
  fromState: string | null;
  toState: string;
  reason: string;
  actor: { kind: string; name?: string };
  testRunId: string | null;
  detail: string | null;
}

interface PullRequestDetails extends MergeItem {
  readiness?: Record<string, unknown>;
  isCurrentlySubmittedToQueue?: boolean;
  timeline?: TimelineItem[];
  failure?: FailureBody;
}

interface PullRequestPage {
  pullRequests: MergeItem[];
  nextCursor?: string;
}

export const describePriority = (pr: MergeItem): string =>
  `${pr.priorityName ?? "?"} (${pr.priorityValue ?? "?"})${pr.usedDefaultPriorityName ? ", default" : ""}`;

const describeActor = (actor: TimelineItem["actor"]): string =>
  actor.kind === "user" ? (actor.name ?? "user") : actor.kind;

/** `pr status`: one pull request as `key  value` lines, then its timeline as a table. */
export function formatPullRequest(pr: PullRequestDetails): string {
  const rows: [string, string][] = [
    ["pr", `#${pr.prNumber ?? "?"} ${pr.prTitle ?? ""}`.trimEnd()],
    ["author", pr.prAuthor ?? ""],
    ["state", pr.state ?? ""],
    ...(pr.waitingFor
      ? [["waitingFor", describeWaitingFor(pr.waitingFor)] as [string, string]]
      : []),
    ["stateChangedAt", pr.stateChangedAt ?? ""],
    ["priority", describePriority(pr)],
    ["skipTheLine", String(pr.skipTheLine)],
    ["noBatch", String(pr.noBatch)],
    ["inQueue", String(pr.isCurrentlySubmittedToQueue)],
    ["sha", pr.prSha ?? ""],
    ["baseBranch", pr.prBaseBranch ?? ""],
  ];
  for (const [key, value] of Object.entries(pr.readiness ?? {})) rows.push([key, String(value)]);
  rows.push(["id", pr.id ?? ""]);
  let text = formatTable(rows);
  if (pr.failure) text += formatFailure(pr.failure);
  if (pr.timeline) {
    text += "\ntimeline\n";
    text += formatTable([
      ["AT", "FROM", "TO", "REASON", "ACTOR", "RUN", "DETAIL"],
      ...pr.timeline.map((t) => [
        t.at,
        t.fromState ?? "-",
        t.toState,
        describeReason(t.reason),
        describeActor(t.actor),
        t.testRunId ?? "-",
        t.detail ?? "",
      ]),
    ]);
  }
  return text;
}

/** `pr list`: one row per pull request. */
export function formatPullRequestList(prs: MergeItem[]): string {
  return formatTable([
    ["PR", "STATE", "PRIORITY", "CHANGED", "AUTHOR", "TITLE"],
    ...prs.map((pr) => [
      `#${pr.prNumber ?? "?"}`,
      pr.waitingFor ? `${pr.state ?? ""} (${describeWaitingFor(pr.waitingFor)})` : (pr.state ?? ""),
      describePriority(pr),
      pr.stateChangedAt ?? "",
      pr.prAuthor ?? "",
      pr.prTitle ?? "",
    ]),
  ]);
}

const json = (context: CliContext, body: unknown) =>
  context.stdout.write(JSON.stringify(body, null, 2) + "\n");

/** A pull request of the local git host, as its API (`/v1/local/…`) answers it. */
export interface LocalPullRequestView {
  number: number;
  title: string;
  author: string;
  description: string;
  head: string;
  base: string;
  headSha: string | null;
  state: "open" | "closed" | "merged";
  createdAt: string;
  closedAt: string | null;
  mergedSha: string | null;
}

/** `pr list --local`: one row per pull request of the local git host. */
export function formatLocalPullRequestList(prs: LocalPullRequestView[]): string {
  return formatTable([
    ["PR", "STATE", "HEAD", "BASE", "SHA", "AUTHOR", "TITLE"],
    ...prs.map((pr) => [
      `#${String(pr.number)}`,
      pr.state,
      pr.head,
      pr.base,
      pr.headSha?.slice(0, 10) ?? "-",
      pr.author,
      pr.title,
    ]),
  ]);
}

/** `pr open` and `pr close`: pull requests of the local git host. */
function registerLocalPullRequestCommands(pr: Command, context: CliContext): void {
  serverOptions(
    pr.command("open").description("Open a pull request on the local git host; prints its number"),
  )
    .requiredOption("--repo <owner/name>", "the local repository, e.g. acme/app", parseLocalRepoArg)
    .requiredOption("--head <branch>", "the branch with the changes (pushed already)")
    .option("--base <branch>", "the branch to merge into", "main")
    .option("--title <title>", "the title (default: the head branch)")
    .option(
      "--author <name>",
      "who opened it (default: the author of the head branch's first commit not on the base)",
    )
    .option("--description <text>", "what it is about (a squash merge's commit message has it)")
    .action(
      async (
        o: ClientOptions & {
          repo: RepoRef;
          head: string;
          base: string;
          title?: string;
          author?: string;
          description?: string;
        },
      ) => {
        const { number } = await callApi<{ number: number }>(o, "local/openPullRequest", {
          repo: o.repo,
          head: o.head,
          base: o.base,
          ...(o.title === undefined ? {} : { title: o.title }),
          ...(o.author === undefined ? {} : { author: o.author }),
          ...(o.description === undefined ? {} : { description: o.description }),
        });
        context.stdout.write(`${String(number)}\n`);
        context.stderr.write(`Opened #${String(number)}: ${o.head} into ${o.base}.\n`);
      },
    );

  serverOptions(pr.command("close").description("Close a pull request on the local git host"))
    .argument("<number>", "the pull request number", parsePrNumber)
    .requiredOption("--repo <owner/name>", "the local repository, e.g. acme/app", parseLocalRepoArg)
    .action(async (number: number, o: ClientOptions & { repo: RepoRef }) => {
      await callApi(o, "local/closePullRequest", { repo: o.repo, number });
      context.stderr.write(`Closed #${String(number)}.\n`);
    });
}

export function registerPullRequestCommands(program: Command, context: CliContext): void {
  const pr = program
    .command("pr")
    .description(
      "Submit, cancel, restart and inspect pull requests in a merge queue; open and close them on the local git host (HTTP API)",
    );
  registerLocalPullRequestCommands(pr, context);

  addressOptions(pr.command("submit").description("Submit a pull request to the merge queue"))
    .argument("<number>", "the pull request number", parsePrNumber)
    .option("--priority <priority>", "urgent | high | medium | low, or 0-255 (lower is sooner)")
    .option("--no-batch", "test this pull request on its own, never in a batch")
    .action(async (number: number, o: QueueOptions & { priority?: string; batch: boolean }) => {
      // Names and numbers alike go as given: the server reads "high" and "10" the same way.
      const answer = await callApi<{ warnings?: SubmitWarning[] }>(client(o), "submitPullRequest", {
        ...address(o),
        pr: { number },
        ...(o.priority === undefined ? {} : { priority: o.priority }),
        ...(o.batch ? {} : { noBatch: true }),
      });
      context.stderr.write(`Submitted #${number} to the merge queue for ${o.branch}.\n`);
      // Mainline's extension: mistakes in the configuration the run will use (built-in CI).
      for (const warning of answer.warnings ?? []) {
        context.stderr.write(`mainline: warning: ${describeWarning(warning)}\n`);
      }
    });

  addressOptions(pr.command("cancel").description("Remove a pull request from the merge queue"))
    .argument("<number>", "the pull request number", parsePrNumber)
    .action(async (number: number, o: QueueOptions) => {
      await callApi(client(o), "cancelPullRequest", { ...address(o), pr: { number } });
      context.stderr.write(`Cancelled #${number} in the merge queue for ${o.branch}.\n`);
    });

  addressOptions(
    pr.command("restart").description("Restart a pull request's tests, keeping its place"),
  )
    .argument("<number>", "the pull request number", parsePrNumber)
    .action(async (number: number, o: QueueOptions) => {
      await callApi(client(o), "restartTestsOnPullRequest", { ...address(o), pr: { number } });
      context.stderr.write(
        `Restarted the tests of #${number} in the merge queue for ${o.branch}.\n`,
      );
    });

  addressOptions(
    pr
      .command("status")
      .description("Show a pull request's submission: by number, or by head branch with --head"),
  )
    .argument("[number]", "the pull request number", parsePrNumber)
    .option("--head <branch>", "find the pull request by its head branch instead")
    .option("--timeline", "also show every state change")
    .option("--json", "print the API's JSON")
    .action(
      async (
        number: number | undefined,
        o: QueueOptions & { head?: string; timeline?: boolean },
      ) => {
        if ((number === undefined) === (o.head === undefined)) {
          throw new CliError(
            "Name the pull request: give its number or --head <branch>, not both.",
          );
        }
        const body = await callApi<PullRequestDetails>(client(o), "getSubmittedPullRequest", {
          ...address(o),
          pr: number === undefined ? { branch: o.head } : { number },
          ...(o.timeline ? { includeTimeline: true } : {}),
        });
        if (o.json) json(context, body);
        else context.stdout.write(formatPullRequest(body));
      },
    );

  addressOptions(
    pr
      .command("list")
      .description(
        "List the queue's pull requests, each once, a page at a time; with --local, the local git host's",
      ),
  )
    .option("--local", "list the pull requests opened on the local git host instead")
    .option(
      "--state <state>",
      "only this state, e.g. pending, testing, merged (--local: open, closed, merged)",
    )
    .option("--since <time>", "only pull requests concluded at or after this RFC 3339 time")
    .option("--history", "every submission: a pull request submitted again is listed each time")
    .option("--take <n>", "page size, 1 to 100 (default 50)", parseTake)
    .option("--cursor <cursor>", "continue after a previous page")
    .option("--json", "print the API's JSON")
    .action(
      async (
        o: QueueOptions & {
          local?: boolean;
          state?: string;
          since?: string;
          history?: boolean;
          take?: number;
          cursor?: string;
        },
      ) => {
        if (o.local) {
          if (o.repo.host.toLowerCase() !== "local") {
            throw new CliError(
              `--local lists pull requests of Mainline's local git host, and ${repositoryName(o.repo)} is not on it; name a local repository as owner/name.`,
              2,
            );
          }
          const { pullRequests } = await callApi<{ pullRequests: LocalPullRequestView[] }>(
            client(o),
            "local/listPullRequests",
            {
              repo: o.repo,
              ...(o.state === undefined ? {} : { state: o.state }),
            },
          );
          if (o.json) json(context, { pullRequests });
          else if (pullRequests.length === 0) context.stderr.write("No pull requests.\n");
          else context.stdout.write(formatLocalPullRequestList(pullRequests));
          return;
        }
        const page = await callApi<PullRequestPage>(client(o), "listPullRequests", {
          ...address(o),
          ...(o.state === undefined ? {} : { state: o.state }),
          ...(o.since === undefined ? {} : { since: o.since }),
          ...(o.history ? { history: true } : {}),
          ...(o.take === undefined ? {} : { take: o.take }),
          ...(o.cursor === undefined ? {} : { cursor: o.cursor }),
        });
        if (o.json) {
          json(context, page);
          return;
        }
        if (page.pullRequests.length === 0) context.stderr.write("No pull requests.\n");
        else context.stdout.write(formatPullRequestList(page.pullRequests));
        if (page.nextCursor) {
          context.stderr.write(`More pull requests: add --cursor ${page.nextCursor}\n`);
        }
      },
    );
}
