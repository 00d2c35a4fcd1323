/**
 * The GitHub presence's storage (migration 0023) on the dialect under test: the cursor over
 * `mq_transitions` starts after what is stored, is held by one owner at a time (taken over only
 * once its lease expired), moves only for its holder; transitions come with their pull request;
 * what was shown per pull request is saved and replaced.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { githubPresence } from "../../src/db/migrations/0023_github_presence.js";
import { hostNeutralTables } from "../../src/db/migrations/0037_host_neutral_tables.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { PrPresenceStore } from "../../src/db/stores/pr-presence.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let store: PrPresenceStore;

beforeEach(async () => {
  database = await createTestDatabase();
  store = new PrPresenceStore(database.handle.db);
  const { db, dialect } = database.handle;
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const repository = await new RepositoryStore(db).ensure(
    "o1",
    { host: "github.com", owner: "acme", name: "widgets" },
    1,
  );
  await new MergeQueueStore(db, dialect).insert({
    id: "q1",
    repositoryId: repository.id,
    targetBranch: "main",
    configuration: initialConfiguration({}),
    createdAt: 1,
  });
});
afterEach(async () => {
  await database.cleanup();
});

async function addEntry(id: string, prNumber: number): Promise<void> {
  await database.handle.db
    .insertInto("mqEntries")
    .values({
      id,
      queueId: "q1",
      seq: prNumber,
      prNumber,
      prTitle: `PR ${prNumber}`,
      prSha: `sha-${prNumber}`,
      prHeadBranch: `feature-${prNumber}`,
      prBaseBranch: "main",
      prAuthor: "ada",
      state: "pending",
      stateChangedAt: 1,
      submittedAt: 1,
      concludedAt: null,
      priorityValue: 100,
      usedDefaultPriority: 1,
      noBatch: 0,
      readiness: "{}",
      lastReason: "submitted",
    })
    .execute();
}

async function addTransition(entryId: string, at: number): Promise<number> {
  const row = await database.handle.db
    .insertInto("mqTransitions")
    .values({
      queueId: "q1",
      entryId,
      at,
      fromState: null,
      toState: "pending",
      reason: "submitted",
      actor: '{"kind":"queue"}',
      runId: null,
      detail: null,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

describe("the cursor", () => {
  it("starts after the transitions already stored, then reads new ones with their pull request", async () => {
    await addEntry("e1", 7);
    await addEntry("e2", 8);
    const old = await addTransition("e1", 10);
    expect(await store.claimCursor("c", "a", 100, 200)).toBe(old);
    expect(await store.transitionsAfter(old, 10)).toEqual([]);
    const t2 = await addTransition("e2", 20);
    const t3 = await addTransition("e1", 30);
    expect(await store.transitionsAfter(old, 10)).toEqual([
      { id: t2, queueId: "q1", prNumber: 8, at: 20 },
      { id: t3, queueId: "q1", prNumber: 7, at: 30 },
    ]);
    expect(await store.transitionsAfter(old, 1)).toHaveLength(1);
  });

  it("is held by one owner until its lease expires; only the holder moves it", async () => {
    expect(await store.claimCursor("c", "a", 100, 200)).toBe(0);
    expect(await store.claimCursor("c", "b", 150, 250)).toBeUndefined();
    expect(await store.advanceCursor("c", "b", 5, 150)).toBe(false);
    expect(await store.advanceCursor("c", "a", 5, 150)).toBe(true);
    // Renewed by its owner; taken over once expired, and the old owner is fenced out.
    expect(await store.claimCursor("c", "a", 190, 300)).toBe(5);
    expect(await store.claimCursor("c", "b", 250, 400)).toBeUndefined();
    expect(await store.claimCursor("c", "b", 301, 400)).toBe(5);
    expect(await store.advanceCursor("c", "a", 9, 302)).toBe(false);
    expect(await store.claimCursor("c", "a", 302, 500)).toBeUndefined();
    // Released: another owner takes it at once.
    await store.releaseCursor("c", "b");
    expect(await store.claimCursor("c", "a", 303, 500)).toBe(5);
  });
});

describe("what was shown", () => {
  it("is saved per queue and pull request, and replaced", async () => {
    expect(await store.find("q1", 7)).toBeUndefined();
    const record = {
      queueId: "q1",
      prNumber: 7,
      commentId: 11,
      checkRunId: null,
      checkSha: null,
      stateLabel: "trunk:queued",
      presented: '{"comment":"x"}',
      updatedAt: 5,
    };
    await store.save(record);
    expect(await store.find("q1", 7)).toEqual(record);
    const next = { ...record, checkRunId: 22, checkSha: "abc", stateLabel: null, updatedAt: 6 };
    await store.save(next);
    expect(await store.find("q1", 7)).toEqual(next);
    expect(await store.find("q1", 8)).toBeUndefined();
  });
});

const SHOWN = {
  queueId: "q1",
  prNumber: 7,
  commentId: 1,
  checkRunId: 2,
  checkSha: "s",
  stateLabel: null,
  presented: null,
  updatedAt: 1,
};

describe("migrations 0023 and 0037", () => {
  it("0037 renames the table and back, keeping its rows", async () => {
    const db = database.handle.db as never;
    const types = columnTypes(database.handle.dialect);
    await store.save(SHOWN);
    await hostNeutralTables.down(db, types);
    await expect(store.find("q1", 7)).rejects.toThrow();
    const old = await sql<{ n: number }>`select count(*) as n from github_pr_presence`.execute(
      database.handle.db,
    );
    expect(Number(old.rows[0]?.n)).toBe(1);
    await hostNeutralTables.up(db, types);
    expect(await store.find("q1", 7)).toEqual(SHOWN);
  });

  it("0023 goes down and up again", async () => {
    const db = database.handle.db as never;
    const types = columnTypes(database.handle.dialect);
    await store.save(SHOWN);
    await hostNeutralTables.down(db, types);
    await githubPresence.down(db, types);
    await expect(store.find("q1", 7)).rejects.toThrow();
    await githubPresence.up(db, types);
    await hostNeutralTables.up(db, types);
    expect(await store.find("q1", 7)).toBeUndefined();
    expect(await store.claimCursor("c", "a", 1, 2)).toBe(0);
  });
});
