import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import type { DatabaseHandle } from "../../src/db/connection.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { ApiError } from "../../src/lib/errors.js";
import type { PrState } from "../../src/mergequeue/model.js";
import {
  PullRequestService,
  actorOf,
  normalizeImpactedTargets,
  pullRequestUrl,
  toEnqueuedPullRequest,
} from "../../src/mergequeue/pull-request-service.js";
import { decodeCursor, encodeCursor } from "../../src/mergequeue/pull-request-views.js";
import { initialConfiguration, type QueueState } from "../../src/mergequeue/settings.js";
import type { Principal } from "../../src/organizations/service.js";
import { RecordingBus, StoredRecords, entryRecord, transition } from "../helpers/fake-engine.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import type { RepoRef } from "../../src/organizations/repositories.js";

const REPO: RepoRef = { host: "github.com", owner: "acme", name: "app" };
const PRINCIPAL: Principal = { organizationId: "o1", organizationSlug: "acme", tokenId: "tok_1" };
const OTHER_ORG: Principal = { organizationId: "o2", organizationSlug: "globex", tokenId: "tok_2" };
const MAIN = { repo: REPO, targetBranch: "main" };
const ACTOR = actorOf(PRINCIPAL);

/**
 * Queues of organization o1 in the real store of the database under test: `add` creates one
 * (id `q-<branch>-<repository name>`) with a state.
 */
class TestQueues extends MergeQueueStore {
  constructor(private readonly handle: DatabaseHandle) {
    super(handle.db, handle.dialect);
  }

  add(targetBranch: string, state: QueueState = "running", repo: RepoRef = REPO): Promise<string> {
    return this.addWithId(`q-${targetBranch}-${repo.name}`, targetBranch, state, repo, "o1");
  }

  async addWithId(
    id: string,
    targetBranch: string,
    state: QueueState,
    repo: RepoRef,
    organizationId: string,
  ): Promise<string> {
    const repository = await new RepositoryStore(this.handle.db).ensure(organizationId, repo, 1);
    await this.insert({
      id,
      repositoryId: repository.id,
      targetBranch,
      configuration: { ...initialConfiguration({}), state },
      createdAt: 1,
    });
    return id;
  }
}

let database: TestDatabase;
let queues: TestQueues;
let runtime: StoredRecords;
let bus: RecordingBus;
let service: PullRequestService;
let queueId: string;
let now = 10_000_000;

beforeEach(async () => {
  database = await createTestDatabase();
  const organizations = new OrganizationStore(database.handle.db);
  await organizations.ensure({ id: "o1", slug: "acme", createdAt: 1 });
  await organizations.ensure({ id: "o2", slug: "globex", createdAt: 1 });
  // Records may name a queue no test created (another organization's): it is made on demand.
  await organizations.ensure({ id: "o-other", slug: "other", createdAt: 1 });
  queues = new TestQueues(database.handle);
  runtime = new StoredRecords(database.handle, async (id) => {
    if (!(await queues.findById(id))) {
      await queues.addWithId(id, "main", "running", { ...REPO, name: id }, "o-other");
    }
  });
  bus = new RecordingBus();
  now = 10_000_000;
  service = new PullRequestService({ queues, runtime, commands: bus, clock: { now: () => now } });
  queueId = await queues.add("main");
  return () => database.cleanup();
});

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

describe("listing cursors", () => {
  it("are UUID-shaped encodings of the seq that decode back", () => {
    expect(encodeCursor(42)).toBe("00000000-0000-4000-8000-00000000002a");
    expect(encodeCursor(0)).toBe("00000000-0000-4000-8000-000000000000");
    expect(encodeCursor(0xffff_ffff_ffff)).toBe("00000000-0000-4000-8000-ffffffffffff");
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffff_ffff_ffff }), (seq) => {
        const cursor = encodeCursor(seq);
        expect(cursor).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
        expect(decodeCursor(cursor)).toBe(seq);
        expect(decodeCursor(cursor.toUpperCase())).toBe(seq);
      }),
    );
  });

  it("anything else is not a cursor", () => {
    for (const text of [
      "",
      "42",
      "0f8fad5b-d9cb-469f-a165-70867728950e",
      "00000000-0000-4000-8000-00000000002",
      "00000000-0000-4000-8000-00000000002az",
      "00000000-0000-4000-8000-0000000000zz",
    ]) {
      expect(decodeCursor(text), text).toBeUndefined();
    }
    expect(() => encodeCursor(-1)).toThrow(RangeError);
    expect(() => encodeCursor(0x1_0000_0000_0000)).toThrow(RangeError);
    expect(() => encodeCursor(1.5)).toThrow(RangeError);
  });
});

