/**
 * A fake Slack of the tests' own, a real HTTP server answering as Slack does:
 *
 * - incoming webhooks, `POST /services/T…/B…/<secret>`: `ok` as text/plain, or Slack's errors as
 *   text with their status (400 `invalid_payload`, `no_text`, `invalid_blocks`; 403
 *   `action_prohibited`; 404 `channel_not_found`, `no_service` for an unknown URL; 410
 *   `channel_is_archived`; 429 with Retry-After; 500 `rollup_error`);
 * - the Web API's `POST /api/chat.postMessage`: `Authorization: Bearer xoxb-…` (`not_authed`,
 *   `invalid_auth`, `token_revoked`), a JSON body whose fields are the method's parameters in
 *   Slack's published OpenAPI description (test/fixtures/slack), `channel` (`channel_not_found`,
 *   `not_in_channel`) and `text` or `blocks` (`no_text`); HTTP 200 with `{ok:true, channel, ts,
 *   message}` or `{ok:false, error}`; 429 `ratelimited` with Retry-After.
 *
 * Blocks are checked against Block Kit's limits (header 150, section 3,000, 10 fields of 2,000,
 * context 10 elements, buttons' text 75 and URL 3,000, 50 blocks): `invalid_blocks`. mrkdwn text
 * with a `<` that opens no link or mention (user text left unescaped, which Slack would mangle)
 * is recorded in `misrendered`. Faults a test queues are answered first.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  jsonObject,
  startFakeServer,
  type FakeAnswer,
  type FakeRequest,
  type FakeServer,
} from "./fake-http.js";

interface ParameterSpec {
  name: string;
  type: "string" | "boolean";
  required: boolean;
}

/** `chat.postMessage`'s parameters and errors, from Slack's OpenAPI description (see its README). */
export const POST_MESSAGE_SPEC = JSON.parse(
  readFileSync(new URL("../fixtures/slack/chat.postMessage.json", import.meta.url), "utf8"),
) as { parameters: ParameterSpec[]; errors: string[]; successRequired: string[] };

export interface SlackPost {
  via: "webhook" | "api";
  /** The channel: the webhook's own, or the one asked for. */
  channel: string;
  text: string;
  blocks: Record<string, unknown>[];
  /** Everything a reader sees: the text and every block's text, joined by newlines. */
  shown: string;
}

/** A fault of an incoming webhook: its status and text (Slack's answers are text). */
export interface WebhookFault {
  status: number;
  text: string;
  retryAfter?: number;
}

/** A fault of the Web API: an `ok:false` error, with a status (200 unless said). */
export interface ApiFault {
  error: string;
  status?: number;
  retryAfter?: number;
}

export interface FakeSlack {
  url: string;
  /** MAINLINE_SLACK_API_URL for Mainline. */
  apiUrl: string;
  /** Messages Slack accepted, in order. */
  posts: SlackPost[];
  server: FakeServer;
  /** mrkdwn texts with a `<` that opens nothing Slack knows (unescaped user text). */
  misrendered: string[];
  /** A new incoming webhook posting to `channel`; its URL. */
  addWebhook(channel: string): string;
  /** A bot token, a member of these channels (which then exist). */
  addBot(token: string, channels: readonly string[]): void;
  /** Channels that exist without the bots in them. */
  addChannel(channel: string): void;
  revoke(token: string): void;
  /** The next answers of one incoming webhook, before its own. */
  failWebhook(url: string, ...faults: WebhookFault[]): void;
  /** The next answers of `chat.postMessage`, before its own. */
  failApi(...faults: ApiFault[]): void;
  close(): Promise<void>;
}

export const BLOCK_LIMITS = {
  blocks: 50,
  header: 150,
  section: 3000,
  fields: 10,
  field: 2000,
  contextElements: 10,
  actionsElements: 25,
  buttonText: 75,
  url: 3000,
  text: 40_000,
} as const;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Where a mrkdwn `<` may open: a link, a mention, a channel, a special mention. */
const CONTROL = /^<(?:https?:\/\/|mailto:|@[UW]|#C|!)[^<>]*>/;

function textObject(value: unknown, max: number, problems: string[], where: string): string {
  if (!isObject(value) || (value.type !== "plain_text" && value.type !== "mrkdwn")) {
    problems.push(`${where}: not a text object`);
    return "";
  }
  const text = value.text;
  if (typeof text !== "string" || text.length === 0 || text.length > max) {
    problems.push(`${where}: text of 1 to ${String(max)} characters`);
    return "";
  }
  const allowed =
    value.type === "plain_text" ? ["type", "text", "emoji"] : ["type", "text", "verbatim"];
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) problems.push(`${where}: unknown field ${key}`);
  }
  return text;
}

interface Checked {
  problems: string[];
  texts: { text: string; mrkdwn: boolean }[];
}

