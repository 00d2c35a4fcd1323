import { inject } from "vitest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import { createServices, openMigratedDatabase } from "../../src/app.js";
import type { DatabaseHandle } from "../../src/db/connection.js";
import { ChangeListener, LookupCache } from "../../src/db/lookup-cache.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { TestDetailsStore } from "../../src/db/stores/test-details.js";
import { TEST_SETTINGS_KIND, TestSettingsStore } from "../../src/db/stores/test-settings.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { waitFor } from "../helpers/process.js";

/**
 * The cache of tokens, repositories and queues (ADR 0017): exact within a process, and another
 * process's changes are seen at once on SQLite and as soon as they are announced on PostgreSQL.
 * "Another process" here is a second handle on the same database: its own connections.
 */

let database: TestDatabase;
let other: DatabaseHandle;

/** A second, independent handle on the same database (what another process would open). */
async function openOther(): Promise<DatabaseHandle> {
  const { postgresUrl } = inject("testDatabase");
  const url = database.env.DATABASE_URL === undefined ? undefined : (postgresUrl ?? undefined);
  const searchPath = database.schema;
  return openMigratedDatabase({
    url,
    dataDir: database.dataDir,
    ...(searchPath ? { searchPath } : {}),
    poolSize: 2,
  });
}

beforeEach(async () => {
  database = await createTestDatabase();
  await database.handle.listenForChanges();
  other = await openOther();
});
afterEach(async () => {
  await other.close();
  await database.cleanup();
});

/** SQLite sees another connection's commit at the next lookup; PostgreSQL once announced. */
async function seenByThisProcess(condition: () => Promise<boolean>, what: string): Promise<void> {
  if (TEST_DIALECT === "sqlite") {
    expect(await condition(), what).toBe(true);
    return;
  }
  await waitFor(condition, what, { timeoutMs: 5_000, intervalMs: 5 });
}

