/**
 * Merge-queue events end to end on both databases: a queue on the local git host with the
 * built-in CI, an endpoint subscribed to every `pull_request.*` type, a real receiver verifying
 * each delivery with `standardwebhooks`. A pull request that merges is seen submitted, queued,
 * testing and merged, in that order, with Trunk's fields; one that breaks the tests gets
 * `pull_request.failed` with a `failure_reason` of Trunk's enum.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  LOCAL,
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  oneMergedOneFailed,
  openPullRequest,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { TRUNK_REASONS, check } from "../helpers/webhook-schemas.js";
import { startReceiver, type Received, type Receiver } from "./receiver.js";

const PULL_REQUEST_TYPES = [
  "submitted",
  "queued",
  "testing",
  "pending_failure",
  "failed",
  "canceled",
  "merged",
].map((action) => `pull_request.${action}`);

let server: TestServer;
let receiver: Receiver;
let call: Call;

beforeAll(async () => {
  server = await startTestServer({
    startWorker: false,
    engine: { pollMs: 100 },
    webhooks: { allowPrivate: true, schedule: [0, 100, 100], timeoutMs: 2000, pollMs: 50 },
  });
  server.services.webhooks.dispatcher.start();
  call = (operation, body) => server.call(operation, body);
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
  await server.close();
});

function eventsOf(number: number): Received[] {
  return receiver.requests.filter((r) => r.body.pr_number === number);
}

describe("merge-queue webhooks", () => {
  it("tells a receiver each step of a merged and a failed pull request, with Trunk's fields", async () => {
    // Another organization's endpoint must hear nothing of acme's queue.
    const other = await server.services.organizations.createOrganizationWithToken("other");
    const stranger = await startReceiver();
    const elsewhere = await server.call<{ secret: string }>(
      "webhooks/createEndpoint",
      { url: stranger.url },
      { token: other.token },
    );
    expect(elsewhere.status, elsewhere.text).toBe(200);

    const project = await createRepositoryAndQueue(call, {
      testingTimeoutMinutes: 0,
      concurrency: 1,
      batch: false,
    });
    const created = await ok<{ secret: string }>(call, "webhooks/createEndpoint", {
      url: receiver.url,
      eventTypes: PULL_REQUEST_TYPES,
      repositories: [LOCAL],
    });
    receiver.secret = created.secret;
    const { good, bad } = await oneMergedOneFailed(call, project);
    await waitFor(
      () =>
        eventsOf(good).some((r) => r.body.type === "pull_request.merged") &&
        eventsOf(bad).some((r) => r.body.type === "pull_request.failed"),
      "the merged and failed events",
    );
    await server.services.webhooks.dispatcher.drain();

    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(receiver.requests.every((r) => r.verified)).toBe(true);
    // Every payload matches its type's schema (Trunk's fields, types and enums).
    expect(receiver.requests.map((r) => check(r.body))).toEqual(receiver.requests.map(() => ""));
    // Each event once (delivered at least once, and here nothing failed).
    expect(new Set(receiver.requests.map((r) => r.id)).size).toBe(receiver.requests.length);

    const merged = eventsOf(good);
    expect(merged.map((r) => r.body.type)).toEqual([
      "pull_request.submitted",
      "pull_request.queued",
      "pull_request.testing",
      "pull_request.merged",
    ]);
    for (const event of merged) {
      const action = String(event.body.type).slice("pull_request.".length);
      expect(event.body).toMatchObject({
        action,
        status: action,
        pr_number: good,
        repository: LOCAL,
        target_branch: QUEUE.targetBranch,
        author: "dev",
      });
      expect(typeof event.body.timestamp).toBe("string");
      expect(Number.isNaN(Date.parse(String(event.body.timestamp)))).toBe(false);
      expect(String(event.body.http_details_url)).toMatch(/^https?:\/\//);
    }
    const times = merged.map((r) => Date.parse(String(r.body.timestamp)));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    const [submitted, queued, testing, done] = merged.map((r) => r.body);
    expect(submitted?.submitted_reason).toMatch(/^(USER_REQUESTED|API_REQUESTED)$/);
    expect(submitted).not.toHaveProperty("test_branch");
    expect(queued?.queued_reason).toBe("MERGE_ITEM_NOW_READY");
    expect(testing?.is_bisection).toBe(false);
    expect(testing?.batched).toBe(false);
    expect(String(testing?.test_branch)).toMatch(/^mainline-merge\//);
    expect(String(testing?.test_branch_sha)).toMatch(/^[0-9a-f]{40}$/);
    expect(done?.merged_reason).toBe("MERGE_GRAPH_MERGE");
    expect(done?.test_branch).toBe(testing?.test_branch);

    // The queue's default pending-failure depth holds a failed PR a moment (Trunk's
    // `pending_failure`) before it is evicted.
    const failedEvents = eventsOf(bad);
    expect(failedEvents.map((r) => r.body.type)).toEqual([
      "pull_request.submitted",
      "pull_request.queued",
      "pull_request.testing",
      "pull_request.pending_failure",
      "pull_request.failed",
    ]);
    expect(failedEvents[3]?.body.failure_reason).toBe("TEST_RUN_REQUIRED_STATUS_FAILED");
    const failed = failedEvents.at(-1)?.body;
    expect(TRUNK_REASONS.failure_reason).toContain(failed?.failure_reason);
    expect(failed).toMatchObject({
      failure_reason: "TEST_RUN_REQUIRED_STATUS_FAILED",
      mainline_reason: "failing_required_check",
      is_bisection: false,
      pr_number: bad,
      repository: LOCAL,
    });
    expect(String(failed?.test_branch)).toMatch(/^mainline-merge\//);
    // Why, as the pull request's page says it: the check that failed, with its link.
    expect(failed?.failure).toMatchObject({
      check: expect.any(String) as unknown,
      summary: expect.stringMatching(/required check/i) as unknown,
      failed_checks: [expect.objectContaining({ conclusion: "failure" })],
    });

    // Batches: Trunk's `pull_request_batch.*`, and the queue's own pause and resume.
    const batches = await startReceiver();
    batches.secret = (
      await ok<{ secret: string }>(call, "webhooks/createEndpoint", {
        url: batches.url,
        eventTypes: [
          ...["testing", "pending_failure", "failed", "canceled", "merged"].map(
            (action) => `pull_request_batch.${action}`,
          ),
          "mainline.queue.state_changed",
        ],
      })
    ).secret;
    await project.syncMain();
    await ok(call, "updateQueue", {
      ...QUEUE,
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 1,
      state: "paused",
    });
    const trio = [
      await openPullRequest(call, project, 3, { "numbers/p3.txt": "3\n" }),
      await openPullRequest(call, project, 4, { "numbers/p4.txt": "4\n" }),
      await openPullRequest(call, project, 5, { "numbers/p5.txt": "five\n" }),
    ];
    for (const number of trio) await submit(call, number);
    await ok(call, "updateQueue", { ...QUEUE, state: "running" });
    await waitFor(() => allConcluded(call, trio), "the batch to conclude", {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    await server.services.webhooks.dispatcher.drain();
    const batchEvents = batches.requests.map((r) => r.body);
    expect(batches.requests.every((r) => r.verified)).toBe(true);
    expect(batchEvents.map((body) => check(body))).toEqual(batchEvents.map(() => ""));
    const states = batchEvents.filter((body) => body.type === "mainline.queue.state_changed");
    expect(states.map((body) => [body.previous_state, body.state])).toEqual([
      ["RUNNING", "PAUSED"],
      ["PAUSED", "RUNNING"],
    ]);
    expect(String(states[0]?.actor)).toMatch(/^token:/);
    const ofBatch = batchEvents.filter((body) =>
      String(body.type).startsWith("pull_request_batch."),
    );
    expect(ofBatch[0]).toMatchObject({
      type: "pull_request_batch.testing",
      pr_numbers_in_batch: trio,
      is_bisection: false,
    });
    expect([...(ofBatch[0]?.pr_numbers as number[])].sort()).toEqual(trio);
    // The batch failed as a whole (each member once), then its good prefix merged as a batch.
    expect(ofBatch[1]).toMatchObject({
      type: "pull_request_batch.pending_failure",
      pr_numbers: trio,
      failure_reason: "TEST_RUN_REQUIRED_STATUS_FAILED",
    });
    const mergedBatches = ofBatch.filter((body) => body.type === "pull_request_batch.merged");
    expect(mergedBatches.flatMap((body) => body.pr_numbers as number[]).sort()).toEqual(
      trio.slice(0, 2),
    );
    expect(eventsOf(trio[2] ?? 0).at(-1)?.body.type).toBe("pull_request.failed");

    expect(stranger.requests).toEqual([]);
    await stranger.close();
    await batches.close();
  }, 120_000);
});
