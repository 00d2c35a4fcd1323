/**
 * Walks a tar stream entry by entry with tar-stream. Bytes flow in only as fast as entries are
 * read (backpressure), so a bundle is never held in memory whole.
 */
import { extract as tarExtract, type Extract } from "tar-stream";
import { BundleError, messageOf } from "./errors.js";

/** tar-stream does not export its entry type; it is what the extractor iterates over. */
export type TarEntry = Extract extends AsyncIterable<infer Entry> ? Entry : never;

/**
 * Yields each entry; the caller must read or drain it before asking for the next one (tar is
 * sequential). Errors from `bytes` (bad compression, limits) surface from this iterator.
 */
export async function* tarEntries(
  bytes: AsyncIterable<Uint8Array>,
  maxEntries: number,
): AsyncGenerator<TarEntry> {
  const extract = tarExtract();
  void pump(bytes, extract);
  let count = 0;
  // Leaving this loop early (a limit, a bad entry, the consumer stopping) destroys the extractor;
  // the pump then notices and releases the upload stream.
  for await (const entry of extract) {
    count += 1;
    if (count > maxEntries) {
      throw new BundleError(`the bundle has more than ${maxEntries} entries`);
    }
    yield entry;
  }
}

/** Never rejects: a failure of the byte stream is handed to the extractor, whose reader reports it. */
async function pump(bytes: AsyncIterable<Uint8Array>, extract: Extract): Promise<void> {
  try {
    for await (const chunk of bytes) {
      if (extract.destroyed) return;
      if (!extract.write(chunk)) await writableAgain(extract);
    }
    if (!extract.destroyed) extract.end(null);
  } catch (error) {
    extract.destroy(error instanceof Error ? error : new Error(messageOf(error)));
  }
}

/** A stream that signals with "drain" when it can take writes again, and "close" when gone. */
interface DrainableStream {
  readonly destroyed: boolean;
  on(event: "drain" | "close", listener: () => void): unknown;
  removeListener(event: "drain" | "close", listener: () => void): unknown;
}

/** Resolves once `stream` accepts writes again (or is gone): backpressure for the loops here. */
export function writableAgain(stream: DrainableStream): Promise<void> {
  if (stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      stream.removeListener("drain", done);
      stream.removeListener("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}

/** tar-stream's messages, turned into reasons for the uploader. */
export function tarFailure(error: unknown): BundleError {
  const message = messageOf(error);
  if (message === "Unexpected end of data") {
    return new BundleError("the tar archive is truncated", { cause: error });
  }
  if (message.startsWith("Invalid tar header")) {
    return new BundleError("the tar archive is corrupt: invalid tar header", { cause: error });
  }
  return new BundleError(`unreadable bundle: ${message}`, { cause: error });
}

/** The entry's path as the uploader wrote it, without `./` prefixes (`tar -C dir .` adds them). */
export function entryPath(entry: TarEntry): string {
  return entry.header.name.replace(/^(?:\.\/|\/)+/, "");
}

/** Reads an entry's next chunk with next() only: return() on an entry destroys the whole extractor. */
export async function nextChunk(iterator: AsyncIterator<unknown>): Promise<Uint8Array | null> {
  const next = await iterator.next();
  if (next.done === true) return null;
  if (next.value instanceof Uint8Array) return next.value;
  throw new Error("tar entry produced a non-binary chunk");
}

export function isRegularFile(entry: TarEntry): boolean {
  const type = entry.header.type;
  return type === "file" || type === "contiguous-file";
}
