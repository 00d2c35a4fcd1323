import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connection.js";
import { SECRET_BYTES, ServerSecretStore } from "../../src/db/stores/server-secrets.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
beforeEach(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await database.cleanup();
});

describe(`server secrets on ${TEST_DIALECT}`, () => {
  it("creates a random key once and returns the same one afterwards", async () => {
    const store = new ServerSecretStore(database.handle.db);
    const first = await store.getOrCreate("page-tokens", 1);
    expect(first).toHaveLength(SECRET_BYTES);
    expect(await store.getOrCreate("page-tokens", 2)).toEqual(first);
    expect(await store.getOrCreate("upload-urls", 3)).not.toEqual(first);
  });

  it("every process sees the same key, even when they create it at once", async () => {
    // A second connection, as a second server process would open the same database.
    const other = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
    try {
      const mine = new ServerSecretStore(database.handle.db);
      const theirs = new ServerSecretStore(other.db);
      const keys = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 === 0 ? mine : theirs).getOrCreate("shared", i),
        ),
      );
      const distinct = new Set(keys.map((key) => key.toString("hex")));
      expect(distinct.size).toBe(1);
    } finally {
      await other.close();
    }
  });
});
