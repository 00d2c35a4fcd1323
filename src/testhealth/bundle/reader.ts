/**
 * Reads an upload bundle as a stream of entries, in archive order (`meta.json` need not come
 * first). Read or abandon a `junit` entry's `stream` before asking for the next (tar is
 * sequential). All or nothing: the iterator may throw after yielding entries (no `meta.json`), and
 * the caller then discards them. Defects are `BundleError`s; source failures pass through.
 */
import type { Readable } from "node:stream";
import { TextDecoder } from "node:util";
import { asBytes, concatBytes } from "./bytes.js";
import { tarBytes } from "./decompress.js";
import { BundleError, messageOf } from "./errors.js";
import { resolveLimits, type BundleLimits } from "./limits.js";
import { parseBundleMeta, type BundleMeta } from "./meta.js";
import {
  entryPath,
  isRegularFile,
  nextChunk,
  tarEntries,
  tarFailure,
  type TarEntry,
} from "./tar.js";

export type BundleSource = AsyncIterable<Uint8Array | string> | Readable;

export type ReadBundleOptions = Partial<BundleLimits>;

export type BundleEntry =
  | { kind: "meta"; path: string; meta: BundleMeta; raw: unknown }
  | { kind: "codeowners"; path: string; text: string }
  /** Trunk's binary test report (`internal.bin`, `internal/<n>`), whole: see `test-report.ts`. */
  | { kind: "report"; path: string; bytes: Uint8Array }
  | {
      kind: "junit";
      /** As in the archive: `junit/0` in Trunk's bundles, any `*.xml` otherwise. */
      path: string;
      /** Declared size from the tar header. */
      size: number;
      /** The file's bytes; hand it to `parseJunit`. See the module comment for when to read it. */
      stream: AsyncIterable<Uint8Array>;
    };

const META_PATH = "meta.json";
const CODEOWNERS_PATH = "CODEOWNERS";

type EntryKind = "meta" | "codeowners" | "junit" | "report" | "skip";

/** `bazel_bep.json` and anything else unknown are skipped. */
function classify(path: string): EntryKind {
  if (path === META_PATH) return "meta";
  if (path === CODEOWNERS_PATH) return "codeowners";
  if (path === "internal.bin" || /^internal\/[^/]+$/.test(path)) return "report";
  if (path.startsWith("junit/") || path.toLowerCase().endsWith(".xml")) return "junit";
  return "skip";
}

export async function* readBundle(
  source: BundleSource,
  options: ReadBundleOptions = {},
): AsyncGenerator<BundleEntry> {
  const limits = resolveLimits(options);
  const upload = new UploadSource(source);
  const fail = (error: unknown): unknown => upload.failure ?? asBundleError(error);
  let sawMeta = false;
  try {
    const bytes = tarBytes(upload.chunks(), limits.maxDecompressedBytes);
    for await (const entry of tarEntries(bytes, limits.maxEntries)) {
      const path = entryPath(entry);
      const kind = isRegularFile(entry) ? classify(path) : "skip";
      if (kind === "meta") {
        if (sawMeta) throw new BundleError("the bundle holds meta.json twice");
        sawMeta = true;
        yield await metaEntry(entry, path, limits.maxMetaBytes);
      } else if (kind === "codeowners") {
        const text = decodeText(await readCapped(entry, limits.maxCodeownersBytes, path));
        yield { kind, path, text };
      } else if (kind === "report") {
        yield { kind, path, bytes: await readCapped(entry, limits.maxReportBytes, path) };
      } else if (kind === "junit") {
        const body = new EntryBody(entry, fail);
        yield { kind, path, size: entry.header.size, stream: body.chunks() };
        await body.drain();
      } else {
        await drainEntry(entry);
      }
    }
  } catch (error) {
    throw fail(error);
  }
  if (!sawMeta) throw new BundleError("meta.json missing");
}

async function metaEntry(entry: TarEntry, path: string, maxBytes: number): Promise<BundleEntry> {
  const text = decodeText(await readCapped(entry, maxBytes, path));
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new BundleError(`meta.json is not valid JSON: ${messageOf(error)}`);
  }
  return { kind: "meta", path, meta: parseBundleMeta(raw), raw };
}

/** For the small files we keep whole; the header tells the size before any byte is read. */
async function readCapped(entry: TarEntry, maxBytes: number, path: string): Promise<Uint8Array> {
  const size = entry.header.size;
  if (size > maxBytes) throw new BundleError(`${path} is larger than ${maxBytes} bytes`);
  const iterator = entry[Symbol.asyncIterator]();
  const chunks: Uint8Array[] = [];
  for (let chunk = await nextChunk(iterator); chunk !== null; chunk = await nextChunk(iterator)) {
    chunks.push(chunk);
  }
  return concatBytes(chunks);
}

const utf8 = new TextDecoder("utf-8");

function decodeText(bytes: Uint8Array): string {
  const text = utf8.decode(bytes);
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

async function drainEntry(entry: TarEntry): Promise<void> {
  const iterator = entry[Symbol.asyncIterator]();
  while ((await nextChunk(iterator)) !== null);
}

/** A JUnit entry handed out as a stream, with the reader able to drain what the consumer left. */
class EntryBody {
  private readonly iterator: AsyncIterator<unknown>;
  private finished = false;
  private movedOn = false;

  constructor(
    entry: TarEntry,
    private readonly fail: (error: unknown) => unknown,
  ) {
    this.iterator = entry[Symbol.asyncIterator]();
  }

  async *chunks(): AsyncGenerator<Uint8Array> {
    for (;;) {
      if (this.movedOn) throw new Error("a bundle entry was read after the reader moved on");
      const chunk = await this.next();
      if (chunk === null) return;
      yield chunk;
    }
  }

  async drain(): Promise<void> {
    this.movedOn = true;
    while ((await this.next()) !== null);
  }

  private async next(): Promise<Uint8Array | null> {
    if (this.finished) return null;
    try {
      const chunk = await nextChunk(this.iterator);
      if (chunk === null) this.finished = true;
      return chunk;
    } catch (error) {
      this.finished = true;
      throw this.fail(error);
    }
  }
}

/** Remembers a failure of the caller's stream so that it is not mistaken for a bundle defect. */
class UploadSource {
  failure: unknown = undefined;

  constructor(private readonly source: BundleSource) {}

  async *chunks(): AsyncGenerator<Uint8Array> {
    try {
      yield* asBytes(this.source as AsyncIterable<Uint8Array | string>);
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }
}

function asBundleError(error: unknown): BundleError {
  return error instanceof BundleError ? error : tarFailure(error);
}
