/** `mainline whoami`: which server, organization and token the remote commands use. */
import type { Command } from "commander";
import { redactSecrets } from "../../lib/redact.js";
import { tokenHint } from "../../lib/tokens.js";
import { ApiAnswerError, CliError, callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { serverOptions } from "./repo.js";

/** What a token may do: every token is its organization's, for all of its API. */
const SCOPE =
  "the organization's whole API (its repositories, merge queues and test health); no other organization's, and none of the admin commands, which work on the database";

interface WhoAmI {
  organization: { slug: string };
  tokenId: string;
}

/** Where an option's value came from, in words: `--token`, `MAINLINE_TOKEN`, or the default. */
function source(command: Command, option: "url" | "token", variable: string): string {
  switch (command.getOptionValueSource(option)) {
    case "env":
      return variable;
    case "default":
      return "the default";
    default:
      return `--${option}`;
  }
}

export function registerWhoAmI(program: Command, context: CliContext): void {
  serverOptions(
    program
      .command("whoami")
      .description(
        "Show the server, organization and API token (its id, never the secret) the remote commands use",
      ),
  )
    .option("--json", "print it as JSON")
    .action(async (o: ClientOptions & { json?: boolean }, command: Command) => {
      const url = redactSecrets(o.url);
      if (!o.token) {
        throw new CliError(
          `Not logged in: no API token for ${url}. Pass --token or set MAINLINE_TOKEN (the token the first start printed, or a new one from \`mainline token create --org <slug>\`).`,
        );
      }
      const hint = `${tokenHint(o.token)}…`;
      const tokenFrom = source(command, "token", "MAINLINE_TOKEN");
      let answer: WhoAmI;
      try {
        answer = await callApi<WhoAmI>(o, "whoami", {});
      } catch (error) {
        if (error instanceof ApiAnswerError && error.status === 401) {
          throw new CliError(
            `${url} rejected the API token ${hint} (from ${tokenFrom}): ${error.message} Create a new one with \`mainline token create --org <slug>\`.`,
          );
        }
        throw error;
      }
      const who = {
        url,
        organization: answer.organization.slug,
        tokenId: answer.tokenId,
        tokenHint: hint,
        scope: SCOPE,
      };
      if (o.json) {
        context.stdout.write(`${JSON.stringify(who, null, 2)}\n`);
        return;
      }
      const lines = [
        ["url", `${who.url} (from ${source(command, "url", "MAINLINE_URL")})`],
        ["organization", who.organization],
        ["token", `${who.tokenId} (${hint}, from ${tokenFrom})`],
        ["scope", SCOPE],
      ];
      for (const [label, text] of lines) {
        context.stdout.write(`${(label ?? "").padEnd(12)}  ${text ?? ""}\n`);
      }
    });
}
