/**
 * The kinds of endpoint on the one outbox (docs/webhooks.md): `webhook` (a signed POST of the
 * Trunk-shaped body), `slack` (a Slack incoming-webhook URL), `slack_bot` (a bot token and a
 * channel, through Slack's `chat.postMessage`) and `teams` (a Teams Workflows trigger URL). What
 * each needs when it is saved, and how its credential is shown. Pure.
 */

export const ENDPOINT_KINDS = ["webhook", "slack", "slack_bot", "teams"] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

export const KIND_LABELS: Record<EndpointKind, string> = {
  webhook: "Webhook",
  slack: "Slack incoming webhook",
  slack_bot: "Slack bot",
  teams: "Microsoft Teams",
};

export function isEndpointKind(text: string): text is EndpointKind {
  return (ENDPOINT_KINDS as readonly string[]).includes(text);
}

/** Slack and Teams kinds get readable messages, not the signed JSON body. */
export const isChatKind = (kind: EndpointKind): boolean => kind !== "webhook";

/** The kinds whose URL is their credential: listed redacted, revealed on demand. */
export const urlIsCredential = (kind: EndpointKind): boolean =>
  kind === "slack" || kind === "teams";

/**
 * What a chat endpoint is sent when it names no event types: a test's status (v1 only, or each
 * change would be posted twice), a pull request failed or canceled in a queue, and the queue's
 * own state and blocking (and unblocking).
 */
export const CHAT_DEFAULT_EVENT_TYPES = [
  "test_case.status_changed",
  "pull_request.failed",
  "pull_request.canceled",
  "mainline.queue.state_changed",
  "mainline.queue.blocked",
  "mainline.queue.unblocked",
] as const;

/** Where Slack bots post unless MAINLINE_SLACK_API_URL says otherwise. */
export const DEFAULT_SLACK_API_URL = "https://slack.com/api";

/** A Slack bot (`xoxb-`) or user (`xoxp-`) token. */
export const SLACK_TOKEN = /^xox[bp]-[A-Za-z0-9-]{8,250}$/;

/** A channel id (`C…`, private `G…`, direct `D…`) or a `#name`. */
export const SLACK_CHANNEL = /^(?:[CGD][A-Z0-9]{2,30}|#[a-z0-9][a-z0-9._-]{0,79})$/;

/** `https://hooks.slack.com/…`: scheme and host of a URL that is a credential, nothing more. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}/…`;
  } catch {
    return "…";
  }
}

/** A CODEOWNERS owner: `@user`, `@org/team` (the `@` optional) or an email address. */
const OWNER = /^@?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,99})(?:\/[A-Za-z0-9._-]{1,100})?$/;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,200}$/;

/** The owner as stored (`@acme/payments`, `ana@example.com`); undefined when it is not one. */
export function normalizeOwner(text: string): string | undefined {
  const owner = text.trim();
  if (EMAIL.test(owner) && !owner.startsWith("@")) return owner;
  if (!OWNER.test(owner)) return undefined;
  return owner.startsWith("@") ? owner : `@${owner}`;
}

/** How owners compare: case-insensitively, the leading `@` optional. */
export const ownerKey = (owner: string): string => owner.trim().replace(/^@/, "").toLowerCase();
