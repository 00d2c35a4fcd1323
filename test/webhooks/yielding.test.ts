/**
 * Deliveries give way to test-health ingestion in the same process (the outbox must not slow it):
 * while ingestion works, sends wait, at most `maxYieldMs`; then every due delivery goes out
 * before sends wait again; a drain (tests) waits for what the loop has in flight. On both
 * databases, with the real store, sender and a real receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundDeliveryStore } from "../../src/db/stores/outbound-deliveries.js";
import { WebhookDispatcher } from "../../src/notifications/dispatcher.js";
import { sendWebhook } from "../../src/notifications/sender.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { startReceiver, type Receiver } from "./receiver.js";

let server: TestServer;
let receiver: Receiver;
let endpointId: string;

beforeAll(async () => {
  server = await startTestServer({ webhooks: { allowPrivate: true } });
  // The server's own worker stays stopped: the test drives a dispatcher of its own.
  await server.services.webhooks.dispatcher.stop();
  receiver = await startReceiver();
  const created = await server.call<{ endpoint: { id: string }; secret: string }>(
    "webhooks/createEndpoint",
    { url: receiver.url },
  );
  expect(created.status, created.text).toBe(200);
  receiver.secret = created.body.secret;
  endpointId = created.body.endpoint.id;
});

afterAll(async () => {
  await receiver.close();
  await server.close();
});

/** A dispatcher of the server's store, with `clock`, `yieldTo` and `send` as given. */
function dispatcherFor(deps: {
  now: () => number;
  yieldTo: () => boolean;
  send?: typeof sendWebhook;
}): WebhookDispatcher {
  return new WebhookDispatcher(
    {
      records: new OutboundDeliveryStore(server.database.handle.db, server.database.handle.dialect),
      views: {
        test: () => Promise.resolve(undefined),
        pullRequest: () => Promise.resolve(undefined),
        queue: () => Promise.resolve(undefined),
        batch: () => Promise.resolve(undefined),
      },
      send: deps.send ?? sendWebhook,
      clock: { now: deps.now },
      logger: { warn: () => undefined },
      yieldTo: deps.yieldTo,
    },
    {
      schedule: [0],
      timeoutMs: 5_000,
      disableAfterMs: 60_000,
      allowPrivate: true,
      pollMs: 50,
      leaseMs: 30_000,
      batchSize: 1,
      maxYieldMs: 5_000,
      userAgent: "test",
      publicUrl: () => "http://localhost",
      slackApiUrl: "https://slack.com/api",
    },
  );
}

describe("deliveries and ingestion", () => {
  it("wait while ingestion works, at most maxYieldMs, then all go out", async () => {
    let now = 1_000_000;
    let ingesting = true;
    const dispatcher = dispatcherFor({ now: () => now, yieldTo: () => ingesting });
    for (let i = 0; i < 3; i++) {
      const sent = await server.call("webhooks/sendTestEvent", { endpointId });
      expect(sent.status, sent.text).toBe(200);
    }
    // Due now, but ingestion works: nothing goes out for up to 5 s.
    now = Date.now();
    await dispatcher.pass();
    now += 4_999;
    await dispatcher.pass();
    expect(receiver.requests).toHaveLength(0);
    // The wait ran out: every due delivery goes out (one a pass here), ingestion or not.
    now += 1;
    await dispatcher.pass();
    await dispatcher.pass();
    await dispatcher.pass();
    expect(receiver.accepted()).toHaveLength(3);
    expect(receiver.requests.every((r) => r.verified)).toBe(true);

    // Caught up (a pass found nothing due), sends wait again while ingestion works; without it
    // they go at once.
    await dispatcher.pass();
    await server.call("webhooks/sendTestEvent", { endpointId });
    await dispatcher.pass();
    await dispatcher.pass();
    expect(receiver.accepted()).toHaveLength(3);
    ingesting = false;
    await dispatcher.pass();
    expect(receiver.accepted()).toHaveLength(4);

    // A drain delivers what is due now, ingestion or not.
    ingesting = true;
    await server.call("webhooks/sendTestEvent", { endpointId });
    await dispatcher.pass();
    expect(receiver.accepted()).toHaveLength(4);
    await dispatcher.drain();
    expect(receiver.accepted()).toHaveLength(5);
  });

  it("drain waits for the send its loop has in flight", async () => {
    // The loop's pass holds a delivery while it is sent; a drain meanwhile finds nothing due,
    // yet returns only once that send is done (tests read the receiver right after a drain).
    let release = (): void => undefined;
    let inFlight = (): void => undefined;
    const sending = new Promise<void>((resolve) => (inFlight = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    const dispatcher = dispatcherFor({
      now: () => Date.now(),
      yieldTo: () => false,
      send: async (...args) => {
        inFlight();
        await gate;
        return sendWebhook(...args);
      },
    });
    const before = receiver.accepted().length;
    await server.call("webhooks/sendTestEvent", { endpointId });
    dispatcher.start();
    try {
      await sending;
      const drained = dispatcher.drain();
      setTimeout(release, 300);
      await drained;
      expect(receiver.accepted()).toHaveLength(before + 1);
    } finally {
      release();
      await dispatcher.stop();
    }
  });
});
