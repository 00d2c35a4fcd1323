/**
 * `PullRequestReportStore` on each database: the leased cursor (one owner at a time, a new one
 * starting where it is told), processed uploads naming a pull request by processing time, a pull
 * request's latest commit and first upload, and the comment's record.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { PullRequestReportStore } from "../../src/db/stores/pull-request-reports.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let store: PullRequestReportStore;
let repositoryId: string;
let uploads = 0;

beforeEach(async () => {
  database = await createTestDatabase();
  store = new PullRequestReportStore(database.handle.db);
  await new OrganizationStore(database.handle.db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const ref = { host: "github.com", owner: "acme", name: "shop" };
  repositoryId = (await new RepositoryStore(database.handle.db).ensure("o1", ref, 1)).id;
});
afterEach(async () => {
  await database.cleanup();
});

async function upload(values: {
  prNumber: number | null;
  commitSha: string;
  createdAt: number;
  processedAt: number | null;
  state?: string;
}): Promise<void> {
  await database.handle.db
    .insertInto("uploads")
    .values({
      id: `u${String(++uploads)}`,
      organizationId: "o1",
      repositoryId,
      state: values.state ?? "processed",
      reason: null,
      createdAt: values.createdAt,
      urlExpiresAt: values.createdAt + 3_600_000,
      prNumber: values.prNumber,
      commitSha: values.commitSha,
      processedAt: values.processedAt,
    })
    .execute();
}

describe(`pull-request reports on ${TEST_DIALECT}`, () => {
  it("holds the cursor for one owner at a time and starts a new one where told", async () => {
    expect(await store.claimCursor("c", "w1", 100, 200, 42)).toBe(42);
    expect(await store.claimCursor("c", "w2", 150, 250, 7)).toBeUndefined();
    expect(await store.advanceCursor("c", "w2", 60, 150)).toBe(false);
    expect(await store.advanceCursor("c", "w1", 60, 150)).toBe(true);
    // The lease ran out: another owner takes over where the first left it.
    expect(await store.claimCursor("c", "w2", 201, 300, 7)).toBe(60);
    await store.releaseCursor("c", "w2");
    expect(await store.claimCursor("c", "w1", 202, 300, 7)).toBe(60);
  });

  it("lists processed uploads naming a pull request, by processing time", async () => {
    await upload({ prNumber: 7, commitSha: "a", createdAt: 10, processedAt: 30 });
    await upload({ prNumber: 8, commitSha: "b", createdAt: 11, processedAt: 20 });
    await upload({ prNumber: null, commitSha: "c", createdAt: 12, processedAt: 25 });
    await upload({
      prNumber: 9,
      commitSha: "d",
      createdAt: 13,
      processedAt: null,
      state: "pending",
    });
    expect(await store.processedAfter(0, 10)).toEqual([
      { repositoryId, prNumber: 8, processedAt: 20 },
      { repositoryId, prNumber: 7, processedAt: 30 },
    ]);
    expect(await store.processedAfter(20, 10)).toEqual([
      { repositoryId, prNumber: 7, processedAt: 30 },
    ]);
    expect(await store.processedAfter(0, 1)).toHaveLength(1);
  });

  it("answers a pull request's latest uploaded commit and when its first upload was made", async () => {
    expect(await store.head(repositoryId, 7)).toBeUndefined();
    await upload({ prNumber: 7, commitSha: "old", createdAt: 10, processedAt: 12 });
    await upload({ prNumber: 7, commitSha: "new", createdAt: 20, processedAt: 21 });
    await upload({
      prNumber: 7,
      commitSha: "newest",
      createdAt: 30,
      processedAt: null,
      state: "pending",
    });
    await upload({ prNumber: 8, commitSha: "other", createdAt: 40, processedAt: 41 });
    expect(await store.head(repositoryId, 7)).toEqual({ sha: "new", firstUploadAt: 10 });
  });

  it("keeps the comment's record, replaced whole", async () => {
    expect(await store.find(repositoryId, 7)).toBeUndefined();
    const record = {
      repositoryId,
      prNumber: 7,
      commentId: null,
      headSha: null,
      presented: null,
      unsure: true,
      updatedAt: 5,
    };
    await store.save(record);
    expect(await store.find(repositoryId, 7)).toEqual(record);
    const shown = {
      ...record,
      commentId: 2_100_000_001,
      headSha: "a",
      presented: "d",
      unsure: false,
    };
    await store.save(shown);
    expect(await store.find(repositoryId, 7)).toEqual(shown);
  });
});
