/**
 * Pull requests through the HTTP API against the real merge-queue engine, with an in-memory git
 * host.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { InMemoryGitHost, startEngineServer } from "../helpers/git-host.js";
import type { TestServer } from "../helpers/server.js";

const REPO = { host: "github.com", owner: "acme", name: "app" };

let server: TestServer;
let git: InMemoryGitHost;
let tokenId: string;

beforeAll(async () => {
  ({ server, git } = await startEngineServer());
  const whoami = await server.call<{ tokenId: string }>("whoami", {});
  tokenId = whoami.body.tokenId;
  return () => server.close();
});

type Body = Record<string, unknown>;
interface Item {
  id: string;
  state: string;
  prNumber: number;
  prSha: string;
  priorityValue: number;
  priorityName: string;
  usedDefaultPriorityName?: string;
  skipTheLine: boolean;
  noBatch: boolean;
  isCurrentlySubmittedToQueue?: boolean;
  readiness?: Record<string, unknown>;
  timeline?: {
    fromState: string | null;
    toState: string;
    reason: string;
    actor: unknown;
    testRunId: string | null;
  }[];
}

let branchCounter = 0;
let headCounter = 0;

/** A queue of its own for each test; paused unless told otherwise, so that nothing starts testing. */
async function freshQueue(
  settings: Body = { state: "paused" },
): Promise<Body & { targetBranch: string }> {
  const address = { repo: REPO, targetBranch: `pr-queue-${++branchCounter}` };
  expect((await server.call("createQueue", address)).status).toBe(200);
  if (Object.keys(settings).length > 0) {
    expect((await server.call("updateQueue", { ...address, ...settings })).status).toBe(200);
  }
  return address;
}

function openPr(base: string, title = "A change"): { number: number; head: string } {
  const head = `feature/${++headCounter}`;
  const { number } = git.openPullRequest({
    ...REPO,
    head,
    base,
    title,
    author: "alice",
  });
  return { number, head };
}

async function submit(address: Body, number: number | string, extra: Body = {}) {
  return server.call("submitPullRequest", { ...address, pr: { number }, ...extra });
}

