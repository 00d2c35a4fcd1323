/**
 * Over-long text in a report (a 300 MiB `<system-out>`, a message attribute holding a whole log):
 * what a reader needs is the beginning and the end, so both are kept with a marker in between that
 * says how many characters were cut. Pure; nothing here ever holds more than a bounded amount of
 * the text, whatever its length.
 */

/** What stands for the characters cut out of the middle. */
export function cutMarker(count: number): string {
  return `\n[… ${count} characters cut …]\n`;
}

/** The longest marker (a count of 16 digits) fits in this. */
const MARKER_ROOM = cutMarker(10 ** 15).length;

/** A text of `head.length + cut + tail.length` characters of which the middle `cut` are gone. */
export interface LongText {
  head: string;
  cut: number;
  tail: string;
}

/** Characters kept at the end of a text cut to `limit`; the head gets the rest. */
function tailSize(limit: number): number {
  return Math.max(0, Math.floor((limit - MARKER_ROOM) / 2));
}

/**
 * The text cut to at most `limit` characters: unchanged when it fits, else its head, the marker
 * and its tail, `limit` characters in all (one less where a surrogate pair would be split). A
 * limit too small for a marker keeps the head only. `text.head` must hold at least `limit`
 * characters and `text.tail` at least `tailSize(limit)` whenever `text.cut > 0`.
 */
export function fitText(text: string | LongText, limit: number): string {
  const whole = typeof text === "string" ? { head: text, cut: 0, tail: "" } : text;
  const total = whole.head.length + whole.cut + whole.tail.length;
  if (total <= limit) return whole.head + whole.tail;
  if (limit < 2 * MARKER_ROOM) return headOf(whole.head + whole.tail.slice(0, limit), limit);
  const from = whole.cut === 0 ? whole.head + whole.tail : null;
  const tailChars = tailSize(limit);
  let headChars = limit - tailChars - MARKER_ROOM;
  // The marker's length depends on the count it shows, which depends on the head's length.
  for (let round = 0; round < 3; round += 1) {
    headChars = limit - tailChars - cutMarker(total - headChars - tailChars).length;
  }
  const head = headOf(from ?? whole.head, headChars);
  const tail = tailOf(from ?? whole.tail, tailChars);
  return head + cutMarker(total - head.length - tail.length) + tail;
}

const MARKER = /\n\[… (\d+) characters cut …\]\n/g;

/**
 * A text that may hold markers of earlier cuts (pieces cut on their own, then joined) as one
 * `LongText`: the part before the first marker, the part after the last, and everything between
 * counted as cut, so that `fitText` can cut the whole again without keeping a marker inside.
 */
export function withCuts(text: string): LongText {
  let first: number | null = null;
  let lastEnd = 0;
  let total = text.length;
  for (const match of text.matchAll(MARKER)) {
    first ??= match.index;
    lastEnd = match.index + match[0].length;
    total += Number(match[1]) - match[0].length;
  }
  if (first === null) return { head: text, cut: 0, tail: "" };
  const head = text.slice(0, first);
  const tail = text.slice(lastEnd);
  return { head, cut: total - head.length - tail.length, tail };
}

/** The first `limit` characters, without splitting a surrogate pair. */
export function headOf(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const last = text.charCodeAt(limit - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? limit - 1 : limit);
}

/** The last `count` characters, without splitting a surrogate pair. */
function tailOf(text: string, count: number): string {
  if (count <= 0) return "";
  if (text.length <= count) return text;
  const first = text.charCodeAt(text.length - count);
  const insidePair = first >= 0xdc00 && first <= 0xdfff;
  return text.slice(text.length - (insidePair ? count - 1 : count));
}

/**
 * Collects a text that arrives in pieces, keeping at most about three times `limit` characters:
 * the head (`limit` characters) and a tail window. `value()` is then what `fitText` would make of
 * the whole text. With `trim`, leading and trailing whitespace do not count (as `String.trim`),
 * however long the runs of it are.
 */
export class TextCollector {
  private head = "";
  private tail = "";
  private cut = 0;
  private overflow = false;
  private started = false;
  /** Whitespace after the last other character (trim mode): kept until something follows it. */
  private spaces: LongText = { head: "", cut: 0, tail: "" };
  private readonly keepTail: number;

  constructor(
    private readonly limit: number,
    private readonly trim = false,
  ) {
    this.keepTail = Math.max(tailSize(limit), 1);
  }

  append(piece: string): void {
    if (piece.length === 0) return;
    if (!this.trim) {
      this.take(piece);
      return;
    }
    let rest = piece;
    if (!this.started) {
      rest = rest.trimStart();
      if (rest === "") return;
      this.started = true;
    }
    const end = rest.trimEnd().length;
    if (end === 0) {
      this.holdSpaces(rest);
      return;
    }
    this.releaseSpaces();
    this.take(rest.slice(0, end));
    if (end < rest.length) this.holdSpaces(rest.slice(end));
  }

  /** The text so far (trimmed in trim mode), cut to the limit; null when there is none. */
  value(): string | null {
    const text = this.overflow
      ? fitText({ head: this.head, cut: this.cut, tail: this.tail }, this.limit)
      : this.head;
    return text === "" ? null : text;
  }

  private take(piece: string): void {
    if (!this.overflow) {
      this.head += piece;
      if (this.head.length <= this.limit) return;
      this.overflow = true;
      this.tail = this.head.slice(this.limit);
      this.head = this.head.slice(0, this.limit);
    } else {
      this.tail += piece;
    }
    if (this.tail.length > 2 * this.keepTail + this.limit) {
      // The window starts at a whole character: a pair cut in two would leave half of it at the
      // start of the tail, which `fitText` keeps when the tail is no longer than its share.
      let start = this.tail.length - this.keepTail;
      const first = this.tail.charCodeAt(start);
      if (first >= 0xdc00 && first <= 0xdfff) start -= 1;
      this.cut += start;
      this.tail = this.tail.slice(start);
    }
  }

  /** Characters known to lie between what was taken and what comes next: only counted. */
  private skip(count: number): void {
    // Only called after more than `limit` characters were taken (see releaseSpaces).
    this.cut += this.tail.length + count;
    this.tail = "";
  }

  private holdSpaces(spaces: string): void {
    const held = this.spaces;
    const keep = this.limit + 1;
    if (held.cut === 0 && held.head.length + spaces.length <= 2 * keep) {
      held.head += spaces;
      return;
    }
    if (held.cut === 0) {
      const all = held.head + spaces;
      held.head = all.slice(0, keep);
      held.tail = all.slice(keep);
    } else {
      held.tail += spaces;
    }
    if (held.tail.length > keep) {
      held.cut += held.tail.length - keep;
      held.tail = held.tail.slice(-keep);
    }
  }

  /** Whitespace followed by more text is part of the text after all. */
  private releaseSpaces(): void {
    const held = this.spaces;
    if (held.head === "") return;
    // The held head alone (limit + 1 characters) overflows the collector, and the held tail
    // (limit + 1 characters) refills its tail window, so skipping the middle is exact.
    this.take(held.head);
    if (held.cut > 0) this.skip(held.cut);
    this.take(held.tail);
    this.spaces = { head: "", cut: 0, tail: "" };
  }
}
