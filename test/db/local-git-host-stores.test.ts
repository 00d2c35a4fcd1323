import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CiRunRecord } from "../../src/mergequeue/ci-run-records.js";
import { CiRunStore } from "../../src/db/stores/ci-runs.js";
import { LocalPullRequestStore } from "../../src/db/stores/local-pull-requests.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { type Repository } from "../../src/organizations/repositories.js";

let database: TestDatabase;
let repository: Repository;
const REPO = { host: "local", owner: "Acme", name: "Widgets" };
const HOSTED = { organizationId: "o1", ...REPO };

beforeEach(async () => {
  database = await createTestDatabase();
  await new OrganizationStore(database.handle.db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  repository = await new RepositoryStore(database.handle.db).ensure("o1", REPO, 1);
});
afterEach(async () => {
  await database.cleanup();
});

describe("LocalPullRequestStore", () => {
  const open = (store: LocalPullRequestStore, head: string) =>
    store.open({
      repositoryId: repository.id,
      headBranch: head,
      baseBranch: "main",
      title: `Add ${head}`,
      author: "ada",
      now: 10,
    });

  it("numbers pull requests per repository, also when opens race", async () => {
    const store = new LocalPullRequestStore(database.handle.db);
    const opened = await Promise.all(
      Array.from({ length: 8 }, (_, i) => open(store, `feature-${String(i)}`)),
    );
    expect(opened.map((pr) => pr.number).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const other = await new RepositoryStore(database.handle.db).ensure(
      "o1",
      { ...REPO, name: "gadgets" },
      1,
    );
    const first = await store.open({
      repositoryId: other.id,
      headBranch: "x",
      baseBranch: "main",
      title: "x",
      author: "bo",
      now: 11,
    });
    expect(first.number).toBe(1);
  });

  it("finds by host/owner/name case-insensitively and lists open ones newest first", async () => {
    const store = new LocalPullRequestStore(database.handle.db);
    await open(store, "a");
    await open(store, "b");
    await open(store, "c");
    await store.close(repository.id, 2, 20);
    const found = await store.find(
      { organizationId: "o1", host: "LOCAL", owner: "acme", name: "WIDGETS" },
      1,
    );
    expect(found).toMatchObject({ number: 1, headBranch: "a", state: "open", author: "ada" });
    expect((await store.listOpen(HOSTED)).map((pr) => pr.number)).toEqual([3, 1]);
    expect((await store.list(repository.id, "closed")).map((pr) => pr.number)).toEqual([2]);
    expect(await store.find({ ...HOSTED, name: "nope" }, 1)).toBeUndefined();
    expect(await store.listOpen({ ...HOSTED, name: "nope" })).toEqual([]);
    // The same name in another organization is another repository.
    expect(await store.find({ ...HOSTED, organizationId: "o2" }, 1)).toBeUndefined();
    expect(await store.listOpen({ ...HOSTED, organizationId: "o2" })).toEqual([]);
  });

  it("closes only open pull requests and records merges", async () => {
    const store = new LocalPullRequestStore(database.handle.db);
    await open(store, "a");
    await open(store, "b");
    await store.markMerging(HOSTED, 1, "abc");
    await store.markMerged(HOSTED, 1, "abc", 30);
    const closed = await store.close(repository.id, 1, 40);
    expect(closed).toMatchObject({ state: "merged", mergedSha: "abc", mergingSha: "abc" });
    expect(closed?.closedAt).toBe(30);
    expect(await store.close(repository.id, 2, 41)).toMatchObject({
      state: "closed",
      closedAt: 41,
    });
    expect(await store.close(repository.id, 9, 42)).toBeUndefined();
  });
});

describe("CiRunStore", () => {
  async function queue(): Promise<string> {
    const queues = new MergeQueueStore(database.handle.db, database.handle.dialect);
    await queues.insert({
      id: "q1",
      repositoryId: repository.id,
      targetBranch: "main",
      configuration: initialConfiguration({}),
      createdAt: 1,
    });
    return "q1";
  }

  const record = (queueId: string, runId: string, createdAt: number): CiRunRecord => ({
    queueId,
    runId,
    request: {
      repo: HOSTED,
      queueId,
      runId,
      targetBranch: "main",
      testBranch: `mainline-merge/main/${runId}`,
      sha: "abc",
      prNumbers: [1, 2],
      requiredStatuses: [],
    },
    status: "queued",
    checks: [],
    error: null,
    flakyOnly: false,
    createdAt,
    finishedAt: null,
    owner: "runner-a",
    leaseUntil: createdAt + 100,
  });

  it("creates a run once, updates it, and lists the unfinished ones oldest first", async () => {
    const store = new CiRunStore(database.handle.db);
    const queueId = await queue();
    expect(await store.create(record(queueId, "r2", 20))).toBe(true);
    expect(await store.create(record(queueId, "r1", 10))).toBe(true);
    expect(await store.create({ ...record(queueId, "r1", 99), status: "passed" })).toBe(false);
    expect((await store.unfinished()).map((r) => r.runId)).toEqual(["r1", "r2"]);

    const finished: CiRunRecord = {
      ...record(queueId, "r1", 10),
      status: "failed",
      checks: [
        {
          name: "test",
          status: "failure",
          exitCode: 1,
          startedAt: 11,
          finishedAt: 12,
          logPath: "ci/logs/q1/r1/0-test.log",
        },
      ],
      error: { reason: "config_parsing_failure", message: "bad" },
      flakyOnly: true,
      finishedAt: 12,
    };
    await store.update(finished);
    expect(await store.get(queueId, "r1")).toEqual(finished);
    expect((await store.unfinished()).map((r) => r.runId)).toEqual(["r2"]);
    expect((await store.list(queueId, 10)).map((r) => r.runId)).toEqual(["r2", "r1"]);
    expect(await store.get(queueId, "r9")).toBeUndefined();
  });

  it("leases unfinished runs: taken over only once expired, renewed and released by their owner", async () => {
    const store = new CiRunStore(database.handle.db);
    const queueId = await queue();
    await store.create(record(queueId, "r1", 10)); // runner-a holds it until 110
    expect(await store.claim(queueId, "r1", "runner-b", 50, 500)).toBe(false);
    await store.renew("runner-a", 1_000);
    expect(await store.claim(queueId, "r1", "runner-b", 500, 1_500)).toBe(false);
    expect(await store.claim(queueId, "r1", "runner-b", 1_001, 1_500)).toBe(true);
    expect(await store.get(queueId, "r1")).toMatchObject({ owner: "runner-b", leaseUntil: 1_500 });
    await store.renew("runner-a", 9_000); // no longer its run
    expect((await store.get(queueId, "r1"))?.leaseUntil).toBe(1_500);
    await store.release("runner-b");
    expect(await store.claim(queueId, "r1", "runner-c", 2, 100)).toBe(true);
    await store.update({ ...record(queueId, "r1", 10), status: "passed", finishedAt: 20 });
    expect(await store.claim(queueId, "r1", "runner-d", 1_000_000, 1_000_100)).toBe(false);
  });
});
