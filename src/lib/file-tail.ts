/** The end of a file, read without reading the rest (a CI log may be hundreds of megabytes). */
import { open } from "node:fs/promises";

/**
 * The last `bytes` bytes of a file as UTF-8 text (a character cut at the start is dropped);
 * undefined when the file does not exist.
 */
export async function readTail(file: string, bytes: number): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(file, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    let start = 0;
    // A UTF-8 continuation byte (10xxxxxx) begins no character: skip to the next one.
    while (start < length && start < 4 && ((buffer[start] ?? 0) & 0xc0) === 0x80) start += 1;
    return buffer.subarray(start).toString("utf8");
  } finally {
    await handle.close();
  }
}
