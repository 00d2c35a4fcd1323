/**
 * The engine's command path under concurrency (issue 13 item 11): submissions arriving together
 * are stored in one inbox transaction, answered by the step that committed them (no polling of
 * the stored answer), acknowledged exactly once, and kept across a crash; the lease is not
 * rewritten and the snapshot not re-read on every step, yet a process that lost the queue to
 * another reads what that one stored.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/connection.js";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { MergeQueueEngine, type EngineOptions } from "../../src/mergequeue/engine.js";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import type { QueueCommand, QueueSnapshot } from "../../src/mergequeue/model.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

const repo = { host: "github.com", owner: "acme", name: "app" };
const actor = { kind: "user" as const, name: "dev" };
const QUEUE = "queue-1";
const PRS = 60;

const submit = (prNumber: number): QueueCommand => ({
  type: "submit",
  prNumber,
  priority: null,
  noBatch: false,
  actor,
});

/** A submission as `accept` takes it. */
const submission = (prNumber: number) => ({
  type: "submit" as const,
  prNumber,
  priority: null as number | null,
  noBatch: false,
  actor,
});

/** The real store, counting the calls the command path makes. */
class CountingStore extends MergeQueueRuntimeStore {
  readonly calls = {
    enqueueCommands: [] as number[],
    command: 0,
    acquireLease: 0,
    loadDriverState: 0,
    issueIds: 0,
  };

  override enqueueCommands(
    commands: readonly { queueId: string; payload: unknown }[],
    now: number,
  ): Promise<number[]> {
    this.calls.enqueueCommands.push(commands.length);
    return super.enqueueCommands(commands, now);
  }

  override command(id: number) {
    this.calls.command += 1;
    return super.command(id);
  }

  override acquireLease(queueId: string, owner: string, now: number, ttlMs: number) {
    this.calls.acquireLease += 1;
    return super.acquireLease(queueId, owner, now, ttlMs);
  }

  override loadDriverState(queueId: string) {
    this.calls.loadDriverState += 1;
    return super.loadDriverState(queueId);
  }

  override issueIds(queueId: string, epoch: number, below: number) {
    this.calls.issueIds += 1;
    return super.issueIds(queueId, epoch, below);
  }
}

/** The in-memory host, counting the lookups of pull requests. */
class CountingHost extends MemoryGitHost {
  lookups = 0;

  override pullRequest(target: typeof repo, number: number) {
    this.lookups += 1;
    return super.pullRequest(target, number);
  }
}

let database: TestDatabase;
let host: CountingHost;
let skipped = 0;
const engines: MergeQueueEngine[] = [];
const handles: DatabaseHandle[] = [];

function engine(
  store: MergeQueueRuntimeStore,
  handle: DatabaseHandle,
  options: Partial<EngineOptions> = {},
): MergeQueueEngine {
  const created = new MergeQueueEngine(
    {
      runtime: store,
      queues: new MergeQueueStore(handle.db, handle.dialect),
      repositories: new RepositoryStore(handle.db),
      gitHost: host,
      ci: new MemoryCi(),
      clock: { now: () => Date.now() + skipped },
    },
    // Answers not handed over by a step would only be read after a minute: none is.
    { owner: "p1", pollMs: 20, answerPollMs: 60_000, ...options },
  );
  created.start();
  engines.push(created);
  return created;
}

function counting(handle: DatabaseHandle = database.handle): CountingStore {
  return new CountingStore(handle.db, handle.dialect);
}

/** Another connection to the same database, as a second server process would have. */
function secondHandle(): DatabaseHandle {
  const handle = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
  handles.push(handle);
  return handle;
}

beforeEach(async () => {
  skipped = 0;
  database = await createTestDatabase();
  host = new CountingHost();
  host.repository(repo, "base0");
  for (let n = 1; n <= PRS; n++) host.addPullRequest(repo, { number: n });
  const db = database.handle.db;
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const repository = await new RepositoryStore(db).ensure("o1", repo, 1);
  await new MergeQueueStore(db, database.handle.dialect).insert({
    id: QUEUE,
    repositoryId: repository.id,
    targetBranch: "main",
    configuration: { ...initialConfiguration({}), state: "paused" },
    createdAt: 1,
  });
});

afterEach(async () => {
  for (const e of engines.splice(0)) await e.stop();
  for (const h of handles.splice(0)) await h.close();
  await database.cleanup();
});

async function storedCommands() {
  return database.handle.db
    .selectFrom("mqCommands")
    .select(["id", "payload", "appliedAt", "result"])
    .orderBy("id")
    .execute();
}

