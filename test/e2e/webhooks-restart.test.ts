/**
 * Outbound webhooks across a crash, with real `mainline serve` processes on both databases: the
 * server is killed with SIGKILL while the receiver holds a delivery open, then started again on
 * the same database. Every event of the queue arrives, a duplicate only under the same
 * `webhook-id`, and each pull request's events in order.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import {
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import {
  startServer,
  stopAllProcesses,
  waitFor,
  withBootstrapToken,
  type RunningServer,
} from "../helpers/process.js";
import { startReceiver, type Receiver } from "../webhooks/receiver.js";

const PRS = 3;
const STEPS = [
  "pull_request.submitted",
  "pull_request.queued",
  "pull_request.testing",
  "pull_request.merged",
];

let database: TestDatabase;
let receiver: Receiver;
beforeEach(async () => {
  database = await createTestDatabase();
  receiver = await startReceiver();
});
afterEach(async () => {
  await stopAllProcesses();
  await receiver.close();
  await database.cleanup();
});
afterAll(stopAllProcesses);

describe("outbound webhooks across a crash", () => {
  it("a server killed while a delivery is held open delivers every event after a restart, in order", async () => {
    const { env: base, token } = withBootstrapToken(database.env);
    const env = {
      ...base,
      // A killed server's queue and deliveries are taken over 2 s after its last renewal (the
      // deliveries' lease is that plus the delivery timeout).
      MAINLINE_QUEUE_LEASE_SECONDS: "2",
      MAINLINE_WEBHOOKS_TIMEOUT_MS: "2000",
      MAINLINE_WEBHOOKS_RETRY_SCHEDULE: "0,200ms,200ms,500ms,1s,1s",
      MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1",
    };
    let server: RunningServer = await startServer(env);
    const call: Call = (operation, body) => post(server.url, operation, body, token);
    const created = await ok<{ secret: string }>(call, "webhooks/createEndpoint", {
      url: receiver.url,
    });
    receiver.secret = created.secret;
    // The fourth delivery is held open for longer than the server lives.
    receiver.answers = [204, 204, 204, { holdMs: 1500 }];
    const project = await createRepositoryAndQueue(call, {
      concurrency: 1,
      testingTimeoutMinutes: 0,
    });
    const numbers: number[] = [];
    for (let k = 1; k <= PRS; k++) {
      numbers.push(
        await openPullRequest(call, project, k, {
          [`numbers/p${String(k)}.txt`]: `${String(k)}\n`,
        }),
      );
    }
    for (const number of numbers) await submit(call, number);
    await waitFor(() => receiver.holding > 0, "a delivery held open", { timeoutMs: 10_000 });
    expect(await server.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
    const heldId = receiver.requests[3]?.id;

    server = await startServer(env);
    await waitFor(() => allConcluded(call, numbers), "the queue to finish after the restart", {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const { events } = await ok<{ events: { id: string; type: string }[] }>(
      call,
      "webhooks/listEvents",
      { page_query: { page_size: 100 } },
    );
    expect(events.length).toBe(PRS * STEPS.length);
    const emitted = new Set(events.map((e) => e.id));
    const arrived = () => new Set(receiver.accepted().map((r) => r.id));
    await waitFor(
      () => [...emitted].every((id) => arrived().has(id)),
      "every event to arrive after the restart",
      { timeoutMs: 20_000, intervalMs: 100 },
    );

    const requests = receiver.requests;
    expect(requests.every((r) => r.verified)).toBe(true);
    // Nothing but the events, and a repeated id is the same event again, byte for byte.
    expect(requests.every((r) => emitted.has(r.id))).toBe(true);
    const bodyOf = new Map<string, string>();
    for (const r of requests) {
      const body = JSON.stringify(r.body);
      expect(bodyOf.get(r.id) ?? body, r.id).toBe(body);
      bodyOf.set(r.id, body);
    }
    // The held one was answered to no one: it came again after the restart, with its id.
    expect(requests.filter((r) => r.id === heldId).length).toBeGreaterThanOrEqual(2);
    // Each pull request's events once each, in order (counting each id at its first arrival).
    const firstArrivals = requests.filter((r, i) => requests.findIndex((o) => o.id === r.id) === i);
    for (const number of numbers) {
      const types = firstArrivals
        .filter((r) => r.body.pr_number === number)
        .map((r) => r.body.type);
      expect(types, `#${String(number)}`).toEqual(STEPS);
    }
    await server.stop();
  }, 60_000);
});