/** A block's list (`fields`, `elements`) of 1 to `max` items; a problem when it is not. */
function itemsOf(value: unknown, max: number, at: string, out: Checked): unknown[] {
  const items: unknown[] = Array.isArray(value) ? value : [];
  if (items.length === 0 || items.length > max) out.problems.push(`${at}: 1 to ${String(max)}`);
  return items;
}

function checkBlock(block: unknown, index: number, out: Checked): void {
  const where = `blocks[${String(index)}]`;
  const text = (value: unknown, max: number, at: string) => {
    const found = textObject(value, max, out.problems, at);
    if (found) out.texts.push({ text: found, mrkdwn: isObject(value) && value.type === "mrkdwn" });
  };
  if (!isObject(block)) {
    out.problems.push(`${where}: not an object`);
    return;
  }
  switch (block.type) {
    case "header":
      if (!isObject(block.text) || block.text.type !== "plain_text") {
        out.problems.push(`${where}: a header's text is plain_text`);
      }
      text(block.text, BLOCK_LIMITS.header, `${where}.text`);
      return;
    case "section": {
      if (block.text === undefined && block.fields === undefined) {
        out.problems.push(`${where}: a section needs text or fields`);
      }
      if (block.text !== undefined) text(block.text, BLOCK_LIMITS.section, `${where}.text`);
      if (block.fields !== undefined) {
        const fields = itemsOf(block.fields, BLOCK_LIMITS.fields, `${where}.fields`, out);
        fields.forEach((f, i) => {
          text(f, BLOCK_LIMITS.field, `${where}.fields[${String(i)}]`);
        });
      }
      return;
    }
    case "context": {
      const elements = itemsOf(
        block.elements,
        BLOCK_LIMITS.contextElements,
        `${where}.elements`,
        out,
      );
      elements.forEach((e, i) => {
        text(e, BLOCK_LIMITS.section, `${where}.elements[${String(i)}]`);
      });
      return;
    }
    case "actions": {
      const elements = itemsOf(
        block.elements,
        BLOCK_LIMITS.actionsElements,
        `${where}.elements`,
        out,
      );
      elements.forEach((e, i) => {
        const at = `${where}.elements[${String(i)}]`;
        if (!isObject(e) || e.type !== "button") {
          out.problems.push(`${at}: only buttons here`);
          return;
        }
        text(e.text, BLOCK_LIMITS.buttonText, `${at}.text`);
        if (e.url !== undefined && (typeof e.url !== "string" || e.url.length > BLOCK_LIMITS.url)) {
          out.problems.push(`${at}.url: at most ${String(BLOCK_LIMITS.url)} characters`);
        }
      });
      return;
    }
    case "divider":
      return;
    default:
      out.problems.push(`${where}: unknown block type ${String(block.type)}`);
  }
}

/** Block Kit's checks of a message's `blocks`; what Slack would refuse, and the texts shown. */
export function checkBlocks(blocks: unknown): Checked {
  const out: Checked = { problems: [], texts: [] };
  if (!Array.isArray(blocks)) {
    out.problems.push("blocks: not an array");
    return out;
  }
  if (blocks.length > BLOCK_LIMITS.blocks) out.problems.push("blocks: more than 50");
  blocks.forEach((block, i) => {
    checkBlock(block, i, out);
  });
  return out;
}

/** mrkdwn texts where a `<` opens no link or mention. */
function unescaped(texts: Checked["texts"]): string[] {
  return texts
    .filter(({ text, mrkdwn }) => {
      if (!mrkdwn) return false;
      for (let at = text.indexOf("<"); at >= 0; at = text.indexOf("<", at + 1)) {
        if (!CONTROL.test(text.slice(at))) return true;
      }
      return false;
    })
    .map(({ text }) => text);
}

const ts = () =>
  `${String(Math.floor(Date.now() / 1000))}.${randomBytes(3).readUIntBE(0, 3).toString().padStart(6, "0")}`;

