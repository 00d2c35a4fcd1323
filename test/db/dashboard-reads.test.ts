import { sql, type Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { githubSessions } from "../../src/db/migrations/0021_github_sessions.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { SessionStore } from "../../src/db/stores/sessions.js";
import { TestOverviewStore } from "../../src/db/stores/test-overview.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { DAY_MS, HOUR_MS, MINUTE_MS } from "../../src/lib/time.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { OrganizationError, OrganizationService } from "../../src/organizations/service.js";
import { SessionService } from "../../src/organizations/sessions.js";
import { TestHealthOverview } from "../../src/testhealth/overview.js";
import { utcDay } from "../../src/testhealth/trends.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { insertTestCase, seedRepository } from "../helpers/test-cases.js";

/**
 * The dashboard's storage on the real database: sessions (found by hash, idle and absolute
 * expiry, sign-out, revocation by an operator and through the token, deletion with the token)
 * and the home page's reads (counts by status and quarantine, the daily trend, queues' state).
 */

let database: TestDatabase;
let now: number;
const clock = { now: () => now };

beforeEach(async () => {
  database = await createTestDatabase();
  now = Date.UTC(2026, 2, 10, 12, 0);
});
afterEach(async () => {
  await database.cleanup();
});

function sessionsWith(lifetimes = { idleMs: HOUR_MS, absoluteMs: DAY_MS }) {
  const organizations = new OrganizationService(new OrganizationStore(database.handle.db), clock);
  const sessions = new SessionService({
    sessions: new SessionStore(database.handle.db),
    organizations,
    clock,
    lifetimes,
  });
  return { organizations, sessions };
}

describe(`sessions on ${TEST_DIALECT}`, () => {
  it("stores only the hash of the id; resumes, touches and ends sessions", async () => {
    const { organizations, sessions } = sessionsWith();
    const { token } = await organizations.createOrganizationWithToken("acme");
    const { sessionId, session } = await sessions.signIn(token);
    expect(sessionId).toMatch(/^mls_[A-Za-z0-9_-]{43}$/);
    const rows = await database.handle.db.selectFrom("webSessions").selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(sessionId);
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows).toHaveLength(1);
    expect(session.principal.organizationSlug).toBe("acme");

    now += 30 * MINUTE_MS;
    const resumed = await sessions.resume(sessionId);
    expect(resumed?.id).toBe(session.id);
    expect(resumed?.lastSeenAt).toBe(now);
    // Idle: an hour after it was last seen it is over, however young.
    now += 59 * MINUTE_MS;
    expect(await sessions.resume(sessionId)).toBeDefined();
    now += 61 * MINUTE_MS;
    expect(await sessions.resume(sessionId)).toBeUndefined();
    expect((await sessions.list("acme"))[0]?.state).toBe("expired");

    // Absolute: used every half hour, it still ends a day after it began.
    const second = await sessions.signIn(token);
    const started = now;
    while (now < started + DAY_MS - 30 * MINUTE_MS) {
      now += 30 * MINUTE_MS;
      expect(await sessions.resume(second.sessionId)).toBeDefined();
    }
    now = started + DAY_MS;
    expect(await sessions.resume(second.sessionId)).toBeUndefined();

    const third = await sessions.signIn(token);
    await sessions.signOut(third.sessionId);
    expect(await sessions.resume(third.sessionId)).toBeUndefined();
    expect((await sessions.list("acme")).map((s) => s.state)).toEqual([
      "signed_out",
      "expired",
      "expired",
    ]);
  });

  it("refuses ids that are not sessions, and ends sessions with their token", async () => {
    const { organizations, sessions } = sessionsWith({ idleMs: DAY_MS, absoluteMs: 7 * DAY_MS });
    const issued = await organizations.createOrganizationWithToken("acme");
    for (const id of ["", "mls_short", `mls_${"a".repeat(43)}`, issued.token]) {
      expect(await sessions.resume(id)).toBeUndefined();
    }
    await expect(sessions.signIn("mlt_nope")).rejects.toMatchObject({ code: "unauthorized" });
    const a = await sessions.signIn(issued.token);
    await organizations.revokeToken(issued.tokenId);
    expect(await sessions.resume(a.sessionId)).toBeUndefined();
    expect((await sessions.list("acme"))[0]?.state).toBe("token_revoked");
    await expect(sessions.signIn(issued.token)).rejects.toMatchObject({ code: "unauthorized" });

    const other = await organizations.issueToken("acme", "deleted");
    const b = await sessions.signIn(other.token);
    await database.handle.db.deleteFrom("apiTokens").where("id", "=", other.tokenId).execute();
    expect(await sessions.resume(b.sessionId)).toBeUndefined();
    expect(
      await database.handle.db
        .selectFrom("webSessions")
        .select("id")
        .where("tokenId", "=", other.tokenId)
        .execute(),
    ).toEqual([]);
  });

  it("an operator revokes a session of the organization, never of another", async () => {
    const { organizations, sessions } = sessionsWith({ idleMs: DAY_MS, absoluteMs: 7 * DAY_MS });
    const acme = await organizations.createOrganizationWithToken("acme");
    const globex = await organizations.createOrganizationWithToken("globex");
    const mine = await sessions.signIn(acme.token);
    const theirs = await sessions.signIn(globex.token);
    await expect(sessions.revoke("acme", theirs.session.id)).rejects.toBeInstanceOf(
      OrganizationError,
    );
    await expect(sessions.revoke("nope", mine.session.id)).rejects.toBeInstanceOf(
      OrganizationError,
    );
    expect(await sessions.resume(theirs.sessionId)).toBeDefined();
    const revoked = await sessions.revoke("acme", mine.session.id);
    expect(revoked.state).toBe("revoked");
    expect(await sessions.resume(mine.sessionId)).toBeUndefined();
    expect((await sessions.list("globex")).map((s) => s.state)).toEqual(["active"]);
  });

  it("derives each session's anti-forgery token from its id", async () => {
    const { organizations, sessions } = sessionsWith();
    const { token } = await organizations.createOrganizationWithToken("acme");
    const a = await sessions.signIn(token);
    const b = await sessions.signIn(token);
    const csrf = sessions.csrfToken(a.sessionId);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessions.csrfToken(a.sessionId)).toBe(csrf);
    expect(sessions.csrfMatches(a.sessionId, csrf)).toBe(true);
    expect(sessions.csrfMatches(b.sessionId, csrf)).toBe(false);
    for (const wrong of [undefined, "", 5, csrf.slice(1), `${csrf}x`]) {
      expect(sessions.csrfMatches(a.sessionId, wrong)).toBe(false);
    }
  });

  it("a GitHub session lives while its installation is linked to the organization", async () => {
    const { organizations, sessions } = sessionsWith();
    const acme = await organizations.createOrganizationWithToken("acme");
    const globex = await organizations.createOrganizationWithToken("globex");
    const db = database.handle.db;
    await db
      .insertInto("githubInstallations")
      .values({
        id: 42,
        accountId: 7,
        accountLogin: "acme-gh",
        accountType: "Organization",
        repositorySelection: "all",
        organizationId: acme.organization.id,
        linkedAt: now,
        suspendedAt: null,
        deletedAt: null,
        syncedAt: null,
        createdAt: now,
        updatedAt: now,
      })
      .execute();
    const signIn = {
      organizationId: acme.organization.id,
      organizationSlug: "acme",
      userId: 1001,
      login: "alice",
      installationId: 42,
    };
    const { sessionId } = await sessions.signInWithGitHub(signIn);
    const live = await sessions.resume(sessionId);
    expect(live?.principal).toEqual({
      organizationId: acme.organization.id,
      organizationSlug: "acme",
      tokenId: "github:alice",
    });
    // A session claiming another organization through acme's installation is refused.
    const forged = await sessions.signInWithGitHub({
      ...signIn,
      organizationId: globex.organization.id,
      organizationSlug: "globex",
    });
    expect(await sessions.resume(forged.sessionId)).toBeUndefined();
    // The App uninstalled (GitHub deleted the installation; the row and its link stay): it ends.
    await db
      .updateTable("githubInstallations")
      .set({ deletedAt: now })
      .where("id", "=", 42)
      .execute();
    expect(await sessions.resume(sessionId)).toBeUndefined();
    await db
      .updateTable("githubInstallations")
      .set({ deletedAt: null })
      .where("id", "=", 42)
      .execute();
    expect((await sessions.resume(sessionId))?.id).toBe(live?.id);
    // Unlinked (or linked elsewhere): the session ends.
    await db
      .updateTable("githubInstallations")
      .set({ organizationId: null, linkedAt: null })
      .where("id", "=", 42)
      .execute();
    expect(await sessions.resume(sessionId)).toBeUndefined();
    const listed = await sessions.list("acme");
    expect(listed.map((x) => [x.githubLogin, x.tokenId, x.state])).toEqual([
      ["alice", null, "installation_unlinked"],
    ]);
    // Migration 0021 down drops GitHub sessions and keeps token sessions; up again works.
    const kept = await sessions.signIn(acme.token);
    const types = columnTypes(database.handle.dialect);
    const raw = db as unknown as Kysely<unknown>;
    await githubSessions.down(raw, types);
    const left = await sql<{ id: string }>`select id from web_sessions`.execute(db);
    expect(left.rows.map((r) => r.id)).toEqual([kept.session.id]);
    await githubSessions.up(raw, types);
    expect((await sessions.resume(kept.sessionId))?.id).toBe(kept.session.id);
    await db
      .updateTable("githubInstallations")
      .set({ organizationId: acme.organization.id })
      .where("id", "=", 42)
      .execute();
    const again = await sessions.signInWithGitHub(signIn);
    expect((await sessions.resume(again.sessionId))?.principal.tokenId).toBe("github:alice");
    // Deleting a token still deletes its sessions (the rebuilt table keeps the cascade).
    await db.deleteFrom("apiTokens").where("organizationId", "=", acme.organization.id).execute();
    expect(await sessions.resume(kept.sessionId)).toBeUndefined();
  });
});

