/**
 * The request of one delivery attempt, by kind of endpoint: `webhook` POSTs the stored body with
 * the Standard Webhooks headers; `slack` and `teams` POST the event rendered as a message to
 * their URL; `slack_bot` POSTs it to Slack's `chat.postMessage` with the bot token as a bearer
 * token. Every request carries `user-agent: Mainline/<version>`. Pure.
 */
import { slackMessage } from "./chat/slack.js";
import { teamsMessage } from "./chat/teams.js";
import type { ClaimedDelivery } from "./records.js";
import { signature } from "./signing.js";

export interface RequestContext {
  userAgent: string;
  /** This service's address (links, the test message). */
  publicUrl: string;
  /** Slack's Web API base (MAINLINE_SLACK_API_URL, default `https://slack.com/api`). */
  slackApiUrl: string;
  /** When the attempt starts (ms). */
  at: number;
}

export interface DeliveryRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The address is the operator's setting, not an endpoint's: the address policy does not apply. */
  trusted: boolean;
}

function parsed(payload: string): unknown {
  try {
    return JSON.parse(payload) as unknown;
  } catch {
    return {};
  }
}

export function deliveryRequest(
  delivery: ClaimedDelivery,
  context: RequestContext,
): DeliveryRequest {
  const json = { "content-type": "application/json", "user-agent": context.userAgent };
  switch (delivery.kind) {
    case "webhook": {
      const timestamp = Math.floor(context.at / 1000);
      return {
        url: delivery.url,
        headers: {
          ...json,
          "webhook-id": delivery.eventId,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signature(
            delivery.secret,
            delivery.eventId,
            timestamp,
            delivery.payload,
          ),
        },
        body: delivery.payload,
        trusted: false,
      };
    }
    case "slack":
    case "teams": {
      const render = delivery.kind === "slack" ? slackMessage : teamsMessage;
      const message = render(delivery.eventType, parsed(delivery.payload), context.publicUrl);
      return { url: delivery.url, headers: json, body: JSON.stringify(message), trusted: false };
    }
    case "slack_bot": {
      const message = slackMessage(delivery.eventType, parsed(delivery.payload), context.publicUrl);
      return {
        url: `${context.slackApiUrl}/chat.postMessage`,
        headers: {
          ...json,
          "content-type": "application/json; charset=utf-8",
          authorization: `Bearer ${delivery.secret}`,
        },
        body: JSON.stringify({
          channel: delivery.channel ?? "",
          ...message,
          unfurl_links: false,
          unfurl_media: false,
        }),
        trusted: true,
      };
    }
  }
}
