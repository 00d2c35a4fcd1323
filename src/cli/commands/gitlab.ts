/**
 * `mainline gitlab connect|authorize|status|disconnect`: the organization's GitLab connection
 * through the HTTP API (docs/gitlab.md). The access token to connect with is read from a file or
 * from GITLAB_TOKEN, never from the command line (where `ps` and shell history would show it);
 * the webhook's secret token is printed only when asked for.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { DAY_MS } from "../../lib/time.js";
import { CliError, callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { serverOptions } from "./repo.js";

/** The connection as `/v1/gitlab/getConnection` answers it. */
export interface GitLabConnectionView {
  instanceUrl: string;
  method: "token" | "oauth";
  problem: string | null;
  host: string;
  username: string;
  scopes: string[];
  expiresAt: string | null;
  connectedAt: string;
  webhook: { url: string | null; path: string; secret: string; events: string[] };
}

/** How long before an access token expires `status` starts warning (GitLab mails at 7 days). */
export const EXPIRY_WARNING_DAYS = 14;

type Options = ClientOptions & { json?: boolean; showSecret?: boolean; tokenFile?: string };

/** The access token to connect with: the file's first line, else GITLAB_TOKEN. */
function readToken(context: CliContext, file: string | undefined): string {
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(path.resolve(context.cwd, file), "utf8");
    } catch (error) {
      throw new CliError(
        `Cannot read the token file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
      );
    }
    const token = text.split(/\r?\n/)[0]?.trim() ?? "";
    if (!token) throw new CliError(`The token file ${file} is empty.`);
    return token;
  }
  const token = context.env.GITLAB_TOKEN?.trim();
  if (!token) {
    throw new CliError(
      "No GitLab token: pass --token-file <file> or set GITLAB_TOKEN (a group or project access token with the api and write_repository scopes; docs/gitlab.md).",
      2,
    );
  }
  return token;
}

/**
 * What is wrong, or about to be, with a connection at `now`: `broken` when the queue cannot act on
 * GitLab until someone connects again; none for an OAuth grant, which Mainline renews itself.
 */
export function connectionWarnings(
  connection: Pick<GitLabConnectionView, "method" | "problem" | "expiresAt">,
  now: number,
): { broken: boolean; lines: string[] } {
  const again =
    connection.method === "oauth" ? "`mainline gitlab authorize`" : "`mainline gitlab connect`";
  if (connection.problem !== null) {
    return {
      broken: true,
      lines: [`The connection stopped working: ${connection.problem} Connect again with ${again}.`],
    };
  }
  if (connection.method === "oauth" || connection.expiresAt === null) {
    return { broken: false, lines: [] };
  }
  const expires = Date.parse(connection.expiresAt);
  const day = connection.expiresAt.slice(0, 10);
  if (expires <= now) {
    return {
      broken: true,
      lines: [
        `The GitLab token expired on ${day}: the queue cannot act on GitLab until a new token is connected with ${again} (the webhooks stay as they are).`,
      ],
    };
  }
  const days = Math.ceil((expires - now) / DAY_MS);
  if (days > EXPIRY_WARNING_DAYS) return { broken: false, lines: [] };
  return {
    broken: false,
    lines: [
      `The GitLab token expires on ${day}, in ${days} day${days === 1 ? "" : "s"}: create a new one and run ${again} with it before then (the webhooks stay as they are).`,
    ],
  };
}

function describeConnection(c: GitLabConnectionView, showSecret: boolean): string {
  const method =
    c.method === "oauth" ? "OAuth application (Mainline renews the grant)" : "access token";
  const webhook =
    c.webhook.url ??
    `${c.webhook.path} on this server's public address (set MAINLINE_PUBLIC_URL to have Mainline register it)`;
  const rows: [string, string][] = [
    ["instance", `${c.instanceUrl} (repositories: ${c.host}/<group>/<project>)`],
    ["method", method],
    ["user", `@${c.username}`],
    ["scopes", c.scopes.join(", ") || "(GitLab did not say)"],
    ["expires", c.expiresAt ?? "never"],
    ["connected", c.connectedAt],
    ["webhook", webhook],
    ["events", c.webhook.events.join(", ")],
    ["secret", showSecret ? c.webhook.secret : "(hidden: --show-secret prints it)"],
  ];
  return rows.map(([label, text]) => `${label.padEnd(10)}  ${text}\n`).join("");
}

function writeWarnings(context: CliContext, connection: GitLabConnectionView): boolean {
  const { broken, lines } = connectionWarnings(connection, Date.now());
  for (const line of lines) context.stderr.write(`mainline: warning: ${line}\n`);
  return broken;
}

export function registerGitLabCommands(program: Command, context: CliContext): void {
  const gitlab = program
    .command("gitlab")
    .description("The organization's GitLab connection (docs/gitlab.md)");

  serverOptions(
    gitlab
      .command("connect")
      .description(
        "Connect the organization to GitLab with an access token (api and write_repository scopes), or replace its token",
      ),
  )
    .option("--token-file <file>", "read the GitLab token from this file (else GITLAB_TOKEN)")
    .action(async (o: Options) => {
      const token = readToken(context, o.tokenFile);
      const { connection } = await callApi<{ connection: GitLabConnectionView }>(
        o,
        "gitlab/connect",
        { token },
      );
      context.stdout.write(
        `Connected to ${connection.instanceUrl}: Mainline acts on GitLab as @${connection.username} (scopes ${connection.scopes.join(", ")}${connection.expiresAt ? `; the token expires on ${connection.expiresAt.slice(0, 10)}` : ""}).\n`,
      );
      if (connection.webhook.url === null) {
        context.stdout.write(
          `Each project's webhook goes to ${connection.webhook.path} on this server's public address; \`mainline gitlab status --show-secret\` prints its secret token.\n`,
        );
      }
      writeWarnings(context, connection);
    });

  serverOptions(
    gitlab
      .command("authorize")
      .description(
        "Start connecting through the server's GitLab OAuth application: prints the address to approve it at",
      ),
  ).action(async (o: Options) => {
    const answer = await callApi<{ url: string; redirectUri: string; expiresAt: string }>(
      o,
      "gitlab/authorize",
      {},
    );
    context.stdout.write(
      `Open this address in a browser signed in to GitLab as the account Mainline should act as, before ${answer.expiresAt} (it serves once):\n${answer.url}\nThe OAuth application's redirect URI must be exactly ${answer.redirectUri}\n`,
    );
  });

  serverOptions(
    gitlab
      .command("status")
      .description(
        "Show the GitLab connection; warns when its token expires soon, and exits 1 when it no longer works",
      ),
  )
    .option("--json", "print it as JSON")
    .option("--show-secret", "print the webhook's secret token too")
    .action(async (o: Options) => {
      const { connection } = await callApi<{ connection: GitLabConnectionView }>(
        o,
        "gitlab/getConnection",
        {},
      );
      const shown =
        o.showSecret === true
          ? connection
          : { ...connection, webhook: { ...connection.webhook, secret: undefined } };
      context.stdout.write(
        o.json === true
          ? `${JSON.stringify({ connection: shown }, null, 2)}\n`
          : describeConnection(connection, o.showSecret === true),
      );
      if (writeWarnings(context, connection)) context.exitCode = 1;
    });

  serverOptions(
    gitlab
      .command("disconnect")
      .description(
        "Forget the organization's GitLab token (revoking an OAuth grant); queues and data are kept",
      ),
  ).action(async (o: Options) => {
    await callApi(o, "gitlab/disconnect", {});
    context.stdout.write(
      "Disconnected from GitLab: the token is forgotten (an OAuth grant is revoked on GitLab). Queues and data are kept; the queue acts on GitLab again once connected.\n",
    );
  });
}
