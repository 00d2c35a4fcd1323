/**
 * The GitLab connections' store on the dialect under test: the renewal lease of an OAuth grant
 * (one holder at a time, taken over once it runs out, never while a problem is recorded), the
 * renewal stored only over the refresh token it replaced, and OAuth authorizations under way
 * served once and never once expired.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connection.js";
import { GitLabConnectionStore } from "../../src/db/stores/gitlab-connections.js";
import { GitLabOAuthStateStore } from "../../src/db/stores/gitlab-oauth-states.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import type { GitLabConnectionRecord } from "../../src/organizations/gitlab-connections.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let store: GitLabConnectionStore;

const RECORD: GitLabConnectionRecord = {
  organizationId: "o1",
  hookKey: "hook",
  instanceUrl: "https://gitlab.example.com",
  token: "access-1",
  userId: 7,
  username: "mainline-bot",
  scopes: ["api", "write_repository"],
  expiresAt: 7_200_000,
  webhookSecret: "secret",
  createdAt: 1,
  updatedAt: 1,
  method: "oauth",
  oauth: { refreshToken: "refresh-1", redirectUri: "https://m.example/cb", issuedAt: 0 },
  problem: null,
};

beforeEach(async () => {
  database = await createTestDatabase();
  await new OrganizationStore(database.handle.db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  store = new GitLabConnectionStore(database.handle.db);
  await store.put(RECORD);
});
afterEach(async () => {
  await database.cleanup();
});

describe(`GitLab connections on ${TEST_DIALECT}`, () => {
  it("keeps an OAuth grant and reads it back as it was stored", async () => {
    expect(await store.get("o1")).toEqual(RECORD);
    const token = { ...RECORD, method: "token" as const, oauth: null, token: "glpat-x" };
    await store.put(token);
    expect(await store.get("o1")).toEqual(token);
  });

  it("lets one process at a time renew, another once the lease ran out", async () => {
    // A second connection, as another server process opens the same database.
    const other = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
    try {
      const theirs = new GitLabConnectionStore(other.db);
      const claims = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 === 0 ? store : theirs).claimRefresh("o1", "refresh-1", 100, 200),
        ),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await theirs.claimRefresh("o1", "refresh-1", 150, 300)).toBe(false);
      // The holder died: after its lease, another takes over.
      expect(await theirs.claimRefresh("o1", "refresh-1", 201, 300)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it("stores a renewal only over the refresh token it replaced, and frees the lease", async () => {
    expect(await store.claimRefresh("o1", "refresh-1", 100, 200)).toBe(true);
    const renewal = {
      token: "access-2",
      refreshToken: "refresh-2",
      issuedAt: 150,
      expiresAt: 7_200_150,
      scopes: ["api", "write_repository"],
    };
    expect(await store.renewed("o1", "refresh-1", renewal, 150)).toBe(true);
    // A late renewal of the same old grant changes nothing.
    expect(await store.renewed("o1", "refresh-1", { ...renewal, token: "access-x" }, 160)).toBe(
      false,
    );
    const now = await store.get("o1");
    expect(now).toMatchObject({ token: "access-2", expiresAt: 7_200_150, updatedAt: 150 });
    expect(now?.oauth).toEqual({ ...RECORD.oauth, refreshToken: "refresh-2", issuedAt: 150 });
    // The lease went with it: the next renewal may start at once; the old token claims nothing.
    expect(await store.claimRefresh("o1", "refresh-1", 151, 300)).toBe(false);
    expect(await store.claimRefresh("o1", "refresh-2", 151, 300)).toBe(true);
    await store.releaseRefresh("o1", "refresh-2");
    expect(await store.claimRefresh("o1", "refresh-2", 152, 300)).toBe(true);
  });

  it("claims nothing once a problem is recorded, until the organization connects again", async () => {
    await store.markProblem("o1", "refresh-1", "GitLab refused the grant.", 5);
    expect((await store.get("o1"))?.problem).toBe("GitLab refused the grant.");
    expect(await store.claimRefresh("o1", "refresh-1", 10, 20)).toBe(false);
    await store.put({ ...RECORD, token: "access-9" });
    expect((await store.get("o1"))?.problem).toBeNull();
    expect(await store.claimRefresh("o1", "refresh-1", 10, 20)).toBe(true);
  });

  it("serves an authorization under way once, and none once it expired", async () => {
    const states = new GitLabOAuthStateStore(database.handle.db);
    const state = {
      stateHash: "h1",
      organizationId: "o1",
      codeVerifier: "v",
      redirectUri: "https://m.example/cb",
      expiresAt: 1_000,
      createdAt: 0,
    };
    await states.put(state, 0);
    await states.put({ ...state, stateHash: "h2" }, 0);
    expect(await states.take("h1", 500)).toEqual(state);
    expect(await states.take("h1", 500)).toBeUndefined();
    expect(await states.take("h2", 1_001)).toBeUndefined();
    // Starting another forgets those that expired.
    await states.put({ ...state, stateHash: "h3", expiresAt: 5_000 }, 2_000);
    await states.put({ ...state, stateHash: "h4" }, 0);
    expect(await states.take("h3", 2_500)).toMatchObject({ stateHash: "h3" });
  });
});
