import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/connection.js";

// Whatever database the suite runs on: this is about the SQLite file of the default setup.
let directory = "";
let handle: DatabaseHandle | null = null;
afterEach(async () => {
  await handle?.close();
  handle = null;
  await rm(directory, { recursive: true, force: true });
});

async function fileDatabase(): Promise<{ handle: DatabaseHandle; file: string }> {
  directory = await mkdtemp(path.join(tmpdir(), "mainline-checkpoint-"));
  const file = path.join(directory, "mainline.db");
  handle = openDatabase({ url: `sqlite:${file}`, dataDir: directory });
  await sql`create table filler (body text)`.execute(handle.db);
  return { handle, file };
}

/** ~1 MiB in one commit: 250 pages, under SQLite's own checkpoint threshold (1,000 pages). */
async function write(db: DatabaseHandle): Promise<void> {
  await db.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 64; i++) {
      await sql`insert into filler (body) values (${"x".repeat(16_000)})`.execute(trx);
    }
  });
}

describe("SQLite checkpoints in the background", () => {
  it("copies committed pages into the database file without a commit doing it", async () => {
    const { handle: db, file } = await fileDatabase();
    db.checkpointInBackground();
    const before = statSync(file).size;
    await write(db);
    await expect
      .poll(() => statSync(file).size, { timeout: 5_000, interval: 50 })
      .toBeGreaterThan(before + 900_000);
    const { rows } = await sql<{ n: number }>`select count(*) as n from filler`.execute(db.db);
    expect(Number(rows[0]?.n)).toBe(64);
  });

  it("without it, the pages stay in the WAL until a commit crosses the threshold", async () => {
    const { handle: db, file } = await fileDatabase();
    const before = statSync(file).size;
    await write(db);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(statSync(file).size).toBe(before);
  });

  it("stops with the database, and the data is whole when opened again", async () => {
    const { handle: db, file } = await fileDatabase();
    db.checkpointInBackground();
    await write(db);
    await db.close();
    handle = openDatabase({ url: `sqlite:${file}`, dataDir: directory });
    const { rows } = await sql<{ n: number }>`select count(*) as n from filler`.execute(handle.db);
    expect(Number(rows[0]?.n)).toBe(64);
  });
});