describe("priorities as a mergeItem shows them", () => {
  it.each([
    [0, "urgent"],
    [5, "urgent"],
    [6, "high"],
    [10, "high"],
    [55, "high"],
    [56, "medium"],
    [100, "medium"],
    [150, "medium"],
    [151, "low"],
    [200, "low"],
    [255, "low"],
  ] as const)(
    "value %i is named %s (ties: the more urgent; skipTheLine only at 0)",
    (value, name) => {
      const item = toEnqueuedPullRequest(
        entryRecord(queueId, { prNumber: 1, priorityValue: value, usedDefaultPriority: false }),
      );
      expect(item.priorityValue).toBe(value);
      expect(item.priorityName).toBe(name);
      expect(item.skipTheLine).toBe(value === 0);
      expect(item).not.toHaveProperty("usedDefaultPriorityName");
    },
  );

  it("usedDefaultPriorityName is medium when no priority was given", () => {
    const item = toEnqueuedPullRequest(
      entryRecord(queueId, { prNumber: 1, priorityValue: 100, usedDefaultPriority: true }),
    );
    expect(item).toMatchObject({ priorityName: "medium", usedDefaultPriorityName: "medium" });
  });
});

describe("small rules", () => {
  it("impacted targets: ALL and the legacy IMPACTS_ALL in any case, or a list", () => {
    expect(normalizeImpactedTargets("ALL")).toBe("ALL");
    expect(normalizeImpactedTargets("all")).toBe("ALL");
    expect(normalizeImpactedTargets("IMPACTS_ALL")).toBe("ALL");
    expect(normalizeImpactedTargets(["//a", "//b"])).toEqual(["//a", "//b"]);
    expect(normalizeImpactedTargets([])).toEqual([]);
    expect(() => normalizeImpactedTargets("some")).toThrow(ApiError);
  });

  it("pull request URLs by host", () => {
    expect(pullRequestUrl(REPO, 7)).toBe("https://github.com/acme/app/pull/7");
    expect(pullRequestUrl({ host: "gitlab.com", owner: "g/sub", name: "app" }, 7)).toBe(
      "https://gitlab.com/g/sub/app/-/merge_requests/7",
    );
    expect(pullRequestUrl({ host: "local", owner: "me", name: "app" }, 7)).toBe("");
  });

  it("the actor of an API request is its token", () => {
    expect(ACTOR).toEqual({ kind: "user", name: "api-token:tok_1" });
  });
});

