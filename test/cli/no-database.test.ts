/**
 * Administrative commands run where there is no database refuse, say which database they would
 * have used, and create nothing; `migrate` creates it deliberately, and then they work.
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { runCliInProcess, stopAllProcesses } from "../helpers/process.js";
import { createEmptyDatabase, TOKEN_PATTERN, type EmptyDatabase } from "./support.js";

let database: EmptyDatabase;
beforeAll(async () => {
  database = await createEmptyDatabase();
});
afterAll(async () => {
  await stopAllProcesses();
  await database.cleanup();
});

/** Tables in the empty database: files in the data directory, or tables in the schema. */
async function created(): Promise<string[]> {
  const dataDir = database.env.MAINLINE_DATA_DIR ?? "";
  const files = existsSync(dataDir) ? readdirSync(dataDir) : [];
  if (inject("testDatabase").dialect === "sqlite") return files;
  const client = new pg.Client({ connectionString: database.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(
      "select table_name as name from information_schema.tables where table_schema = current_schema()",
    );
    return [...files, ...rows.map((row) => row.name)];
  } finally {
    await client.end();
  }
}

describe("admin commands without a database", () => {
  it("refuse, name the database they would use, and create nothing", async () => {
    const dialect = inject("testDatabase").dialect;
    for (const args of [
      ["org", "list"],
      ["org", "create", "acme"],
      ["token", "create", "--org", "acme"],
      ["token", "list", "--org", "acme"],
      ["token", "revoke", "tok_0123"],
    ]) {
      const result = await runCliInProcess(args, database.env);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
      const where =
        dialect === "sqlite"
          ? `No Mainline database at ${path.join(database.env.MAINLINE_DATA_DIR ?? "", "mainline.db")} (in MAINLINE_DATA_DIR).`
          : "has no Mainline schema (from DATABASE_URL).";
      expect(result.stderr).toContain(where);
      expect(result.stderr).toContain("Nothing was created.");
      expect(result.stderr).toContain("run `mainline migrate`");
    }
    expect(await created()).toEqual([]);
  }, 120_000);

  it("migrate creates it deliberately; then the commands work", async () => {
    const migrated = await runCliInProcess(["migrate"], database.env);
    expect(migrated.code).toBe(0);
    expect(migrated.stderr).toMatch(/^Applied: 0001_initial/);
    const org = await runCliInProcess(["org", "create", "acme"], database.env);
    expect(org.code).toBe(0);
    expect(org.stdout.trim()).toMatch(TOKEN_PATTERN);
    const listed = await runCliInProcess(["org", "list", "--json"], database.env);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ slug: "acme" })]);
  }, 60_000);
});
