/**
 * An event as a Microsoft Teams message for a Workflows trigger ("Send webhook alerts to a
 * channel"): a `message` with one Adaptive Card 1.4 attachment (Workflows reject or fail to
 * render later versions): a title and the sentences as `TextBlock`s, the facts as a `FactSet`,
 * small print, and `Action.OpenUrl` links. Text is capped so the message stays well under Teams'
 * ~28 KB. Pure.
 */
import { describeEvent, type ChatMessage, type ChatTone } from "./message.js";

export const ADAPTIVE_CARD_VERSION = "1.4";

export interface TeamsTextBlock {
  type: "TextBlock";
  text: string;
  wrap: true;
  size?: "Small" | "Medium";
  weight?: "Bolder";
  color?: "Good" | "Warning" | "Attention";
  isSubtle?: boolean;
}

export interface TeamsCard {
  type: "AdaptiveCard";
  $schema: string;
  version: typeof ADAPTIVE_CARD_VERSION;
  fallbackText: string;
  body: (TeamsTextBlock | { type: "FactSet"; facts: { title: string; value: string }[] })[];
  actions: { type: "Action.OpenUrl"; title: string; url: string }[];
}

export interface TeamsMessage {
  type: "message";
  attachments: [
    {
      contentType: "application/vnd.microsoft.card.adaptive";
      contentUrl: null;
      content: TeamsCard;
    },
  ];
}

const COLORS: Record<ChatTone, TeamsTextBlock["color"]> = {
  good: "Good",
  warning: "Warning",
  bad: "Attention",
  neutral: undefined,
};

const cap = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

/** A chat message as a Teams card message. */
export function teamsOf(message: ChatMessage): TeamsMessage {
  const color = COLORS[message.tone];
  const body: TeamsCard["body"] = [
    {
      type: "TextBlock",
      text: cap(message.title, 200),
      wrap: true,
      size: "Medium",
      weight: "Bolder",
      ...(color === undefined ? {} : { color }),
    },
  ];
  if (message.summary !== "") {
    body.push({ type: "TextBlock", text: cap(message.summary, 3000), wrap: true });
  }
  if (message.facts.length > 0) {
    body.push({
      type: "FactSet",
      facts: message.facts.slice(0, 12).map((f) => {
        const value = cap(f.value, 1000);
        return {
          title: f.label,
          value: f.url === undefined ? value : `[${value.replace(/[[\]]/g, "")}](${f.url})`,
        };
      }),
    });
  }
  for (const note of message.notes.slice(0, 3)) {
    body.push({
      type: "TextBlock",
      text: cap(note, 1000),
      wrap: true,
      size: "Small",
      isSubtle: true,
    });
  }
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          type: "AdaptiveCard",
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          version: ADAPTIVE_CARD_VERSION,
          fallbackText: cap(
            message.summary ? `${message.title}: ${message.summary}` : message.title,
            1000,
          ),
          body,
          actions: message.links
            .filter((l) => l.url.length <= 2000)
            .slice(0, 5)
            .map((l) => ({ type: "Action.OpenUrl", title: cap(l.label, 75), url: l.url })),
        },
      },
    ],
  };
}

/** The Teams message of an event (`publicUrl`: this service's address, for the test message). */
export function teamsMessage(type: string, body: unknown, publicUrl: string): TeamsMessage {
  return teamsOf(describeEvent(type, body, publicUrl));
}