describe("commands", () => {
  it("submit parses the priority and hands the engine a submit command", async () => {
    await service.submit(PRINCIPAL, MAIN, { prNumber: 12, priority: "HIGH", noBatch: true }, ACTOR);
    await service.submit(PRINCIPAL, MAIN, { prNumber: 13, priority: 7 }, ACTOR);
    await service.submit(PRINCIPAL, MAIN, { prNumber: 14, priority: null }, ACTOR);
    await service.submit(PRINCIPAL, MAIN, { prNumber: 15, priority: "200" }, ACTOR);
    expect(bus.executed).toEqual([
      {
        queueId,
        command: { type: "submit", prNumber: 12, priority: 10, noBatch: true, actor: ACTOR },
      },
      {
        queueId,
        command: { type: "submit", prNumber: 13, priority: 7, noBatch: false, actor: ACTOR },
      },
      {
        queueId,
        command: { type: "submit", prNumber: 14, priority: null, noBatch: false, actor: ACTOR },
      },
      {
        queueId,
        command: { type: "submit", prNumber: 15, priority: 200, noBatch: false, actor: ACTOR },
      },
    ]);
  });

  it.each([["highest"], [256], [-1], [1.5], [""], ["1000"]])(
    "submit refuses priority %j with a 400 naming priority",
    async (priority) => {
      const error = await rejection(
        service.submit(PRINCIPAL, MAIN, { prNumber: 1, priority }, ACTOR),
      );
      expect(error.code).toBe("invalid_request");
      expect(error.details?.map((d) => d.path)).toEqual(["priority"]);
      expect(bus.executed).toEqual([]);
    },
  );

  it.each(["draining", "switching_modes"] as const)(
    "a queue %s refuses new pull requests with 409 but lets queued ones resubmit",
    async (state) => {
      await queues.add("release", state);
      const release = { repo: REPO, targetBranch: "release" };
      const error = await rejection(service.submit(PRINCIPAL, release, { prNumber: 1 }, ACTOR));
      expect(error.code).toBe("conflict");
      expect(error.message).toContain("branch release of github.com/acme/app");
      expect(bus.executed).toEqual([]);

      runtime.entries.push(entryRecord("q-release-app", { prNumber: 2 }));
      runtime.entries.push(
        entryRecord("q-release-app", { prNumber: 3, concludedAt: 5, state: "merged" }),
      );
      await service.submit(PRINCIPAL, release, { prNumber: 2, priority: "urgent" }, ACTOR);
      expect(bus.executed).toHaveLength(1);
      const again = await rejection(service.submit(PRINCIPAL, release, { prNumber: 3 }, ACTOR));
      expect(again.code).toBe("conflict");
    },
  );

  it("a paused queue accepts submissions", async () => {
    await queues.add("paused", "paused");
    await service.submit(PRINCIPAL, { repo: REPO, targetBranch: "paused" }, { prNumber: 1 }, ACTOR);
    expect(bus.executed).toHaveLength(1);
  });

  it("cancel, restart and impacted targets go to the engine as they are", async () => {
    await service.cancel(PRINCIPAL, MAIN, 4, ACTOR);
    await service.restart(PRINCIPAL, MAIN, 5, ACTOR);
    await service.setImpactedTargets(PRINCIPAL, MAIN, { number: 6, sha: "abc" }, "IMPACTS_ALL");
    await service.setImpactedTargets(PRINCIPAL, MAIN, { number: 6, sha: "abc" }, ["//x"]);
    expect(bus.executed.map((e) => e.command)).toEqual([
      { type: "cancel", prNumber: 4, actor: ACTOR },
      { type: "restart", prNumber: 5, actor: ACTOR },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc", targets: "ALL" },
      { type: "set_impacted_targets", prNumber: 6, headSha: "abc", targets: ["//x"] },
    ]);
  });

  it("an engine refusal becomes the same API error", async () => {
    bus.answer = { ok: false, code: "not_found", message: "Pull request #9 is not in the queue." };
    const error = await rejection(service.cancel(PRINCIPAL, MAIN, 9, ACTOR));
    expect([error.code, error.message]).toEqual([
      "not_found",
      "Pull request #9 is not in the queue.",
    ]);
    bus.answer = { ok: false, code: "conflict", message: "Already merged." };
    expect((await rejection(service.restart(PRINCIPAL, MAIN, 9, ACTOR))).code).toBe("conflict");
  });

  it("every operation answers 404 for a queue that does not exist, or of another organization", async () => {
    const nowhere = { repo: REPO, targetBranch: "nowhere" };
    const calls: [string, () => Promise<unknown>][] = [
      ["submit", () => service.submit(PRINCIPAL, nowhere, { prNumber: 1 }, ACTOR)],
      ["cancel", () => service.cancel(PRINCIPAL, nowhere, 1, ACTOR)],
      ["restart", () => service.restart(PRINCIPAL, nowhere, 1, ACTOR)],
      [
        "targets",
        () => service.setImpactedTargets(PRINCIPAL, nowhere, { number: 1, sha: "a" }, "ALL"),
      ],
      ["get", () => service.get(PRINCIPAL, nowhere, { number: 1 }, false)],
      ["getMany", () => service.getMany(PRINCIPAL, nowhere, [1], false)],
      ["list", () => service.list(PRINCIPAL, nowhere, {})],
      ["details", () => service.testingDetails(PRINCIPAL, nowhere, "run-1")],
      ["foreign", () => service.get(OTHER_ORG, MAIN, { number: 1 }, false)],
    ];
    for (const [name, call] of calls) {
      const error = await rejection(call());
      expect(error.code, name).toBe("not_found");
      expect(error.message, name).toMatch(
        /^No merge queue for branch (nowhere|main) of github\.com\/acme\/app\.$/,
      );
    }
    expect(bus.executed).toEqual([]);
  });
});