export async function startFakeSlack(): Promise<FakeSlack> {
  const webhooks = new Map<string, { channel: string; faults: WebhookFault[] }>();
  const bots = new Map<string, { channels: Set<string>; revoked: boolean }>();
  const channels = new Set<string>();
  const apiFaults: ApiFault[] = [];
  const posts: SlackPost[] = [];
  const misrendered: string[] = [];

  /** A message's text and blocks checked; the problem Slack would answer, or the post. */
  const accept = (
    body: Json,
    via: SlackPost["via"],
    channel: string,
  ): { error: string } | { post: SlackPost } => {
    const text = typeof body.text === "string" ? body.text : "";
    if (text === "" && body.blocks === undefined) return { error: "no_text" };
    if (text.length > BLOCK_LIMITS.text) return { error: "msg_too_long" };
    const checked =
      body.blocks === undefined ? { problems: [], texts: [] } : checkBlocks(body.blocks);
    if (checked.problems.length > 0) return { error: "invalid_blocks" };
    misrendered.push(...unescaped([{ text, mrkdwn: true }, ...checked.texts]));
    const blocks = (body.blocks ?? []) as Json[];
    const shown = [text, ...checked.texts.map((t) => t.text)].join("\n");
    return { post: { via, channel, text, blocks, shown } };
  };

  const webhookAnswer = (request: FakeRequest): FakeAnswer => {
    const hook = webhooks.get(request.path);
    if (request.method !== "POST" || !hook) return { status: 404, body: "no_service" };
    const fault = hook.faults.shift();
    if (fault) {
      const headers =
        fault.retryAfter === undefined ? {} : { "retry-after": String(fault.retryAfter) };
      return { status: fault.status, body: fault.text, headers };
    }
    const body = jsonObject(request.text);
    if (!body) return { status: 400, body: "invalid_payload" };
    const result = accept(body, "webhook", hook.channel);
    if ("error" in result) return { status: 400, body: result.error };
    posts.push(result.post);
    return { status: 200, body: "ok" };
  };

  const apiError = (error: string, status = 200, retryAfter?: number): FakeAnswer => ({
    status,
    body: { ok: false, error },
    ...(retryAfter === undefined ? {} : { headers: { "retry-after": String(retryAfter) } }),
  });

  /** The body's fields against the method's parameters (the token goes in the header). */
  const argumentProblem = (body: Json): string | undefined => {
    for (const [name, value] of Object.entries(body)) {
      const spec = POST_MESSAGE_SPEC.parameters.find((p) => p.name === name);
      if (!spec) return "invalid_arg_name";
      // In a JSON body, blocks and attachments are arrays (the form encoding's JSON strings).
      if ((name === "blocks" || name === "attachments") && Array.isArray(value)) continue;
      if (spec.type === "boolean" && typeof value !== "boolean") return "invalid_arguments";
      if (spec.type === "string" && typeof value !== "string") return "invalid_arguments";
    }
    return undefined;
  };

  const postMessage = (request: FakeRequest): FakeAnswer => {
    const fault = apiFaults.shift();
    if (fault) return apiError(fault.error, fault.status ?? 200, fault.retryAfter);
    const auth = /^Bearer (xox[bp]-[A-Za-z0-9-]+)$/.exec(request.headers.authorization ?? "");
    if (!auth?.[1]) return apiError("not_authed");
    const bot = bots.get(auth[1]);
    if (!bot) return apiError("invalid_auth");
    if (bot.revoked) return apiError("token_revoked");
    if (!(request.headers["content-type"] ?? "").startsWith("application/json")) {
      return apiError("invalid_post_type");
    }
    const body = jsonObject(request.text);
    if (!body) return apiError("invalid_json");
    const problem = argumentProblem(body);
    if (problem) return apiError(problem);
    const channel = typeof body.channel === "string" ? body.channel : "";
    if (!channels.has(channel)) return apiError("channel_not_found");
    if (!bot.channels.has(channel)) return apiError("not_in_channel");
    const result = accept(body, "api", channel);
    if ("error" in result) return apiError(result.error);
    posts.push(result.post);
    const stamp = ts();
    return {
      status: 200,
      body: {
        ok: true,
        channel,
        ts: stamp,
        message: { type: "message", text: result.post.text, blocks: result.post.blocks, ts: stamp },
      },
    };
  };

  const server = await startFakeServer((request) => {
    if (request.path.startsWith("/services/")) return webhookAnswer(request);
    if (request.path === "/api/chat.postMessage" && request.method === "POST") {
      return postMessage(request);
    }
    return apiError("unknown_method", 404);
  });

  let hooks = 0;
  return {
    url: server.url,
    apiUrl: `${server.url}/api`,
    posts,
    server,
    misrendered,
    addWebhook(channel) {
      hooks += 1;
      const path = `/services/T0FAKE${String(hooks)}/B0FAKE${String(hooks)}/${randomBytes(12).toString("hex")}`;
      webhooks.set(path, { channel, faults: [] });
      return `${server.url}${path}`;
    },
    addBot(token, list) {
      bots.set(token, { channels: new Set(list), revoked: false });
      for (const channel of list) channels.add(channel);
    },
    addChannel(channel) {
      channels.add(channel);
    },
    revoke(token) {
      const bot = bots.get(token);
      if (bot) bot.revoked = true;
    },
    failWebhook(url, ...faults) {
      webhooks.get(new URL(url).pathname)?.faults.push(...faults);
    },
    failApi(...faults) {
      apiFaults.push(...faults);
    },
    close: () => server.close(),
  };
}