describe(`the home page's reads on ${TEST_DIALECT}`, () => {
  it("counts flaky, broken and quarantined tests by the repository's rule", async () => {
    const { db } = database.handle;
    const repoId = await seedRepository(db);
    const other = (
      await new RepositoryStore(db).ensure("o1", { host: "h", owner: "o", name: "quiet" }, 1)
    ).id;
    const off = (
      await new RepositoryStore(db).ensure("o1", { host: "h", owner: "o", name: "off" }, 1)
    ).id;
    await db
      .insertInto("repositoryTestSettings")
      .values({
        repositoryId: off,
        monitors: "{}",
        quarantiningEnabled: 0,
        autoQuarantine: 1,
        updatedAt: 1,
      })
      .execute();
    const rows: [string, string, string][] = [
      ["f1", "flaky", "UNSPECIFIED"],
      ["f2", "flaky", "UNSPECIFIED"],
      ["f3", "flaky", "NEVER_QUARANTINE"],
      ["f4", "flaky", "ALWAYS_QUARANTINE"],
      ["b1", "broken", "UNSPECIFIED"],
      ["h1", "healthy", "ALWAYS_QUARANTINE"],
      ["h2", "healthy", "UNSPECIFIED"],
    ];
    for (const [id, status, override] of rows) {
      await insertTestCase(db, repoId, id, 1, { status, quarantineOverride: override });
      await insertTestCase(db, off, id, 1, { status, quarantineOverride: override });
    }
    // Another organization's tests count nowhere.
    await new OrganizationStore(db).ensure({ id: "o2", slug: "globex", createdAt: 1 });
    const theirs = (
      await new RepositoryStore(db).ensure("o2", { host: "h", owner: "o", name: "n" }, 1)
    ).id;
    await insertTestCase(db, theirs, "x", 1, { status: "flaky" });

    const overview = new TestHealthOverview({ overview: new TestOverviewStore(db), clock });
    const health = await overview.organization({
      organizationId: "o1",
      organizationSlug: "acme",
      tokenId: "t",
    });
    const byName = new Map(health.repositories.map((r) => [r.repository.name, r]));
    expect([...byName.keys()]).toEqual(["n", "off", "quiet"]);
    // f1, f2 automatically; f4 and h1 by override; f3 never.
    expect(byName.get("n")).toMatchObject({ tests: 7, flaky: 4, broken: 1, quarantined: 4 });
    expect(byName.get("off")).toMatchObject({ tests: 7, flaky: 4, broken: 1, quarantined: 0 });
    expect(byName.get("quiet")).toMatchObject({ tests: 0, flaky: 0, broken: 0, quarantined: 0 });
    expect(byName.get("quiet")?.daily).toHaveLength(30);
    expect(other).toBeDefined();
  });

  it("rebuilds each day's flaky and broken counts from the status changes", async () => {
    const { db } = database.handle;
    const repoId = await seedRepository(db);
    const today = utcDay(now);
    const a = await insertTestCase(db, repoId, "a", 1, { status: "broken" });
    const b = await insertTestCase(db, repoId, "b", 1, { status: "healthy" });
    const history = [
      // a: flaky 40 days ago (before the window), broken 3 days ago.
      { testKey: a, at: today - 40 * DAY_MS, status: "flaky", kind: "status" },
      { testKey: a, at: today - 3 * DAY_MS + HOUR_MS, status: "broken", kind: "status" },
      { testKey: a, at: today - 2 * DAY_MS, status: "broken", kind: "override" },
      // b: flaky 5 days ago, healthy again yesterday.
      { testKey: b, at: today - 5 * DAY_MS + HOUR_MS, status: "flaky", kind: "status" },
      { testKey: b, at: today - DAY_MS + HOUR_MS, status: "healthy", kind: "status" },
    ];
    await db
      .insertInto("testStatusHistory")
      .values(history.map((h) => ({ ...h, reason: "r", actor: null })))
      .execute();
    const overview = new TestHealthOverview({ overview: new TestOverviewStore(db), clock });
    const health = await overview.organization(
      { organizationId: "o1", organizationSlug: "acme", tokenId: "t" },
      7,
    );
    const days = health.repositories[0]?.daily ?? [];
    expect(days.map((d) => d.day)).toEqual(
      Array.from({ length: 7 }, (_, i) => today - (6 - i) * DAY_MS),
    );
    expect(days.map((d) => [d.flaky, d.broken])).toEqual([
      [1, 0], // 6 days ago: a flaky
      [2, 0], // 5 days ago: b flaky too
      [2, 0],
      [1, 1], // 3 days ago: a broken
      [1, 1],
      [0, 1], // yesterday: b healthy
      [0, 1],
    ]);
    expect(health.daily).toEqual(days);
  });

  it("lists the organization's queues with their state and active pull requests", async () => {
    const { db, dialect } = database.handle;
    const repoId = await seedRepository(db);
    const store = new MergeQueueStore(db, dialect);
    await store.insert({
      id: "q1",
      repositoryId: repoId,
      targetBranch: "main",
      configuration: initialConfiguration({}),
      createdAt: 1,
    });
    const entry = (seq: number, state: string, concludedAt: number | null) => ({
      id: `e${seq}`,
      queueId: "q1",
      seq,
      prNumber: seq,
      prTitle: "t",
      prSha: "s",
      prHeadBranch: `b${seq}`,
      prBaseBranch: "main",
      prAuthor: "a",
      state,
      stateChangedAt: 1,
      submittedAt: 1,
      concludedAt,
      priorityValue: 100,
      usedDefaultPriority: 1,
      noBatch: 0,
      readiness: "{}",
      lastReason: "submitted",
    });
    await db
      .insertInto("mqEntries")
      .values([
        entry(1, "pending", null),
        entry(2, "pending", null),
        entry(3, "testing", null),
        entry(4, "merged", 5),
      ])
      .execute();
    const [queue] = await store.overview("o1");
    expect(queue).toMatchObject({
      id: "q1",
      targetBranch: "main",
      state: "running",
      active: { pending: 2, testing: 1 },
    });
    expect(queue?.active.merged).toBeUndefined();
    expect(await store.overview("o2")).toEqual([]);
  });
});
