/**
 * SQLite is served by one process: `mainline serve` holds a lock on `<database file>.serve-lock`
 * while it runs. The lock is SQLite's own, an exclusive transaction on that small file, so the
 * operating system releases it when the process ends, however it ends (SIGKILL, a crash, a power
 * loss): a lock left behind never blocks the next start. The holder's pid is written beside it,
 * for the message of a start that finds the lock held. The CLI's other commands do not take it.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { assertSupportedNode } from "../lib/node-support.js";
import { describeDatabaseUrl, type OpenDatabaseOptions } from "./connection.js";

/** Who holds a serve lock, as its holder wrote it. */
export interface ServeLockHolder {
  pid: number;
  startedAt: number;
}

/** The SQLite database is being served by another process. */
export class DatabaseServedElsewhere extends Error {
  constructor(
    readonly file: string,
    /** Undefined when the holder has not written (or could not write) who it is. */
    readonly holder: ServeLockHolder | undefined,
  ) {
    super(`the SQLite database ${file} is being served by another process`);
  }
}

export interface ServeLock {
  /** Ends the transaction and closes the lock's file (the process's end does it too). */
  release(): void;
}

/**
 * Takes the serve lock of the SQLite database `options` name, or throws
 * `DatabaseServedElsewhere` at once; nothing to lock on PostgreSQL (several processes share it)
 * or in memory.
 */
export function lockDatabaseForServe(
  options: Pick<OpenDatabaseOptions, "url" | "dataDir">,
  startedAt: number,
): ServeLock {
  const { dialect, target } = describeDatabaseUrl(options);
  if (dialect !== "sqlite" || target === ":memory:") return { release: () => undefined };
  // The SQLite driver crashes the process on an older Node: a clear error first (as openDatabase).
  assertSupportedNode();
  const lockFile = `${target}.serve-lock`;
  const holderFile = `${lockFile}.pid`;
  mkdirSync(path.dirname(target), { recursive: true });
  const lock = new BetterSqlite3(lockFile, { timeout: 0 });
  try {
    lock.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    lock.close();
    if ((error as { code?: unknown }).code === "SQLITE_BUSY") {
      throw new DatabaseServedElsewhere(target, readHolder(holderFile));
    }
    throw error;
  }
  const holder: ServeLockHolder = { pid: process.pid, startedAt };
  writeFileSync(holderFile, `${JSON.stringify(holder)}\n`);
  let held = true;
  return {
    release: () => {
      if (!held) return;
      held = false;
      rmSync(holderFile, { force: true });
      lock.exec("ROLLBACK");
      lock.close();
    },
  };
}

function readHolder(file: string): ServeLockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<ServeLockHolder>;
    if (typeof parsed.pid !== "number" || typeof parsed.startedAt !== "number") return undefined;
    return { pid: parsed.pid, startedAt: parsed.startedAt };
  } catch {
    return undefined;
  }
}
