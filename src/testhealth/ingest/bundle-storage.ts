import { createHash, randomBytes } from "node:crypto";
import { createReadStream, readFileSync, statSync } from "node:fs";
import { mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { BundleWriter } from "./bundle-writer.js";

const SMALL_BUNDLE_BYTES = 1024 * 1024;
/** Received chunks are written once this many bytes wait (a small bundle: in one write). */
const WRITE_BATCH_BYTES = 1024 * 1024;

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
 * Bundles on disk in `{dataDir}/uploads/` (until processed; those of earlier versions in a
 * directory per organization, found by the path their upload keeps). A bundle is written to a
 * temporary name, flushed to the disk and renamed (the directory is flushed too), so that a
 * stored bundle is complete and survives a crash: the `PUT` answers 2xx only after that.
 *
 * A bundle up to 1 MiB (almost all of them) is kept in memory until it has arrived, then stored
 * by a thread of its own in one trip (`BundleWriter`). A larger one is streamed to its file from
 * here, where every step is a job of libuv's pool that waits for a turn of the event loop: a
 * directory is created once per process, chunks are written 1 MiB at a time, and concurrent
 * stores into one directory share its flush (one that started after their rename).
 */
export class BundleStorage {
  private readonly root: string;
  private readonly directories = new Set<string>();
  private readonly flushes = new DirectoryFlushes();
  private readonly writer = new BundleWriter();

  /** `suffix` makes the part of a bundle's name that no other store shares (tests fix it). */
  constructor(
    dataDir: string,
    private readonly suffix: () => string = () => randomBytes(6).toString("hex"),
  ) {
    this.root = path.resolve(dataDir, "uploads");
  }

  /**
   * Stores `body` under a name no other store uses (the upload's id and a random suffix): a
   * store for an upload that turns out to have its bundle already (a URL used twice, checked by
   * the caller meanwhile) never touches the stored one. `signal` stops it: what was written goes.
   */
  async store(
    uploadId: string,
    body: Readable,
    maxBytes: number,
    signal?: AbortSignal,
  ): Promise<StoredBundle> {
    if (!/^[\w-]+$/.test(uploadId)) throw new Error("an upload id is letters, digits, - and _");
    const relative = `${uploadId}.${this.suffix()}.bundle`;
    const target = path.join(this.root, relative);
    const directory = path.dirname(target);
    const partial = `${target}.${process.pid}.part`;
    const hash = createHash("sha256");
    let bytes = 0;
    // Chunks wait here until there are enough of them for one write; a small bundle never
    // reaches that and is stored by the writer's thread in one trip.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let file: FileHandle | null = null;
    try {
      // Leaving early (over the limit, stopped) leaves the body as it is: destroying it would
      // reset the connection before the answer that says why.
      for await (const chunk of body.iterator({
        destroyOnReturn: false,
      }) as AsyncIterable<Buffer>) {
        signal?.throwIfAborted();
        bytes += chunk.length;
        if (bytes > maxBytes) throw new BundleTooLargeError(maxBytes);
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= WRITE_BATCH_BYTES) {
          file ??= await this.create(directory, partial);
          await file.writev(pending);
          pending = [];
          pendingBytes = 0;
        }
      }
      if (file !== null) {
        if (pending.length > 0) await file.writev(pending);
        await file.sync();
      }
    } catch (error) {
      if (file !== null) {
        await file.close();
        await rm(partial, { force: true });
      }
      throw error;
    }
    const stored = { path: relative, bytes, sha256: hash.digest("hex") };
    if (file === null) {
      signal?.throwIfAborted();
      await this.writer.write({ directory, partial, target, data: Buffer.concat(pending) });
      return stored;
    }
    await file.close();
    await rename(partial, target);
    await this.flushes.flush(directory);
    return stored;
  }

  /** Opens a new file, creating its directory the first time (or again if it was removed). */
  private async create(directory: string, file: string): Promise<FileHandle> {
    if (this.directories.has(directory)) {
      try {
        return await open(file, "w");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        this.directories.delete(directory);
      }
    }
    await mkdir(directory, { recursive: true });
    this.directories.add(directory);
    return open(file, "w");
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

/**
 * Flushes of directories (after a rename into them), shared: a caller waits for a flush that
 * started after its call, so its rename is covered; callers that arrive while a flush runs all
 * wait for the one next flush, started when the running one ends. Under load, one flush thus
 * covers many renames instead of each taking a thread of the pool for its own.
 */
class DirectoryFlushes {
  private readonly running = new Map<string, { done: Promise<void>; next: Promise<void> | null }>();

  flush(directory: string): Promise<void> {
    const current = this.running.get(directory);
    if (!current) return this.start(directory);
    current.next ??= current.done.then(
      () => this.start(directory),
      () => this.start(directory),
    );
    return current.next;
  }

  private start(directory: string): Promise<void> {
    const done = syncDirectory(directory).finally(() => {
      if (this.running.get(directory)?.done === done) this.running.delete(directory);
    });
    this.running.set(directory, { done, next: null });
    return done;
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
