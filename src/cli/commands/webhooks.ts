/**
 * `mainline webhooks add|add-slack-bot|list|remove|test|deliveries|resend`: the organization's
 * outbound webhook, Slack and Teams endpoints through the HTTP API (docs/webhooks.md). A
 * webhook's secret is printed once, by `add`; a Slack or Teams URL is listed redacted.
 */
import { Option, type Command } from "commander";
import type { RepoRef } from "../../organizations/repositories.js";
import { callApi, type ClientOptions } from "../client.js";
import type { CliContext } from "../context.js";
import { parseRepoArg } from "../repo-arg.js";
import { formatTable } from "../table.js";
import { serverOptions } from "./repo.js";

interface EndpointView {
  id: string;
  kind: string;
  url: string;
  channel: string | null;
  description: string;
  eventTypes: string[];
  repositories: RepoRef[];
  codeOwners: string[];
  enabled: boolean;
  disabledReason: string | null;
}

const KINDS = ["webhook", "slack", "slack_bot", "teams"];

interface DeliveryView {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  state: string;
  attempts: { at: string; statusCode: number | null; error: string | null }[];
  nextAttemptAt: string | null;
}

type Options = ClientOptions & { json?: boolean };

const collect = <T>(parse: (value: string) => T) => {
  return (value: string, previous: T[] = []) => [...previous, parse(value)];
};

export function formatEndpoints(endpoints: EndpointView[]): string {
  return formatTable([
    ["ID", "KIND", "DESTINATION", "EVENTS", "REPOSITORIES", "OWNERS", "STATE"],
    ...endpoints.map((e) => [
      e.id,
      e.kind,
      e.kind === "slack_bot" ? (e.channel ?? "") : e.url,
      e.eventTypes.length === 0 ? "all" : e.eventTypes.join(" "),
      e.repositories.length === 0
        ? "all"
        : e.repositories.map((r) => `${r.host}/${r.owner}/${r.name}`).join(" "),
      e.codeOwners.length === 0 ? "all" : e.codeOwners.join(" "),
      e.enabled ? "enabled" : `disabled: ${e.disabledReason ?? ""}`,
    ]),
  ]);
}

interface AddOptions extends Options {
  kind?: string;
  botToken?: string;
  channel?: string;
  owner?: string[];
  event?: string[];
  repo?: RepoRef[];
  description?: string;
}

/** What an endpoint is sent and where from: the options `add` and `add-slack-bot` share. */
function filterOptions(command: Command): Command {
  return command
    .option(
      "--event <type>",
      "an event type to send (repeatable; default: all, or for Slack and Teams the failures)",
      collect(String),
    )
    .option(
      "--repo <host/owner/name>",
      "only this repository's events (repeatable; default: all)",
      collect(parseRepoArg),
    )
    .option(
      "--owner <owner>",
      "only tests this code owner owns, e.g. @acme/payments (repeatable; default: every test)",
      collect(String),
    )
    .option("--description <text>", "what the endpoint is for")
    .option("--json", "print the API's JSON");
}

function createBody(url: string | undefined, o: AddOptions): Record<string, unknown> {
  return {
    ...(o.kind === undefined ? {} : { kind: o.kind }),
    ...(url === undefined ? {} : { url }),
    ...(o.botToken === undefined ? {} : { secret: o.botToken }),
    ...(o.channel === undefined ? {} : { channel: o.channel }),
    ...(o.event ? { eventTypes: o.event } : {}),
    ...(o.repo ? { repositories: o.repo } : {}),
    ...(o.owner ? { codeOwners: o.owner } : {}),
    ...(o.description === undefined ? {} : { description: o.description }),
  };
}

const botTokenOption = () =>
  new Option("--bot-token <xoxb-…>", "the Slack bot's token (chat:write)").env(
    "MAINLINE_SLACK_BOT_TOKEN",
  );

export function formatDeliveries(deliveries: DeliveryView[]): string {
  return formatTable([
    ["DELIVERY", "EVENT", "TYPE", "STATE", "ATTEMPTS", "LAST"],
    ...deliveries.map((d) => {
      const last = d.attempts.at(-1);
      return [
        d.id,
        d.eventId,
        d.eventType,
        d.state,
        String(d.attempts.length),
        last
          ? `${last.at} ${last.statusCode === null ? (last.error ?? "") : String(last.statusCode)}`
          : "",
      ];
    }),
  ]);
}

