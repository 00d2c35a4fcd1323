import type { Kysely } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/connection.js";
import { issuedIds } from "../../src/db/migrations/0028_issued_ids.js";
import { runFailFirst } from "../../src/db/migrations/0029_run_fail_first.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import type {
  DriverCommit,
  EntryListQuery,
  EntryRecord,
  RunRecord,
  TransitionRecord,
} from "../../src/mergequeue/records.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let store: MergeQueueRuntimeStore;
beforeEach(async () => {
  database = await createTestDatabase();
  store = new MergeQueueRuntimeStore(database.handle.db, database.handle.dialect);
  await new OrganizationStore(database.handle.db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  await addQueue("q1", "main");
  await addQueue("q2", "release");
});
afterEach(async () => {
  await database.cleanup();
});

async function addQueue(id: string, targetBranch: string): Promise<void> {
  const repository = await new RepositoryStore(database.handle.db).ensure(
    "o1",
    { host: "h", owner: "o", name: "n" },
    1,
  );
  const inserted = await new MergeQueueStore(database.handle.db, database.handle.dialect).insert({
    id,
    repositoryId: repository.id,
    targetBranch,
    configuration: initialConfiguration({}),
    createdAt: 1,
  });
  expect(inserted).toBe(true);
}

/** Another connection (pool) to the same database, as a second server process would have. */
function openSecondHandle(): DatabaseHandle {
  return openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
}

function entry(overrides: Partial<EntryRecord> & Pick<EntryRecord, "id" | "seq">): EntryRecord {
  return {
    queueId: "q1",
    prNumber: 100 + overrides.seq,
    prTitle: `PR "${String(overrides.seq)}" ü`,
    prSha: `sha${String(overrides.seq)}`,
    prHeadBranch: `feature-${String(overrides.seq)}`,
    prBaseBranch: "main",
    prAuthor: "alice",
    state: "pending",
    stateChangedAt: 1000 + overrides.seq,
    submittedAt: 1000 + overrides.seq,
    concludedAt: null,
    priorityValue: 100,
    usedDefaultPriority: true,
    noBatch: false,
    readiness: {
      mergeability: "mergeable",
      baseBranchMatches: true,
      requiresImpactedTargets: false,
      impactedTargets: null,
    },
    lastReason: "submitted",
    ...overrides,
  };
}

function transition(
  overrides: Partial<TransitionRecord> & Pick<TransitionRecord, "entryId" | "at">,
): TransitionRecord {
  return {
    queueId: "q1",
    from: null,
    to: "pending",
    reason: "submitted",
    actor: { kind: "user", name: "alice" },
    runId: null,
    detail: null,
    ...overrides,
  };
}

function run(overrides: Partial<RunRecord> & Pick<RunRecord, "id">): RunRecord {
  return {
    queueId: "q1",
    kind: "main",
    status: "running",
    baseSha: "base1",
    testBranch: "mainline/test/1",
    testBranchSha: "tsha1",
    prs: [{ entryId: "e1", number: 101, headSha: "sha1" }],
    unit: ["e1"],
    requiredStatuses: ["ci/build", "ci/test"],
    requiredStatusesSource: "mainline_config",
    checks: [{ name: "ci/build", conclusion: null, url: "https://ci.example/1" }],
    startedAt: 2000,
    finishedAt: null,
    ...overrides,
  };
}

function step(overrides: Partial<DriverCommit> & Pick<DriverCommit, "epoch">): DriverCommit {
  return {
    queueId: "q1",
    now: 5000,
    snapshot: { queueId: "q1", nextSeq: 1 },
    wakeAt: null,
    entries: [],
    transitions: [],
    runs: [],
    appliedCommands: [],
    ...overrides,
  };
}

/** Every row of the engine's tables, in a stable order. */
async function dumpTables() {
  const db = database.handle.db;
  return {
    runtime: await db.selectFrom("mqRuntime").selectAll().orderBy("queueId").execute(),
    entries: await db.selectFrom("mqEntries").selectAll().orderBy("id").execute(),
    transitions: await db.selectFrom("mqTransitions").selectAll().orderBy("id").execute(),
    runs: await db.selectFrom("mqRuns").selectAll().orderBy("queueId").orderBy("id").execute(),
    commands: await db.selectFrom("mqCommands").selectAll().orderBy("id").execute(),
  };
}

describe(`merge-queue runtime store on ${TEST_DIALECT}`, () => {
  describe("lease", () => {
    it("the first acquire creates the row at epoch 1; renewal keeps the epoch and extends", async () => {
      expect(await store.acquireLease("q1", "a", 1000, 500)).toEqual({
        queueId: "q1",
        owner: "a",
        epoch: 1,
        expiresAt: 1500,
      });
      expect(await store.acquireLease("q1", "a", 1200, 500)).toEqual({
        queueId: "q1",
        owner: "a",
        epoch: 1,
        expiresAt: 1700,
      });
      // Queues are independent.
      expect((await store.acquireLease("q2", "b", 1200, 500))?.epoch).toBe(1);
    });

    it("another owner is refused while the lease runs, and takes it over (epoch + 1) once expired", async () => {
      await store.acquireLease("q1", "a", 1000, 500);
      expect(await store.acquireLease("q1", "b", 1499, 500)).toBeUndefined();
      // Expired exactly at `expiresAt`.
      expect(await store.acquireLease("q1", "b", 1500, 500)).toEqual({
        queueId: "q1",
        owner: "b",
        epoch: 2,
        expiresAt: 2000,
      });
      expect(await store.acquireLease("q1", "a", 1600, 500)).toBeUndefined();
      // The old owner's step is fenced off; the new owner's goes through.
      expect(await store.commit(step({ epoch: 1, snapshot: { by: "a" } }))).toBe(false);
      expect(await store.loadSnapshot("q1")).toBeUndefined();
      expect(await store.commit(step({ epoch: 2, snapshot: { by: "b" } }))).toBe(true);
      expect(await store.loadSnapshot("q1")).toEqual({ snapshot: { by: "b" }, wakeAt: null });
    });

    it("sharedSnapshot parses each distinct stored text once, and sees another process's commits", async () => {
      expect(await store.sharedSnapshot("q1")).toBeUndefined();
      await store.acquireLease("q1", "a", 1000, 500);
      // A lease before any commit: no snapshot yet.
      expect(await store.sharedSnapshot("q1")).toBeUndefined();
      expect(await store.commit(step({ epoch: 1, snapshot: { n: 1 } }))).toBe(true);
      const first = await store.sharedSnapshot("q1");
      expect(first).toEqual({ n: 1 });
      expect(await store.sharedSnapshot("q1")).toBe(first);
      expect(await store.sharedSnapshot("q2")).toBeUndefined();
      // A commit by another process (another store on another connection) is seen at once.
      const second = openSecondHandle();
      try {
        const other = new MergeQueueRuntimeStore(second.db, second.dialect);
        expect(await other.commit(step({ epoch: 1, snapshot: { n: 2 } }))).toBe(true);
      } finally {
        await second.close();
      }
      const next = await store.sharedSnapshot("q1");
      expect(next).toEqual({ n: 2 });
      expect(next).not.toBe(first);
      expect(await store.sharedSnapshot("q1")).toBe(next);
      expect(await store.loadSnapshot("q1")).toEqual({ snapshot: { n: 2 }, wakeAt: null });
    });

    it("issued ids: recorded by the lease holder only, never lowered, kept through a commit", async () => {
      expect(await store.loadDriverState("q1")).toEqual({
        snapshot: undefined,
        wakeAt: null,
        issuedBelow: 0,
        hostTrouble: null,
      });
      expect(await store.issueIds("q1", 1, 50)).toBe(false); // no lease yet
      await store.acquireLease("q1", "a", 1000, 500);
      expect(await store.issueIds("q1", 1, 101)).toBe(true);
      // Before any commit (a first step that failed to commit): the bound is there.
      expect(await store.loadDriverState("q1")).toEqual({
        snapshot: undefined,
        wakeAt: null,
        issuedBelow: 101,
        hostTrouble: null,
      });
      expect(await store.issueIds("q1", 1, 20)).toBe(true);
      expect((await store.loadDriverState("q1")).issuedBelow).toBe(101);
      expect(await store.commit(step({ epoch: 1, snapshot: { n: 1 } }))).toBe(true);
      expect(await store.loadDriverState("q1")).toEqual({
        snapshot: { n: 1 },
        wakeAt: null,
        issuedBelow: 101,
        hostTrouble: null,
      });
      await store.acquireLease("q1", "b", 1500, 500);
      expect(await store.issueIds("q1", 1, 500)).toBe(false); // a stale holder
      expect(await store.issueIds("q1", 2, 201)).toBe(true);
      expect((await store.loadDriverState("q1")).issuedBelow).toBe(201);
    });

    it("migration 0028 gives queues that ran before it no issued bound; down removes it", async () => {
      await store.acquireLease("q1", "a", 1000, 500);
      expect(await store.commit(step({ epoch: 1, snapshot: { n: 1 } }))).toBe(true);
      const db = database.handle.db as unknown as Kysely<unknown>;
      const types = columnTypes(database.handle.dialect);
      await issuedIds.down(db, types);
      await expect(store.loadDriverState("q1")).rejects.toThrow(/issued_below/);
      await issuedIds.up(db, types);
      expect(await store.loadDriverState("q1")).toEqual({
        snapshot: { n: 1 },
        wakeAt: null,
        issuedBelow: 0,
        hostTrouble: null,
      });
    });

    it("host trouble: recorded by the lease holder only, with the refused commands answered", async () => {
      const trouble = {
        state: "unreachable" as const,
        code: "unavailable" as const,
        since: 1000,
        message: "it answered HTTP 502",
        retryAt: 2000,
        failures: 1,
      };
      const refused = await store.enqueueCommand("q1", { type: "cancel", prNumber: 1 }, 900);
      const kept = await store.enqueueCommand("q1", { type: "set_impacted_targets" }, 901);
      const answer = {
        ok: false as const,
        code: "unavailable" as const,
        message: "refused",
        retryAfterSeconds: 1,
      };
      expect(await store.recordHostTrouble("q1", 1, trouble, [], 1000)).toBe(false); // no lease
      await store.acquireLease("q1", "a", 1000, 500);
      expect(await store.hostTrouble("q1")).toBeNull();
      expect(
        await store.recordHostTrouble("q1", 1, trouble, [{ id: refused, result: answer }], 1000),
      ).toBe(true);
      expect(await store.hostTrouble("q1")).toEqual(trouble);
      expect((await store.loadDriverState("q1")).hostTrouble).toEqual(trouble);
      expect(await store.command(refused)).toMatchObject({ appliedAt: 1000, result: answer });
      expect((await store.pendingCommands("q1", 10)).map((c) => c.id)).toEqual([kept]);
      // A stale holder writes nothing; the current one clears it.
      await store.acquireLease("q1", "b", 1600, 500);
      expect(await store.recordHostTrouble("q1", 1, null, [], 1600)).toBe(false);
      expect(await store.hostTrouble("q1")).toEqual(trouble);
      expect(await store.recordHostTrouble("q1", 2, null, [], 1600)).toBe(true);
      expect(await store.hostTrouble("q1")).toBeNull();
    });

    it("an owner coming back after its own lease expired takes it over anew", async () => {
      await store.acquireLease("q1", "a", 1000, 500);
      expect((await store.acquireLease("q1", "a", 1500, 500))?.epoch).toBe(2);
    });

    it("release needs the owner and epoch; it keeps the epoch, so the next holder bumps it", async () => {
      const lease = await store.acquireLease("q1", "a", 1000, 500);
      expect(lease?.epoch).toBe(1);
      await store.releaseLease("q1", "b", 1);
      await store.releaseLease("q1", "a", 2);
      expect(await store.acquireLease("q1", "b", 1100, 500)).toBeUndefined();
      await store.releaseLease("q1", "a", 1);
      const row = await database.handle.db
        .selectFrom("mqRuntime")
        .select(["leaseOwner", "leaseEpoch", "leaseExpiresAt"])
        .where("queueId", "=", "q1")
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ leaseOwner: "a", leaseEpoch: 1, leaseExpiresAt: 0 });
      expect(await store.acquireLease("q1", "b", 1100, 500)).toEqual({
        queueId: "q1",
        owner: "b",
        epoch: 2,
        expiresAt: 1600,
      });
    });

    it("concurrent acquires on one pool: exactly one winner", async () => {
      const owners = ["a", "b", "c", "d", "e", "f", "g", "h"];
      const results = await Promise.all(owners.map((o) => store.acquireLease("q1", o, 1000, 500)));
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      expect(winners[0]?.epoch).toBe(1);
    });

    it("concurrent acquires from two connections, on a new row and on an expired one: exactly one winner", async () => {
      const other = openSecondHandle();
      try {
        const stores = [store, new MergeQueueRuntimeStore(other.db, other.dialect)];
        for (let round = 0; round < 10; round++) {
          const now = 1000 * (round + 1);
          const results = await Promise.all(
            stores.flatMap((s, i) =>
              [0, 1, 2].map((j) =>
                s.acquireLease("q1", `owner-${String(i)}-${String(j)}`, now, 999),
              ),
            ),
          );
          const winners = results.filter((r) => r !== undefined);
          expect(winners).toHaveLength(1);
          // Every round is a takeover of an expired (or missing) lease: one bump per round.
          expect(winners[0]?.epoch).toBe(round + 1);
        }
      } finally {
        await other.close();
      }
    });
  });

  describe("commit", () => {
    it("writes snapshot, entries, transitions, runs and applied commands; everything round-trips", async () => {
      const lease = await store.acquireLease("q1", "a", 1000, 60_000);
      const commandId = await store.enqueueCommand("q1", { type: "submit", prNumber: 101 }, 900);
      const e1 = entry({
        id: "e1",
        seq: 1,
        usedDefaultPriority: false,
        noBatch: true,
        priorityValue: 0,
        readiness: {
          mergeability: "in_progress",
          baseBranchMatches: false,
          requiresImpactedTargets: true,
          impactedTargets: ["//a:b", "//c"],
        },
      });
      const e2 = entry({
        id: "e2",
        seq: 2,
        readiness: { ...e1.readiness, impactedTargets: "ALL" },
      });
      const t1 = transition({ entryId: "e1", at: 1001, detail: "first" });
      const t2 = transition({
        entryId: "e1",
        at: 1002,
        from: "pending",
        to: "testing",
        reason: "test_run_started",
        actor: { kind: "queue" },
        runId: "r1",
      });
      const t3 = transition({ entryId: "e2", at: 1003, actor: { kind: "git_host" } });
      const r1 = run({ id: "r1" });
      const r2 = run({
        id: "r2",
        kind: "bisection",
        status: "failed",
        testBranch: null,
        testBranchSha: null,
        requiredStatuses: [],
        requiredStatusesSource: null,
        checks: [],
        finishedAt: 3000,
      });
      const snapshot = { queueId: "q1", entries: { e1: { seq: 1 } }, order: ["e1"], nested: [1] };
      expect(
        await store.commit(
          step({
            epoch: lease?.epoch ?? 0,
            now: 5000,
            snapshot,
            wakeAt: 9000,
            entries: [e1, e2],
            transitions: [t1, t2, t3],
            runs: [r1, r2],
            appliedCommands: [{ id: commandId, result: { ok: true } }],
          }),
        ),
      ).toBe(true);

      expect(await store.loadSnapshot("q1")).toEqual({ snapshot, wakeAt: 9000 });
      expect(await store.latestEntry("q1", 101)).toEqual(e1);
      expect(await store.activeEntries("q1")).toEqual([e1, e2]);
      expect(await store.transitions("e1")).toEqual([t1, t2]);
      expect(await store.transitions("e2")).toEqual([t3]);
      expect(await store.run("q1", "r1")).toEqual(r1);
      expect(await store.run("q1", "r2")).toEqual(r2);
      expect(await store.command(commandId)).toEqual({
        id: commandId,
        queueId: "q1",
        payload: { type: "submit", prNumber: 101 },
        createdAt: 900,
        appliedAt: 5000,
        result: { ok: true },
      });
      expect(await store.pendingCommands("q1", 10)).toEqual([]);
      const runtime = await database.handle.db
        .selectFrom("mqRuntime")
        .select("updatedAt")
        .executeTakeFirstOrThrow();
      expect(runtime.updatedAt).toBe(5000);
    });

    it("a stale epoch writes nothing at all", async () => {
      await store.acquireLease("q1", "a", 1000, 500);
      const commandId = await store.enqueueCommand("q1", { type: "cancel", prNumber: 101 }, 900);
      const e1 = entry({ id: "e1", seq: 1 });
      expect(
        await store.commit(
          step({
            epoch: 1,
            snapshot: { v: 1 },
            wakeAt: 7000,
            entries: [e1],
            transitions: [transition({ entryId: "e1", at: 1001 })],
            runs: [run({ id: "r1" })],
          }),
        ),
      ).toBe(true);
      await store.acquireLease("q1", "b", 1500, 500);
      const before = await dumpTables();

      const stale = step({
        epoch: 1,
        now: 6000,
        snapshot: { v: 2 },
        wakeAt: 1,
        entries: [{ ...e1, state: "merged", concludedAt: 6000 }, entry({ id: "e2", seq: 2 })],
        transitions: [transition({ entryId: "e1", at: 6000, to: "merged" })],
        runs: [run({ id: "r1", status: "passed" }), run({ id: "r2" })],
        appliedCommands: [{ id: commandId, result: { ok: true } }],
      });
      expect(await store.commit(stale)).toBe(false);
      // An epoch from the future is as stale as one from the past.
      expect(await store.commit({ ...stale, epoch: 3 })).toBe(false);
      expect(await dumpTables()).toEqual(before);
      expect(before.entries).toHaveLength(1);
      expect(before.commands).toHaveLength(1);

      // A queue whose lease was never taken has no row to commit to.
      expect(await store.commit(step({ queueId: "q2", epoch: 0, snapshot: { v: 1 } }))).toBe(false);
      expect(await store.commit(step({ queueId: "q2", epoch: 1, snapshot: { v: 1 } }))).toBe(false);
      expect(await dumpTables()).toEqual(before);
    });

    it("upserts: a second commit of an entry or run rewrites every column", async () => {
      const lease = await store.acquireLease("q1", "a", 1000, 60_000);
      const epoch = lease?.epoch ?? 0;
      const e1 = entry({ id: "e1", seq: 1 });
      await store.commit(step({ epoch, entries: [e1], runs: [run({ id: "r1" })] }));
      const e1Merged: EntryRecord = {
        ...e1,
        prTitle: "renamed",
        prSha: "sha-new",
        state: "merged",
        stateChangedAt: 7000,
        concludedAt: 7000,
        priorityValue: 10,
        usedDefaultPriority: false,
        noBatch: true,
        readiness: { ...e1.readiness, mergeability: "not_mergeable", impactedTargets: [] },
        lastReason: "merged_by_queue",
      };
      const r1Passed = run({
        id: "r1",
        status: "passed",
        finishedAt: 7000,
        checks: [{ name: "ci/build", conclusion: "success", url: null }],
      });
      expect(await store.commit(step({ epoch, entries: [e1Merged], runs: [r1Passed] }))).toBe(true);
      expect(await store.latestEntry("q1", e1.prNumber)).toEqual(e1Merged);
      expect(await store.activeEntries("q1")).toEqual([]);
      expect(await store.run("q1", "r1")).toEqual(r1Passed);
      const counts = await dumpTables();
      expect([counts.entries.length, counts.runs.length]).toEqual([1, 1]);

      // The same record twice in one step: the last version wins (on both dialects).
      const e1Again = { ...e1Merged, lastReason: "again" };
      expect(await store.commit(step({ epoch, entries: [e1Merged, e1Again] }))).toBe(true);
      expect((await store.latestEntry("q1", e1.prNumber))?.lastReason).toBe("again");
    });

    it("run ids are per queue; an entry id of another queue is refused and nothing is written", async () => {
      const l1 = await store.acquireLease("q1", "a", 1000, 60_000);
      const l2 = await store.acquireLease("q2", "a", 1000, 60_000);
      await store.commit(step({ epoch: l1?.epoch ?? 0, entries: [entry({ id: "e1", seq: 1 })] }));
      const r2 = run({ id: "r1", queueId: "q2", baseSha: "other" });
      expect(
        await store.commit(
          step({ queueId: "q2", epoch: l2?.epoch ?? 0, snapshot: { q: 2 }, runs: [r2] }),
        ),
      ).toBe(true);
      await store.commit(step({ epoch: l1?.epoch ?? 0, runs: [run({ id: "r1" })] }));
      expect((await store.run("q1", "r1"))?.baseSha).toBe("base1");
      expect(await store.run("q2", "r1")).toEqual(r2);
      expect(await store.run("q2", "r9")).toBeUndefined();

      const before = await dumpTables();
      await expect(
        store.commit(
          step({
            queueId: "q2",
            epoch: l2?.epoch ?? 0,
            snapshot: { q: "changed" },
            entries: [entry({ id: "e1", seq: 1, queueId: "q2" })],
          }),
        ),
      ).rejects.toThrow(/another queue: e1/);
      expect(await dumpTables()).toEqual(before);
      // Records of another queue than the step's are a programming error.
      await expect(
        store.commit(step({ epoch: l1?.epoch ?? 0, runs: [run({ id: "r5", queueId: "q2" })] })),
      ).rejects.toThrow(/cannot write records of queue q2/);
    });
  });

  it("runs by test branch: the newest on the branch, at the commit when one is given; fail first round-trips", async () => {
    const lease = await store.acquireLease("q1", "a", 1000, 60_000);
    const epoch = lease?.epoch ?? 0;
    const slot = "mainline-merge/main/slot-0";
    const r1 = run({ id: "r1", testBranch: slot, testBranchSha: "s1", startedAt: 1000 });
    const r2 = run({
      id: "r2",
      kind: "bisection",
      testBranch: slot,
      testBranchSha: "s2",
      startedAt: 3000,
      failFirst: { fromRunId: "r0", checks: ["test", "lint"] },
    });
    const r3 = run({ id: "r3", testBranch: "mainline-merge/main/r3", startedAt: 4000 });
    expect(await store.commit(step({ epoch, runs: [r1, r2, r3] }))).toBe(true);
    expect(await store.runOnTestBranch("q1", slot)).toEqual(r2);
    expect(await store.runOnTestBranch("q1", slot, "s1")).toEqual(r1);
    expect(await store.runOnTestBranch("q1", slot, "s3")).toBeUndefined();
    expect(await store.runOnTestBranch("q2", slot)).toBeUndefined();
    expect((await store.run("q1", "r2"))?.failFirst).toEqual({
      fromRunId: "r0",
      checks: ["test", "lint"],
    });
    expect(await store.run("q1", "r1")).not.toHaveProperty("failFirst");

    // Migration 0029: runs from before it run nothing first; down removes the column.
    const db = database.handle.db as unknown as Kysely<unknown>;
    const types = columnTypes(database.handle.dialect);
    await runFailFirst.down(db, types);
    await expect(store.commit(step({ epoch, runs: [r1] }))).rejects.toThrow(/fail_first/);
    await runFailFirst.up(db, types);
    expect(await store.run("q1", "r2")).toEqual({ ...r2, failFirst: undefined });
    expect(await store.runOnTestBranch("q1", slot)).toEqual({ ...r2, failFirst: undefined });
  });

  it("snapshots: none before a commit (even with a lease); then the last one committed", async () => {
    expect(await store.loadSnapshot("q1")).toBeUndefined();
    const lease = await store.acquireLease("q1", "a", 1000, 500);
    expect(await store.loadSnapshot("q1")).toBeUndefined();
    await store.commit(step({ epoch: lease?.epoch ?? 0, snapshot: { n: 1 }, wakeAt: 3000 }));
    await store.commit(step({ epoch: lease?.epoch ?? 0, snapshot: { n: 2 }, wakeAt: null }));
    expect(await store.loadSnapshot("q1")).toEqual({ snapshot: { n: 2 }, wakeAt: null });
  });

  it("commands: ids ascend; pending ones in order, limited; applied ones leave the inbox", async () => {
    const ids = [
      await store.enqueueCommand("q1", { type: "submit", prNumber: 1 }, 10),
      await store.enqueueCommand("q2", { type: "reload_settings" }, 11),
      await store.enqueueCommand("q1", { type: "cancel", prNumber: 1 }, 12),
      await store.enqueueCommand("q1", { type: "restart", prNumber: 2 }, 13),
    ];
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
    const [c1, c2, c3, c4] = ids as [number, number, number, number];
    expect((await store.pendingCommands("q1", 10)).map((c) => c.id)).toEqual([c1, c3, c4]);
    expect((await store.pendingCommands("q1", 2)).map((c) => c.id)).toEqual([c1, c3]);
    expect(await store.pendingCommands("q2", 10)).toEqual([
      {
        id: c2,
        queueId: "q2",
        payload: { type: "reload_settings" },
        createdAt: 11,
        appliedAt: null,
        result: null,
      },
    ]);
    expect(await store.command(c2 + 1000)).toBeUndefined();

    const lease = await store.acquireLease("q1", "a", 1000, 500);
    const refused = {
      ok: false,
      code: "not_found",
      message: "Pull request #1 is not in the queue.",
    } as const;
    await store.commit(
      step({
        epoch: lease?.epoch ?? 0,
        now: 1100,
        appliedCommands: [
          { id: c1, result: { ok: true } },
          { id: c3, result: refused },
          // Another queue's command is not this step's to answer.
          { id: c2, result: { ok: true } },
        ],
      }),
    );
    expect((await store.pendingCommands("q1", 10)).map((c) => c.id)).toEqual([c4]);
    expect(await store.command(c3)).toMatchObject({ appliedAt: 1100, result: refused });
    expect(await store.command(c2)).toMatchObject({ appliedAt: null, result: null });
  });

  it("commands stored together: each id answers its own command, short list or long", async () => {
    for (const count of [1, 3, 450]) {
      const commands = Array.from({ length: count }, (_, i) => ({
        queueId: i % 3 === 0 ? "q2" : "q1",
        payload: { type: "submit", prNumber: count * 1000 + i },
      }));
      const ids = await store.enqueueCommands(commands, 50);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
      for (const [i, id] of ids.entries()) {
        expect(await store.command(id)).toMatchObject({
          queueId: commands[i]?.queueId,
          payload: commands[i]?.payload,
          createdAt: 50,
        });
      }
    }
  });

  it("due queues: pending commands or a wake-up time reached, each queue once", async () => {
    expect(await store.dueQueues(5000)).toEqual([]);
    const lease = await store.acquireLease("q1", "a", 1000, 500);
    // A lease alone (no wake-up time) makes nothing due.
    expect(await store.dueQueues(5000)).toEqual([]);
    await store.commit(step({ epoch: lease?.epoch ?? 0, wakeAt: 3000 }));
    expect(await store.dueQueues(2999)).toEqual([]);
    expect(await store.dueQueues(3000)).toEqual(["q1"]);
    const c1 = await store.enqueueCommand("q1", { type: "reload_settings" }, 10);
    await store.enqueueCommand("q1", { type: "reload_settings" }, 11);
    expect(await store.dueQueues(3000)).toEqual(["q1"]);
    expect(await store.dueQueues(0)).toEqual(["q1"]);
    const c3 = await store.enqueueCommand("q2", { type: "reload_settings" }, 12);
    expect(await store.dueQueues(3000)).toEqual(["q1", "q2"]);
    await store.commit(
      step({
        epoch: lease?.epoch ?? 0,
        wakeAt: null,
        appliedCommands: [{ id: c1, result: { ok: true } }],
      }),
    );
    // One q1 command still pending.
    expect(await store.dueQueues(3000)).toEqual(["q1", "q2"]);
    const pending = await store.pendingCommands("q1", 10);
    await store.commit(
      step({
        epoch: lease?.epoch ?? 0,
        appliedCommands: pending.map((c) => ({ id: c.id, result: { ok: true } })),
      }),
    );
    expect(await store.dueQueues(1_000_000)).toEqual(["q2"]);
    expect((await store.command(c3))?.appliedAt).toBeNull();
  });

  describe("entries", () => {
    /** q1: PR 101 submitted twice (seq 1 failed, seq 4 active), 102 merged, 103 active; q2: one. */
    async function seedEntries() {
      const l1 = await store.acquireLease("q1", "a", 1000, 60_000);
      const l2 = await store.acquireLease("q2", "a", 1000, 60_000);
      const entries = [
        entry({
          id: "e1",
          seq: 1,
          prNumber: 101,
          prHeadBranch: "feat",
          state: "failed",
          concludedAt: 2000,
        }),
        entry({
          id: "e2",
          seq: 2,
          prNumber: 102,
          prHeadBranch: "other",
          state: "merged",
          concludedAt: 3000,
        }),
        entry({ id: "e3", seq: 3, prNumber: 103, prHeadBranch: "third", state: "testing" }),
        entry({ id: "e4", seq: 4, prNumber: 101, prHeadBranch: "feat", state: "pending" }),
        entry({
          id: "e5",
          seq: 5,
          prNumber: 105,
          prHeadBranch: "fifth",
          state: "failed",
          concludedAt: 4000,
        }),
      ];
      // Written out of order: reads order by seq.
      await store.commit(step({ epoch: l1?.epoch ?? 0, entries: [...entries].reverse() }));
      const q2Entry = entry({
        id: "x1",
        seq: 1,
        queueId: "q2",
        prNumber: 101,
        prHeadBranch: "feat",
      });
      await store.commit(
        step({ queueId: "q2", epoch: l2?.epoch ?? 0, snapshot: {}, entries: [q2Entry] }),
      );
      return { entries, q2Entry, epoch: l1?.epoch ?? 0 };
    }
    const ids = (records: EntryRecord[]) => records.map((e) => e.id);

    it("latest by PR number: the highest seq, of that queue", async () => {
      const { q2Entry } = await seedEntries();
      expect((await store.latestEntry("q1", 101))?.id).toBe("e4");
      expect((await store.latestEntry("q1", 102))?.id).toBe("e2");
      expect(await store.latestEntry("q2", 101)).toEqual(q2Entry);
      expect(await store.latestEntry("q1", 999)).toBeUndefined();
    });

    it("latest by head branch: an open entry first, else the last concluded", async () => {
      const { epoch } = await seedEntries();
      expect((await store.latestEntryByBranch("q1", "feat"))?.id).toBe("e4");
      expect((await store.latestEntryByBranch("q1", "other"))?.id).toBe("e2");
      expect(await store.latestEntryByBranch("q1", "nope")).toBeUndefined();
      // An open entry wins over a later concluded one of the same branch.
      await store.commit(
        step({
          epoch,
          entries: [
            entry({ id: "e6", seq: 6, prHeadBranch: "other", state: "not_ready" }),
            entry({
              id: "e7",
              seq: 7,
              prHeadBranch: "other",
              state: "cancelled",
              concludedAt: 5000,
            }),
          ],
        }),
      );
      expect((await store.latestEntryByBranch("q1", "other"))?.id).toBe("e6");
      // Once none is open: the highest seq.
      await store.commit(
        step({
          epoch,
          entries: [
            entry({ id: "e6", seq: 6, prHeadBranch: "other", state: "failed", concludedAt: 6000 }),
          ],
        }),
      );
      expect((await store.latestEntryByBranch("q1", "other"))?.id).toBe("e7");
    });

    it("active entries: not concluded, by seq", async () => {
      await seedEntries();
      expect(ids(await store.activeEntries("q1"))).toEqual(["e3", "e4"]);
      expect(ids(await store.activeEntries("q2"))).toEqual(["x1"]);
    });

    it("listing: by seq, filters combined, paged by cursor", async () => {
      await seedEntries();
      expect(ids(await store.listEntries("q1", { take: 100 }))).toEqual([
        "e1",
        "e2",
        "e3",
        "e4",
        "e5",
      ]);
      expect(ids(await store.listEntries("q1", { state: "failed", take: 100 }))).toEqual([
        "e1",
        "e5",
      ]);
      expect(ids(await store.listEntries("q1", { concludedSince: 3000, take: 100 }))).toEqual([
        "e2",
        "e5",
      ]);
      expect(
        ids(await store.listEntries("q1", { state: "failed", concludedSince: 3000, take: 100 })),
      ).toEqual(["e5"]);
      expect(
        ids(await store.listEntries("q1", { state: "failed", afterSeq: 1, take: 100 })),
      ).toEqual(["e5"]);
      expect(ids(await store.listEntries("q1", { state: "merged", afterSeq: 2, take: 1 }))).toEqual(
        [],
      );

      const pages: string[][] = [];
      let cursor: number | undefined;
      for (;;) {
        const page = await store.listEntries("q1", {
          take: 2,
          ...(cursor === undefined ? {} : { afterSeq: cursor }),
        });
        if (page.length === 0) break;
        pages.push(ids(page));
        cursor = page.at(-1)?.seq;
      }
      expect(pages).toEqual([["e1", "e2"], ["e3", "e4"], ["e5"]]);
    });

    it("each pull request once: its latest submission, filtered and paged as such", async () => {
      await seedEntries();
      const latest = (query: Omit<EntryListQuery, "latestOnly">) =>
        store.listEntries("q1", { ...query, latestOnly: true }).then(ids);
      // PR 101's first submission (e1, failed) gives way to its second (e4).
      expect(await latest({ take: 100 })).toEqual(["e2", "e3", "e4", "e5"]);
      expect(await latest({ state: "failed", take: 100 })).toEqual(["e5"]);
      expect(await latest({ take: 2, afterSeq: 2 })).toEqual(["e3", "e4"]);
      expect(await latest({ take: 100, order: "newest" })).toEqual(["e5", "e4", "e3", "e2"]);
      expect(ids(await store.listEntries("q2", { take: 100, latestOnly: true }))).toEqual(["x1"]);
    });

    it("recently concluded: each pull request's latest submission, when it concluded", async () => {
      const { epoch } = await seedEntries();
      // PR 101 is back in the queue (e4): its failed first submission is not listed.
      expect(ids(await store.recentlyConcluded("q1", 10))).toEqual(["e5", "e2"]);
      await store.commit(
        step({
          epoch,
          entries: [entry({ id: "e4", seq: 4, prNumber: 101, state: "merged", concludedAt: 4500 })],
        }),
      );
      expect(ids(await store.recentlyConcluded("q1", 10))).toEqual(["e4", "e5", "e2"]);
      expect(ids(await store.recentlyConcluded("q1", 1))).toEqual(["e4"]);
    });
  });

  it("transitions: an entry's by insertion order; a queue's since a time", async () => {
    const l1 = await store.acquireLease("q1", "a", 1000, 60_000);
    const l2 = await store.acquireLease("q2", "a", 1000, 60_000);
    const t = [
      transition({ entryId: "e1", at: 100 }),
      transition({ entryId: "e2", at: 150 }),
      // Same time, and a time earlier than the last: insertion order still decides.
      transition({ entryId: "e1", at: 200, from: "pending", to: "testing", reason: "ready" }),
      transition({ entryId: "e1", at: 200, from: "testing", to: "merged", runId: "r1" }),
      transition({ entryId: "e1", at: 190, from: "merged", to: "cancelled", detail: "x" }),
    ];
    await store.commit(step({ epoch: l1?.epoch ?? 0, transitions: t.slice(0, 3) }));
    await store.commit(step({ epoch: l1?.epoch ?? 0, transitions: t.slice(3) }));
    const other = transition({ entryId: "x1", at: 500, queueId: "q2" });
    await store.commit(
      step({ queueId: "q2", epoch: l2?.epoch ?? 0, snapshot: {}, transitions: [other] }),
    );
    expect(await store.transitions("e1")).toEqual([t[0], t[2], t[3], t[4]]);
    expect(await store.transitions("nope")).toEqual([]);
    expect(await store.transitionsSince("q1", 150)).toEqual([t[1], t[2], t[3], t[4]]);
    expect(await store.transitionsSince("q1", 195)).toEqual([t[2], t[3]]);
    expect(await store.transitionsSince("q1", 201)).toEqual([]);
    expect(await store.transitionsSince("q2", 0)).toEqual([other]);
  });

  it("deleting the merge queue deletes its engine rows, and only its", async () => {
    for (const queueId of ["q1", "q2"]) {
      const lease = await store.acquireLease(queueId, "a", 1000, 60_000);
      await store.enqueueCommand(queueId, { type: "reload_settings" }, 10);
      await store.commit(
        step({
          queueId,
          epoch: lease?.epoch ?? 0,
          wakeAt: 2000,
          entries: [entry({ id: `${queueId}-e1`, seq: 1, queueId })],
          transitions: [transition({ entryId: `${queueId}-e1`, at: 1, queueId })],
          runs: [run({ id: "r1", queueId })],
        }),
      );
    }
    const before = await dumpTables();
    expect(
      await new MergeQueueStore(database.handle.db, database.handle.dialect).delete("q1"),
    ).toBe(true);
    const after = await dumpTables();
    for (const table of ["runtime", "entries", "transitions", "runs", "commands"] as const) {
      expect(before[table].map((r) => r.queueId)).toContain("q1");
      expect(after[table]).toEqual(before[table].filter((r) => r.queueId === "q2"));
    }
    expect(await store.dueQueues(5000)).toEqual(["q2"]);
  });

  // Row locks exist only on PostgreSQL; SQLite has one writer, so the test is registered there only.
  (TEST_DIALECT === "postgres" ? it : () => undefined)(
    "PostgreSQL: a step waits for a takeover in progress and is then refused",
    async () => {
      const lease = await store.acquireLease("q1", "a", 1000, 500);
      expect(await store.commit(step({ epoch: lease?.epoch ?? 0, snapshot: { v: 1 } }))).toBe(true);
      const url = database.env.DATABASE_URL ?? "";
      const takeover = new pg.Client({ connectionString: url });
      const watcher = new pg.Client({ connectionString: url });
      await takeover.connect();
      await watcher.connect();
      try {
        await takeover.query("begin");
        await takeover.query(
          "update mq_runtime set lease_owner = 'b', lease_epoch = lease_epoch + 1 where queue_id = 'q1'",
        );
        const committing = store.commit(
          step({
            epoch: lease?.epoch ?? 0,
            snapshot: { v: 2 },
            entries: [entry({ id: "e1", seq: 1 })],
          }),
        );
        // Wait until the step is blocked on the runtime row.
        for (let i = 0; ; i++) {
          const { rows } = await watcher.query<{ n: string }>(
            `select count(*) as n from pg_stat_activity
             where wait_event_type = 'Lock' and query like '%mq_runtime%for update%'
             and datname = current_database()`,
          );
          if (Number(rows[0]?.n) > 0) break;
          if (i > 200) throw new Error("the step never waited for the row");
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await takeover.query("commit");
        expect(await committing).toBe(false);
        expect(await store.loadSnapshot("q1")).toEqual({ snapshot: { v: 1 }, wakeAt: null });
        expect(await store.activeEntries("q1")).toEqual([]);
      } finally {
        await takeover.end();
        await watcher.end();
      }
    },
  );
});
