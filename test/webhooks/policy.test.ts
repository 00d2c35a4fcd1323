/**
 * Outbound webhooks' address policy and throttling, with real HTTP on both databases: an endpoint
 * may not point at the service itself (even where internal addresses are allowed); a name that
 * resolves to an internal address is refused when the delivery connects, nothing sent and the
 * reason recorded in the attempt; `Retry-After` on a 429 delays the next attempt that long.
 */
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isInternalAddress } from "../../src/notifications/addresses.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { waitFor } from "../helpers/process.js";
import { startReceiver, type Receiver } from "./receiver.js";

interface Attempt {
  at: string;
  statusCode: number | null;
  error: string | null;
}
interface Delivery {
  state: string;
  attempts: Attempt[];
}

async function deliveriesOf(server: TestServer): Promise<Delivery[]> {
  const { body } = await server.call<{ deliveries: Delivery[] }>("webhooks/listDeliveries", {
    page_query: { page_size: 10 },
  });
  return body.deliveries;
}

async function pingVia(server: TestServer, url: string): Promise<{ endpointId: string }> {
  const created = await server.call<{ endpoint: { id: string } }>("webhooks/createEndpoint", {
    url,
  });
  expect(created.status, created.text).toBe(200);
  const endpointId = created.body.endpoint.id;
  const sent = await server.call("webhooks/sendTestEvent", { endpointId });
  expect(sent.status, sent.text).toBe(200);
  return { endpointId };
}

let receiver: Receiver;
afterEach(async () => {
  await receiver.close();
});

describe("with internal addresses allowed", () => {
  let server: TestServer;
  let self = "";
  beforeAll(async () => {
    server = await startTestServer({
      publicUrl: "https://mainline.example.com",
      webhooks: {
        allowPrivate: true,
        schedule: [0, 100, 100],
        pollMs: 50,
        listenOrigins: () => [self],
      },
    });
    self = server.url;
  });
  afterAll(async () => {
    await server.close();
  });

  it("refuses an endpoint at the service itself: its public URL or the address it listens on", async () => {
    receiver = await startReceiver();
    const port = new URL(server.url).port;
    for (const url of [
      `${server.url}/v1/webhooks/createEndpoint`,
      `http://localhost:${port}/hook`,
      `http://[::1]:${port}/hook`,
      "https://mainline.example.com/hook",
      "https://MAINLINE.example.com:443/v1/x",
    ]) {
      const refused = await server.call<{ message?: string }>("webhooks/createEndpoint", { url });
      expect(refused.status, url).toBe(400);
      expect(refused.text, url).toMatch(/may not point at this Mainline service/);
    }
    const { body } = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {});
    expect(body.endpoints).toEqual([]);
    // Another port of the same machine is another service: allowed here.
    const allowed = await server.call<{ endpoint: { id: string } }>("webhooks/createEndpoint", {
      url: receiver.url,
    });
    expect(allowed.status, allowed.text).toBe(200);
    // Nor may an endpoint be moved onto the service.
    const moved = await server.call("webhooks/updateEndpoint", {
      endpointId: allowed.body.endpoint.id,
      url: `${server.url}/hook`,
    });
    expect(moved.status).toBe(400);
    await server.call("webhooks/deleteEndpoint", { endpointId: allowed.body.endpoint.id });
  });

  it("waits as long as a 429's Retry-After says before the next attempt", async () => {
    receiver = await startReceiver();
    receiver.answers = [429];
    receiver.headers = { "retry-after": "2" };
    const { endpointId } = await pingVia(server, receiver.url);
    server.services.webhooks.dispatcher.start();
    await waitFor(() => receiver.accepted().length >= 1, "the retried delivery", {
      timeoutMs: 10_000,
    });
    const [delivery] = await deliveriesOf(server);
    expect(delivery?.state).toBe("succeeded");
    expect(delivery?.attempts.map((a) => a.statusCode)).toEqual([429, 204]);
    const [first, second] = (delivery?.attempts ?? []).map((a) => Date.parse(a.at));
    // The schedule says 100 ms; the endpoint asked for 2 s.
    expect((second ?? 0) - (first ?? 0)).toBeGreaterThanOrEqual(2_000);
    expect(receiver.requests.map((r) => r.id)).toEqual([
      receiver.requests[0]?.id,
      receiver.requests[0]?.id,
    ]);
    await server.call("webhooks/deleteEndpoint", { endpointId });
  });
});

describe("with internal addresses refused", () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ webhooks: { allowPrivate: false, schedule: [0] } });
  });
  afterAll(async () => {
    await strict.close();
  });

  it("refuses, when it connects, a name that resolves to an internal address: nothing sent, the reason recorded", async () => {
    receiver = await startReceiver();
    // The machine's own name: not an address, so the URL is accepted when saved, but it
    // resolves to one of the machine's (loopback or private) addresses.
    const name = hostname();
    const resolved = await lookup(name, { all: true });
    expect(
      resolved.some((a) => isInternalAddress(a.address)),
      `${name} resolves to an internal address`,
    ).toBe(true);
    const { endpointId } = await pingVia(
      strict,
      `http://${name}:${new URL(receiver.url).port}/hook`,
    );
    await strict.services.webhooks.dispatcher.drain();
    const [delivery] = await deliveriesOf(strict);
    expect(delivery?.state).toBe("failed");
    expect(delivery?.attempts).toHaveLength(1);
    expect(delivery?.attempts[0]?.statusCode).toBeNull();
    expect(delivery?.attempts[0]?.error).toMatch(
      /the name resolves to an internal address \(.+\), not allowed/,
    );
    // A moment for a request that should not have been made to arrive anyway.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(receiver.requests).toEqual([]);
    await strict.call("webhooks/deleteEndpoint", { endpointId });
  });
});
