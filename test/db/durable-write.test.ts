/**
 * Durable writes whose log sync runs off the event loop (src/db/durable-write.ts), on a real SQLite
 * file: the write is committed and then the log synced before the caller resumes, writes made
 * together share a sync, a sync never counts for a commit made after it started, and the
 * connection is left at `synchronous = FULL` for every other write, failed writes included.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/connection.js";
import { FileSync, durableWrite, logSyncOf } from "../../src/db/durable-write.js";

// Whatever database the suite runs on: this is about the SQLite file of the default setup.
let directory = "";
let handle: DatabaseHandle | null = null;
afterEach(async () => {
  await handle?.close();
  handle = null;
  await rm(directory, { recursive: true, force: true });
});

async function fileDatabase(): Promise<DatabaseHandle> {
  directory = await mkdtemp(path.join(tmpdir(), "mainline-durable-"));
  handle = openDatabase({
    url: `sqlite:${path.join(directory, "mainline.db")}`,
    dataDir: directory,
  });
  await sql`create table notes (body text not null)`.execute(handle.db);
  return handle;
}

async function synchronousSetting(db: DatabaseHandle): Promise<number> {
  const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(db.db);
  return rows[0]?.synchronous ?? -1;
}

describe("a durable write on SQLite", () => {
  it("commits, then syncs the log before resolving, and leaves the connection at FULL", async () => {
    const db = await fileDatabase();
    const logSync = logSyncOf(db.db);
    expect(logSync).toBeDefined();
    const before = logSync?.syncs ?? 0;
    await durableWrite(db.db, (trx) => sql`insert into notes (body) values ('one')`.execute(trx));
    expect(logSync?.syncs).toBe(before + 1);
    const { rows } = await sql<{ body: string }>`select body from notes`.execute(db.db);
    expect(rows).toEqual([{ body: "one" }]);
    expect(await synchronousSetting(db)).toBe(2); // FULL
  });

  it("lets writes made together share a sync", async () => {
    const db = await fileDatabase();
    const logSync = logSyncOf(db.db);
    const before = logSync?.syncs ?? 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        durableWrite(db.db, (trx) =>
          sql`insert into notes (body) values (${`note ${String(i)}`})`.execute(trx),
        ),
      ),
    );
    const used = (logSync?.syncs ?? 0) - before;
    expect(used).toBeGreaterThanOrEqual(1);
    expect(used).toBeLessThan(20);
    const { rows } = await sql<{ n: number }>`select count(*) as n from notes`.execute(db.db);
    expect(rows[0]?.n).toBe(20);
  });

  it("restores FULL and syncs nothing when the write fails", async () => {
    const db = await fileDatabase();
    const logSync = logSyncOf(db.db);
    const before = logSync?.syncs ?? 0;
    await expect(
      durableWrite(db.db, (trx) => sql`insert into notes (body) values (null)`.execute(trx)),
    ).rejects.toThrow(/NOT NULL/);
    expect(logSync?.syncs).toBe(before);
    expect(await synchronousSetting(db)).toBe(2);
  });
});

describe("a file sync", () => {
  it("answers each caller with a sync that started after its call", async () => {
    directory = await mkdtemp(path.join(tmpdir(), "mainline-durable-"));
    const file = path.join(directory, "log");
    await writeFile(file, "x");
    const fileSync = new FileSync(file);
    const first = fileSync.sync();
    expect(fileSync.syncs).toBe(1);
    // Asked while the first runs: a second sync, after it, answers both of these.
    const second = fileSync.sync();
    const third = fileSync.sync();
    expect(second).toBe(third);
    expect(fileSync.syncs).toBe(1);
    await first;
    await second;
    expect(fileSync.syncs).toBe(2);
    // Nothing running: a new call starts one at once.
    const fourth = fileSync.sync();
    expect(fileSync.syncs).toBe(3);
    await fourth;
  });

  it("has nothing to sync when the file is not there (a log checkpointed away)", async () => {
    directory = await mkdtemp(path.join(tmpdir(), "mainline-durable-"));
    await expect(new FileSync(path.join(directory, "none")).sync()).resolves.toBeUndefined();
  });
});
