/**
 * What an endpoint of each kind needs when it is created or changed, checked with clear 400s:
 * a `webhook` an http(s) URL and maybe its `whsec_` secret; a `slack` or `teams` endpoint an
 * https URL (its credential; http only where MAINLINE_WEBHOOKS_ALLOW_PRIVATE allows internal
 * addresses) and no secret; a `slack_bot` a token (`xoxb-`/`xoxp-`) and a channel, no URL. Code
 * owners are `@user`, `@org/team` or email addresses. The kind never changes.
 */
import { ApiError } from "../lib/errors.js";
import { urlRefusal, type AddressPolicy } from "./addresses.js";
import {
  KIND_LABELS,
  SLACK_CHANNEL,
  SLACK_TOKEN,
  isChatKind,
  isEndpointKind,
  normalizeOwner,
  ownerKey,
  type EndpointKind,
} from "./kinds.js";
import type { EndpointChange, EndpointRecord } from "./records.js";
import { generateSecret, isValidSecret } from "./signing.js";

export interface DestinationInput {
  kind?: string | undefined;
  url?: string | undefined;
  secret?: string | undefined;
  channel?: string | undefined;
}

export type Destination = Pick<EndpointRecord, "kind" | "url" | "secret" | "channel">;

export const MAX_CODE_OWNERS = 50;

function checkUrl(kind: EndpointKind, url: string, policy: AddressPolicy): void {
  const refusal = urlRefusal(url, policy);
  if (refusal !== undefined) throw ApiError.invalid("url", refusal);
  if (isChatKind(kind) && !policy.allowPrivate && !/^https:/i.test(url)) {
    throw ApiError.invalid(
      "url",
      `must be https for a ${KIND_LABELS[kind]}: the URL is its credential`,
    );
  }
}

function botToken(secret: string | undefined): string {
  if (secret === undefined) {
    throw ApiError.invalid("secret", "is required for a Slack bot: its token (xoxb-…)");
  }
  if (!SLACK_TOKEN.test(secret)) {
    throw ApiError.invalid("secret", "must be a Slack bot token (xoxb-…) or user token (xoxp-…)");
  }
  return secret;
}

function slackChannel(channel: string | undefined): string {
  if (channel === undefined) {
    throw ApiError.invalid("channel", "is required for a Slack bot: a channel id (C…) or #name");
  }
  const trimmed = channel.trim();
  if (!SLACK_CHANNEL.test(trimmed)) {
    throw ApiError.invalid("channel", "must be a Slack channel id (C…, G… or D…) or #name");
  }
  return trimmed;
}

function kindOf(kind: string | undefined): EndpointKind {
  if (kind === undefined) return "webhook";
  if (!isEndpointKind(kind)) {
    throw ApiError.invalid("kind", "must be one of webhook, slack, slack_bot, teams");
  }
  return kind;
}

/** Where a new endpoint sends, and its credential. */
export function newDestination(input: DestinationInput, policy: AddressPolicy): Destination {
  const kind = kindOf(input.kind);
  if (kind === "slack_bot") {
    if (input.url !== undefined) {
      throw ApiError.invalid(
        "url",
        "is not given for a Slack bot: it posts through Slack's Web API",
      );
    }
    return { kind, url: "", secret: botToken(input.secret), channel: slackChannel(input.channel) };
  }
  if (input.channel !== undefined) {
    throw ApiError.invalid("channel", "is only for a Slack bot (kind slack_bot)");
  }
  if (input.url === undefined) throw ApiError.invalid("url", "is required");
  checkUrl(kind, input.url, policy);
  if (kind !== "webhook") {
    if (input.secret !== undefined) {
      throw ApiError.invalid(
        "secret",
        `is not given for a ${KIND_LABELS[kind]}: its URL is its credential`,
      );
    }
    return { kind, url: input.url, secret: "", channel: null };
  }
  if (input.secret !== undefined && !isValidSecret(input.secret)) {
    throw ApiError.invalid("secret", "must be whsec_ followed by base64 of 24 to 64 bytes");
  }
  return { kind, url: input.url, secret: input.secret ?? generateSecret(), channel: null };
}

/** What an update changes of where an endpoint sends (its kind stays). */
export function destinationChange(
  current: EndpointRecord,
  input: DestinationInput,
  policy: AddressPolicy,
): EndpointChange {
  const { kind } = current;
  if (input.kind !== undefined && input.kind !== kind) {
    throw ApiError.invalid("kind", "cannot change: create another endpoint of the kind wanted");
  }
  const change: EndpointChange = {};
  if (input.url !== undefined) {
    if (kind === "slack_bot") {
      throw ApiError.invalid(
        "url",
        "is not given for a Slack bot: it posts through Slack's Web API",
      );
    }
    checkUrl(kind, input.url, policy);
    change.url = input.url;
  }
  if (input.channel !== undefined) {
    if (kind !== "slack_bot") {
      throw ApiError.invalid("channel", "is only for a Slack bot (kind slack_bot)");
    }
    change.channel = slackChannel(input.channel);
  }
  if (input.secret !== undefined) {
    if (kind === "slack_bot") change.secret = botToken(input.secret);
    else if (kind !== "webhook") {
      throw ApiError.invalid(
        "secret",
        `is not given for a ${KIND_LABELS[kind]}: its URL is its credential`,
      );
    } else if (!isValidSecret(input.secret)) {
      throw ApiError.invalid("secret", "must be whsec_ followed by base64 of 24 to 64 bytes");
    } else change.secret = input.secret;
  }
  return change;
}

/** Code owners as stored: each checked and normalized (`@acme/payments`), once each. */
export function checkOwners(owners: readonly string[]): string[] {
  if (owners.length > MAX_CODE_OWNERS) {
    throw ApiError.invalid("codeOwners", `may list at most ${String(MAX_CODE_OWNERS)} owners`);
  }
  const seen = new Map<string, string>();
  for (const [index, given] of owners.entries()) {
    const owner = normalizeOwner(given);
    if (owner === undefined) {
      throw ApiError.invalid(
        `codeOwners[${String(index)}]`,
        "is not a code owner (@user, @org/team or an email address)",
      );
    }
    if (!seen.has(ownerKey(owner))) seen.set(ownerKey(owner), owner);
  }
  return [...seen.values()];
}
