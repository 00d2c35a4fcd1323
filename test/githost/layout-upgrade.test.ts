/**
 * The upgrade from the old layout of local repositories (`{dataDir}/git/{owner}/{name}.git`, one
 * directory for every organization) to one tree per organization, on the real database: the
 * directory moves into the tree of the organization that created it first, a directory nobody
 * has stays, and the upgrade runs when the database is opened (as `mainline serve` does). Also
 * migration 0010, which gives CI runs stored before it their repository's organization.
 */
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openMigratedDatabase } from "../../src/app.js";
import type { Kysely } from "kysely";
import { CiRunStore } from "../../src/db/stores/ci-runs.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { ciRunOrganization } from "../../src/db/migrations/0010_ci_run_organization.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { upgradeLocalRepositoryLayout } from "../../src/providers/local/git/layout-upgrade.js";
import { LocalRepositories } from "../../src/providers/local/git/repositories.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { WorkingClone, plainGit } from "../helpers/local-git.js";

const FIRST = "11111111-1111-4111-8111-111111111111";
const SECOND = "22222222-2222-4222-8222-222222222222";

let database: TestDatabase;
let messages: string[];

beforeEach(async () => {
  database = await createTestDatabase();
  messages = [];
  const organizations = new OrganizationStore(database.handle.db);
  await organizations.ensure({ id: FIRST, slug: "first", createdAt: 1 });
  await organizations.ensure({ id: SECOND, slug: "second", createdAt: 1 });
});

afterEach(async () => {
  await database.cleanup();
});

/** A bare repository at the old place `git/{owner}/{name}.git`, with `main` holding one commit. */
function oldRepository(owner: string, name: string): { path: string; main: string } {
  const dir = path.join(database.dataDir, "git", owner, `${name}.git`);
  mkdirSync(path.dirname(dir), { recursive: true });
  plainGit(path.dirname(dir), ["init", "--quiet", "--bare", "--initial-branch=main", dir]);
  const work = path.join(database.dataDir, "work", owner);
  mkdirSync(work, { recursive: true });
  const clone = WorkingClone.of(dir, path.join(work, name));
  clone.git("symbolic-ref", "HEAD", "refs/heads/main");
  const main = clone.commit({ branch: "main", files: { "README.md": `${owner}/${name}\n` } });
  clone.push("main");
  return { path: dir, main };
}

const logger = () => ({
  info: (message: string) => messages.push(message),
  error: (message: string) => messages.push(message),
});

describe("upgrading the layout of local repositories", () => {
  it("moves each old repository into the tree of the organization that created it first", async () => {
    const repositories = new RepositoryStore(database.handle.db);
    // The first organization created acme/shop; the second later got a row of the same name
    // (the takeover the shared layout allowed). The directory is the first's.
    await repositories.ensure(FIRST, { host: "local", owner: "acme", name: "shop" }, 10);
    await repositories.ensure(SECOND, { host: "local", owner: "ACME", name: "Shop" }, 20);
    await repositories.ensure(SECOND, { host: "local", owner: "beta", name: "tools" }, 30);
    const shop = oldRepository("acme", "shop");
    const tools = oldRepository("beta", "tools");
    const lost = oldRepository("nobody", "lost");

    const report = await upgradeLocalRepositoryLayout(database.dataDir, {
      owner: (ref) => repositories.oldestAnywhere(ref),
      logger: logger(),
    });

    const bare = new LocalRepositories(database.dataDir);
    const firstShop = { organizationId: FIRST, owner: "acme", name: "shop" };
    const secondTools = { organizationId: SECOND, owner: "beta", name: "tools" };
    expect(report.moved).toEqual(
      new Map([
        ["acme/shop", bare.path(firstShop)],
        ["beta/tools", bare.path(secondTools)],
      ]),
    );
    expect(await bare.branches(firstShop)).toEqual(new Map([["main", shop.main]]));
    expect(await bare.branches(secondTools)).toEqual(new Map([["main", tools.main]]));
    expect(await bare.exists({ organizationId: SECOND, owner: "ACME", name: "Shop" })).toBe(false);
    expect(existsSync(shop.path)).toBe(false);
    expect(existsSync(path.join(database.dataDir, "git", "acme"))).toBe(false);
    // Nobody's repository stays where it was, and says so.
    expect([...report.left.keys()]).toEqual(["nobody/lost"]);
    expect(existsSync(lost.path)).toBe(true);
    expect(messages.some((m) => m.includes("nobody/lost"))).toBe(true);

    // Again: nothing left to move, nothing moved twice.
    const again = await upgradeLocalRepositoryLayout(database.dataDir, {
      owner: (ref) => repositories.oldestAnywhere(ref),
      logger: logger(),
    });
    expect(again.moved.size).toBe(0);
    expect(await bare.branches(firstShop)).toEqual(new Map([["main", shop.main]]));
  });

  it("runs when the database is opened, as mainline serve opens it", async () => {
    const repositories = new RepositoryStore(database.handle.db);
    await repositories.ensure(FIRST, { host: "local", owner: "acme", name: "shop" }, 10);
    const shop = oldRepository("acme", "shop");
    const reopened = await openMigratedDatabase(
      { url: database.env.DATABASE_URL, dataDir: database.dataDir },
      logger(),
    );
    await reopened.close();
    const bare = new LocalRepositories(database.dataDir);
    const firstShop = { organizationId: FIRST, owner: "acme", name: "shop" };
    expect(await bare.branches(firstShop)).toEqual(new Map([["main", shop.main]]));
    expect(existsSync(shop.path)).toBe(false);
    expect(messages).toEqual([`local repository acme/shop moved to ${bare.path(firstShop)}`]);
  });
});

describe("migration 0010", () => {
  it("writes the organization into the repository of CI runs stored before it; down removes it", async () => {
    const { db, dialect } = database.handle;
    const repository = await new RepositoryStore(db).ensure(
      SECOND,
      { host: "local", owner: "acme", name: "shop" },
      10,
    );
    await new MergeQueueStore(db, dialect).insert({
      id: "q1",
      repositoryId: repository.id,
      targetBranch: "main",
      configuration: initialConfiguration({}),
      createdAt: 1,
    });
    const runs = new CiRunStore(db);
    // A run as the runner stored it before repositories carried their organization.
    const oldRepo = { host: "local", owner: "acme", name: "shop" };
    await runs.create({
      queueId: "q1",
      runId: "r1",
      request: {
        repo: oldRepo as never,
        queueId: "q1",
        runId: "r1",
        targetBranch: "main",
        testBranch: "mainline-merge/main/r1",
        sha: "abc",
        prNumbers: [1],
        requiredStatuses: null,
      },
      status: "running",
      checks: [],
      error: null,
      flakyOnly: false,
      createdAt: 1,
      finishedAt: null,
      owner: null,
      leaseUntil: 0,
    });
    const migrating = db as unknown as Kysely<unknown>;
    const types = columnTypes(dialect);
    await ciRunOrganization.up(migrating, types);
    expect((await runs.get("q1", "r1"))?.request.repo).toEqual({
      organizationId: SECOND,
      ...oldRepo,
    });
    // Running it again changes nothing; down takes the organization out again.
    await ciRunOrganization.up(migrating, types);
    expect((await runs.get("q1", "r1"))?.request.repo.organizationId).toBe(SECOND);
    await ciRunOrganization.down(migrating, types);
    expect((await runs.get("q1", "r1"))?.request.repo).toEqual(oldRepo);
  });
});
