import { createHash } from "node:crypto";
import { createReadStream, readFileSync, statSync } from "node:fs";
import { mkdir, open, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";

const SMALL_BUNDLE_BYTES = 1024 * 1024;

export class BundleTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The bundle is larger than ${limit} bytes.`);
  }
}

export interface StoredBundle {
  /** Relative to the storage root, so the data directory can move. */
  path: string;
  bytes: number;
  sha256: string;
}

/**
 * Bundles on disk under `{dataDir}/uploads/`. A bundle is written to a temporary name, flushed
 * to the disk and renamed (the directory is flushed too), so that a stored bundle is complete
 * and survives a crash: the `PUT` answers 2xx only after that.
 */
export class BundleStorage {
  private readonly root: string;

  constructor(dataDir: string) {
    this.root = path.resolve(dataDir, "uploads");
  }

  async store(
    organizationId: string,
    uploadId: string,
    body: Readable,
    maxBytes: number,
  ): Promise<StoredBundle> {
    const relative = path.join(organizationId, `${uploadId}.bundle`);
    const target = path.join(this.root, relative);
    const partial = `${target}.${process.pid}.part`;
    await mkdir(path.dirname(target), { recursive: true });
    const hash = createHash("sha256");
    let bytes = 0;
    const file = await open(partial, "w");
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > maxBytes) throw new BundleTooLargeError(maxBytes);
        hash.update(chunk);
        await file.write(chunk);
      }
      await file.sync();
    } catch (error) {
      await file.close();
      await rm(partial, { force: true });
      throw error;
    }
    await file.close();
    await rename(partial, target);
    await syncDirectory(path.dirname(target));
    return { path: relative, bytes, sha256: hash.digest("hex") };
  }

  /** The stored bytes; a small bundle in one read (no trip per chunk through libuv's pool). */
  async *open(relative: string): AsyncGenerator<Uint8Array> {
    const file = this.resolve(relative);
    if (statSync(file).size <= SMALL_BUNDLE_BYTES) {
      yield readFileSync(file);
      return;
    }
    yield* createReadStream(file, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>;
  }

  async remove(relative: string): Promise<void> {
    await rm(this.resolve(relative), { force: true });
  }

  resolve(relative: string): string {
    const resolved = path.resolve(this.root, relative);
    if (!resolved.startsWith(this.root + path.sep)) throw new Error("bundle path outside storage");
    return resolved;
  }

  /** A scratch file for JUnit reports that arrive before `meta.json`. */
  scratchPath(name: string): string {
    return path.join(this.root, ".scratch", `${process.pid}-${name}`);
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
