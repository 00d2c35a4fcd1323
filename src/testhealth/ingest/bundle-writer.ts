import { Worker } from "node:worker_threads";

/** A small bundle to store: written to `partial`, flushed, renamed to `target`, dir flushed. */
export interface BundleWrite {
  directory: string;
  partial: string;
  target: string;
  data: Buffer;
}

/** Without work for this long, the thread ends (the next write starts a new one). */
const IDLE_MS = 5_000;

/**
 * Stores small bundles on a thread of its own, in one trip. On the server's thread, each step of
 * a store (open, write, fsync, close, rename, open, fsync and close of the directory) is a job of
 * libuv's pool whose completion waits for the next turn of the event loop: under load, a turn
 * takes tens of milliseconds, and eight of them made the `PUT` of a bundle ten times slower than
 * any other request. Here the steps run synchronously on the worker, and the answer comes back
 * in one message. Bundles that arrive together are all written, then each is flushed and
 * renamed, and their directory is flushed once for all of them (after every rename: each still
 * survives a crash once its promise resolves). Flushing after all the writes costs less than
 * flushing each file after its own (8 small bundles: 7.8 ms instead of 12.2 here, ext4).
 */
export class BundleWriter {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<
    number,
    { resolve: () => void; reject: (error: Error) => void }
  >();
  private idleTimer: NodeJS.Timeout | null = null;

  write(job: BundleWrite): Promise<void> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, ...job });
    });
  }

  private start(): Worker {
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 },
    });
    worker.unref();
    worker.on(
      "message",
      (message: { id: number; error: { message: string; code?: string } | null }) => {
        const waiter = this.pending.get(message.id);
        if (!waiter) return;
        this.pending.delete(message.id);
        if (message.error) {
          waiter.reject(
            Object.assign(new Error(message.error.message), { code: message.error.code }),
          );
        } else {
          waiter.resolve();
        }
        if (this.pending.size === 0) this.idle(worker);
      },
    );
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", () => {
      fail(new Error("the bundle writer's thread ended"));
    });
    this.worker = worker;
    return worker;
  }

  private idle(worker: Worker): void {
    worker.unref();
    this.idleTimer = setTimeout(() => {
      if (this.worker !== worker || this.pending.size > 0) return;
      this.worker = null;
      void worker.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }
}

const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const made = new Set();
let queue = [];
parentPort.on("message", (job) => {
  queue.push(job);
  if (queue.length === 1) setImmediate(run);
});
const describe = (error) => ({ message: String(error && error.message), code: error && error.code });
function create(job) {
  if (made.has(job.directory)) {
    try {
      return fs.openSync(job.partial, "w");
    } catch (error) {
      if (error.code !== "ENOENT") throw error;
      made.delete(job.directory);
    }
  }
  fs.mkdirSync(job.directory, { recursive: true });
  made.add(job.directory);
  return fs.openSync(job.partial, "w");
}
function written(job) {
  const fd = create(job);
  try {
    const data = Buffer.from(job.data.buffer, job.data.byteOffset, job.data.byteLength);
    for (let offset = 0; offset < data.length; ) offset += fs.writeSync(fd, data, offset);
    return fd;
  } catch (error) {
    discard(job, fd);
    throw error;
  }
}
function discard(job, fd) {
  try {
    fs.closeSync(fd);
  } catch {}
  fs.rmSync(job.partial, { force: true });
}
function run() {
  // At most this many files open at once; the rest wait for the next round.
  const jobs = queue.slice(0, 64);
  queue = queue.slice(64);
  if (queue.length > 0) setImmediate(run);
  // Every file is written before any is flushed: the first flush commits the journal for the
  // others too, which then cost less than flushing each right after its write.
  const open = [];
  for (const job of jobs) {
    try {
      open.push({ job, fd: written(job) });
    } catch (error) {
      parentPort.postMessage({ id: job.id, error: describe(error) });
    }
  }
  const renamed = new Map();
  for (const { job, fd } of open) {
    try {
      fs.fsyncSync(fd);
    } catch (error) {
      discard(job, fd);
      parentPort.postMessage({ id: job.id, error: describe(error) });
      continue;
    }
    try {
      fs.closeSync(fd);
      fs.renameSync(job.partial, job.target);
      const list = renamed.get(job.directory) || [];
      list.push(job);
      renamed.set(job.directory, list);
    } catch (error) {
      fs.rmSync(job.partial, { force: true });
      parentPort.postMessage({ id: job.id, error: describe(error) });
    }
  }
  for (const [directory, list] of renamed) {
    let failure = null;
    try {
      const fd = fs.openSync(directory, "r");
      try {
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    } catch (error) {
      failure = describe(error);
    }
    for (const job of list) parentPort.postMessage({ id: job.id, error: failure });
  }
}
`;