describe("reads", () => {
  it("get: the latest submission with readiness, by number or by head branch", async () => {
    const old = entryRecord(queueId, {
      prNumber: 7,
      state: "cancelled",
      concludedAt: 50,
      prHeadBranch: "feature/x",
    });
    const current = entryRecord(queueId, {
      prNumber: 7,
      state: "not_ready",
      prHeadBranch: "feature/x",
      priorityValue: 0,
      usedDefaultPriority: false,
      noBatch: true,
      readiness: {
        mergeability: "in_progress",
        baseBranchMatches: false,
        requiresImpactedTargets: true,
        impactedTargets: ["//a"],
      },
    });
    runtime.entries.push(old, current);
    const byNumber = await service.get(PRINCIPAL, MAIN, { number: 7 }, false);
    expect(byNumber).toEqual({
      ...toEnqueuedPullRequest(current),
      readiness: {
        hasImpactedTargets: true,
        requiresImpactedTargets: true,
        doesBaseBranchMatch: false,
        gitHubMergeability: "in_progress",
      },
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
    });
    expect(byNumber).toMatchObject({ priorityName: "urgent", skipTheLine: true, noBatch: true });
    expect(await service.get(PRINCIPAL, MAIN, { branch: "feature/x" }, false)).toEqual(byNumber);
  });

  it("get by branch falls back to the latest concluded submission; concluded ones are not in the queue", async () => {
    const first = entryRecord(queueId, {
      prNumber: 8,
      prHeadBranch: "b",
      state: "failed",
      concludedAt: 9,
    });
    const second = entryRecord(queueId, {
      prNumber: 9,
      prHeadBranch: "b",
      state: "merged",
      concludedAt: 10,
    });
    runtime.entries.push(first, second);
    const view = await service.get(PRINCIPAL, MAIN, { branch: "b" }, false);
    expect(view).toMatchObject({ id: second.id, isCurrentlySubmittedToQueue: false });
  });

  it("get: 404 for a pull request never submitted, naming it", async () => {
    const byNumber = await rejection(service.get(PRINCIPAL, MAIN, { number: 99 }, false));
    expect(byNumber.code).toBe("not_found");
    expect(byNumber.message).toBe(
      "Pull request #99 has never been submitted to the merge queue for branch main of github.com/acme/app.",
    );
    const byBranch = await rejection(service.get(PRINCIPAL, MAIN, { branch: "nope" }, false));
    expect(byBranch.message).toContain(
      "No pull request from branch nope has ever been submitted to the merge queue for branch main",
    );
  });

  it("the timeline: every transition, with its actor, run and detail", async () => {
    const entry = entryRecord(queueId, { prNumber: 3, state: "testing" });
    runtime.entries.push(entry);
    runtime.transitionRecords.push(
      transition(entry, 100, null, "pending", { reason: "submitted", actor: ACTOR }),
      transition(entry, 200, "pending", "testing", { reason: "test_run_started", runId: "run-1" }),
      transition(entry, 300, "testing", "pending", {
        reason: "restarted_by_user",
        actor: { kind: "user", name: "bob" },
        detail: "flaky",
      }),
    );
    const view = await service.get(PRINCIPAL, MAIN, { number: 3 }, true);
    expect(view.timeline).toEqual([
      {
        at: 100,
        fromState: null,
        toState: "pending",
        reason: "submitted",
        actor: ACTOR,
        testRunId: null,
        detail: null,
      },
      {
        at: 200,
        fromState: "pending",
        toState: "testing",
        reason: "test_run_started",
        actor: { kind: "queue" },
        testRunId: "run-1",
        detail: null,
      },
      {
        at: 300,
        fromState: "testing",
        toState: "pending",
        reason: "restarted_by_user",
        actor: { kind: "user", name: "bob" },
        testRunId: null,
        detail: "flaky",
      },
    ]);
    expect(await service.get(PRINCIPAL, MAIN, { number: 3 }, false)).not.toHaveProperty("timeline");
  });

  it("the timeline keeps every submission; a PR failed on a conflict is not mergeable", async () => {
    const first = entryRecord(queueId, {
      prNumber: 4,
      state: "failed",
      concludedAt: 300,
      lastReason: "merge_conflict",
    });
    const again = entryRecord(queueId, { prNumber: 4, state: "pending", submittedAt: 400 });
    const other = entryRecord(queueId, { prNumber: 5, state: "pending" });
    runtime.entries.push(first, again, other);
    runtime.transitionRecords.push(
      transition(first, 100, null, "pending", { reason: "submitted" }),
      transition(first, 200, "pending", "testing", { reason: "test_run_started", runId: "r1" }),
      transition(first, 300, "testing", "failed", {
        reason: "merge_conflict",
        runId: "r1",
        detail: "conflicts with #3",
      }),
      transition(other, 350, null, "pending", { reason: "submitted" }),
      transition(again, 400, null, "pending", { reason: "submitted" }),
    );
    const view = await service.get(PRINCIPAL, MAIN, { number: 4 }, true);
    expect(view.timeline?.map((t) => [t.at, t.toState, t.reason])).toEqual([
      [100, "pending", "submitted"],
      [200, "testing", "test_run_started"],
      [300, "failed", "merge_conflict"],
      [400, "pending", "submitted"],
    ]);
    expect(view.readiness.gitHubMergeability).toBe("mergeable");

    const conflicted = entryRecord(queueId, {
      prNumber: 6,
      state: "failed",
      concludedAt: 500,
      lastReason: "merge_conflict",
    });
    runtime.entries.push(conflicted);
    const failed = await service.get(PRINCIPAL, MAIN, { number: 6 }, false);
    expect(failed.state).toBe("failed");
    expect(failed.readiness.gitHubMergeability).toBe("not_mergeable");
  });

  it("getMany: found ones in request order, the others in notFound, duplicates once", async () => {
    runtime.entries.push(
      entryRecord(queueId, { prNumber: 1 }),
      entryRecord(queueId, { prNumber: 3 }),
    );
    const result = await service.getMany(PRINCIPAL, MAIN, [3, 2, 1, 3, 4], false);
    expect(result.pullRequests.map((p) => p.prNumber)).toEqual([3, 1]);
    expect(result.notFound).toEqual([{ number: 2 }, { number: 4 }]);
  });

  it("list: pages in submission order with opaque cursors; the last page has none", async () => {
    for (let n = 1; n <= 5; n++) runtime.entries.push(entryRecord(queueId, { prNumber: n }));
    runtime.entries.push(entryRecord("q-other", { prNumber: 100 }));
    const first = await service.list(PRINCIPAL, MAIN, { take: 2 });
    expect(first.pullRequests.map((p) => p.prNumber)).toEqual([1, 2]);
    expect(first.nextCursor).toMatch(/^00000000-0000-4000-8000-[0-9a-f]{12}$/);
    const second = await service.list(PRINCIPAL, MAIN, { take: 2, cursor: first.nextCursor ?? "" });
    expect(second.pullRequests.map((p) => p.prNumber)).toEqual([3, 4]);
    const last = await service.list(PRINCIPAL, MAIN, { take: 2, cursor: second.nextCursor ?? "" });
    expect(last.pullRequests.map((p) => p.prNumber)).toEqual([5]);
    expect(last).not.toHaveProperty("nextCursor");
    const all = await service.list(PRINCIPAL, MAIN, { cursor: "" });
    expect(all.pullRequests).toHaveLength(5);
    expect(all).not.toHaveProperty("nextCursor");
    // Exactly a page's worth: no cursor to an empty page.
    const exact = await service.list(PRINCIPAL, MAIN, { take: 5 });
    expect(exact).not.toHaveProperty("nextCursor");
  });

  it("list: state and since (concluded at or after) filter", async () => {
    runtime.entries.push(
      entryRecord(queueId, { prNumber: 1, state: "merged", concludedAt: 100 }),
      entryRecord(queueId, { prNumber: 2, state: "failed", concludedAt: 200 }),
      entryRecord(queueId, { prNumber: 3, state: "pending" }),
    );
    const numbers = async (query: Parameters<PullRequestService["list"]>[2]) =>
      (await service.list(PRINCIPAL, MAIN, query)).pullRequests.map((p) => p.prNumber);
    expect(await numbers({ state: "pending" })).toEqual([3]);
    expect(await numbers({ since: 100 })).toEqual([1, 2]);
    expect(await numbers({ since: 101 })).toEqual([2]);
    expect(await numbers({ since: 100, state: "merged" })).toEqual([1]);
  });

  it("list: a foreign cursor or a bad page size is a 400 naming the field", async () => {
    for (const [query, path] of [
      [{ cursor: "0f8fad5b-d9cb-469f-a165-70867728950e" }, "cursor"],
      [{ cursor: "next" }, "cursor"],
      [{ take: 0 }, "take"],
      [{ take: 101 }, "take"],
      [{ take: 2.5 }, "take"],
    ] as const) {
      const error = await rejection(service.list(PRINCIPAL, MAIN, query));
      expect(error.code).toBe("invalid_request");
      expect(error.details?.[0]?.path).toBe(path);
    }
  });

  it("enqueued: active entries in flight first, then waiting by priority, then not ready", async () => {
    const make = (prNumber: number, state: PrState, priorityValue = 100) =>
      entryRecord(queueId, { prNumber, state, priorityValue });
    runtime.entries.push(
      make(1, "not_ready", 0),
      make(2, "pending", 200),
      make(3, "testing"),
      make(4, "pending", 10),
      make(5, "merged"),
      make(6, "tests_passed", 200),
      make(7, "pending", 10),
    );
    const merged = runtime.entries.find((e) => e.prNumber === 5);
    if (merged) merged.concludedAt = 1;
    const order = (await service.enqueued(queueId)).map((p) => p.prNumber);
    expect(order).toEqual([3, 6, 4, 7, 2, 1]);
  });

  it("testing details: status, sources, tested and dependent pull requests", async () => {
    const ahead = entryRecord(queueId, { prNumber: 1, prTitle: "Ahead" });
    const tested = entryRecord(queueId, { prNumber: 2, prTitle: "Tested" });
    runtime.entries.push(ahead, tested);
    const run = {
      id: "run-7",
      queueId,
      kind: "main" as const,
      status: "running" as const,
      baseSha: "b".repeat(40),
      testBranch: "mainline-merge/main/run-7",
      testBranchSha: "c".repeat(40),
      prs: [
        { entryId: ahead.id, number: 1, headSha: "1".repeat(40) },
        { entryId: tested.id, number: 2, headSha: "2".repeat(40) },
        { entryId: "entry-gone", number: 3, headSha: "3".repeat(40) },
      ],
      unit: [tested.id, "entry-gone"],
      requiredStatuses: ["test"],
      requiredStatusesSource: "mainline_config" as const,
      checks: [{ name: "test", conclusion: null, url: null }],
      startedAt: 5000,
      finishedAt: null,
    };
    runtime.runs.push(run);
    expect(await service.testingDetails(PRINCIPAL, MAIN, "run-7")).toEqual({
      runId: "run-7",
      status: "in_progress",
      createdAt: 5000,
      requiredStatuses: ["test"],
      requiredStatusesSource: "trunk_config",
      testBranch: "mainline-merge/main/run-7",
      testBranchSha: "c".repeat(40),
      checks: [{ name: "test", conclusion: null, url: null }],
      testedPullRequests: [
        { prNumber: 2, prUrl: "https://github.com/acme/app/pull/2", title: "Tested" },
        { prNumber: 3, prUrl: "https://github.com/acme/app/pull/3", title: "" },
      ],
      dependentPrs: [1],
    });
    for (const [status, expected] of [
      ["passed", "succeeded"],
      ["failed", "failed"],
      ["cancelled", "cancelled"],
    ] as const) {
      runtime.runs = [{ ...run, status, requiredStatusesSource: "merge_instance" }];
      expect(await service.testingDetails(PRINCIPAL, MAIN, "run-7")).toMatchObject({
        status: expected,
        requiredStatusesSource: "merge_instance",
      });
    }
    const error = await rejection(service.testingDetails(PRINCIPAL, MAIN, "run-8"));
    expect([error.code, error.message]).toEqual([
      "not_found",
      "No test run run-8 in the merge queue for branch main of github.com/acme/app.",
    ]);
  });
});

