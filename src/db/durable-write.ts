/**
 * Durable writes that do not hold the event loop while the disk syncs (SQLite).
 *
 * better-sqlite3 runs statements on the calling thread, so with `synchronous = FULL` every commit
 * waits for an fsync of the write-ahead log on the only JavaScript thread: under the mixed load
 * of docs/benchmarks.md the two writes of an upload (its row, then the `PUT` that receives its
 * bundle) held the event loop ~1.8 ms each, a fifth of its time, while every other request waited.
 *
 * `durableWrite` commits with `synchronous = NORMAL` instead (the commit is written to the log,
 * which is all a crash of the process needs; the database stays consistent whatever happens) and
 * then syncs the log on libuv's thread pool before the caller goes on: what the caller
 * acknowledges is on disk, as with FULL. One sync covers every commit made before it started, so
 * writes arriving together share one (a group commit); a sync never counts for a commit made
 * after it started. On PostgreSQL (and for a database without a log file) `work` runs as it is:
 * its commit already waits on the database server, not on this thread.
 */
import { open } from "node:fs/promises";
import { sql, type Kysely } from "kysely";
import type { Database } from "./schema.js";

/** Syncs one file, each sync starting after the call that asked for it. */
export class FileSync {
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /** Syncs started so far (for tests and benchmarks: how many writes shared one). */
  syncs = 0;

  constructor(private readonly file: string) {}

  /** Resolves once a sync of the file that started after this call has finished. */
  sync(): Promise<void> {
    // A sync already queued starts after the running one ends: after this call, too.
    if (this.queued) return this.queued;
    const running = this.inFlight;
    if (!running) return this.start();
    const next = running
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.start();
      });
    this.queued = next;
    return next;
  }

  private start(): Promise<void> {
    this.syncs++;
    const done = syncFile(this.file).finally(() => {
      if (this.inFlight === done) this.inFlight = null;
    });
    this.inFlight = done;
    return done;
  }
}

async function syncFile(file: string): Promise<void> {
  let handle;
  try {
    handle = await open(file, "r");
  } catch (error) {
    // No log: nothing was written since it was checkpointed away, and a checkpoint syncs.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

const logSyncs = new WeakMap<object, FileSync>();

/** Makes `durableWrite` on `db` commit relaxed and sync `sync`'s file (SQLite's log). */
export function registerLogSync(db: object, sync: FileSync): void {
  logSyncs.set(db, sync);
}

/** The log sync of `db`, if it has one (tests and benchmarks). */
export function logSyncOf(db: object): FileSync | undefined {
  return logSyncs.get(db);
}

/**
 * Runs `work` (statements or a transaction of its own on the connection it is given; nothing
 * else may commit meanwhile) and resolves once what it committed is on disk.
 */
export async function durableWrite<T>(
  db: Kysely<Database>,
  work: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  const logSync = logSyncs.get(db);
  if (!logSync) return work(db);
  const result = await db.connection().execute(async (connection) => {
    await sql`pragma synchronous = NORMAL`.execute(connection);
    try {
      return await work(connection);
    } finally {
      await sql`pragma synchronous = FULL`.execute(connection);
    }
  });
  await logSync.sync();
  return result;
}
