/**
 * Turns the raw upload into the bytes of its tar archive, streaming: zstd (what Trunk's uploader
 * sends), gzip (what our own uploader sends) or an uncompressed tar, told apart by magic numbers.
 */
import { Readable, pipeline } from "node:stream";
import { createGunzip, gunzipSync } from "node:zlib";
import { Decompress } from "fzstd";
import { peekBytes } from "./bytes.js";
import { BundleError, messageOf } from "./errors.js";

export type Compression = "zstd" | "gzip" | "none";

const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd] as const;
const GZIP_MAGIC = [0x1f, 0x8b] as const;
const TAR_BLOCK = 512;
const USTAR_OFFSET = 257;
/** "ustar" followed by NUL (POSIX) or by a space (GNU, what Rust's `tar` crate writes). */
const USTAR = Buffer.from("ustar", "latin1");
/**
 * fzstd hands out whole blocks synchronously for each push. Feeding it small slices bounds what
 * one push can produce (RLE blocks are 4 bytes in, 128 KiB out), so the size cap bites early.
 */
const ZSTD_FEED_BYTES = 1024;

export function detectCompression(head: Uint8Array): Compression {
  if (startsWith(head, ZSTD_MAGIC)) return "zstd";
  if (startsWith(head, GZIP_MAGIC)) return "gzip";
  return "none";
}

/** The tar stream inside an upload, capped at `maxBytes` once decompressed. */
export async function* tarBytes(
  upload: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  const peeked = await peekBytes(upload, ZSTD_MAGIC.length);
  if (peeked.head.length === 0) {
    await peeked.close();
    throw new BundleError("the bundle is empty");
  }
  const compression = detectCompression(peeked.head);
  const inflated =
    compression === "zstd"
      ? unzstd(peeked.chunks, maxBytes)
      : compression === "gzip"
        ? gunzip(peeked.chunks)
        : peeked.chunks;
  yield* requireTar(capBytes(inflated, maxBytes));
}

function tooLarge(maxBytes: number): BundleError {
  return new BundleError(`the bundle is larger than ${maxBytes} bytes once decompressed`);
}

async function* capBytes(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of chunks) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge(maxBytes);
    yield chunk;
  }
}

/** A compressed bundle this small is inflated in one call rather than through the thread pool. */
const SMALL_GZIP_BYTES = 1024 * 1024;
/** What one-call inflating may produce before it hands over to streaming (which caps the total). */
const SMALL_GZIP_OUTPUT = 64 * 1024 * 1024;
const SLICE_BYTES = 256 * 1024;

async function* gunzip(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  // Typical bundles are a few KiB to a few hundred: reading them whole and inflating them in
  // one synchronous call saves a round trip through libuv's pool per chunk (where it would
  // wait behind other requests' fsyncs).
  const iterator = chunks[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let ended = false;
  while (headBytes <= SMALL_GZIP_BYTES) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    headBytes += next.value.length;
  }
  if (ended) {
    let inflated: Buffer | null = null;
    try {
      inflated = gunzipSync(Buffer.concat(head), { maxOutputLength: SMALL_GZIP_OUTPUT });
    } catch (error) {
      // Larger than one call may produce: streaming below applies the real cap.
      if (!(error instanceof RangeError)) {
        throw new BundleError(`bad gzip data: ${messageOf(error)}`, { cause: error });
      }
    }
    if (inflated) {
      for (let at = 0; at < inflated.length; at += SLICE_BYTES) {
        yield inflated.subarray(at, at + SLICE_BYTES);
      }
      return;
    }
  }
  yield* gunzipStream(resumed(head, ended ? null : iterator));
}

async function* resumed(
  head: readonly Uint8Array[],
  rest: AsyncIterator<Uint8Array> | null,
): AsyncGenerator<Uint8Array> {
  let finished = rest === null;
  try {
    yield* head;
    if (!rest) return;
    for (;;) {
      const next = await rest.next();
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Stopped early (an error downstream): release the source.
    if (!finished) await rest?.return?.();
  }
}

async function* gunzipStream(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  // pipeline() destroys every stage on error or early exit, so the request stream is released too.
  const output = pipeline(Readable.from(chunks), createGunzip(), () => undefined);
  try {
    for await (const chunk of output as AsyncIterable<Buffer>) yield chunk;
  } catch (error) {
    throw new BundleError(`bad gzip data: ${messageOf(error)}`, { cause: error });
  }
}

async function* unzstd(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  let ready: Uint8Array[] = [];
  let total = 0;
  const decoder = new Decompress((block) => {
    total += block.length;
    // Throwing here aborts fzstd's push before the next block is even decoded.
    if (total > maxBytes) throw tooLarge(maxBytes);
    // fzstd keeps decoding into its window; a copy keeps our queued block from changing under us.
    if (block.length > 0) ready.push(block.slice());
  });
  const take = (): Uint8Array[] => {
    const blocks = ready;
    ready = [];
    return blocks;
  };
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.length; at += ZSTD_FEED_BYTES) {
      pushZstd(decoder, chunk.subarray(at, at + ZSTD_FEED_BYTES), false);
      yield* take();
    }
  }
  // The final push is what makes fzstd notice a stream cut off mid-frame.
  pushZstd(decoder, new Uint8Array(0), true);
  yield* take();
}

function pushZstd(decoder: Decompress, chunk: Uint8Array, final: boolean): void {
  try {
    decoder.push(chunk, final);
  } catch (error) {
    if (error instanceof BundleError) throw error;
    throw new BundleError(`bad zstd data: ${messageOf(error)}`, { cause: error });
  }
}

/** tar-stream's own complaint ("Invalid tar header…") is unclear; check the first header ourselves. */
async function* requireTar(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const peeked = await peekBytes(chunks, TAR_BLOCK);
  if (!looksLikeTar(peeked.head)) {
    await peeked.close();
    throw new BundleError("not a tar archive");
  }
  yield* peeked.chunks;
}

function looksLikeTar(head: Uint8Array): boolean {
  if (head.length < TAR_BLOCK) return false;
  // An archive with no entries at all is just zero blocks; it is a tar, only an empty one.
  if (head.subarray(0, TAR_BLOCK).every((byte) => byte === 0)) return true;
  return Buffer.from(head.buffer, head.byteOffset + USTAR_OFFSET, USTAR.length).equals(USTAR);
}

function startsWith(bytes: Uint8Array, magic: readonly number[]): boolean {
  return magic.every((byte, index) => bytes[index] === byte);
}