async function get(address: Body, number: number, includeTimeline = false): Promise<Item> {
  const answer = await server.call<Item>("getSubmittedPullRequest", {
    ...address,
    pr: { number },
    includeTimeline,
  });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** Retries `check` until it stops throwing, for what the engine does after answering. */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe("submitPullRequest", () => {
  it("queues a mergeable pull request as pending with the default priority", async () => {
    const queue = await freshQueue();
    const pr = openPr(queue.targetBranch);
    const answer = await submit(queue, pr.number);
    expect([answer.status, answer.body]).toEqual([200, {}]);
    const item = await get(queue, pr.number);
    expect(item).toMatchObject({
      state: "pending",
      prNumber: pr.number,
      priorityValue: 100,
      priorityName: "medium",
      usedDefaultPriorityName: "medium",
      skipTheLine: false,
      noBatch: false,
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: true,
      prTitle: "A change",
      prAuthor: "alice",
      prBaseBranch: queue.targetBranch,
      readiness: {
        hasImpactedTargets: false,
        requiresImpactedTargets: false,
        doesBaseBranchMatch: true,
        gitHubMergeability: "mergeable",
      },
    });
    expect(item.prSha).toMatch(/^[0-9a-f]{7,64}$/);
  });

  it("takes the number as a string (merge-action) and the priority by name or number", async () => {
    const queue = await freshQueue();
    const a = openPr(queue.targetBranch);
    const b = openPr(queue.targetBranch);
    const c = openPr(queue.targetBranch);
    expect((await submit(queue, String(a.number), { priority: "URGENT" })).status).toBe(200);
    expect((await submit(queue, b.number, { priority: 42, noBatch: true })).status).toBe(200);
    expect(
      (
        await server.call("queuePullRequest", {
          ...queue,
          pr: { number: c.number },
          priority: "low",
        })
      ).status,
    ).toBe(200);
    expect(await get(queue, a.number)).toMatchObject({
      priorityValue: 0,
      priorityName: "urgent",
      skipTheLine: true,
    });
    const bItem = await get(queue, b.number);
    expect(bItem).toMatchObject({ priorityValue: 42, priorityName: "high", noBatch: true });
    expect(bItem).not.toHaveProperty("usedDefaultPriorityName");
    expect(await get(queue, c.number)).toMatchObject({ priorityValue: 200, priorityName: "low" });
  });

  it("resubmitting a queued pull request updates its priority and noBatch, not its place", async () => {
    const queue = await freshQueue();
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    const before = await get(queue, pr.number);
    expect((await submit(queue, pr.number, { priority: "high", noBatch: true })).status).toBe(200);
    const after = await get(queue, pr.number);
    expect(after).toMatchObject({ id: before.id, priorityValue: 10, noBatch: true });
  });

  it("a pull request for another base branch waits in not_ready", async () => {
    const queue = await freshQueue();
    const pr = openPr("some-other-branch");
    expect((await submit(queue, pr.number)).status).toBe(200);
    expect(await get(queue, pr.number)).toMatchObject({
      state: "not_ready",
      readiness: { doesBaseBranchMatch: false },
    });
  });

  it("404 for a pull request the git host does not know, or a queue that does not exist", async () => {
    const queue = await freshQueue();
    const unknown = await submit(queue, 987654);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "not_found" } });
    const noQueue = await submit({ repo: REPO, targetBranch: "no-such-queue" }, 1);
    expect(noQueue.status).toBe(404);
  });

  it("a draining queue refuses new pull requests (409) but takes resubmissions", async () => {
    const queue = await freshQueue();
    const queued = openPr(queue.targetBranch);
    const late = openPr(queue.targetBranch);
    await submit(queue, queued.number);
    expect((await server.call("updateQueue", { ...queue, state: "draining" })).status).toBe(200);
    const refused = await submit(queue, late.number);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: { code: "conflict" } });
    expect((await submit(queue, queued.number, { priority: "urgent" })).status).toBe(200);
  });
});

describe("cancelPullRequest and restartTestsOnPullRequest", () => {
  it("cancel concludes the submission; it stays readable; cancelling again is refused", async () => {
    const queue = await freshQueue();
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    const cancelled = await server.call("cancelPullRequest", {
      ...queue,
      pr: { number: String(pr.number) },
    });
    expect([cancelled.status, cancelled.body]).toEqual([200, {}]);
    const item = await get(queue, pr.number, true);
    expect(item).toMatchObject({ state: "cancelled", isCurrentlySubmittedToQueue: false });
    expect(item.timeline?.at(-1)).toMatchObject({
      toState: "cancelled",
      reason: "cancelled_by_user",
      actor: { kind: "user", name: `api-token:${tokenId}` },
    });
    const again = await server.call("cancelPullRequest", { ...queue, pr: { number: pr.number } });
    expect([404, 409]).toContain(again.status);
  });

  it("restart of a pull request that is not queued is a 404", async () => {
    const queue = await freshQueue();
    const answer = await server.call("restartTestsOnPullRequest", {
      ...queue,
      pr: { number: 424242 },
    });
    expect(answer.status).toBe(404);
  });

  it("restart of a pull request under test restarts it in place and says so in the timeline", async () => {
    const queue = await freshQueue({ requiredStatuses: ["test"] });
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    await eventually(async () => {
      expect((await get(queue, pr.number)).state).toBe("testing");
    });
    const answer = await server.call("restartTestsOnPullRequest", {
      ...queue,
      pr: { number: pr.number },
    });
    expect(answer.status).toBe(200);
    const item = await eventually(async () => {
      const read = await get(queue, pr.number, true);
      expect(read.timeline?.map((t) => t.reason)).toContain("restarted_by_user");
      return read;
    });
    expect(item.isCurrentlySubmittedToQueue).toBe(true);
  });
});

