/**
 * Keeps saxes's buffers small, since saxes holds a whole text node or attribute value until it
 * ends: after each bounded write, text is handed on, comments and the DOCTYPE dropped, attribute
 * values cut to head and tail; plain text skips saxes's scan. This reads saxes's internal fields
 * (6.0.0, pinned): `checkSaxesInternals` fails loudly at load after an upgrade that changes them.
 */
import { SaxesParser } from "saxes";
import { fitText, type LongText } from "./long-text.js";
import { JunitParseError } from "./types.js";

/** The fields of a SaxesParser we read and write. */
interface SaxesInternals {
  state: number;
  tags: unknown[];
  forbiddenState: number;
  currentXMLVersion: string;
  line: number;
  /** A CR or a high surrogate that ended the last write, held for the next one. */
  carriedFromPrevious: string | undefined;
  text: string;
  name: string;
  entity: string;
  piTarget: string;
  entityReturnState: number | undefined;
  attribList: unknown[];
}

// saxes's states (saxes.js, `const S_… = n`).
const S_TEXT = 13;
const S_ENTITY = 14;
const S_ATTRIB_VALUE_QUOTED = 40;
const S_CDATA = [20, 21, 22];
/** DOCTYPE and DTD (2–12), comment (17–19), processing instruction body (25, 26). */
const DROPPED = new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17, 18, 19, 25, 26]);

/** Buffers are looked at once they pass this (characters); writes are at most WRITE_SLICE. */
const DRAIN_AT = 16_384;
export const WRITE_SLICE = 65_536;
/** Element names, attribute names, PI targets. */
const MAX_NAME = 100_000;
const MAX_ENTITY = 1_000;
const MAX_ATTRIBUTES = 10_000;
/** Anything else saxes buffers (the XML declaration, a PI target…) is small in any real file. */
const MAX_OTHER = 1_048_576;
/** Marks an attribute value whose middle was cut: `\0<id>\0<rest of the value>`. */
const LONG = "\u0000";
/** Where plain text ends: markup, a reference, a possible `]]>`, a line end saxes normalizes. */
const SPECIAL = /[<&\]\r]/;
/** saxes's `forbiddenState` when no `]` precedes (the `]]>` check is not under way). */
const FORBIDDEN_START = 0;

export class SaxesBounds {
  private readonly internals: SaxesInternals;
  private readonly longValues = new Map<string, LongText>();
  private nextId = 0;
  /** Characters kept at each end of a long attribute value. */
  private readonly keep: number;

  /**
   * @param onText receives text and CDATA content as it arrives (more calls may follow for the
   *   same node; saxes's own `text`/`cdata` events deliver the rest).
   * @param attributeLimit what a long attribute value is cut to when its tag opens.
   */
  constructor(
    private readonly parser: SaxesParser,
    private readonly onText: (text: string) => void,
    private readonly attributeLimit: number,
  ) {
    this.internals = parser as unknown as SaxesInternals;
    this.keep = attributeLimit + 1;
  }

  /** Feeds one slice of the document (at most WRITE_SLICE characters) to saxes. */
  write(slice: string): void {
    let rest = slice;
    while (rest.length > 0) {
      if (!this.plainTextNext()) {
        this.parser.write(rest);
        this.afterWrite();
        return;
      }
      const special = rest.search(SPECIAL);
      const plain = special < 0 ? rest : rest.slice(0, special);
      if (plain.length > 0) this.takePlainText(plain);
      if (special < 0) return;
      const end = this.endOfSpecial(rest, special);
      this.parser.write(rest.slice(special, end));
      this.afterWrite();
      rest = rest.slice(end);
    }
  }

  private plainTextNext(): boolean {
    const p = this.internals;
    return (
      p.state === S_TEXT &&
      p.tags.length > 0 &&
      p.forbiddenState === FORBIDDEN_START &&
      p.currentXMLVersion === "1.0" &&
      p.carriedFromPrevious === undefined
    );
  }

