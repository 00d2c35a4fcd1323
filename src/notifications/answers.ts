/**
 * What an answer means, by kind of endpoint (docs/webhooks.md, "Slack and Microsoft Teams"):
 * the delivery succeeded, is tried again (after `Retry-After` when throttled), failed for good
 * (sending the same message again cannot help), or the endpoint is disabled (it is gone, or its
 * credential was refused). `problem` is what the attempt shows beside the status. Pure.
 */
import type { EndpointKind } from "./kinds.js";

export type Verdict =
  | { outcome: "succeeded" }
  | { outcome: "retry"; problem: string | null; throttled: boolean }
  | { outcome: "failed"; problem: string }
  | { outcome: "disable"; problem: string | null; reason: string };

export interface Answer {
  statusCode: number | null;
  /** The answer's first kilobyte. */
  excerpt: string | null;
}

const SUCCEEDED: Verdict = { outcome: "succeeded" };
const ok = (status: number) => status >= 200 && status < 300;

/** A short quote of a text answer (Slack's `invalid_payload`, a Teams error). */
function said(excerpt: string | null): string {
  const text = (excerpt ?? "").replace(/\s+/g, " ").trim();
  return text === "" ? "" : ` ${text.slice(0, 200)}`;
}

function webhook(status: number): Verdict {
  if (ok(status)) return SUCCEEDED;
  if (status === 410) {
    const reason = "The endpoint answered 410 Gone: it asked for no more deliveries.";
    return { outcome: "disable", problem: null, reason };
  }
  return { outcome: "retry", problem: null, throttled: status === 429 || status === 503 };
}

/** Slack incoming webhooks answer `ok`, or an error as text with a 4xx/5xx status. */
function slackWebhook(status: number, excerpt: string | null): Verdict {
  if (ok(status)) return SUCCEEDED;
  const problem = `Slack answered ${String(status)}${said(excerpt)}`;
  if (status === 410) {
    return {
      outcome: "disable",
      problem,
      reason: `Slack answered 410${said(excerpt)}: the channel is archived or the webhook was removed.`,
    };
  }
  if (status === 429) return { outcome: "retry", problem, throttled: true };
  if (status >= 400 && status < 500) return { outcome: "failed", problem };
  return { outcome: "retry", problem, throttled: status === 503 };
}

/** `chat.postMessage` errors no retry can help: the token is refused. */
const REFUSED_TOKEN = new Set(["invalid_auth", "account_inactive", "token_revoked", "not_authed"]);
/** Errors on Slack's side, worth trying again. */
const SLACK_TRANSIENT = new Set([
  "ratelimited",
  "rate_limited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);
const HINTS: Record<string, string> = {
  not_in_channel: "invite the bot to the channel",
  channel_not_found: "check the channel id, or invite the bot to that private channel",
  is_archived: "the channel is archived",
  invalid_blocks: "Slack refused the message's blocks",
  msg_too_long: "the message is too long for Slack",
  missing_scope: "the bot needs the chat:write scope",
};

/** Slack's Web API: HTTP 200 with `{"ok":true}` or `{"ok":false,"error":"…"}`. */
function slackApiAnswer(excerpt: string | null): { ok: boolean; error: string } | undefined {
  const text = excerpt ?? "";
  const okMatch = /"ok"\s*:\s*(true|false)/.exec(text);
  if (!okMatch) return undefined;
  const error = /"error"\s*:\s*"([^"]{1,100})"/.exec(text)?.[1] ?? "";
  return { ok: okMatch[1] === "true", error };
}

function slackBot(status: number, excerpt: string | null): Verdict {
  const answer = slackApiAnswer(excerpt);
  if (ok(status) && answer?.ok === true) return SUCCEEDED;
  const error = answer?.error ?? "";
  if (status === 429 || error === "ratelimited" || error === "rate_limited") {
    return { outcome: "retry", problem: `Slack: ${error || "rate limited"}`, throttled: true };
  }
  if (REFUSED_TOKEN.has(error)) {
    return {
      outcome: "disable",
      problem: `Slack: ${error}`,
      reason: `Slack refused the bot token (${error}): give the endpoint a valid token, then enable it.`,
    };
  }
  if (status >= 500 || SLACK_TRANSIENT.has(error)) {
    return {
      outcome: "retry",
      problem: `Slack: ${error || `HTTP ${String(status)}`}`,
      throttled: status === 503,
    };
  }
  if (error !== "") {
    const hint = HINTS[error];
    return { outcome: "failed", problem: `Slack: ${error}${hint ? ` (${hint})` : ""}` };
  }
  if (ok(status))
    return { outcome: "failed", problem: 'Slack\'s answer has no "ok": not understood' };
  if (status >= 400)
    return { outcome: "failed", problem: `Slack's API answered ${String(status)}` };
  return { outcome: "retry", problem: null, throttled: false };
}

/** Teams Workflows answer 202 (accepted, run later) or 200; 400 refuses the message. */
function teams(status: number, excerpt: string | null): Verdict {
  if (ok(status)) return SUCCEEDED;
  const problem = `Teams answered ${String(status)}${said(excerpt)}`;
  if (status === 400) return { outcome: "failed", problem };
  if (status === 410) {
    return {
      outcome: "disable",
      problem,
      reason: "Teams answered 410 Gone: the workflow asked for no more messages.",
    };
  }
  return { outcome: "retry", problem, throttled: status === 429 || status === 503 };
}

/** The verdict on one answer of an endpoint of this kind. */
export function judgeAnswer(kind: EndpointKind, answer: Answer): Verdict {
  const status = answer.statusCode;
  // No answer (timeout, connection, refused address): the attempt shows why; try again.
  if (status === null) return { outcome: "retry", problem: null, throttled: false };
  switch (kind) {
    case "webhook":
      return webhook(status);
    case "slack":
      return slackWebhook(status, answer.excerpt);
    case "slack_bot":
      return slackBot(status, answer.excerpt);
    case "teams":
      return teams(status, answer.excerpt);
  }
}