describe(`the lookup cache on ${TEST_DIALECT}`, () => {
  it("keeps a token's owner; its revocation in this process takes effect at once", async () => {
    const { organizations } = createServices(database.handle);
    const issued = await organizations.createOrganizationWithToken("acme");
    const principal = await organizations.authenticate(issued.token);
    expect(principal.organizationSlug).toBe("acme");
    // On PostgreSQL the announcement of our own insert may still empty the cache once.
    await waitFor(async () => {
      await organizations.authenticate(issued.token);
      return database.handle.lookups.size() > 0;
    }, "the token's owner cached");
    expect(await organizations.authenticate(issued.token)).toEqual(principal);

    await organizations.revokeToken(issued.tokenId);
    await expect(organizations.authenticate(issued.token)).rejects.toThrow(/revoked/);
  });

  it("a token revoked by another process stops working here", async () => {
    const here = createServices(database.handle).organizations;
    const there = createServices(other).organizations;
    const issued = await here.createOrganizationWithToken("acme");
    await here.authenticate(issued.token);
    await here.authenticate(issued.token);

    await there.revokeToken(issued.tokenId);
    await seenByThisProcess(
      () =>
        here.authenticate(issued.token).then(
          () => false,
          () => true,
        ),
      "the revoked token refused",
    );
  });

  it("keeps an organization by id; another process's change to it is seen here", async () => {
    const lookups = database.handle.lookups;
    const { organizations } = createServices(database.handle);
    const issued = await organizations.createOrganizationWithToken("acme");
    const { organizationId } = await organizations.authenticate(issued.token);
    const store = new OrganizationStore(database.handle.db);
    // On PostgreSQL the announcement of our own insert may still empty the cache once.
    await waitFor(async () => {
      expect((await store.findById(organizationId))?.slug).toBe("acme");
      return lookups.size("organizationById") === 1;
    }, "the organization cached");
    expect((await store.findById(organizationId))?.slug).toBe("acme");

    await other.db
      .updateTable("organizations")
      .set({ slug: "acme-renamed" })
      .where("id", "=", organizationId)
      .execute();
    await seenByThisProcess(
      async () => (await store.findById(organizationId))?.slug === "acme-renamed",
      "the organization's new slug",
    );
  });

  it("a queue's settings changed by another process are seen here", async () => {
    const { organizations } = createServices(database.handle);
    const { organization } = await organizations.createOrganizationWithToken("acme");
    const ref = { host: "github.com", owner: "acme", name: "app" };
    const repositories = new RepositoryStore(database.handle.db);
    const repository = await repositories.ensure(organization.id, ref, 1);
    const queues = new MergeQueueStore(database.handle.db, database.handle.dialect);
    const before = await queues.find(organization.id, ref, "main");
    expect(before).toBeUndefined();
    const { configuration } = await (async () => {
      const { initialConfiguration } = await import("../../src/mergequeue/settings.js");
      return { configuration: initialConfiguration({}) };
    })();
    // Created elsewhere: a lookup that found nothing is never kept, so it is seen at once.
    const theirs = new MergeQueueStore(other.db, other.dialect);
    await theirs.insert({
      id: "q1",
      repositoryId: repository.id,
      targetBranch: "main",
      configuration,
      createdAt: 1,
    });
    expect((await queues.find(organization.id, ref, "main"))?.configuration.state).toBe("running");
    expect((await queues.find(organization.id, ref, "main"))?.configuration.state).toBe("running");

    await theirs.modify(organization.id, ref, "main", 2, (current) => ({
      ...current.configuration,
      state: "paused",
    }));
    // A fresh lookup (getQueue's) first hears what was committed before it, on either database.
    const fresh = await queues.find(organization.id, ref, "main", { fresh: true });
    expect(fresh?.configuration.state).toBe("paused");
    await seenByThisProcess(
      async () =>
        (await queues.find(organization.id, ref, "main"))?.configuration.state === "paused",
      "the paused queue",
    );
    // Changed here: seen at once, whatever the database.
    await queues.modify(organization.id, ref, "main", 3, (current) => ({
      ...current.configuration,
      state: "running",
    }));
    expect((await queues.find(organization.id, ref, "main"))?.configuration.state).toBe("running");
  });

  it("keeps a repository's test settings; a change here or elsewhere is seen and forgets only them", async () => {
    const { organizations } = createServices(database.handle);
    const issued = await organizations.createOrganizationWithToken("acme");
    const ref = { host: "github.com", owner: "acme", name: "app" };
    const repository = await new RepositoryStore(database.handle.db).ensure(
      issued.organization.id,
      ref,
      1,
    );
    const { lookups } = database.handle;
    const here = new TestSettingsStore(database.handle.db);
    const details = new TestDetailsStore(database.handle.db, database.handle.dialect);
    const there = new TestSettingsStore(other.db);
    // On PostgreSQL the announcements of our own inserts may still empty the cache once.
    await waitFor(async () => {
      await organizations.authenticate(issued.token);
      await here.get(repository.id);
      return lookups.size("tokenOwner") === 1 && lookups.size(TEST_SETTINGS_KIND) === 1;
    }, "the token's owner and the settings cached");

    // Each caller gets a record of its own.
    const mine = await here.get(repository.id);
    mine.quarantine.autoQuarantine = false;
    mine.monitors.stableBranches.push("changed");
    const again = await here.get(repository.id);
    expect(again.quarantine.autoQuarantine).toBe(true);
    expect(again.monitors.stableBranches).not.toContain("changed");

    // Changed here: seen at once; the token's owner stays cached.
    await details.modifySettings(repository.id, 5, (current) => ({
      ...current,
      ticketBaseUrl: "https://tickets.example/",
    }));
    expect(lookups.size(TEST_SETTINGS_KIND)).toBe(0);
    expect((await here.get(repository.id)).ticketBaseUrl).toBe("https://tickets.example/");
    expect(lookups.size("tokenOwner")).toBe(1);
    await here.putCodeowners(repository.id, "* @acme/here\n", 10);
    expect((await here.get(repository.id)).codeowners).toBe("* @acme/here\n");

    // Changed by another process: seen at once on SQLite, once announced on PostgreSQL.
    await there.putCodeowners(repository.id, "* @acme/there\n", 20);
    await seenByThisProcess(
      async () => (await here.get(repository.id)).codeowners === "* @acme/there\n",
      "the other process's CODEOWNERS",
    );
    if (TEST_DIALECT === "postgres") {
      // The announcement named the settings' table: the token's owner was not forgotten.
      expect(lookups.size("tokenOwner")).toBe(1);
    }
    await there.put(
      repository.id,
      { ...(await there.get(repository.id)), ticketBaseUrl: null },
      30,
    );
    await seenByThisProcess(
      async () => (await here.get(repository.id)).ticketBaseUrl === null,
      "the other process's ticket base URL",
    );
  });

  it("hands out copies: a caller changing its record changes nobody else's", async () => {
    const { organizations } = createServices(database.handle);
    const { organization } = await organizations.createOrganizationWithToken("acme");
    const ref = { host: "github.com", owner: "acme", name: "app" };
    const repositories = new RepositoryStore(database.handle.db);
    await repositories.ensure(organization.id, ref, 1);
    const first = await repositories.find(organization.id, ref);
    if (!first) throw new Error("no repository");
    first.name = "changed";
    expect((await repositories.find(organization.id, ref))?.name).toBe("app");
  });
});