describe("getSubmittedPullRequest(s)", () => {
  it("by head branch, with a timeline that starts at the submission", async () => {
    const queue = await freshQueue();
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    const answer = await server.call<Item>("getSubmittedPullRequest", {
      ...queue,
      pr: { branch: pr.head },
      includeTimeline: true,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.prNumber).toBe(pr.number);
    expect(answer.body.timeline?.[0]).toMatchObject({
      fromState: null,
      reason: "submitted",
      actor: { kind: "user", name: `api-token:${tokenId}` },
    });
    for (const t of answer.body.timeline ?? []) {
      expect(t).toHaveProperty("testRunId");
    }
  });

  it("404 for a pull request never submitted; the batch lookup lists those in notFound", async () => {
    const queue = await freshQueue();
    const submitted = openPr(queue.targetBranch);
    const never = openPr(queue.targetBranch);
    await submit(queue, submitted.number);
    const missing = await server.call("getSubmittedPullRequest", {
      ...queue,
      pr: { number: never.number },
    });
    expect(missing.status).toBe(404);
    const batch = await server.call<{ pullRequests: Item[]; notFound: { number: number }[] }>(
      "getSubmittedPullRequests",
      { ...queue, prs: [{ number: submitted.number }, { number: String(never.number) }] },
    );
    expect(batch.status).toBe(200);
    expect(batch.body.pullRequests.map((p) => p.prNumber)).toEqual([submitted.number]);
    expect(batch.body.notFound).toEqual([{ number: never.number }]);
  });

  it("getQueue lists what is queued, and a queue holding pull requests cannot be deleted", async () => {
    const queue = await freshQueue();
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    const read = await server.call<{ enqueuedPullRequests: Item[] }>("getQueue", queue);
    expect(read.body.enqueuedPullRequests.map((p) => [p.prNumber, p.state])).toEqual([
      [pr.number, "pending"],
    ]);
    expect((await server.call("deleteQueue", queue)).status).toBe(400);
  });
});

describe("listPullRequests", () => {
  it("pages through every submission in order; filters by state and by conclusion time", async () => {
    const queue = await freshQueue();
    const prs = [
      openPr(queue.targetBranch),
      openPr(queue.targetBranch),
      openPr(queue.targetBranch),
    ];
    for (const pr of prs) await submit(queue, pr.number);
    const beforeCancel = new Date().toISOString();
    await server.call("cancelPullRequest", { ...queue, pr: { number: prs[1]?.number } });

    const first = await server.call<{ pullRequests: Item[]; nextCursor?: string }>(
      "listPullRequests",
      { ...queue, take: 2 },
    );
    expect(first.body.pullRequests.map((p) => p.prNumber)).toEqual(
      prs.slice(0, 2).map((p) => p.number),
    );
    expect(first.body.nextCursor).toMatch(/^[0-9a-f-]{36}$/);
    const second = await server.call<{ pullRequests: Item[]; nextCursor?: string }>(
      "listPullRequests",
      {
        ...queue,
        take: 2,
        cursor: first.body.nextCursor,
      },
    );
    expect(second.body.pullRequests.map((p) => p.prNumber)).toEqual([prs[2]?.number]);
    expect(second.body).not.toHaveProperty("nextCursor");

    const pending = await server.call<{ pullRequests: Item[] }>("listPullRequests", {
      ...queue,
      state: "PENDING",
    });
    expect(pending.body.pullRequests.map((p) => p.prNumber)).toEqual([
      prs[0]?.number,
      prs[2]?.number,
    ]);
    const concluded = await server.call<{ pullRequests: Item[] }>("listPullRequests", {
      ...queue,
      since: beforeCancel,
    });
    expect(concluded.body.pullRequests.map((p) => [p.prNumber, p.state])).toEqual([
      [prs[1]?.number, "cancelled"],
    ]);
  });
});

describe("setImpactedTargets", () => {
  it("a parallel queue needs targets before a pull request is ready; ALL and lists both count", async () => {
    const queue = await freshQueue({ state: "paused", mode: "parallel" });
    const a = openPr(queue.targetBranch);
    const b = openPr(queue.targetBranch);
    await submit(queue, a.number);
    await submit(queue, b.number);
    const waiting = await get(queue, a.number);
    expect(waiting).toMatchObject({
      state: "not_ready",
      readiness: { requiresImpactedTargets: true, hasImpactedTargets: false },
    });
    const all = await server.call("setImpactedTargets", {
      ...queue,
      pr: { number: String(a.number), sha: waiting.prSha },
      impactedTargets: "IMPACTS_ALL",
    });
    expect([all.status, all.body]).toEqual([200, {}]);
    const bSha = (await get(queue, b.number)).prSha;
    const list = await server.call("setImpactedTargets", {
      ...queue,
      pr: { number: b.number, sha: bSha },
      impactedTargets: ["//app:server", "//lib:core"],
    });
    expect(list.status).toBe(200);
    for (const number of [a.number, b.number]) {
      await eventually(async () => {
        expect(await get(queue, number)).toMatchObject({
          state: "pending",
          readiness: { hasImpactedTargets: true },
        });
      });
    }
  });
});

describe("setImpactedTargets without the GitHub App", () => {
  it("refuses a fork's workflow run id: nothing can verify it", async () => {
    const queue = await freshQueue({ state: "paused", mode: "parallel" });
    const pr = openPr(queue.targetBranch);
    const answer = await server.call<{ error: { code: string; message: string } }>(
      "setImpactedTargets",
      { ...queue, pr: { number: pr.number, sha: "a".repeat(40) }, impactedTargets: "ALL" },
      { token: null, headers: { "x-forked-workflow-run-id": "12345" } },
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error.message).toContain("GitHub App configured");
  });
});

describe("getMergeQueueTestingDetails", () => {
  it("describes the run a pull request is tested in", async () => {
    const queue = await freshQueue({ requiredStatuses: ["test"] });
    const pr = openPr(queue.targetBranch, "Tested change");
    await submit(queue, pr.number);
    const runId = await eventually(async () => {
      const id = (await get(queue, pr.number, true)).timeline?.find((t) => t.testRunId)?.testRunId;
      expect(id).toBeTruthy();
      return id ?? "";
    });
    const answer = await server.call<Body>("getMergeQueueTestingDetails", {
      ...queue,
      testRunId: runId,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      requiredStatuses: ["test"],
      requiredStatusesSource: "merge_instance",
      status: "in_progress",
      testedPullRequests: [
        {
          prNumber: pr.number,
          prUrl: `https://github.com/acme/app/pull/${pr.number}`,
          title: "Tested change",
        },
      ],
      dependentPrs: [],
      statusChecks: [],
    });
    expect(answer.body.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const unknown = await server.call("getMergeQueueTestingDetails", {
      ...queue,
      testRunId: "no-such-run",
    });
    expect(unknown.status).toBe(404);
  });
});

describe("GET getMergeQueueMetrics", () => {
  it("counts what is queued, not ready, and concluded in the last hour", async () => {
    const queue = await freshQueue();
    const ready = [openPr(queue.targetBranch), openPr(queue.targetBranch)];
    const elsewhere = openPr("another-base");
    for (const pr of [...ready, elsewhere]) await submit(queue, pr.number);
    const cancelled = openPr(queue.targetBranch);
    await submit(queue, cancelled.number);
    await server.call("cancelPullRequest", { ...queue, pr: { number: cancelled.number } });

    const answer = await server.request(
      "/v1/getMergeQueueMetrics?repo=acme/app&repoHost=github.com",
      {
        headers: { "x-api-token": server.token },
      },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const labels = `repo="acme/app",branch="${queue.targetBranch}",queue_type="main"`;
    expect(answer.text).toContain(`mq_depth_current{${labels}} 2`);
    expect(answer.text).toContain(`mq_awaiting_mergeability{${labels}} 1`);
    expect(answer.text).toContain(`mq_testing_slots_active{${labels}} 0`);
    expect(answer.text).toContain(`mq_pr_conclusions_1h_total{${labels},conclusion="cancelled"} 1`);
    expect(answer.text).toContain(`mq_pr_time_in_queue_1h_seconds_count{${labels}} 1`);
  });
});

describe("the OpenAPI document", () => {
  it("lists the pull-request operations once the engine is wired", async () => {
    const paths = (
      (await server.request("/openapi.json")).body as {
        paths: Record<string, Record<string, unknown>>;
      }
    ).paths;
    for (const name of [
      "submitPullRequest",
      "queuePullRequest",
      "cancelPullRequest",
      "restartTestsOnPullRequest",
      "getSubmittedPullRequest",
      "getSubmittedPullRequests",
      "listPullRequests",
      "setImpactedTargets",
      "getMergeQueueTestingDetails",
    ]) {
      expect(paths[`/v1/${name}`]?.post, name).toBeDefined();
    }
    expect(paths["/v1/getMergeQueueMetrics"]?.get).toBeDefined();
  });
});

describe("waitingFor", () => {
  interface Waiting {
    reason: string;
    message: string;
    until?: string;
    batch?: { have: number; need: number };
  }
  type WaitingItem = Item & { waitingFor?: Waiting };

  it("a lone pull request in batching mode says the batch is forming, until the run starts", async () => {
    const queue = await freshQueue({
      requiredStatuses: ["test"],
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 30,
    });
    const pr = openPr(queue.targetBranch);
    const before = Date.now();
    await submit(queue, pr.number);
    const item = await eventually(async () => {
      const read = (await get(queue, pr.number)) as WaitingItem;
      expect(read.waitingFor).toBeDefined();
      return read;
    });
    expect(item.state).toBe("pending");
    const waiting = item.waitingFor as Waiting;
    expect(waiting).toMatchObject({ reason: "batch_forming", batch: { have: 1, need: 3 } });
    // The batch starts batchingMaxWaitTimeMinutes after the pull request became ready.
    const until = Date.parse(waiting.until ?? "");
    expect(until).toBeGreaterThanOrEqual(before + 30 * 60_000 - 5_000);
    expect(until).toBeLessThanOrEqual(Date.now() + 30 * 60_000);
    expect(waiting.message).toBe(
      `batch forming: 1 of 3, starts by ${waiting.until ?? ""} at the latest`,
    );

    // The queue's contents and the listing say the same.
    const contents = await server.call<{ enqueuedPullRequests: WaitingItem[] }>("getQueue", queue);
    expect(contents.body.enqueuedPullRequests[0]?.waitingFor).toEqual(waiting);
    const listed = await server.call<{ pullRequests: WaitingItem[] }>("listPullRequests", queue);
    expect(listed.body.pullRequests[0]?.waitingFor).toEqual(waiting);

    // Two more fill the batch: it is tested, and nothing waits any more.
    const more = [openPr(queue.targetBranch), openPr(queue.targetBranch)];
    for (const other of more) await submit(queue, other.number);
    await eventually(async () => {
      const read = (await get(queue, pr.number)) as WaitingItem;
      expect(read.state).toBe("testing");
      expect(read).not.toHaveProperty("waitingFor");
    });
    for (const other of more) {
      expect(await get(queue, other.number)).not.toHaveProperty("waitingFor");
    }
    const after = await server.call<{ enqueuedPullRequests: WaitingItem[] }>("getQueue", queue);
    expect(after.body.enqueuedPullRequests.filter((p) => p.waitingFor)).toEqual([]);
  });

  it("a pull request tested on its own waits for nothing", async () => {
    const queue = await freshQueue({ requiredStatuses: ["test"] });
    const pr = openPr(queue.targetBranch);
    await submit(queue, pr.number);
    await eventually(async () => {
      expect((await get(queue, pr.number)).state).toBe("testing");
    });
    expect(await get(queue, pr.number)).not.toHaveProperty("waitingFor");
  });
});
