/**
 * The engine when a queue's git host does not answer, on the real database: it records the
 * trouble once, backs off instead of stepping in a loop, refuses the commands whose callers wait
 * (for good: they are never applied), keeps impacted targets, and applies them once the host
 * answers again, saying so once.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { OutboundWebhookStore } from "../../src/db/stores/outbound-webhooks.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { MergeQueueEngine } from "../../src/mergequeue/engine.js";
import { GitHostRouter } from "../../src/mergequeue/host-router.js";
import type { QueueCommand } from "../../src/mergequeue/model.js";
import type { GitHost } from "../../src/mergequeue/providers.js";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

const repo = { host: "github.com", owner: "acme", name: "app" };
const actor = { kind: "user" as const, name: "dev" };
const submit = (prNumber: number): QueueCommand => ({
  type: "submit",
  prNumber,
  priority: null,
  noBatch: false,
  actor,
});
const queueId = "queue-1";

/** GitHub's 502, as its client throws it: an HTML page for a message, the status beside it. */
class BadGateway extends Error {
  readonly status = 502;
  constructor() {
    super("<html><body><h1>502 Bad Gateway</h1></body></html>");
  }
}

/** The in-memory host behind a switch: while `down`, every call fails; calls are counted. */
function switchable(inner: GitHost) {
  const state = { down: false, calls: 0 };
  const wrap =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      state.calls += 1;
      return state.down ? Promise.reject(new BadGateway()) : call(...args);
    };
  const host: GitHost = {
    pullRequest: wrap(inner.pullRequest.bind(inner)),
    branchHead: wrap(inner.branchHead.bind(inner)),
    createTestBranch: wrap(inner.createTestBranch.bind(inner)),
    deleteTestBranch: wrap(inner.deleteTestBranch.bind(inner)),
    merge: wrap(inner.merge.bind(inner)),
    readFile: wrap(inner.readFile.bind(inner)),
  };
  return { host, state };
}

let database: TestDatabase;
let engines: MergeQueueEngine[] = [];
const log: { level: string; message: string }[] = [];

async function createQueue(): Promise<void> {
  const db = database.handle.db;
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  const repository = await new RepositoryStore(db).ensure("o1", repo, 1);
  await new MergeQueueStore(db, database.handle.dialect).insert({
    id: queueId,
    repositoryId: repository.id,
    targetBranch: "main",
    configuration: initialConfiguration({}),
    createdAt: 1,
  });
}

function runtime(): MergeQueueRuntimeStore {
  return new MergeQueueRuntimeStore(database.handle.db, database.handle.dialect);
}