describe("metrics", () => {
  it("one series per queue of the organization, or of one repository; 404 for a repository without a queue", async () => {
    await queues.add("dev");
    await queues.add("main", "running", { host: "github.com", owner: "acme", name: "web" });
    const all = await service.metrics(PRINCIPAL);
    expect(all).toContain('mq_depth_current{repo="acme/app",branch="main",queue_type="main"} 0');
    expect(all).toContain('mq_depth_current{repo="acme/app",branch="dev",queue_type="main"} 0');
    expect(all).toContain('mq_depth_current{repo="acme/web",branch="main",queue_type="main"} 0');
    const one = await service.metrics(PRINCIPAL, {
      host: "GitHub.com",
      owner: "Acme",
      name: "Web",
    });
    expect(one).toContain('repo="acme/web"');
    expect(one).not.toContain('repo="acme/app"');
    const missing = await rejection(service.metrics(PRINCIPAL, { ...REPO, name: "none" }));
    expect([missing.code, missing.message]).toEqual([
      "not_found",
      "No merge queue in github.com/acme/none.",
    ]);
    // Another organization sees none of it.
    expect(await service.metrics(OTHER_ORG)).not.toContain("repo=");
  });

  it("gauges each queue's estimated failure rate from its stored verdicts", async () => {
    await queues.add("dev");
    // 11 of 100 single-PR units failed, against a prior of 10 passed units: 0.1.
    runtime.snapshots.set(queueId, { verdicts: { units: 100, prs: 100, failed: 11 } });
    const text = await service.metrics(PRINCIPAL);
    expect(text).toContain(
      'mq_estimated_failure_rate{repo="acme/app",branch="main",queue_type="main"} 0.1\n',
    );
    // A queue without verdicts (or without a snapshot yet) estimates 0.
    expect(text).toContain(
      'mq_estimated_failure_rate{repo="acme/app",branch="dev",queue_type="main"} 0\n',
    );
  });

  it("reads full histories only of entries submitted before the window", async () => {
    const hour = 3_600_000;
    const fresh = entryRecord(queueId, { prNumber: 1, state: "testing" });
    const old = entryRecord(queueId, { prNumber: 2, state: "testing" });
    runtime.entries.push(fresh, old);
    runtime.transitionRecords.push(
      transition(old, now - 2 * hour, null, "pending"),
      transition(old, now - 10 * 60_000, "pending", "testing"),
      transition(fresh, now - 20 * 60_000, null, "pending"),
      transition(fresh, now - 15 * 60_000, "pending", "testing"),
    );
    const text = await service.metrics(PRINCIPAL);
    expect(runtime.historyReads).toEqual([old.id]);
    expect(text).toContain(
      'mq_testing_slots_active{repo="acme/app",branch="main",queue_type="main"} 2',
    );
    // Waits: 300 s (fresh) and 6600 s (old: pending since two hours ago).
    expect(text).toContain(
      'mq_pr_wait_duration_1h_seconds_sum{repo="acme/app",branch="main",queue_type="main"} 6900',
    );
    expect(text).toContain(
      'mq_pr_wait_duration_1h_seconds_bucket{repo="acme/app",branch="main",queue_type="main",le="300"} 1',
    );
  });
});