describe("the cache's generation", () => {
  it("does not keep what a lookup read while a change was announced", async () => {
    const cache = new LookupCache();
    let finish: (value: { v: number }) => void = () => undefined;
    const pending = cache.get(
      "k",
      "a",
      () =>
        new Promise<{ v: number }>((resolve) => {
          finish = resolve;
        }),
    );
    cache.changed();
    finish({ v: 1 });
    expect(await pending).toEqual({ v: 1 });
    expect(cache.size()).toBe(0);
    expect(await cache.get("k", "a", () => Promise.resolve({ v: 2 }))).toEqual({ v: 2 });
    expect(await cache.get("k", "a", () => Promise.resolve({ v: 3 }))).toEqual({ v: 2 });
  });

  it("reads through while it may not be used", async () => {
    let usable = false;
    const cache = new LookupCache(() => usable);
    expect(await cache.get("k", "a", () => Promise.resolve({ v: 1 }))).toEqual({ v: 1 });
    expect(cache.size()).toBe(0);
    usable = true;
    expect(await cache.get("k", "a", () => Promise.resolve({ v: 2 }))).toEqual({ v: 2 });
    expect(cache.size()).toBe(1);
  });
});

// PostgreSQL only: SQLite has no listener (it reads PRAGMA data_version instead).
if (TEST_DIALECT === "postgres")
  describe("the change listener (PostgreSQL)", () => {
    it("caches only while listening; a lost connection empties the cache until it listens again", async () => {
      const postgresUrl = inject("testDatabase").postgresUrl ?? "";
      const searchPath = database.schema ?? "";
      const cache = new LookupCache();
      const listener = new ChangeListener(cache, {
        client: { connectionString: postgresUrl, options: `-c search_path=${searchPath}` },
        retryMs: 50,
      });
      try {
        expect(await cache.get("k", "a", () => Promise.resolve({ v: 1 }))).toEqual({ v: 1 });
        expect(cache.size()).toBe(0);
        await listener.start();
        expect(listener.isListening).toBe(true);
        // Calls made together share round trips; each hears what was committed before it.
        expect(await Promise.all([listener.sync(), listener.sync(), listener.sync()])).toEqual([
          true,
          true,
          true,
        ]);
        await cache.get("k", "a", () => Promise.resolve({ v: 1 }));
        expect(cache.size()).toBe(1);

        // Another connection changes a cached table: the trigger announces it.
        const { organizations } = createServices(other);
        await organizations.createOrganizationWithToken("acme");
        await waitFor(() => cache.size() === 0, "the announcement", { timeoutMs: 5_000 });

        await cache.get("k", "a", () => Promise.resolve({ v: 2 }));
        expect(cache.size()).toBe(1);
        const admin = new pg.Client({ connectionString: postgresUrl });
        await admin.connect();
        try {
          const pid = listener.backendPid;
          expect(pid).not.toBeNull();
          await admin.query("select pg_terminate_backend($1)", [pid]);
          await waitFor(() => !listener.isListening, "the loss noticed", { timeoutMs: 5_000 });
          expect(cache.size()).toBe(0);
          expect(await listener.sync()).toBe(false);
          expect(await cache.get("k", "a", () => Promise.resolve({ v: 3 }))).toEqual({ v: 3 });
          expect(cache.size()).toBe(0);
          await waitFor(() => listener.isListening, "listening again", { timeoutMs: 10_000 });
          await cache.get("k", "a", () => Promise.resolve({ v: 4 }));
          expect(cache.size()).toBe(1);
        } finally {
          await admin.end();
        }
      } finally {
        await listener.stop();
      }
    });
  });