async function submissionsOf(prNumber: number): Promise<number> {
  const rows = await database.handle.db
    .selectFrom("mqTransitions")
    .innerJoin("mqEntries", "mqEntries.id", "mqTransitions.entryId")
    .select("mqTransitions.id")
    .where("mqEntries.queueId", "=", QUEUE)
    .where("mqEntries.prNumber", "=", prNumber)
    .where("mqTransitions.fromState", "is", null)
    .execute();
  return rows.length;
}

describe("the engine's command path, on a real database", () => {
  it("stores fifty concurrent submissions in one inbox transaction, answers each once at the commit, and keeps them across a crash", async () => {
    const crashed = secondHandle();
    const store = counting(crashed);
    const first = engine(store, crashed, { leaseMs: 60_000 });
    const numbers = Array.from({ length: 50 }, (_, i) => i + 1);
    const answers = await Promise.all(numbers.map((n) => first.execute(QUEUE, submit(n))));

    expect(answers).toEqual(numbers.map(() => ({ ok: true })));
    // Sent together, stored together: one transaction (one wait for the disk) for all fifty.
    expect(store.calls.enqueueCommands).toEqual([50]);
    // Every answer came from the step that committed it, none from reading the stored answer.
    expect(store.calls.command).toBe(0);
    const commands = await storedCommands();
    expect(commands).toHaveLength(50);
    for (const command of commands) {
      expect(command.appliedAt).not.toBeNull();
      expect(JSON.parse(command.result ?? "null")).toEqual({ ok: true });
    }

    // The process dies without a word (its connection gone, its lease never released); another
    // takes over once the lease has expired and finds every acknowledged submission.
    await crashed.close();
    handles.splice(handles.indexOf(crashed), 1);
    skipped = 120_000;
    const second = engine(counting(), database.handle, { owner: "p2" });
    expect(await second.execute(QUEUE, submit(51))).toEqual({ ok: true });
    const active = await new MergeQueueRuntimeStore(
      database.handle.db,
      database.handle.dialect,
    ).activeEntries(QUEUE);
    expect(active.map((e) => e.prNumber).sort((a, b) => a - b)).toEqual([...numbers, 51]);
    for (const n of [...numbers, 51]) expect(await submissionsOf(n)).toBe(1);
    const stored = await new MergeQueueRuntimeStore(
      database.handle.db,
      database.handle.dialect,
    ).loadSnapshot(QUEUE);
    expect(Object.keys((stored?.snapshot as QueueSnapshot).entries)).toHaveLength(51);
  });

  it("a command that cannot be stored fails alone; those stored with it are applied", async () => {
    const store = counting();
    const e = engine(store, database.handle);
    const results = await Promise.allSettled([
      e.execute(QUEUE, submit(1)),
      e.execute("no-such-queue", submit(2)),
      e.execute(QUEUE, submit(3)),
    ]);
    expect(results[0]).toEqual({ status: "fulfilled", value: { ok: true } });
    expect(results[1].status).toBe("rejected");
    expect(results[2]).toEqual({ status: "fulfilled", value: { ok: true } });
    expect((await storedCommands()).map((c) => JSON.parse(c.payload) as QueueCommand)).toEqual([
      submit(1),
      submit(3),
    ]);
  });

  it("a process that keeps driving a queue takes its lease once, reads its snapshot once, records issued ids once", async () => {
    const store = counting();
    const e = engine(store, database.handle);
    for (let n = 1; n <= 10; n++) expect(await e.execute(QUEUE, submit(n))).toEqual({ ok: true });
    expect(store.calls.acquireLease).toBe(1);
    expect(store.calls.loadDriverState).toBe(1);
    // Ten entries' ids (and the runs'), well within one block of issued ids.
    expect(store.calls.issueIds).toBe(1);
    const stored = await store.loadSnapshot(QUEUE);
    expect(Object.keys((stored?.snapshot as QueueSnapshot).entries)).toHaveLength(10);
  });

  it("a process that lost the queue to another reads what that one stored before driving again", async () => {
    // Each reads the answers the other's steps stored.
    const options = { leaseMs: 1_000, answerPollMs: 50 };
    const a = engine(counting(), database.handle, { owner: "a", ...options });
    const other = secondHandle();
    const b = engine(counting(other), other, { owner: "b", ...options });
    expect(await a.execute(QUEUE, submit(1))).toEqual({ ok: true });
    skipped += 5_000; // a's lease is over: b takes the queue
    expect(await b.execute(QUEUE, submit(2))).toEqual({ ok: true });
    skipped += 5_000; // and b's: whoever drives next must start from what b stored
    expect(await a.execute(QUEUE, submit(3))).toEqual({ ok: true });
    expect(await b.execute(QUEUE, submit(4))).toEqual({ ok: true });

    const store = new MergeQueueRuntimeStore(database.handle.db, database.handle.dialect);
    const stored = await store.loadSnapshot(QUEUE);
    const entries = Object.values((stored?.snapshot as QueueSnapshot).entries);
    expect(entries.map((entry) => entry.pr.number).sort()).toEqual([1, 2, 3, 4]);
    for (const n of [1, 2, 3, 4]) expect(await submissionsOf(n)).toBe(1);
  });

  it("a command a step applies before its store has returned (the insert committed, the answer still on its way) is answered at once", async () => {
    // On PostgreSQL a step on another connection can read a command between its commit and the
    // moment the insert's answer reaches this process; here the store's return is held back on
    // purpose, while the engine polls for due queues every 20 ms.
    class SlowToReturn extends CountingStore {
      override async enqueueCommands(
        commands: readonly { queueId: string; payload: unknown }[],
        now: number,
      ): Promise<number[]> {
        const ids = await super.enqueueCommands(commands, now);
        await new Promise((resolve) => setTimeout(resolve, 200));
        return ids;
      }
    }
    const store = new SlowToReturn(database.handle.db, database.handle.dialect);
    const e = engine(store, database.handle);
    const started = Date.now();
    for (let n = 1; n <= 3; n++) expect(await e.execute(QUEUE, submit(n))).toEqual({ ok: true });
    // Each answer came from the step (answerPollMs is a minute: a poll would have timed out).
    expect(store.calls.command).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("a change to a pull request the queue does not hold is answered without reading it from the git host", async () => {
    const e = engine(counting(), database.handle);
    expect(await e.execute(QUEUE, submit(1))).toEqual({ ok: true });
    const lookups = host.lookups;
    // Opened, pushed to or closed elsewhere in the repository: nothing for this queue.
    await e.notify(QUEUE, { type: "pr_changed", prNumber: 7 });
    await e.idle();
    expect((await storedCommands()).every((c) => c.appliedAt !== null)).toBe(true);
    expect(host.lookups).toBe(lookups);

    // A change to one it holds is read and planned.
    host.updatePullRequest(repo, 1, { state: "closed" });
    expect(await e.execute(QUEUE, { type: "pr_changed", prNumber: 1 })).toEqual({ ok: true });
    expect(host.lookups).toBe(lookups + 1);
    const entry = await new MergeQueueRuntimeStore(
      database.handle.db,
      database.handle.dialect,
    ).latestEntry(QUEUE, 1);
    expect(entry?.state).toBe("cancelled");
  });
});

describe("submissions answered once stored (accept)", () => {
  it("answers before any step applies it; a crash right after the answer loses nothing", async () => {
    const crashed = secondHandle();
    const store = counting(crashed);
    // Another process holds the lease: this one stores commands but cannot apply them.
    expect(await store.acquireLease(QUEUE, "elsewhere", Date.now(), 60_000)).toBeTruthy();
    const first = engine(store, crashed, { leaseMs: 60_000 });
    await first.accept(QUEUE, { ...submission(1), priority: 10 });
    await first.accept(QUEUE, submission(2));
    const pending = await storedCommands();
    expect(pending).toHaveLength(2);
    expect(pending.every((c) => c.appliedAt === null && c.result === null)).toBe(true);

    // The process dies before its driver ran; the next one (once the lease expired) applies them.
    await crashed.close();
    handles.splice(handles.indexOf(crashed), 1);
    skipped = 120_000;
    const second = engine(counting(), database.handle, { owner: "p2" });
    second.kick(QUEUE);
    await second.idle();
    const active = await new MergeQueueRuntimeStore(
      database.handle.db,
      database.handle.dialect,
    ).activeEntries(QUEUE);
    expect(active.map((e) => [e.prNumber, e.priorityValue]).sort()).toEqual([
      [1, 10],
      [2, 100],
    ]);
    for (const n of [1, 2]) expect(await submissionsOf(n)).toBe(1);
  });

  it("accepted submissions are applied at the next step; a pull request closed meanwhile shows as cancelled", async () => {
    const e = engine(counting(), database.handle);
    host.updatePullRequest(repo, 3, { state: "closed" });
    await e.accept(QUEUE, submission(3));
    await e.accept(QUEUE, submission(4));
    await e.idle();
    const store = new MergeQueueRuntimeStore(database.handle.db, database.handle.dialect);
    expect(await store.latestEntry(QUEUE, 4)).toMatchObject({ state: "pending" });
    expect(await store.latestEntry(QUEUE, 3)).toMatchObject({
      state: "cancelled",
      lastReason: "pr_closed",
    });
    const commands = await storedCommands();
    expect(commands.map((c) => JSON.parse(c.result ?? "null") as unknown)).toEqual([
      { ok: true },
      { ok: true },
    ]);
  });
});
