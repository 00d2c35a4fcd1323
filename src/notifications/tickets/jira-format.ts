/**
 * A ticket's blocks as Jira takes them, pure: Jira Cloud's Atlassian Document Format (REST API
 * v3) and Jira Data Center's wiki markup (REST API v2).
 */
import type { TicketBlock, TicketSpan } from "./types.js";

// ---- Atlassian Document Format ----------------------------------------------------------------

export interface AdfMark {
  type: "link" | "code" | "strong";
  attrs?: { href: string };
}

export interface AdfNode {
  type: string;
  text?: string;
  attrs?: Record<string, unknown>;
  marks?: AdfMark[];
  content?: AdfNode[];
}

export interface AdfDocument {
  type: "doc";
  version: 1;
  content: AdfNode[];
}

/** A span as a text node; ADF allows `code` with `link` only, so code drops `strong`. */
function adfText(span: TicketSpan): AdfNode | undefined {
  if (span.text === "") return undefined;
  const marks: AdfMark[] = [];
  if (span.href !== undefined) marks.push({ type: "link", attrs: { href: span.href } });
  if (span.code) marks.push({ type: "code" });
  else if (span.strong) marks.push({ type: "strong" });
  return marks.length > 0
    ? { type: "text", text: span.text, marks }
    : { type: "text", text: span.text };
}

function adfParagraph(spans: readonly TicketSpan[]): AdfNode {
  const content = spans.flatMap((span) => adfText(span) ?? []);
  return content.length > 0 ? { type: "paragraph", content } : { type: "paragraph" };
}

function adfBlock(block: TicketBlock): AdfNode | undefined {
  switch (block.kind) {
    case "heading":
      return block.text === ""
        ? undefined
        : { type: "heading", attrs: { level: 3 }, content: [{ type: "text", text: block.text }] };
    case "paragraph":
      return adfParagraph(block.spans);
    case "list":
      return block.items.length === 0
        ? undefined
        : {
            type: "bulletList",
            content: block.items.map((item) => ({
              type: "listItem",
              content: [adfParagraph(item)],
            })),
          };
    case "code":
      return block.text === ""
        ? { type: "codeBlock" }
        : { type: "codeBlock", content: [{ type: "text", text: block.text }] };
  }
}

/** The blocks as an ADF document (`fields.description` of Jira Cloud's v3 API). */
export function toAdf(blocks: readonly TicketBlock[]): AdfDocument {
  return { type: "doc", version: 1, content: blocks.flatMap((block) => adfBlock(block) ?? []) };
}

// ---- wiki markup ------------------------------------------------------------------------------

/** Characters that format text in Jira's wiki markup, shown as themselves when escaped. */
const WIKI_SPECIAL = /[[\]{}|*_^~+\-!\\]/g;

/** Plain text in wiki markup: one line, every formatting character escaped. */
export function wikiEscape(text: string): string {
  return text.replace(/\s+/g, " ").replace(WIKI_SPECIAL, (ch) => `\\${ch}`);
}

/** A link target: the characters that would end or split `[text|url]` percent-encoded. */
function wikiUrl(url: string): string {
  return url.replace(/[[\]|{} ]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);
}

function wikiSpan(span: TicketSpan): string {
  if (span.text === "") return "";
  let inner = wikiEscape(span.text);
  if (span.code) inner = `{{${inner}}}`;
  else if (span.strong) inner = `*${inner}*`;
  return span.href === undefined ? inner : `[${inner}|${wikiUrl(span.href)}]`;
}

function wikiSpans(spans: readonly TicketSpan[]): string {
  return spans.map(wikiSpan).join("");
}

/** A code block's text: nothing inside `{code}` is markup, but `{code}` itself would end it. */
function wikiCode(text: string): string {
  return text.replace(/\{code/gi, (match) => `{ ${match.slice(1)}`);
}

function wikiBlock(block: TicketBlock): string | undefined {
  switch (block.kind) {
    case "heading":
      return block.text === "" ? undefined : `h3. ${wikiEscape(block.text)}`;
    case "paragraph":
      return wikiSpans(block.spans);
    case "list":
      return block.items.length === 0
        ? undefined
        : block.items.map((item) => `* ${wikiSpans(item)}`).join("\n");
    case "code":
      return `{code}\n${wikiCode(block.text)}\n{code}`;
  }
}

/** The blocks as wiki markup (`fields.description` of Jira Data Center's v2 API). */
export function toWikiMarkup(blocks: readonly TicketBlock[]): string {
  return blocks.flatMap((block) => wikiBlock(block) ?? []).join("\n\n");
}
