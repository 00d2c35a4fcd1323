/**
 * Outbound webhooks end to end in one process, on both databases: changes of test health emit
 * their events in the change's transaction, the worker signs and delivers them to a real receiver
 * that verifies each with `standardwebhooks`; errors and timeouts are retried in order per
 * subject; 410 disables; the API refuses internal addresses and other organizations.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, REPO, type TestServer } from "../helpers/server.js";
import { waitFor } from "../helpers/process.js";
import { insertTestCase } from "../helpers/test-cases.js";
import { check } from "../helpers/webhook-schemas.js";
import { startReceiver, type Receiver } from "./receiver.js";

let server: TestServer;
let receiver: Receiver;
let testKey: number;
const testId = randomUUID();

beforeAll(async () => {
  server = await startTestServer({
    webhooks: { allowPrivate: true, schedule: [0, 100, 100, 100, 100], timeoutMs: 500, pollMs: 50 },
  });
  server.services.webhooks.dispatcher.start();
  const repository = await server.services.stores.repositories.ensure(
    server.organizationId,
    REPO,
    Date.now(),
  );
  testKey = await insertTestCase(server.database.handle.db, repository.id, testId, Date.now());
});

afterAll(async () => {
  await server.close();
});

afterEach(async () => {
  await receiver.close();
  const { body } = await server.call<{ endpoints: { id: string }[] }>("webhooks/listEndpoints", {});
  for (const endpoint of body.endpoints) {
    await server.call("webhooks/deleteEndpoint", { endpointId: endpoint.id });
  }
});

async function endpointFor(extra: Record<string, unknown> = {}): Promise<string> {
  receiver = await startReceiver();
  const created = await server.call<{ endpoint: { id: string }; secret: string }>(
    "webhooks/createEndpoint",
    { url: receiver.url, description: "tests", ...extra },
  );
  expect(created.status, created.text).toBe(200);
  receiver.secret = created.body.secret;
  return created.body.endpoint.id;
}

function setOverride(override: string) {
  return server.call("flaky-tests/set-quarantine-override", {
    org_url_slug: "acme",
    repo: REPO,
    test_id: testId,
    override,
    reason: `because ${override}`,
    actor: "ana@example.com",
  });
}

async function changeStatus(status: string, at: number) {
  const { ingest } = server.services.stores;
  await ingest.transaction("", async ({ trx }) => {
    await ingest.applyClassifications(trx, [
      {
        key: testKey,
        status,
        reason: `now ${status}`,
        changedAt: at,
        monitorStates: "{}",
        monitorsActive: false,
      },
    ]);
  });
}

describe("outbound webhooks", () => {
  it("delivers every event of each change once, signed, in order per subject", async () => {
    await endpointFor();
    const ping = await server.call<{ eventId: string }>("webhooks/sendTestEvent", {
      endpointId: (await server.call<{ endpoints: { id: string }[] }>("webhooks/listEndpoints", {}))
        .body.endpoints[0]?.id,
    });
    expect(ping.status).toBe(200);
    await changeStatus("flaky", Date.now());
    for (const override of ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "UNSPECIFIED"]) {
      expect((await setOverride(override)).status).toBe(200);
    }
    await changeStatus("healthy", Date.now() + 1);
    await waitFor(() => receiver.accepted().length >= 8, "8 deliveries");
    await server.services.webhooks.dispatcher.drain();
    const got = receiver.requests;
    expect(got.every((r) => r.verified)).toBe(true);
    expect(got.map((r) => check(r.body))).toEqual(got.map(() => ""));
    expect(got.every((r) => r.userAgent?.startsWith("Mainline/"))).toBe(true);
    expect(new Set(got.map((r) => r.id)).size).toBe(got.length);
    const types = got.map((r) => r.body.type);
    expect(types[0]).toBe("mainline.ping");
    expect(types.slice(1)).toEqual([
      "test_case.status_changed",
      "v2.test_case.status_changed",
      "test_case.quarantining_setting_changed",
      "test_case.quarantining_setting_changed",
      "test_case.quarantining_setting_changed",
      "test_case.status_changed",
      "v2.test_case.status_changed",
    ]);
    const v1 = got[1]?.body as {
      status_change: { previous_status: string; current_status: { value: string } };
      test_case: { id: string };
    };
    expect(v1.status_change.previous_status).toBe("healthy");
    expect(v1.status_change.current_status.value).toBe("flaky");
    expect(v1.test_case.id).toBe(testId);
    const v2 = got[2]?.body as { previous_status: string; new_status: string };
    expect([v2.previous_status, v2.new_status]).toEqual(["HEALTHY", "FLAKY"]);
    const settings = got.slice(3, 6).map(
      (r) =>
        r.body.quarantine_setting_changed as {
          updated_quarantining_setting: string;
          previous_quarantining_setting: string;
        },
    );
    expect(
      settings.map((s) => [s.previous_quarantining_setting, s.updated_quarantining_setting]),
    ).toEqual([
      ["UNSPECIFIED", "ALWAYS_QUARANTINE"],
      ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE"],
      ["NEVER_QUARANTINE", "UNSPECIFIED"],
    ]);
  });

  it("retries after errors and timeouts, losing nothing and keeping the order", async () => {
    const endpointId = await endpointFor();
    receiver.answers = [500, "hang", 503, 500];
    receiver.headers = { "retry-after": "0" };
    for (const override of ["ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "UNSPECIFIED"]) {
      expect((await setOverride(override)).status).toBe(200);
    }
    await waitFor(() => receiver.accepted().length >= 3, "3 accepted deliveries");
    const accepted = receiver
      .accepted()
      .map(
        (r) =>
          (r.body.quarantine_setting_changed as { updated_quarantining_setting: string })
            .updated_quarantining_setting,
      );
    expect(accepted).toEqual(["ALWAYS_QUARANTINE", "NEVER_QUARANTINE", "UNSPECIFIED"]);
    // Every retry carried the id of its event: the first event was tried five times.
    const firstId = receiver.accepted()[0]?.id;
    expect(receiver.requests.slice(0, 5).every((r) => r.id === firstId)).toBe(true);
    const deliveries = await server.call<{
      deliveries: {
        state: string;
        attempts: { statusCode: number | null; error: string | null }[];
      }[];
    }>("webhooks/listDeliveries", { endpointId, page_query: { page_size: 10 } });
    // This endpoint's (the earlier tests' endpoints hear these events too).
    expect(deliveries.body.deliveries).toHaveLength(3);
    const oldest = deliveries.body.deliveries.at(-1);
    expect(oldest?.state).toBe("succeeded");
    expect(oldest?.attempts.map((a) => a.statusCode)).toEqual([500, null, 503, 500, 204]);
    expect(oldest?.attempts[1]?.error).toMatch(/no answer within 500 ms/);
  });

  it("disables an endpoint that answers 410 and says why", async () => {
    const endpointId = await endpointFor();
    receiver.answers = [410];
    expect((await setOverride("ALWAYS_QUARANTINE")).status).toBe(200);
    await waitFor(async () => {
      const { body } = await server.call<{ endpoints: { enabled: boolean }[] }>(
        "webhooks/listEndpoints",
        {},
      );
      return body.endpoints[0]?.enabled === false;
    }, "the endpoint disabled");
    const { body } = await server.call<{ endpoints: { id: string; disabledReason: string }[] }>(
      "webhooks/listEndpoints",
      {},
    );
    expect(body.endpoints[0]?.id).toBe(endpointId);
    expect(body.endpoints[0]?.disabledReason).toMatch(/410/);
    expect(JSON.stringify(body)).not.toContain("whsec_");
  });

  it("resends an event with the same webhook-id", async () => {
    const endpointId = await endpointFor();
    expect((await setOverride("NEVER_QUARANTINE")).status).toBe(200);
    await waitFor(() => receiver.accepted().length >= 1, "the first delivery");
    const first = receiver.accepted()[0];
    const resent = await server.call("webhooks/resend", { eventId: first?.id, endpointId });
    expect(resent.status, resent.text).toBe(200);
    await waitFor(() => receiver.accepted().length >= 2, "the resent delivery");
    expect(receiver.accepted()[1]?.id).toBe(first?.id);
    expect(receiver.accepted()[1]?.verified).toBe(true);
  });

  it("refuses bad URLs and secrets with 400, and other organizations with 404", async () => {
    const endpointId = await endpointFor({ eventTypes: ["pull_request.merged"] });
    for (const url of ["ftp://example.com/x", "not a url", "http://user:pw@example.com/"]) {
      const refused = await server.call("webhooks/createEndpoint", { url });
      expect(refused.status, url).toBe(400);
    }
    const badSecret = await server.call("webhooks/createEndpoint", {
      url: receiver.url,
      secret: "whsec_short",
    });
    expect(badSecret.status).toBe(400);
    const badType = await server.call("webhooks/createEndpoint", {
      url: receiver.url,
      eventTypes: ["nope"],
    });
    expect(badType.status).toBe(400);
    const other = await server.services.organizations.createOrganizationWithToken("other");
    const as = { token: other.token };
    for (const [operation, body] of [
      ["webhooks/updateEndpoint", { endpointId, enabled: false }],
      ["webhooks/deleteEndpoint", { endpointId }],
      ["webhooks/revealSecret", { endpointId }],
      ["webhooks/rotateSecret", { endpointId }],
      ["webhooks/sendTestEvent", { endpointId }],
      ["webhooks/resend", { endpointId, eventId: "msg_x" }],
    ] as const) {
      const answer = await server.call(operation, body, as);
      expect(answer.status, operation).toBe(404);
    }
    const listed = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {}, as);
    expect(listed.body.endpoints).toEqual([]);
    const revealed = await server.call<{ secret: string }>("webhooks/revealSecret", { endpointId });
    expect(revealed.body.secret).toBe(receiver.secret);
  });
});

describe("address policy", () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ webhooks: { allowPrivate: false } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await strict.close();
  });

  it("refuses loopback, private, link-local and unspecified addresses", async () => {
    for (const url of [
      "http://127.0.0.1:9/x",
      "http://localhost:9/x",
      "http://localhost.:9/x",
      "http://api.localhost./x",
      "http://10.1.2.3/x",
      "http://192.168.0.1/x",
      "http://169.254.169.254/latest",
      "http://0.0.0.0/",
      "http://[::1]/",
      "http://[fd00::1]/",
    ]) {
      const refused = await strict.call("webhooks/createEndpoint", { url });
      expect(refused.status, url).toBe(400);
    }
    const allowed = await strict.call("webhooks/createEndpoint", {
      url: "https://hooks.example.com/x",
    });
    expect(allowed.status).toBe(200);
  });
});
