/**
 * A ticket's body as GitHub-flavoured Markdown (GitHub Issues and Linear take Markdown): headings,
 * paragraphs, lists, links, inline code and code blocks, with every text the test or its failures
 * brought escaped so that it shows as written and never turns into markup, links or HTML. The last
 * line is a hidden marker (`<!-- mainline:ticket … -->`) by which a create whose outcome was
 * unknown is found again. Pure: no I/O.
 */
import type { TicketBlock, TicketSpan } from "./types.js";

/** Characters that start or end inline markup anywhere in a line (emphasis, code, links, HTML, tables, strikethrough, entities, math). */
const INLINE_ACTIVE = /[\\`*_[\]<>|~&$]/g;
/** The same, and `#` (in a heading, a `#` at the end would be read as its closing sequence). */
const HEADING_ACTIVE = /[\\`*_[\]<>|~&$#]/g;

/** A line that would open a block (heading, list, quote, setext underline, thematic break) if left as is. */
const BLOCK_START = /^([ \t]*)([#>+=-]|\d{1,9}[.)])/;

/**
 * Text shown as written, not as Markdown: inline-active characters escaped everywhere, and what
 * would open a block at the start of a line (`# `, `- `, `1. `, `> `) escaped there.
 */
export function escapeText(text: string, options: { heading?: boolean } = {}): string {
  const active = options.heading === true ? HEADING_ACTIVE : INLINE_ACTIVE;
  return text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((line) =>
      line
        .replace(active, (c) => `\\${c}`)
        .replace(BLOCK_START, (_all, space: string, start: string) =>
          /^\d/.test(start)
            ? `${space}${start.slice(0, -1)}\\${start.slice(-1)}`
            : `${space}\\${start}`,
        ),
    )
    .join("\n");
}

/**
 * Rendered inline Markdown as one paragraph: no blank line (which would end it), no blanks around
 * line breaks (which Markdown drops, or reads as a hard break or an indented code block), none at
 * either end.
 */
function asParagraph(markdown: string): string {
  return markdown
    .replace(/[ \t]*\n[ \t]*/g, "\n")
    .replace(/\n{2,}/g, "\n")
    .trim();
}

/** Rendered inline Markdown as one line (a heading, a list item). */
function asLine(markdown: string): string {
  return asParagraph(markdown).replace(/\n/g, " ");
}

/** The longest run of backticks in `text`. */
function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}

/** Inline code that shows `text` exactly, whatever backticks it holds. */
export function inlineCode(text: string): string {
  const flat = text.replace(/\r\n?|\n/g, " ");
  if (flat === "") return "";
  const fence = "`".repeat(longestBacktickRun(flat) + 1);
  // A code span drops one space at each end when both are there, and a backtick at an end would
  // join the fence: a space on each side keeps the text as it is.
  const pad =
    flat.startsWith("`") ||
    flat.endsWith("`") ||
    (flat.startsWith(" ") && flat.endsWith(" ") && flat.trim() !== "");
  return pad ? `${fence} ${flat} ${fence}` : `${fence}${flat}${fence}`;
}

/** A fenced code block whose fence no line of `text` can close. */
export function codeBlock(text: string): string {
  const body = text.replace(/\r\n?/g, "\n").replace(/\n$/, "");
  const fence = "`".repeat(Math.max(3, longestBacktickRun(body) + 1));
  return `${fence}\n${body}\n${fence}`;
}

/** A link destination as Markdown reads it back unchanged (http and https only). */
function linkDestination(href: string): string | undefined {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  // The WHATWG serialization has no space, control character, `<` or `>` left; a backslash or a
  // parenthesis would end the destination or be read as an escape, so those are escaped.
  return url.href.replace(/[\\()]/g, (c) => `\\${c}`);
}

function renderSpan(span: TicketSpan): string {
  let inner = span.code === true ? inlineCode(span.text) : escapeText(span.text);
  if (span.href !== undefined) {
    const destination = linkDestination(span.href);
    if (destination === undefined) {
      // Not a web address: shown, not linked.
      inner = `${inner === "" ? "" : `${inner} `}(${escapeText(span.href)})`;
    } else {
      const label = asLine(inner === "" ? escapeText(span.href) : inner);
      inner = `[${label}](${destination})`;
    }
  }
  if (span.strong === true && inner.trim() !== "") {
    // `** x**` is not bold: blanks go outside the markers.
    const lead = /^\s*/.exec(inner)?.[0] ?? "";
    const trail = /\s*$/.exec(inner)?.[0] ?? "";
    inner = `${lead}**${inner.trim()}**${trail}`;
  }
  return inner;
}

function renderSpans(spans: readonly TicketSpan[]): string {
  return spans.map(renderSpan).join("");
}

/** One block as Markdown ("" when it shows nothing). */
export function renderBlock(block: TicketBlock): string {
  switch (block.kind) {
    case "heading":
      return block.text.trim() === ""
        ? ""
        : `### ${asLine(escapeText(block.text, { heading: true }))}`;
    case "paragraph":
      return asParagraph(renderSpans(block.spans));
    case "list":
      return block.items
        .map((item) => asLine(renderSpans(item)))
        .filter((item) => item !== "")
        .map((item) => `- ${item}`)
        .join("\n");
    case "code":
      return block.text.trim() === "" ? "" : codeBlock(block.text);
  }
}

/** The marker as it is written into a ticket (only characters an HTML comment and a search keep as they are). */
export function markerText(marker: string): string {
  const safe = marker.replace(
    /[^A-Za-z0-9_.:=+/]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`,
  );
  return `mainline:ticket ${safe}`;
}

/**
 * The last line of a ticket's body: hidden (an HTML comment) where the tracker keeps Markdown as
 * written (GitHub); shown as inline code where it may rewrite it (Linear's editor drops HTML).
 */
export function markerLine(marker: string, visible = false): string {
  return visible
    ? `Tracked by Mainline: \`${markerText(marker)}\``
    : `<!-- ${markerText(marker)} -->`;
}

export const TRUNCATED_NOTICE = "_(cut short: the full text was longer than the tracker allows)_";

/** The longest start of `text` at most `units` UTF-16 code units long that splits no character. */
function prefixWithin(text: string, units: number): string {
  let length = 0;
  let end = 0;
  for (const char of text) {
    if (length + char.length > units) break;
    length += char.length;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * The ticket's body: its blocks, then the marker line, blank lines between. With `maxLength`
 * (GitHub: 65,536 characters), the blocks that do not fit are left out (a code block is cut to
 * fit) and a line says so; the marker always stays.
 */
export function renderTicketMarkdown(
  blocks: readonly TicketBlock[],
  marker: string,
  options: { maxLength?: number; visibleMarker?: boolean } = {},
): string {
  const tail = markerLine(marker, options.visibleMarker);
  // What always fits after the blocks: the notice and the marker, each after a blank line.
  const budget = (options.maxLength ?? Infinity) - tail.length - TRUNCATED_NOTICE.length - 4;
  const parts: string[] = [];
  let used = 0;
  let cut = false;
  for (const block of blocks) {
    const rendered = renderBlock(block);
    if (rendered === "") continue;
    const separator = parts.length > 0 ? 2 : 0;
    if (used + separator + rendered.length <= budget) {
      parts.push(rendered);
      used += separator + rendered.length;
      continue;
    }
    cut = true;
    if (block.kind === "code") {
      const fence = longestBacktickRun(block.text) + 1;
      const room = budget - used - separator - 2 * Math.max(3, fence) - 2;
      if (room >= 80) parts.push(codeBlock(prefixWithin(block.text, room)));
    }
    break;
  }
  if (cut) parts.push(TRUNCATED_NOTICE);
  parts.push(tail);
  return parts.join("\n\n");
}
