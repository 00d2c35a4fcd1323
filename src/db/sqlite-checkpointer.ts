import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * WAL checkpoints of a SQLite file on a worker thread, so that the commit that crosses
 * `wal_autocheckpoint` does not write and fsync the database on the server's only JavaScript
 * thread. A second connection runs a PASSIVE checkpoint (never blocking) every `intervalMs`; the
 * server's connection keeps a high `wal_autocheckpoint` as a fallback.
 */
export class SqliteCheckpointer {
  private readonly worker: Worker;
  private stopped: Promise<void> | null = null;

  constructor(file: string, intervalMs = 200) {
    const require = createRequire(import.meta.url);
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver: require.resolve("better-sqlite3"), file, intervalMs },
      // It only runs a pragma: a small heap keeps the thread's memory small.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    // A checkpoint that fails now is retried on the next tick; the fallback covers the rest.
    this.worker.on("error", () => undefined);
    this.worker.unref();
  }

  /** Resolves once the worker's last checkpoint ran and its connection is closed. */
  stop(): Promise<void> {
    this.stopped ??= new Promise<void>((resolve) => {
      this.worker.once("exit", () => {
        resolve();
      });
      // Held open until the thread is done (unreferenced, it would not keep the process alive).
      this.worker.ref();
      this.worker.postMessage("stop");
    });
    return this.stopped;
  }
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma("busy_timeout = 1000");
const checkpoint = () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // busy or locked: the next tick tries again
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;
