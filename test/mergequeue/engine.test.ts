import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/connection.js";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { MergeQueueEngine } from "../../src/mergequeue/engine.js";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import type { QueueCommand } from "../../src/mergequeue/model.js";
import { initialConfiguration, type QueueSettings } from "../../src/mergequeue/settings.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { defined } from "../helpers/planner-harness.js";

const repo = { host: "github.com", owner: "acme", name: "app" };
const actor = { kind: "user" as const, name: "dev" };
const submit = (prNumber: number): QueueCommand => ({
  type: "submit",
  prNumber,
  priority: null,
  noBatch: false,
  actor,
});

let database: TestDatabase;
let host: MemoryGitHost;
let ci: MemoryCi;
let queueId: string;
const engines: MergeQueueEngine[] = [];
const extraHandles: DatabaseHandle[] = [];

async function createQueue(settings: Partial<QueueSettings> = {}): Promise<void> {
  const db = database.handle.db;
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const repository = await new RepositoryStore(db).ensure("o1", repo, 1);
  queueId = "queue-1";
  await new MergeQueueStore(db, database.handle.dialect).insert({
    id: queueId,
    repositoryId: repository.id,
    targetBranch: "main",
    configuration: { ...initialConfiguration({}), ...settings },
    createdAt: 1,
  });
}

/** The engine's clock: real time, plus what a test skips ahead (batching waits). */
let skipped = 0;

function engine(
  handle: DatabaseHandle = database.handle,
  owner = "p1",
  leaseMs = 30_000,
  store = new MergeQueueRuntimeStore(handle.db, handle.dialect),
): MergeQueueEngine {
  const created = new MergeQueueEngine(
    {
      runtime: store,
      queues: new MergeQueueStore(handle.db, handle.dialect),
      repositories: new RepositoryStore(handle.db),
      gitHost: host,
      ci,
      clock: { now: () => Date.now() + skipped },
    },
    { owner, leaseMs, pollMs: 20 },
  );
  created.start();
  engines.push(created);
  return created;
}

beforeEach(async () => {
  skipped = 0;
  database = await createTestDatabase();
  host = new MemoryGitHost();
  ci = new MemoryCi();
  host.repository(repo, "base0");
  for (let n = 1; n <= 12; n++) host.addPullRequest(repo, { number: n });
});

afterEach(async () => {
  for (const e of engines.splice(0)) await e.stop();
  for (const h of extraHandles.splice(0)) await h.close();
  await database.cleanup();
});

