import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

describe("migrate", () => {
  it("applies the migrations to a fresh database, then says it is up to date", async () => {
    const first = await runCliInProcess(["migrate"], database.env);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe("");
    expect(first.stderr).toMatch(/^Applied: 0001_initial(, \w+)*\n$/);

    const second = await runCliInProcess(["migrate"], database.env);
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/^Up to date \(.+\)\.\n$/);
    expect(second.stderr).not.toContain("Applied");

    // The schema is usable: an organization and a token can be stored.
    const created = await runCliInProcess(["org", "create", "after-migrate"], database.env);
    expect(created.code).toBe(0);
    expect(created.stdout.trim()).toMatch(TOKEN_PATTERN);
  });
});
