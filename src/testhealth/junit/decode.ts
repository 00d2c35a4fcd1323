/**
 * Bytes to text for the XML parser: picks the encoding like an XML processor would (BOM, then the
 * XML declaration, else UTF-8), drops the BOM, and removes characters that XML 1.0 forbids.
 */
import type { Readable } from "node:stream";
import { TextDecoder } from "node:util";

export type JunitSource =
  AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string> | Readable | string;

/** Enough bytes to see a BOM and the XML declaration (`<?xml version="1.0" encoding="…"?>`). */
const SNIFF_BYTES = 1024;

/**
 * C0 controls other than tab, LF and CR, and U+FFFE/U+FFFF, are not XML characters. Producers leak
 * them from test output (ANSI escapes, NUL); removing them keeps one stray byte from costing the
 * whole report. Each is a single UTF-16 unit, so removing them chunk by chunk is safe.
 */
// eslint-disable-next-line no-control-regex
const NON_XML_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

export function stripNonXmlCharacters(text: string): string {
  return text.replace(NON_XML_CHARACTERS, "");
}

/** Yields the source as decoded text chunks, BOM removed and non-XML characters stripped. */
export async function* decodeXmlText(source: JunitSource): AsyncGenerator<string> {
  let decoder: TextDecoder | null = null;
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let first = true;
  const emit = (text: string): string => {
    const body = first && text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    if (text.length > 0) first = false;
    return stripNonXmlCharacters(body);
  };

  for await (const chunk of chunksOf(source)) {
    if (typeof chunk === "string") {
      yield emit(chunk);
      continue;
    }
    if (decoder === null) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      if (pendingBytes < SNIFF_BYTES) continue;
      const head = concatBytes(pending);
      pending = [];
      decoder = decoderFor(head);
      yield emit(decoder.decode(head, { stream: true }));
      continue;
    }
    yield emit(decoder.decode(chunk, { stream: true }));
  }
  if (decoder === null) {
    const head = concatBytes(pending);
    decoder = decoderFor(head);
    yield emit(decoder.decode(head, { stream: true }));
  }
  yield emit(decoder.decode());
}

async function* chunksOf(source: JunitSource): AsyncGenerator<Uint8Array | string> {
  if (typeof source === "string") {
    yield source;
    return;
  }
  for await (const chunk of source as AsyncIterable<unknown>) {
    if (typeof chunk === "string" || chunk instanceof Uint8Array) yield chunk;
    else throw new TypeError("JUnit source chunks must be strings or bytes");
  }
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1 && parts[0] !== undefined) return parts[0];
  const all = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return all;
}

/** XML 1.0 appendix F: a BOM decides; else UTF-16 without BOM shows as `<\0?\0`; else the declaration; else UTF-8. */
export function decoderFor(head: Uint8Array): TextDecoder {
  const [b0, b1, b2] = head;
  if (b0 === 0xef && b1 === 0xbb && b2 === 0xbf) return new TextDecoder("utf-8");
  if (b0 === 0xff && b1 === 0xfe) return new TextDecoder("utf-16le");
  if (b0 === 0xfe && b1 === 0xff) return new TextDecoder("utf-16be");
  if (b0 === 0x3c && b1 === 0x00) return new TextDecoder("utf-16le");
  if (b0 === 0x00 && b1 === 0x3c) return new TextDecoder("utf-16be");
  const declared = declaredEncoding(head);
  if (declared !== null) {
    try {
      // A declaration saying UTF-16 in a byte-per-character file is a lie we can ignore.
      if (!/^utf-?16/i.test(declared)) return new TextDecoder(declared);
    } catch {
      // Unknown label: fall back to UTF-8, the only encoding seen in practice.
    }
  }
  return new TextDecoder("utf-8");
}

function declaredEncoding(head: Uint8Array): string | null {
  const ascii = new TextDecoder("latin1").decode(head.subarray(0, SNIFF_BYTES));
  const m = /^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']/.exec(ascii);
  return m?.[1] ?? null;
}
