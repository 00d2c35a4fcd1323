/**
 * An event as a Slack message (Block Kit), for an incoming webhook or `chat.postMessage`: `text`
 * always (the notification, and what clients without blocks show), at most 6 blocks (`header`,
 * `section`, `section` with `fields`, `context`, `actions` with URL buttons) within Slack's
 * limits (header 150 characters, section 3,000, 10 fields of 2,000, button text 75, URL 3,000),
 * the whole message near 10,000 characters at most (Slack refuses some larger ones). Text shown
 * as mrkdwn has `&`, `<` and `>` escaped. Pure.
 */
import { describeEvent, type ChatLink, type ChatMessage } from "./message.js";

export const SLACK_LIMITS = {
  blocks: 6,
  header: 150,
  section: 3000,
  fields: 10,
  field: 2000,
  buttonText: 75,
  url: 3000,
  message: 10_000,
} as const;

export type SlackText = { type: "plain_text"; text: string; emoji?: boolean } | MrkdwnText;
interface MrkdwnText {
  type: "mrkdwn";
  text: string;
}

export type SlackBlock =
  | { type: "header"; text: { type: "plain_text"; text: string; emoji: boolean } }
  | { type: "section"; text: MrkdwnText }
  | { type: "section"; fields: MrkdwnText[] }
  | { type: "context"; elements: MrkdwnText[] }
  | {
      type: "actions";
      elements: {
        type: "button";
        text: { type: "plain_text"; text: string; emoji: boolean };
        url: string;
        action_id: string;
      }[];
    };

export interface SlackMessage {
  text: string;
  blocks: SlackBlock[];
}

/** Slack's mrkdwn escaping of user text: `&`, `<`, `>`. */
export function escapeMrkdwn(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** At most `max` characters, `…` where cut, never half an entity. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 1).replace(/&[a-z]{0,4}$/, "")}…`;
}

const mrkdwn = (text: string): MrkdwnText => ({ type: "mrkdwn", text });
const plain = (text: string) => ({ type: "plain_text" as const, text, emoji: true });
/** `<url|label>`, the label escaped. */
const linked = (url: string, label: string) =>
  `<${url.replaceAll("|", "%7C").replaceAll(">", "%3E")}|${escapeMrkdwn(label)}>`;

/** Caps of one try: the first that fits the whole message is kept. */
const BUDGETS = [
  { section: SLACK_LIMITS.section, field: SLACK_LIMITS.field, note: 1000, buttons: true },
  { section: 1000, field: 300, note: 300, buttons: true },
  { section: 300, field: 100, note: 100, buttons: false },
] as const;
type Budget = (typeof BUDGETS)[number];

function usable(links: readonly ChatLink[]): ChatLink[] {
  return links.filter((l) => l.url.length <= SLACK_LIMITS.url).slice(0, 5);
}

function blocksOf(message: ChatMessage, budget: Budget): SlackBlock[] {
  const links = usable(message.links);
  if (message.summary === "" && message.facts.length === 0 && message.notes.length === 0) {
    const after = links.map((l) => ` · ${linked(l.url, l.label)}`).join("");
    return [
      { type: "section", text: mrkdwn(clip(escapeMrkdwn(message.title), budget.section) + after) },
    ];
  }
  const blocks: SlackBlock[] = [
    { type: "header", text: plain(clip(message.title, SLACK_LIMITS.header)) },
  ];
  if (message.summary !== "") {
    blocks.push({
      type: "section",
      text: mrkdwn(clip(escapeMrkdwn(message.summary), budget.section)),
    });
  }
  if (message.facts.length > 0) {
    const fields = message.facts.slice(0, SLACK_LIMITS.fields).map((f) => {
      const label = `*${escapeMrkdwn(f.label)}*\n`;
      const value = clip(escapeMrkdwn(f.value), budget.field - label.length - 10);
      const url = f.url !== undefined && f.url.length <= 500 ? f.url : undefined;
      return mrkdwn(
        `${label}${url === undefined ? value : linked(url, clip(f.value, Math.min(200, budget.field)))}`,
      );
    });
    blocks.push({ type: "section", fields });
  }
  if (message.notes.length > 0) {
    const notes = message.notes.map((n) => clip(escapeMrkdwn(n), budget.note));
    blocks.push({ type: "context", elements: notes.slice(0, 10).map(mrkdwn) });
  }
  if (links.length > 0 && budget.buttons) {
    blocks.push({
      type: "actions",
      elements: links.map((l, i) => ({
        type: "button",
        text: plain(clip(l.label, SLACK_LIMITS.buttonText)),
        url: l.url,
        action_id: `mainline-link-${String(i)}`,
      })),
    });
  }
  return blocks;
}

/** A chat message in Slack's shape. */
export function slackOf(message: ChatMessage): SlackMessage {
  const fallback = message.summary ? `${message.title}: ${message.summary}` : message.title;
  const text = clip(escapeMrkdwn(fallback), 1000);
  let built: SlackMessage = { text, blocks: [] };
  for (const budget of BUDGETS) {
    built = { text, blocks: blocksOf(message, budget) };
    if (JSON.stringify(built).length <= SLACK_LIMITS.message) return built;
  }
  return built;
}

/** The Slack message of an event (`publicUrl`: this service's address, for the test message). */
export function slackMessage(type: string, body: unknown, publicUrl: string): SlackMessage {
  return slackOf(describeEvent(type, body, publicUrl));
}