  private takePlainText(text: string): void {
    const p = this.internals;
    if (p.text.length > 0) {
      // What saxes holds of this text node comes first.
      const held = p.text;
      p.text = "";
      this.onText(held);
    }
    let newlines = 0;
    for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) newlines += 1;
    p.line += newlines;
    this.onText(text);
  }

  /** How much saxes reads before plain text may resume: a reference, a run of `]`, a line end. */
  private endOfSpecial(text: string, at: number): number {
    const char = text[at];
    if (char === "&") {
      const semicolon = text.indexOf(";", at);
      return semicolon < 0 ? text.length : semicolon + 1;
    }
    if (char === "]") {
      let end = at;
      while (text[end] === "]") end += 1;
      return Math.min(end + 1, text.length);
    }
    if (char === "\r") return text[at + 1] === "\n" ? at + 2 : at + 1;
    return text.length; // `<`: markup follows; the next slice starts afresh
  }

  afterWrite(): void {
    const p = this.internals;
    if (p.name.length > MAX_NAME || p.piTarget.length > MAX_NAME) {
      throw new JunitParseError(
        `an element or attribute name is longer than ${MAX_NAME} characters`,
      );
    }
    if (p.entity.length > MAX_ENTITY) {
      throw new JunitParseError(
        `an entity reference runs on for more than ${MAX_ENTITY} characters (an unescaped '&'?)`,
      );
    }
    if (p.attribList.length > MAX_ATTRIBUTES) {
      throw new JunitParseError(`an element has more than ${MAX_ATTRIBUTES} attributes`);
    }
    if (p.text.length <= DRAIN_AT) return;
    const state = p.state === S_ENTITY ? p.entityReturnState : p.state;
    if (state === S_TEXT || S_CDATA.includes(p.state)) {
      const text = p.text;
      p.text = "";
      this.onText(text);
    } else if (DROPPED.has(p.state)) {
      // Non-empty: saxes reads an empty buffer in these states as "nothing seen yet".
      p.text = p.text.slice(0, 1);
    } else if (state === S_ATTRIB_VALUE_QUOTED) {
      if (p.text.length > 4 * this.keep) this.shortenAttribute(p);
    } else if (p.text.length > MAX_OTHER) {
      throw new JunitParseError(`a markup construct is longer than ${MAX_OTHER} characters`);
    }
  }

  /**
   * The attributes of a tag that just opened, long values cut to `attributeLimit` (head, marker,
   * tail). Call once per `opentag`.
   */
  attributes(raw: Record<string, string>): Record<string, string> {
    if (this.longValues.size === 0) {
      for (const value of Object.values(raw)) {
        if (value.length > this.attributeLimit) return this.resolve(raw);
      }
      return raw;
    }
    return this.resolve(raw);
  }

  private resolve(raw: Record<string, string>): Record<string, string> {
    const resolved: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [name, value] of Object.entries(raw)) {
      resolved[name] = fitText(this.longValue(value) ?? value, this.attributeLimit);
    }
    this.longValues.clear();
    return resolved;
  }

  private longValue(value: string): LongText | null {
    if (!value.startsWith(LONG)) return null;
    const end = value.indexOf(LONG, 1);
    const long = this.longValues.get(value.slice(1, end));
    if (long === undefined) return null;
    return { head: long.head, cut: long.cut, tail: value.slice(end + 1) };
  }

  /** Keeps the head aside and only a tail window in saxes's buffer. */
  private shortenAttribute(p: SaxesInternals): void {
    const known = this.longValue(p.text);
    let id: string;
    let rest: string;
    if (known === null) {
      id = String(this.nextId++);
      this.longValues.set(id, { head: p.text.slice(0, this.keep), cut: 0, tail: "" });
      rest = p.text.slice(this.keep);
    } else {
      id = p.text.slice(1, p.text.indexOf(LONG, 1));
      rest = known.tail;
    }
    const long = this.longValues.get(id);
    if (long === undefined) throw new Error("a long attribute value was lost");
    if (rest.length > 2 * this.keep) {
      long.cut += rest.length - this.keep;
      rest = rest.slice(-this.keep);
    }
    p.text = `${LONG}${id}${LONG}${rest}`;
  }
}

/** Fails loudly when saxes's internal fields no longer mean what `SaxesBounds` assumes. */
export function checkSaxesInternals(): void {
  const probe = (input: string): SaxesInternals => {
    const parser = new SaxesParser({ xmlns: false });
    parser.on("text", () => undefined);
    parser.on("error", () => undefined);
    parser.write(input);
    return parser as unknown as SaxesInternals;
  };
  const expectations: [string, (p: SaxesInternals) => boolean][] = [
    [
      "<a>xy\nz]",
      (p) =>
        p.state === S_TEXT &&
        p.text === "xy\nz]" &&
        p.tags.length === 1 &&
        p.forbiddenState === 1 &&
        p.currentXMLVersion === "1.0" &&
        p.line === 2,
    ],
    [
      "<a>xy",
      (p) =>
        p.state === S_TEXT &&
        p.text === "xy" &&
        p.forbiddenState === FORBIDDEN_START &&
        p.carriedFromPrevious === undefined,
    ],
    ["<a>x\uD83D", (p) => p.state === S_TEXT && p.carriedFromPrevious === "\uD83D"],
    [
      "<a>xy&am",
      (p) => p.state === S_ENTITY && p.entityReturnState === S_TEXT && p.entity === "am",
    ],
    ['<a b="xy', (p) => p.state === S_ATTRIB_VALUE_QUOTED && p.text === "xy" && p.name === "b"],
    ["<a><![CDATA[xy", (p) => p.state === 20 && p.text === "xy"],
    ["<a><!--xy", (p) => p.state === 17 && p.text === "xy"],
    ["<a><?pi xy", (p) => p.state === 25 && p.text === "xy" && p.piTarget === "pi"],
    ["<!DOCTYPE a [", (p) => p.state === 4 && Array.isArray(p.attribList)],
  ];
  for (const [input, holds] of expectations) {
    if (!holds(probe(input))) {
      throw new Error(
        `saxes's internals changed (probe ${JSON.stringify(input)}); update junit/bounded-saxes.ts`,
      );
    }
  }
}

checkSaxesInternals();