function engine(gitHost: GitHost, ci: MemoryCi): MergeQueueEngine {
  const { db, dialect } = database.handle;
  const created = new MergeQueueEngine(
    {
      runtime: runtime(),
      queues: new MergeQueueStore(db, dialect),
      repositories: new RepositoryStore(db),
      gitHost,
      ci,
      clock: { now: () => Date.now() },
      logger: {
        error: (message) => log.push({ level: "error", message }),
        warn: (message) => log.push({ level: "warn", message }),
        info: (message) => log.push({ level: "info", message }),
      },
    },
    // Looks for due queues every 20 ms: a loop on the failing host would show at once.
    { owner: "p1", pollMs: 20 },
  );
  created.start();
  engines.push(created);
  return created;
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

async function pendingCommands(): Promise<unknown[]> {
  return (await runtime().pendingCommands(queueId, 100)).map((c) => c.payload);
}

beforeEach(async () => {
  database = await createTestDatabase();
  log.length = 0;
  await createQueue();
});

afterEach(async () => {
  for (const e of engines) await e.stop();
  engines = [];
  await database.cleanup();
});

describe("the engine when the queue's git host does not answer", () => {
  it("refuses waiting commands at once, backs off, keeps targets, and recovers once", async () => {
    const memory = new MemoryGitHost();
    memory.repository(repo, "base0");
    for (let n = 1; n <= 3; n++) memory.addPullRequest(repo, { number: n });
    const { host, state } = switchable(memory);
    const ci = new MemoryCi();
    const e = engine(host, ci);
    expect(await e.execute(queueId, submit(1))).toEqual({ ok: true });
    await until(() => ci.runsFor(queueId, [1]).length === 1, "#1 tested");

    state.down = true;
    // Stored before the host is known not to answer: its step fails on the host (the next
    // pull request's test branch), and it is answered then, for good.
    const first = await timed(e.execute(queueId, submit(2)));
    expect(first.value).toMatchObject({ ok: false, code: "unavailable" });
    expect(first.value.ok ? "" : first.value.message).toMatch(
      /cannot reach github\.com \(it answered HTTP 502\)/,
    );
    expect(first.ms).toBeLessThan(1_000);
    expect(await runtime().latestEntry(queueId, 2)).toBeUndefined();
    const trouble = await e.hostTrouble(queueId);
    expect(trouble).toMatchObject({ state: "unreachable", code: "unavailable", failures: 1 });
    expect(trouble?.message).toBe("it answered HTTP 502");

    // Known now: refused without being stored.
    const stored = (await pendingCommands()).length;
    const cancel = await timed(e.execute(queueId, { type: "cancel", prNumber: 1, actor }));
    expect(cancel.value).toMatchObject({ ok: false, code: "unavailable" });
    expect(cancel.value.ok ? 0 : cancel.value.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(cancel.ms).toBeLessThan(100);
    expect(await pendingCommands()).toHaveLength(stored);
    // Targets are kept: for #3 (not submitted yet) and #1 (queued).
    await e.accept(queueId, {
      type: "set_impacted_targets",
      prNumber: 3,
      headSha: "head-3",
      targets: ["//app:core"],
    });
    expect(await pendingCommands()).toContainEqual(
      expect.objectContaining({ type: "set_impacted_targets", prNumber: 3 }),
    );

    // Two and a half seconds at a 20 ms poll: a few attempts (1 s, then 2 s), not a loop.
    const callsBefore = state.calls;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(state.calls - callsBefore).toBeGreaterThanOrEqual(1);
    expect(state.calls - callsBefore).toBeLessThanOrEqual(3);
    const later = await e.hostTrouble(queueId);
    expect(later?.since).toBe(trouble?.since);
    expect(later?.failures).toBeGreaterThan(1);
    expect(log.filter((l) => l.level === "warn")).toHaveLength(1);
    expect(log.find((l) => l.level === "warn")?.message).toMatch(/github\.com does not answer/);
    expect(log.filter((l) => l.level === "error")).toEqual([]);
    expect((await runtime().latestEntry(queueId, 1))?.state).toBe("testing");

    // Back: the next attempt clears the trouble, says so once, and applies what was kept.
    state.down = false;
    await until(async () => (await e.hostTrouble(queueId)) === null, "the host answers again");
    await until(async () => (await pendingCommands()).length === 0, "the kept commands applied");
    expect(log.filter((l) => l.level === "info" && /answers again/.test(l.message))).toHaveLength(
      1,
    );
    expect(await e.execute(queueId, submit(3))).toEqual({ ok: true });
    const entry = await runtime().latestEntry(queueId, 3);
    expect(entry?.readiness.impactedTargets).toEqual(["//app:core"]);
    expect(await e.execute(queueId, submit(2))).toEqual({ ok: true });
    expect(log.filter((l) => l.level === "warn")).toHaveLength(1);
  }, 30_000);

  it("a host with no provider: host_not_connected at once, targets kept", async () => {
    const e = engine(new GitHostRouter(new Map()), new MemoryCi());
    const first = await timed(e.execute(queueId, { type: "cancel", prNumber: 1, actor }));
    expect(first.value).toMatchObject({ ok: false, code: "host_not_connected" });
    expect(first.ms).toBeLessThan(1_000);
    expect(await e.hostTrouble(queueId)).toMatchObject({ code: "host_not_connected" });
    const again = await timed(e.execute(queueId, { type: "restart", prNumber: 1, actor }));
    expect(again.value).toMatchObject({ ok: false, code: "host_not_connected" });
    expect(again.value.ok ? "" : again.value.message).toMatch(/no provider for host github\.com/);
    expect(again.ms).toBeLessThan(100);
    await e.accept(queueId, {
      type: "set_impacted_targets",
      prNumber: 4,
      headSha: "head-4",
      targets: "ALL",
    });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await pendingCommands()).toEqual([
      expect.objectContaining({ type: "set_impacted_targets", prNumber: 4, targets: "ALL" }),
    ]);
    expect(log.filter((l) => l.level === "warn")).toHaveLength(1);
    expect(log.filter((l) => l.level === "error")).toEqual([]);
  });

  it("tells the organization's endpoints once when the host stops and starts answering, and when the queue pauses", async () => {
    const { db, dialect } = database.handle;
    const events = async () =>
      (
        await db.selectFrom("outboundEvents").select(["type", "facts"]).orderBy("seq").execute()
      ).map((row) => ({ type: row.type, facts: JSON.parse(row.facts) as Record<string, unknown> }));
    await new OutboundWebhookStore(db).createEndpoint({
      id: "ep1",
      organizationId: "o1",
      kind: "webhook",
      channel: null,
      codeOwners: [],
      url: "https://hooks.example.com/mainline",
      secret: "whsec_dGVzdA==",
      eventTypes: [],
      repositoryIds: [],
      description: "",
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
      createdAt: 1,
      updatedAt: 1,
    });
    const memory = new MemoryGitHost();
    memory.repository(repo, "base0");
    memory.addPullRequest(repo, { number: 1 });
    const { host, state } = switchable(memory);
    state.down = true;
    const e = engine(host, new MemoryCi());
    expect(await e.execute(queueId, submit(1))).toMatchObject({ ok: false, code: "unavailable" });
    // Retried with a backoff (1 s, then 2 s): still one event for the whole outage.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await events()).toEqual([
      {
        type: "mainline.queue.blocked",
        facts: expect.objectContaining({
          kind: "queue_host",
          queueId,
          blocked: true,
          cause: "unavailable",
          message: "it answered HTTP 502",
        }) as unknown,
      },
    ]);
    state.down = false;
    await until(async () => (await e.hostTrouble(queueId)) === null, "the host answers again");
    const [blocked, unblocked] = await events();
    expect(unblocked).toEqual({
      type: "mainline.queue.unblocked",
      facts: expect.objectContaining({
        blocked: false,
        cause: null,
        since: blocked?.facts.since,
      }) as unknown,
    });

    const queues = new MergeQueueStore(db, dialect);
    await queues.modify(
      "o1",
      repo,
      "main",
      Date.now(),
      (current) => ({ ...current.configuration, state: "paused" }),
      "token:t1",
    );
    // A change that leaves the state as it was says nothing.
    await queues.modify("o1", repo, "main", Date.now(), (current) => ({
      ...current.configuration,
      state: "paused",
    }));
    expect((await events()).slice(2)).toEqual([
      {
        type: "mainline.queue.state_changed",
        facts: expect.objectContaining({
          previous: "running",
          state: "paused",
          actor: "token:t1",
        }) as unknown,
      },
    ]);
  }, 30_000);
});
