/** Small helpers over async byte streams, shared by the decompression and tar stages. */

export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0];
  return Buffer.concat(chunks);
}

/** Node streams may hand out strings when an encoding is set; everything downstream wants bytes. */
export async function* asBytes(
  source: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    yield typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
  }
}

export interface Peeked {
  /** At least the requested number of bytes, fewer only when the stream is shorter. */
  head: Uint8Array;
  /** The whole stream again, head included. */
  chunks: AsyncGenerator<Uint8Array>;
  /** Releases the underlying stream when the caller decides not to read on. */
  close(): Promise<void>;
}

/** Reads just enough of a stream to look at its first bytes without losing them. */
export async function peekBytes(source: AsyncIterable<Uint8Array>, count: number): Promise<Peeked> {
  const iterator = source[Symbol.asyncIterator]();
  const buffered: Uint8Array[] = [];
  let size = 0;
  let finished = false;
  while (size < count) {
    const next = await iterator.next();
    if (next.done === true) {
      finished = true;
      break;
    }
    buffered.push(next.value);
    size += next.value.length;
  }
  const close = async (): Promise<void> => {
    if (!finished) await iterator.return?.();
  };
  return { head: concatBytes(buffered), chunks: replay(buffered, iterator, finished), close };
}

async function* replay(
  buffered: Uint8Array[],
  iterator: AsyncIterator<Uint8Array>,
  alreadyFinished: boolean,
): AsyncGenerator<Uint8Array> {
  yield* buffered;
  if (alreadyFinished) return;
  let finished = false;
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } finally {
    // Stopping early (a limit, a bad entry) must release the request stream behind us.
    if (!finished) await iterator.return?.();
  }
}
