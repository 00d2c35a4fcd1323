/**
 * `mainline tickets add-jira|add-linear|add-github|list|remove`: the organization's ticket
 * connections through the HTTP API (docs/tickets.md). A credential is taken from an option or its
 * environment variable, sent once, and never printed (nor shown by `list`).
 */
import { Option, type Command } from "commander";
import { callApi, CliError, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { formatTable } from "../table.js";
import { serverOptions } from "./repo.js";

interface ConnectionView {
  id: string;
  kind: string;
  name: string;
  baseUrl: string | null;
  target: string | null;
  issueType: string | null;
  labels: string[];
  credentialSet: boolean;
  lastError: string | null;
  lastErrorAt: string | null;
  lastSuccessAt: string | null;
}

type Options = ClientOptions & { json?: boolean; name?: string; label?: string[] };

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function formatConnections(connections: ConnectionView[]): string {
  return formatTable([
    ["ID", "KIND", "NAME", "WHERE", "CREDENTIAL", "LAST ERROR"],
    ...connections.map((c) => [
      c.id,
      c.kind,
      c.name,
      [c.baseUrl, c.target].filter((part) => part !== null).join(" ") || "(each test's repository)",
      c.credentialSet ? "set" : "none",
      c.lastError === null ? "" : `${c.lastErrorAt ?? ""} ${c.lastError}`.trim(),
    ]),
  ]);
}

/** --name, --label and --json, as every `add-…` command takes them. */
function addOptions(command: Command): Command {
  return serverOptions(command)
    .option("--name <text>", "how buttons and lists name it (default: the provider and target)")
    .option("--label <label>", "a label of every ticket (repeatable; default flaky-test)", collect)
    .option("--json", "print the API's JSON");
}

export function registerTicketCommands(program: Command, context: CliContext): void {
  const tickets = program
    .command("tickets")
    .description("The organization's ticket connections: Jira, Linear, GitHub Issues (HTTP API)");
  const print = (o: Options, body: unknown, text: () => string) => {
    context.stdout.write(o.json ? `${JSON.stringify(body, null, 2)}\n` : text());
  };
  const add = async (o: Options, fields: Record<string, unknown>) => {
    const body = await callApi<{ connection: ConnectionView }>(o, "tickets/createConnection", {
      ...fields,
      ...(o.name === undefined ? {} : { name: o.name }),
      ...(o.label === undefined ? {} : { labels: o.label }),
    });
    print(o, body, () => `${body.connection.id}\n`);
    if (!o.json) {
      context.stderr.write(
        `Name it in a repository's settings to use it: mainline tests settings update --repo <repo> --ticket-connection ${body.connection.id}\n`,
      );
    }
  };

  addOptions(
    tickets.command("add-jira").description("Add a Jira Cloud or Jira Data Center connection"),
  )
    .requiredOption(
      "--site <url>",
      "the Jira site (https://acme.atlassian.net) or Data Center base URL",
    )
    .requiredOption("--project <key>", "the project's key, e.g. ENG")
    .option("--email <address>", "Jira Cloud: the account the API token is of")
    .option(
      "--data-center",
      "Jira Data Center (a personal access token instead of e-mail + API token)",
    )
    .option("--issue-type <name>", "the issue type (default Bug)")
    .addOption(
      new Option(
        "--jira-token <token>",
        "Jira Cloud API token, or Data Center personal access token",
      ).env("MAINLINE_JIRA_TOKEN"),
    )
    .action(
      async (
        o: Options & {
          site: string;
          project: string;
          email?: string;
          dataCenter?: boolean;
          issueType?: string;
          jiraToken?: string;
        },
      ) => {
        if (!o.jiraToken) {
          throw new CliError("Give the Jira token with --jira-token or MAINLINE_JIRA_TOKEN.");
        }
        await add(o, {
          kind: o.dataCenter ? "jira_dc" : "jira_cloud",
          baseUrl: o.site,
          target: o.project,
          credential: o.jiraToken,
          ...(o.email === undefined ? {} : { email: o.email }),
          ...(o.issueType === undefined ? {} : { issueType: o.issueType }),
        });
      },
    );

  addOptions(tickets.command("add-linear").description("Add a Linear connection"))
    .requiredOption("--team <id>", "the Linear team's id")
    .option("--project <id>", "a Linear project's id for the issues (optional)")
    .addOption(
      new Option("--linear-key <key>", "a Linear API key (Read and Create issues)").env(
        "MAINLINE_LINEAR_API_KEY",
      ),
    )
    .action(async (o: Options & { team: string; project?: string; linearKey?: string }) => {
      if (!o.linearKey) {
        throw new CliError("Give the Linear API key with --linear-key or MAINLINE_LINEAR_API_KEY.");
      }
      await add(o, {
        kind: "linear",
        target: o.team,
        credential: o.linearKey,
        ...(o.project === undefined ? {} : { issueType: o.project }),
      });
    });

  addOptions(tickets.command("add-github").description("Add a GitHub Issues connection"))
    .option("--repository <owner/name>", "where issues go (default: each test's own repository)")
    .addOption(
      new Option(
        "--github-token <token>",
        "a token with Issues: write (default: the GitHub App's installation token)",
      ).env("MAINLINE_GITHUB_ISSUES_TOKEN"),
    )
    .action(async (o: Options & { repository?: string; githubToken?: string }) => {
      await add(o, {
        kind: "github",
        ...(o.repository === undefined ? {} : { target: o.repository }),
        ...(o.githubToken === undefined ? {} : { credential: o.githubToken }),
      });
    });

  serverOptions(tickets.command("list").description("List the connections and their last errors"))
    .option("--json", "print the API's JSON")
    .action(async (o: Options) => {
      const body = await callApi<{ connections: ConnectionView[] }>(
        o,
        "tickets/listConnections",
        {},
      );
      if (!o.json && body.connections.length === 0)
        context.stderr.write("No ticket connections.\n");
      else print(o, body, () => formatConnections(body.connections));
    });

  serverOptions(
    tickets.command("remove").description("Remove a connection (its tickets stay linked)"),
  )
    .argument("<connection>", "the connection's id (see `mainline tickets list`)")
    .action(async (connectionId: string, o: Options) => {
      await callApi(o, "tickets/deleteConnection", { connectionId });
      context.stderr.write(`Removed ${connectionId}.\n`);
    });
}