export function registerWebhookCommands(program: Command, context: CliContext): void {
  const webhooks = program
    .command("webhooks")
    .description("The organization's outbound webhook endpoints and deliveries (HTTP API)");
  const print = (o: Options, body: unknown, text: () => string) => {
    context.stdout.write(o.json ? `${JSON.stringify(body, null, 2)}\n` : text());
  };

  const added = (o: AddOptions, body: { endpoint: EndpointView; secret: string }) => {
    print(o, body, () =>
      body.secret === ""
        ? `${body.endpoint.id}\n`
        : `${body.endpoint.id}\nsecret: ${body.secret}\n`,
    );
  };

  filterOptions(
    serverOptions(
      webhooks.command("add").description("Add an endpoint (a webhook's secret is printed once)"),
    )
      .argument("[url]", "where events are POSTed (http or https); none for a Slack bot")
      .addOption(
        new Option("--kind <kind>", "webhook (signed JSON), slack, slack_bot or teams")
          .choices(KINDS)
          .default("webhook"),
      )
      .addOption(botTokenOption())
      .option("--channel <id>", "slack_bot: the channel id (C…) or #name"),
  ).action(async (url: string | undefined, o: AddOptions) => {
    added(
      o,
      await callApi<{ endpoint: EndpointView; secret: string }>(
        o,
        "webhooks/createEndpoint",
        createBody(url, o),
      ),
    );
  });

  filterOptions(
    serverOptions(
      webhooks
        .command("add-slack-bot")
        .description("Add a Slack bot endpoint: posts to a channel with chat.postMessage"),
    )
      .addOption(botTokenOption().makeOptionMandatory())
      .requiredOption("--channel <id>", "the channel id (C…) or #name; invite the bot there"),
  ).action(async (o: AddOptions) => {
    added(
      o,
      await callApi<{ endpoint: EndpointView; secret: string }>(
        o,
        "webhooks/createEndpoint",
        createBody(undefined, { ...o, kind: "slack_bot" }),
      ),
    );
  });

  serverOptions(webhooks.command("list").description("List the endpoints"))
    .option("--json", "print the API's JSON")
    .action(async (o: Options) => {
      const body = await callApi<{ endpoints: EndpointView[] }>(o, "webhooks/listEndpoints", {});
      if (!o.json && body.endpoints.length === 0) context.stderr.write("No endpoints.\n");
      else print(o, body, () => formatEndpoints(body.endpoints));
    });

  serverOptions(webhooks.command("remove").description("Remove an endpoint and its deliveries"))
    .argument("<endpoint>", "the endpoint's id (see `mainline webhooks list`)")
    .action(async (endpointId: string, o: Options) => {
      await callApi(o, "webhooks/deleteEndpoint", { endpointId });
      context.stderr.write(`Removed ${endpointId}.\n`);
    });

  serverOptions(webhooks.command("test").description("Send a mainline.ping event to an endpoint"))
    .argument("<endpoint>", "the endpoint's id")
    .option("--json", "print the API's JSON")
    .action(async (endpointId: string, o: Options) => {
      const body = await callApi<{ eventId: string; deliveryId: string }>(
        o,
        "webhooks/sendTestEvent",
        { endpointId },
      );
      print(o, body, () => `${body.eventId} ${body.deliveryId}\n`);
    });

  serverOptions(webhooks.command("deliveries").description("List deliveries, newest first"))
    .option("--endpoint <id>", "only this endpoint's")
    .option("--event <id>", "only this event's")
    .option("--take <n>", "how many (1 to 100, default 20)", (v) => Number(v))
    .option("--json", "print the API's JSON")
    .action(async (o: Options & { endpoint?: string; event?: string; take?: number }) => {
      const body = await callApi<{ deliveries: DeliveryView[] }>(o, "webhooks/listDeliveries", {
        ...(o.endpoint === undefined ? {} : { endpointId: o.endpoint }),
        ...(o.event === undefined ? {} : { eventId: o.event }),
        page_query: { page_size: o.take ?? 20 },
      });
      if (!o.json && body.deliveries.length === 0) context.stderr.write("No deliveries.\n");
      else print(o, body, () => formatDeliveries(body.deliveries));
    });

  serverOptions(
    webhooks.command("resend").description("Send an event again to an endpoint (same webhook-id)"),
  )
    .argument("<event>", "the event's id (see `mainline webhooks deliveries`)")
    .argument("<endpoint>", "the endpoint's id")
    .action(async (eventId: string, endpointId: string, o: Options) => {
      const body = await callApi<{ deliveryId: string }>(o, "webhooks/resend", {
        eventId,
        endpointId,
      });
      context.stdout.write(`${body.deliveryId}\n`);
    });
}