function runtime(): MergeQueueRuntimeStore {
  return new MergeQueueRuntimeStore(database.handle.db, database.handle.dialect);
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the merge-queue engine, on a real database", () => {
  it("submits, tests on the git host and CI, merges in order, and records every step", async () => {
    await createQueue({ concurrency: 3 });
    const e = engine();
    for (const n of [1, 2, 3]) expect(await e.execute(queueId, submit(n))).toEqual({ ok: true });
    expect(ci.runsFor(queueId, [1, 2, 3])).toHaveLength(1);
    const testBranch = defined(ci.runsFor(queueId, [1, 2])[0]).testBranch;
    expect(testBranch).toMatch(/^mainline-merge\/main\//);
    for (const prs of [[1], [1, 2], [1, 2, 3]]) {
      ci.finish(queueId, defined(ci.runsFor(queueId, prs)[0]).runId, [
        { name: "test", conclusion: "success" },
      ]);
    }
    await until(() => host.mergeLog(repo).length === 3, "three merges");
    expect(host.mergeLog(repo)).toEqual([1, 2, 3]);
    await until(
      async () => (await runtime().activeEntries(queueId)).length === 0,
      "entries to conclude",
    );
    const merged = await runtime().latestEntry(queueId, 2);
    expect(merged).toMatchObject({
      state: "merged",
      lastReason: "merged_by_queue",
      prTitle: "PR 2",
    });
    const history = await runtime().transitions(defined(merged).id);
    expect(history.map((t) => t.to)).toEqual([
      "not_ready",
      "pending",
      "testing",
      "tests_passed",
      "merged",
    ]);
    const run = await runtime().run(queueId, defined(ci.runsFor(queueId, [1, 2])[0]).runId);
    expect(run).toMatchObject({
      status: "passed",
      testBranch,
      checks: [{ name: "test", conclusion: "success" }],
    });
    await until(() => host.testBranches.size === 0, "test branches to be removed");
  });

  it("answers refused commands with the planner's reason and changes nothing", async () => {
    await createQueue();
    const e = engine();
    expect(await e.execute(queueId, { type: "cancel", prNumber: 5, actor })).toMatchObject({
      ok: false,
      code: "not_found",
    });
    expect(await e.execute(queueId, submit(99))).toMatchObject({ ok: false, code: "not_found" });
    expect(await runtime().activeEntries(queueId)).toEqual([]);
  });

  it("keeps the queue's timer through steps that plan nothing (a refused command)", async () => {
    await createQueue({ batch: true, batchingMinSize: 2 });
    const e = engine();
    await e.execute(queueId, submit(1)); // waits for a second PR, at most five minutes
    const timer = (await runtime().loadSnapshot(queueId))?.wakeAt;
    expect(timer).toBeGreaterThan(Date.now());
    expect(await e.execute(queueId, submit(99))).toMatchObject({ ok: false, code: "not_found" });
    expect((await runtime().loadSnapshot(queueId))?.wakeAt).toBe(timer);
  });

  it("a failing check fails the pull request with the check named", async () => {
    await createQueue();
    const e = engine();
    await e.execute(queueId, submit(4));
    ci.finish(queueId, defined(ci.runsFor(queueId, [4])[0]).runId, [
      { name: "test", conclusion: "failure" },
      { name: "lint", conclusion: "success" },
    ]);
    await until(
      async () => (await runtime().latestEntry(queueId, 4))?.state === "failed",
      "the failure",
    );
    const failed = await runtime().latestEntry(queueId, 4);
    const history = await runtime().transitions(defined(failed).id);
    expect(history.at(-1)).toMatchObject({
      reason: "failing_required_check",
      detail: "failed: test",
    });
  });

  it("a merge that landed untested (the host says pause) fails the pull request and pauses the queue", async () => {
    await createQueue();
    const e = engine();
    const message = "landed tree differs from tested tree";
    let merges = 0;
    host.merge = () => {
      merges += 1;
      return Promise.resolve({ ok: false, reason: "rejected", message, pauseQueue: true });
    };
    for (const n of [5, 6]) await e.execute(queueId, submit(n));
    ci.finish(queueId, defined(ci.runsFor(queueId, [5])[0]).runId, [
      { name: "test", conclusion: "success" },
    ]);
    await until(
      async () => (await runtime().latestEntry(queueId, 5))?.state === "failed",
      "the failed merge",
    );
    const failed = defined(await runtime().latestEntry(queueId, 5));
    expect((await runtime().transitions(failed.id)).at(-1)).toMatchObject({
      reason: "merge_failed",
      detail: message,
    });
    await until(
      async () =>
        (await new MergeQueueStore(database.handle.db, database.handle.dialect).findById(queueId))
          ?.configuration.state === "paused",
      "the queue to pause",
    );
    // The run of #6 passes too, but nothing more is merged while the queue is paused.
    for (const run of ci.runsFor(queueId, [6])) {
      ci.finish(queueId, run.runId, [{ name: "test", conclusion: "success" }]);
    }
    await until(
      async () => (await runtime().latestEntry(queueId, 6))?.state === "tests_passed",
      "#6 to pass",
    );
    expect(merges).toBe(1);
    expect((await runtime().latestEntry(queueId, 6))?.state).not.toBe("merged");
  });

  it("the required statuses a CI resolved decide a run, and resolving none fails it", async () => {
    await createQueue();
    const e = engine();
    await e.execute(queueId, submit(4));
    ci.finish(
      queueId,
      defined(ci.runsFor(queueId, [4])[0]).runId,
      [
        { name: "test", conclusion: "success" },
        { name: "docs", conclusion: "failure" },
      ],
      { requiredStatuses: { statuses: ["test"], source: "mainline_config" } },
    );
    await until(() => host.mergeLog(repo).includes(4), "the merge despite the optional check");
    // The git host merged it before the queue's step is stored: wait for the stored run.
    const runId = defined(ci.runsFor(queueId, [4])[0]).runId;
    await until(
      async () => (await runtime().run(queueId, runId))?.status === "passed",
      "the passed run to be stored",
    );
    const run = await runtime().run(queueId, runId);
    expect(run).toMatchObject({
      requiredStatuses: ["test"],
      requiredStatusesSource: "mainline_config",
    });

    await e.execute(queueId, submit(5));
    ci.finish(
      queueId,
      defined(ci.runsFor(queueId, [5])[0]).runId,
      [{ name: "test", conclusion: "success" }],
      { requiredStatuses: { statuses: [], source: "mainline_checks" } },
    );
    await until(
      async () => (await runtime().latestEntry(queueId, 5))?.state === "failed",
      "the failure",
    );
    const failed = defined(await runtime().latestEntry(queueId, 5));
    expect(failed.lastReason).toBe("no_required_statuses");
    expect(host.mergeLog(repo)).toEqual([4]);
  });

  it("changes the git host reports reach the queue: a push to a PR cancels it, a push to the base restarts runs", async () => {
    await createQueue({ concurrency: 2 });
    const e = engine();
    await e.execute(queueId, submit(1));
    await e.execute(queueId, submit(2));
    expect(ci.runsFor(queueId, [1, 2])).toHaveLength(1);

    host.updatePullRequest(repo, 1, { headSha: "pushed-1" });
    await e.notify(queueId, { type: "pr_changed", prNumber: 1 });
    await until(
      async () => (await runtime().latestEntry(queueId, 1))?.state === "cancelled",
      "the cancellation",
    );
    expect(defined(await runtime().latestEntry(queueId, 1)).lastReason).toBe("pr_pushed_to");
    await until(() => ci.runsFor(queueId, [2]).length === 1, "#2 tested without #1");

    const head = host.push(repo, "main");
    await e.notify(queueId, { type: "branch_moved" });
    await until(() => ci.runsFor(queueId, [2]).length === 2, "#2 tested again on the new base");
    // The CI was asked before the queue's step is stored: wait for the stored run.
    const againId = defined(ci.runsFor(queueId, [2])[1]).runId;
    await until(
      async () => (await runtime().run(queueId, againId)) !== undefined,
      "the new run to be stored",
    );
    const again = await runtime().run(queueId, againId);
    expect(again?.baseSha).toBe(head);
  });

  it("a restarted server continues the queue from storage: nothing lost, nothing merged twice", async () => {
    await createQueue({ concurrency: 2 });
    const first = engine();
    for (const n of [1, 2, 3, 4]) await first.execute(queueId, submit(n));
    await first.stop();
    engines.splice(0);
    // The first process stopped and ended its 30-second lease: a new process takes over at once
    // (the wait below is far shorter than the lease).
    const second = engine(database.handle, "p2", 30_000);
    ci.autoResult = () => [{ name: "test", conclusion: "success" }];
    // Results of runs the first process started arrive at the new one.
    for (const prs of [[1], [1, 2]]) {
      ci.finish(queueId, defined(ci.runsFor(queueId, prs)[0]).runId, [
        { name: "test", conclusion: "success" },
      ]);
    }
    second.kick(queueId);
    await until(() => host.mergeLog(repo).length === 4, "all four merges");
    expect(host.mergeLog(repo)).toEqual([1, 2, 3, 4]);
  });

  it("speculationThresholdPercent: failures that stood hold back runs likely to be thrown away, also after a restart", async () => {
    await createQueue({ concurrency: 3, speculationThresholdPercent: 70 });
    const first = engine();
    const failing = [{ name: "test", conclusion: "failure" as const }];
    for (const n of [1, 2, 3]) {
      await first.execute(queueId, submit(n));
      ci.finish(queueId, defined(ci.runsFor(queueId, [n])[0]).runId, failing);
      await until(
        async () => (await runtime().latestEntry(queueId, n))?.state === "failed",
        `the failure of #${String(n)}`,
      );
    }
    await first.stop();
    engines.splice(0);
    // Three failures against the prior's ten passed units: p ≈ 0.23, so a run may have one
    // untested pull request ahead of it (0.77 ≥ 0.7), not two (0.59).
    const stored = defined(await runtime().loadSnapshot(queueId)).snapshot as {
      verdicts?: { units: number; failed: number };
    };
    expect(stored.verdicts?.failed).toBeCloseTo(2.9701, 4);
    const second = engine(database.handle, "p2");
    for (const n of [4, 5, 6]) await second.execute(queueId, submit(n));
    expect(ci.runsFor(queueId, [4])).toHaveLength(1);
    expect(ci.runsFor(queueId, [4, 5])).toHaveLength(1);
    expect(ci.runsFor(queueId, [4, 5, 6])).toHaveLength(0);
    expect((await runtime().latestEntry(queueId, 6))?.state).toBe("pending");
    // 4 passes and merges: 6 has one untested pull request ahead now, and starts.
    ci.finish(queueId, defined(ci.runsFor(queueId, [4])[0]).runId, [
      { name: "test", conclusion: "success" },
    ]);
    await until(() => ci.runsFor(queueId, [5, 6]).length === 1, "the run of 6 on top of 5");
    expect(host.mergeLog(repo)).toEqual([4]);
  });

  it("batches, bisects a failed batch through the driver, merges the rest and fails the culprit", async () => {
    await createQueue({
      concurrency: 2,
      batch: true,
      batchingMinSize: 4,
      bisectionConcurrency: 2,
      mergeMethod: "merge_commit",
    });
    const e = engine();
    // PR 3 breaks the tests wherever it is included.
    ci.autoResult = (request) => [
      { name: "test", conclusion: request.prNumbers.includes(3) ? "failure" : "success" },
    ];
    for (const n of [1, 2, 3, 4]) await e.execute(queueId, submit(n));
    // The halves proven good wait in the main queue for a batch to fill: skip the wait.
    await until(async () => {
      skipped += 6 * 60_000;
      return (await runtime().activeEntries(queueId)).length === 0;
    }, "all concluded");
    expect(host.mergeLog(repo)).toEqual([1, 2, 4]);
    const culprit = defined(await runtime().latestEntry(queueId, 3));
    expect(culprit.state).toBe("failed");
    const reasons = (await runtime().transitions(culprit.id)).map((t) => t.reason);
    expect(reasons).toContain("bisection_started");
    expect(ci.runsFor(queueId, [1, 2, 3, 4])).toHaveLength(1);
    await until(() => host.testBranches.size === 0, "test branches to be removed");
  });

  it("a pull request that does not merge onto those ahead fails as merge_conflict, naming the PR and the files", async () => {
    await createQueue({ concurrency: 2 });
    host.repository(repo).conflictsWith.set(2, [1]);
    const e = engine();
    await e.execute(queueId, submit(1));
    await e.execute(queueId, submit(2));
    // #2 could not even be put on a test branch with #1: it leaves at once, #1 goes on.
    expect(ci.runsFor(queueId, [1, 2])).toHaveLength(0);
    ci.finish(queueId, defined(ci.runsFor(queueId, [1])[0]).runId, [
      { name: "test", conclusion: "success" },
    ]);
    await until(
      async () => (await runtime().activeEntries(queueId)).length === 0,
      "both concluded",
    );
    expect(host.mergeLog(repo)).toEqual([1]);
    const conflicted = defined(await runtime().latestEntry(queueId, 2));
    const last = (await runtime().transitions(conflicted.id)).at(-1);
    expect(last).toMatchObject({ to: "failed", reason: "merge_conflict" });
    expect(last?.detail).toBe("conflicts with #1 (ahead of it in the queue): conflict.txt");
  });

  it("a conflict inside a batch evicts only the later PR; the rest merge without bisection", async () => {
    await createQueue({ batch: true, batchingMinSize: 3, bisectionConcurrency: 4 });
    host.repository(repo).conflictsWith.set(3, [1]);
    ci.autoResult = () => [{ name: "test", conclusion: "success" }];
    const e = engine();
    for (const n of [1, 2, 3]) await e.execute(queueId, submit(n));
    await until(async () => {
      skipped += 6 * 60_000;
      return (await runtime().activeEntries(queueId)).length === 0;
    }, "all concluded");
    expect(host.mergeLog(repo)).toEqual([1, 2]);
    const conflicted = defined(await runtime().latestEntry(queueId, 3));
    const reasons = (await runtime().transitions(conflicted.id)).map((t) => t.reason);
    expect(reasons).not.toContain("bisection_started");
    expect(reasons.at(-1)).toBe("merge_conflict");
    expect([...ci.started.values()].every((r) => !r.prNumbers.includes(3))).toBe(true);
  });

  it("duplicate, late and reordered CI reports are harmless", async () => {
    await createQueue({ concurrency: 2 });
    const e = engine();
    await e.execute(queueId, submit(1));
    await e.execute(queueId, submit(2));
    const run1 = defined(ci.runsFor(queueId, [1])[0]).runId;
    const run12 = defined(ci.runsFor(queueId, [1, 2])[0]).runId;
    const green = [{ name: "test", conclusion: "success" as const }];
    // The later run reports first, then the earlier one twice, then a report for a run that
    // never existed and a contradicting late report for a finished run.
    ci.finish(queueId, run12, green);
    ci.finish(queueId, run1, green);
    ci.finish(queueId, run1, green);
    ci.finish(queueId, "no-such-run", [{ name: "test", conclusion: "failure" }]);
    await until(() => host.mergeLog(repo).length === 2, "both merges");
    ci.finish(queueId, run1, [{ name: "test", conclusion: "failure" }]);
    await e.idle();
    await until(async () => (await runtime().pendingCommands(queueId, 10)).length === 0, "inbox");
    expect(host.mergeLog(repo)).toEqual([1, 2]);
    expect((await runtime().latestEntry(queueId, 1))?.state).toBe("merged");
  });

  /** A store whose commits fail (a dropped connection) while `failing` says so. */
  class FailingCommits extends MergeQueueRuntimeStore {
    failing = 0;
    override commit(step: Parameters<MergeQueueRuntimeStore["commit"]>[0]): Promise<boolean> {
      if (this.failing > 0) {
        this.failing -= 1;
        return Promise.reject(new Error("Connection terminated unexpectedly"));
      }
      return super.commit(step);
    }
  }

  /** Every run CI is asked to start, in order (MemoryCi keeps the last request of a run id). */
  function recordStarts(): { runId: string; prs: string }[] {
    const starts: { runId: string; prs: string }[] = [];
    const start = ci.start.bind(ci);
    ci.start = (request) => {
      starts.push({ runId: request.runId, prs: request.prNumbers.join(",") });
      return start(request);
    };
    return starts;
  }

  it.each([
    ["its first step", 1],
    ["a later step", 2],
  ])(
    "a step that started CI and then failed to commit never gives its run id to another run: %s",
    async (_, failing) => {
      await createQueue({ concurrency: 3 });
      const store = new FailingCommits(database.handle.db, database.handle.dialect);
      const starts = recordStarts();
      const e = engine(database.handle, "p1", 30_000, store);
      if (failing === 2) expect(await e.execute(queueId, submit(1))).toEqual({ ok: true });
      store.failing = 1;
      // The step plans a run, starts it, fails to commit; the replay plans the run again.
      expect(await e.execute(queueId, submit(2))).toEqual({ ok: true });
      expect(store.failing).toBe(0);
      expect(await e.execute(queueId, submit(3))).toEqual({ ok: true });
      const ids = starts.map((s) => s.runId);
      expect(new Set(ids).size).toBe(ids.length);
      // What each id was started for is what the stored run says it tests.
      for (const { runId, prs } of starts.slice(-2)) {
        const run = defined(await runtime().run(queueId, runId));
        expect(run.prs.map((pr) => pr.number).join(",")).toBe(prs);
      }
      for (const prs of failing === 2 ? [[1], [1, 2], [1, 2, 3]] : [[2], [2, 3]]) {
        ci.finish(queueId, defined(ci.runsFor(queueId, prs).at(-1)).runId, [
          { name: "test", conclusion: "success" },
        ]);
      }
      const merged = failing === 2 ? [1, 2, 3] : [2, 3];
      await until(() => host.mergeLog(repo).length === merged.length, "the merges");
      expect(host.mergeLog(repo)).toEqual(merged);
    },
  );

  it("a stale writer cannot overwrite the queue after another process took over", async () => {
    await createQueue();
    const store = runtime();
    const old = await store.acquireLease(queueId, "old", 1_000, 10);
    const taken = await store.acquireLease(queueId, "new", 2_000, 10_000);
    expect(defined(taken).epoch).toBe(defined(old).epoch + 1);
    const wrote = await store.commit({
      queueId,
      epoch: defined(old).epoch,
      now: 2_001,
      snapshot: { stale: true },
      wakeAt: null,
      entries: [],
      transitions: [],
      runs: [],
      appliedCommands: [],
    });
    expect(wrote).toBe(false);
  });

  it(`two server processes on one ${TEST_DIALECT} database drive the same queue without double merges or lost commands`, async () => {
    await createQueue({ concurrency: 4 });
    const other = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
    extraHandles.push(other);
    const a = engine(database.handle, "process-a");
    const b = engine(other, "process-b");
    ci.autoResult = () => [{ name: "test", conclusion: "success" }];
    const results = await Promise.all(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((n) =>
        (n % 2 === 0 ? a : b).execute(queueId, submit(n)),
      ),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    await until(() => host.mergeLog(repo).length === 12, "twelve merges");
    const log = host.mergeLog(repo);
    expect(new Set(log).size).toBe(12);
    await until(async () => (await runtime().activeEntries(queueId)).length === 0, "all concluded");
    const concluded = await runtime().listEntries(queueId, { take: 100 });
    expect(concluded.map((e) => e.state)).toEqual(Array(12).fill("merged"));
  });
});
