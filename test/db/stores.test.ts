import type { CompiledQuery, Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServices } from "../../src/app.js";
import { openDatabase } from "../../src/db/connection.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { speculationThreshold } from "../../src/db/migrations/0009_speculation_threshold.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { UploadStore } from "../../src/db/stores/uploads.js";
import { hashToken } from "../../src/lib/tokens.js";
import { initialConfiguration, type QueueConfiguration } from "../../src/mergequeue/settings.js";
import { OrganizationError } from "../../src/organizations/service.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
beforeEach(async () => {
  database = await createTestDatabase();
});
afterEach(async () => {
  await database.cleanup();
});

/**
 * An organization `o1` with one repository, the merge-queue store, and `insertMain`, which adds
 * the repository's queue `q1` of `main`.
 */
async function queueFixture() {
  await new OrganizationStore(database.handle.db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const ref = { host: "h", owner: "o", name: "n" };
  const repository = await new RepositoryStore(database.handle.db).ensure("o1", ref, 1);
  const store = new MergeQueueStore(database.handle.db, database.handle.dialect);
  const insertMain = (configuration: QueueConfiguration, createdAt = 1) =>
    store.insert({
      id: "q1",
      repositoryId: repository.id,
      targetBranch: "main",
      configuration,
      createdAt,
    });
  return { ref, repository, store, insertMain };
}

describe(`stores on ${TEST_DIALECT}`, () => {
  it("migrations are idempotent", async () => {
    expect(await migrateToLatest(database.handle)).toEqual({ applied: [] });
  });

  it("organizations: ensure is idempotent by slug", async () => {
    const store = new OrganizationStore(database.handle.db);
    const first = await store.ensure({ id: "o1", slug: "acme", createdAt: 1 });
    const second = await store.ensure({ id: "o2", slug: "acme", createdAt: 2 });
    expect(first).toEqual({
      organization: { id: "o1", slug: "acme", createdAt: 1 },
      created: true,
    });
    expect(second).toEqual({
      organization: { id: "o1", slug: "acme", createdAt: 1 },
      created: false,
    });
    expect(await store.count()).toBe(1);
  });

  it("tokens: active lookups skip revoked tokens; revoking twice reports false", async () => {
    const store = new OrganizationStore(database.handle.db);
    await store.ensure({ id: "o1", slug: "acme", createdAt: 1 });
    await store.insertToken({
      id: "tok_a",
      organizationId: "o1",
      name: null,
      tokenHash: hashToken("secret-a"),
      tokenHint: "mlt_abcd",
      createdAt: 5,
    });
    expect(await store.findActiveTokenOwner(hashToken("secret-a"))).toEqual({
      tokenId: "tok_a",
      tokenHash: hashToken("secret-a"),
      organizationId: "o1",
      organizationSlug: "acme",
    });
    expect(await store.revokeToken("tok_a", 9)).toBe(true);
    expect(await store.revokeToken("tok_a", 10)).toBe(false);
    expect(await store.findActiveTokenOwner(hashToken("secret-a"))).toBeUndefined();
    expect((await store.findToken("tok_a"))?.revokedAt).toBe(9);
  });

  it("repositories: case-insensitive, first spelling kept, concurrent ensures make one row", async () => {
    await new OrganizationStore(database.handle.db).ensure({
      id: "o1",
      slug: "acme",
      createdAt: 1,
    });
    const store = new RepositoryStore(database.handle.db);
    const refs = [
      { host: "GitHub.com", owner: "Acme", name: "App" },
      { host: "github.com", owner: "acme", name: "app" },
      { host: "GITHUB.COM", owner: "ACME", name: "APP" },
    ];
    const results = await Promise.all(
      refs.flatMap((ref) => [store.ensure("o1", ref, 1), store.ensure("o1", ref, 2)]),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const found = await store.find("o1", { host: "github.COM", owner: "acme", name: "app" });
    expect(found?.id).toBe(results[0]?.id);
    expect([found?.owner, found?.name]).toSatisfy(([owner, name]) =>
      refs.some((r) => r.owner === owner && r.name === name),
    );
  });

  it("merge queues: every setting round-trips; inserts conflict; lookups are by organization", async () => {
    const { ref, repository, store } = await queueFixture();
    await new OrganizationStore(database.handle.db).ensure({
      id: "o2",
      slug: "globex",
      createdAt: 1,
    });
    const configuration = {
      ...initialConfiguration({ mode: "parallel", concurrency: 4294967295 }),
      canOptimisticallyMerge: true,
      statusCheckEnabled: false,
      requiredStatuses: ["a", 'b "quoted"', "ü"],
      speculationThresholdPercent: 30,
    };
    const record = {
      id: "q1",
      repositoryId: repository.id,
      targetBranch: "main",
      configuration,
      createdAt: 10,
    };
    expect(await store.insert(record)).toBe(true);
    expect(await store.insert({ ...record, id: "q2" })).toBe(false);
    expect(await store.find("o1", { host: "H", owner: "O", name: "N" }, "main")).toEqual({
      ...record,
      updatedAt: 10,
      version: 1,
    });
    expect(await store.find("o2", ref, "main")).toBeUndefined();
    expect(await store.find("o1", ref, "Main")).toBeUndefined();

    expect(await store.delete("q1")).toBe(true);
    expect(await store.delete("q1")).toBe(false);
    expect(await store.find("o1", ref, "main")).toBeUndefined();
  });

  it("merge queues: listForOrganization lists an organization's queues, all or of one repository", async () => {
    const { ref, repository, store } = await queueFixture();
    const repositories = new RepositoryStore(database.handle.db);
    const other = await repositories.ensure("o1", { host: "h", owner: "o", name: "m" }, 1);
    await new OrganizationStore(database.handle.db).ensure({
      id: "o2",
      slug: "globex",
      createdAt: 1,
    });
    const foreign = await repositories.ensure("o2", ref, 1);
    const queue = (id: string, repositoryId: string, targetBranch: string) => ({
      id,
      repositoryId,
      targetBranch,
      configuration: initialConfiguration({}),
      createdAt: 1,
    });
    await store.insert(queue("q1", repository.id, "main"));
    await store.insert(queue("q2", repository.id, "dev"));
    await store.insert(queue("q3", other.id, "main"));
    await store.insert(queue("q4", foreign.id, "main"));

    expect(await store.listForOrganization("o1")).toEqual([
      {
        id: "q3",
        targetBranch: "main",
        repo: { organizationId: "o1", host: "h", owner: "o", name: "m" },
      },
      { id: "q2", targetBranch: "dev", repo: { organizationId: "o1", ...ref } },
      { id: "q1", targetBranch: "main", repo: { organizationId: "o1", ...ref } },
    ]);
    expect(await store.listForOrganization("o1", { host: "H", owner: "O", name: "N" })).toEqual([
      { id: "q2", targetBranch: "dev", repo: { organizationId: "o1", ...ref } },
      { id: "q1", targetBranch: "main", repo: { organizationId: "o1", ...ref } },
    ]);
    expect(await store.listForOrganization("o2")).toEqual([
      { id: "q4", targetBranch: "main", repo: { organizationId: "o2", ...ref } },
    ]);
    expect(await store.listForOrganization("o1", { ...ref, name: "none" })).toEqual([]);
    expect(await store.listForOrganization("o3")).toEqual([]);
  });

  it("merge queues: modify writes what decide returns, and a refusal changes nothing", async () => {
    const { ref, store, insertMain } = await queueFixture();
    const configuration = initialConfiguration({});
    await insertMain(configuration, 10);

    const changed = {
      ...configuration,
      requiredStatuses: [],
      state: "switching_modes" as const,
      pendingMode: "parallel" as const,
    };
    const modified = await store.modify("o1", ref, "main", 20, (current) => {
      expect(current.version).toBe(1);
      return changed;
    });
    expect(modified).toMatchObject({ configuration: changed, updatedAt: 20, version: 2 });

    await expect(
      store.modify("o1", ref, "main", 30, () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect(await store.find("o1", ref, "main")).toMatchObject({
      configuration: changed,
      version: 2,
      updatedAt: 20,
    });
    expect(await store.modify("o1", ref, "other", 40, (c) => c.configuration)).toBeUndefined();
  });

  it("merge queues: speculationThresholdPercent is written by modify and setConfiguration", async () => {
    const { ref, store, insertMain } = await queueFixture();
    const configuration = initialConfiguration({});
    await insertMain(configuration);
    expect((await store.find("o1", ref, "main"))?.configuration.speculationThresholdPercent).toBe(
      0,
    );
    await store.modify("o1", ref, "main", 2, (current) => ({
      ...current.configuration,
      speculationThresholdPercent: 100,
    }));
    expect((await store.find("o1", ref, "main"))?.configuration.speculationThresholdPercent).toBe(
      100,
    );
    await store.setConfiguration("q1", { ...configuration, speculationThresholdPercent: 30 }, 3);
    expect(await store.findById("q1")).toMatchObject({
      configuration: { speculationThresholdPercent: 30 },
      version: 3,
    });
  });

  it("migration 0009 gives queues that existed before it a speculationThresholdPercent of 0; down removes it", async () => {
    const { ref, store, insertMain } = await queueFixture();
    const configuration = { ...initialConfiguration({}), concurrency: 3 };
    await insertMain({ ...configuration, speculationThresholdPercent: 40 });
    const db = database.handle.db as unknown as Kysely<unknown>;
    const types = columnTypes(database.handle.dialect);
    await speculationThreshold.down(db, types);
    // `select *`: the column is gone.
    expect(await store.findById("q1")).toMatchObject({
      configuration: { speculationThresholdPercent: undefined },
    });
    await speculationThreshold.up(db, types);
    expect((await store.find("o1", ref, "main"))?.configuration).toEqual(configuration);
  });

  it("merge queues: concurrent read-modify-writes of one queue all land", async () => {
    const { ref, store, insertMain } = await queueFixture();
    await insertMain(initialConfiguration({}));
    const writers = 20;
    await Promise.all(
      Array.from({ length: writers }, (_, i) =>
        store.modify("o1", ref, "main", 100 + i, (current) => ({
          ...current.configuration,
          concurrency: current.configuration.concurrency + 1,
        })),
      ),
    );
    const final = await store.find("o1", ref, "main");
    expect(final?.configuration.concurrency).toBe(1 + writers);
    expect(final?.version).toBe(1 + writers);
  });
});

describe(`uploads created or received together on ${TEST_DIALECT}`, () => {
  async function uploadFixture() {
    await new OrganizationStore(database.handle.db).ensure({
      id: "o1",
      slug: "acme",
      createdAt: 1,
    });
    const ref = { host: "h", owner: "o", name: "n" };
    const repository = await new RepositoryStore(database.handle.db).ensure("o1", ref, 1);
    const store = new UploadStore(database.handle.db, database.handle.dialect);
    const upload = (id: string) => ({
      id,
      organizationId: "o1",
      repositoryId: repository.id,
      clientVersion: null,
      createdAt: 1,
      urlExpiresAt: 1_000,
    });
    const bundle = (path: string) => ({
      bundlePath: path,
      bundleBytes: 10,
      contentHash: path,
      receivedAt: 500,
    });
    return { store, upload, bundle };
  }

  it("share one insert on PostgreSQL; a row that cannot be inserted fails only its caller", async () => {
    const { store, upload } = await uploadFixture();
    await store.create(upload("u0"));
    const executor = database.handle.db.getExecutor();
    const execute = executor.executeQuery.bind(executor);
    const statements: string[] = [];
    executor.executeQuery = ((query: CompiledQuery) => {
      statements.push(query.sql);
      return execute(query);
    }) as typeof executor.executeQuery;
    try {
      await Promise.all(["u1", "u2", "u3"].map((id) => store.create(upload(id))));
      // PostgreSQL shares one insert (one round trip); SQLite inserts each at once.
      const shared = TEST_DIALECT === "postgres";
      expect(statements.filter((text) => /^insert into "uploads"/.test(text))).toHaveLength(
        shared ? 1 : 3,
      );
      statements.length = 0;

      // "u0" exists: the shared insert fails, and each row is tried alone.
      const results = await Promise.allSettled(
        ["u4", "u0", "u5"].map((id) => store.create(upload(id))),
      );
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(statements.filter((text) => /^insert into "uploads"/.test(text))).toHaveLength(
        shared ? 4 : 3,
      );
    } finally {
      executor.executeQuery = execute;
    }
    for (const id of ["u1", "u2", "u3", "u4", "u5"]) {
      expect((await store.find(id))?.state).toBe("awaiting_bundle");
    }
  });

  it("are each marked received once, before the URL expires", async () => {
    const { store, upload, bundle } = await uploadFixture();
    for (const id of ["u1", "u2", "u3", "u4"]) await store.create(upload(id));
    await store.markReceived("u2", bundle("first"));
    const marked = await Promise.all([
      store.markReceived("u1", bundle("b1")),
      store.markReceived("u2", bundle("again")),
      store.markReceived("u3", bundle("b3")),
      store.markReceived("u4", { ...bundle("late"), receivedAt: 1_000 }),
    ]);
    expect(marked.map((u) => u?.bundlePath)).toEqual(["b1", undefined, "b3", undefined]);
    expect(marked[0]?.state).toBe("pending");
    expect((await store.find("u2"))?.bundlePath).toBe("first");
    expect((await store.find("u4"))?.state).toBe("awaiting_bundle");
  });
});

describe(`organization service on ${TEST_DIALECT}`, () => {
  it("bootstrap creates the organization and accepts the token, idempotently", async () => {
    const { organizations } = createServices(database.handle);
    const token = "b".repeat(40);
    expect(await organizations.ensureBootstrap("ci", token)).toEqual({ created: true });
    expect(await organizations.ensureBootstrap("ci", token)).toEqual({ created: false });
    expect((await organizations.authenticate(token)).organizationSlug).toBe("ci");
    expect(await organizations.listTokens("ci")).toHaveLength(1);
  });

  it("bootstrap by two servers at once stores the token once and fails neither", async () => {
    const { organizations } = createServices(database.handle);
    // The organization exists (an earlier start), so both starts walk the same steps in step.
    await organizations.createOrganizationWithToken("ci");
    const token = "d".repeat(40);
    const started = await Promise.all([
      organizations.ensureBootstrap("ci", token),
      organizations.ensureBootstrap("ci", token),
      organizations.ensureBootstrap("ci", token),
    ]);
    expect(started).toEqual([{ created: false }, { created: false }, { created: false }]);
    expect(await organizations.listTokens("ci")).toHaveLength(2);
    expect((await organizations.authenticate(token)).organizationSlug).toBe("ci");
  });

  it("bootstrap refuses a short token, another organization's token, and a revoked one", async () => {
    const { organizations } = createServices(database.handle);
    await expect(organizations.ensureBootstrap("ci", "short")).rejects.toThrow(OrganizationError);
    const token = "c".repeat(40);
    await organizations.ensureBootstrap("one", token);
    await expect(organizations.ensureBootstrap("two", token)).rejects.toThrow(
      /another organization/,
    );
    const [stored] = await organizations.listTokens("one");
    await organizations.revokeToken(stored?.id ?? "");
    await expect(organizations.ensureBootstrap("one", token)).rejects.toThrow(/revoked/);
  });

  it("the first-start organization is created once, only on an empty database", async () => {
    const { organizations } = createServices(database.handle);
    const startedAt = Date.now();
    const issued = await organizations.issueFirstStartToken(startedAt);
    expect(issued?.organization.slug).toBe("default");
    expect(issued?.organizationCreated).toBe(true);
    expect((await organizations.authenticate(issued?.token)).organizationSlug).toBe("default");
    await organizations.firstStartTokenShown(issued?.tokenId ?? "");
    expect(await organizations.issueFirstStartToken(startedAt + 60_000)).toBeUndefined();
    expect((await organizations.listTokens("default")).map((t) => t.name)).toEqual(["first start"]);
  });

  it("a first-start token never shown is replaced by the next start's, and revoked", async () => {
    const { organizations } = createServices(database.handle);
    const startedAt = Date.now();
    // A start that issued it, then stopped before showing it (port taken, crash).
    const unshown = await organizations.issueFirstStartToken(startedAt);
    expect((await organizations.listTokens("default")).map((t) => t.name)).toEqual([
      "first start (not shown yet)",
    ]);
    // Another process starting at the same time leaves it to the one that issued it.
    expect(await organizations.issueFirstStartToken(startedAt)).toBeUndefined();

    const next = await organizations.issueFirstStartToken(Date.now() + 60_000);
    expect(next?.organization.slug).toBe("default");
    expect(next?.organizationCreated).toBe(false);
    expect((await organizations.authenticate(next?.token)).organizationSlug).toBe("default");
    await expect(organizations.authenticate(unshown?.token)).rejects.toThrow(/not valid/);
    await organizations.firstStartTokenShown(next?.tokenId ?? "");
    expect(await organizations.issueFirstStartToken(Date.now() + 120_000)).toBeUndefined();
    const tokens = await organizations.listTokens("default");
    expect(tokens.map((t) => [t.name, t.revokedAt === null])).toEqual([
      ["first start (not shown yet)", false],
      ["first start", true],
    ]);
  });

  it("no first-start organization when another exists", async () => {
    const { organizations } = createServices(database.handle);
    await organizations.createOrganizationWithToken("acme");
    expect(await organizations.issueFirstStartToken(Date.now())).toBeUndefined();
  });

  it("no first-start token for a default organization made with org create", async () => {
    const { organizations } = createServices(database.handle);
    await organizations.createOrganizationWithToken("default");
    expect(await organizations.issueFirstStartToken(Date.now() + 60_000)).toBeUndefined();
  });

  it("rejects slugs outside [a-z0-9][a-z0-9-]{0,62}", async () => {
    const { organizations } = createServices(database.handle);
    for (const slug of ["", "Acme", "-acme", "a_b", "a".repeat(64), "ä"]) {
      await expect(organizations.createOrganizationWithToken(slug), slug).rejects.toThrow(
        OrganizationError,
      );
    }
    expect(
      (await organizations.createOrganizationWithToken("a".repeat(63))).organization.slug,
    ).toHaveLength(63);
  });

  it("two processes migrating the same database at once both succeed", async () => {
    // The same database as a second process would open it, from its environment.
    const second = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
    try {
      const results = await Promise.all([
        migrateToLatest(database.handle),
        migrateToLatest(second),
      ]);
      expect(results).toEqual([{ applied: [] }, { applied: [] }]);
    } finally {
      await second.close();
    }
  });
});
