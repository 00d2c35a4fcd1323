/**
 * The outbound stores with endpoint kinds (migration 0033) on the dialect under test: endpoints
 * stored before it are webhooks with no channel and no owners; an event is fanned out to the
 * endpoints whose code owners own its test (queue events to all); a claimed delivery carries its
 * endpoint's kind, channel and credential and its event's type; the migration goes down and up.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chatDestinations } from "../../src/db/migrations/0033_chat_destinations.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { OrganizationStore } from "../../src/db/stores/organizations.js";
import { OutboundDeliveryStore } from "../../src/db/stores/outbound-deliveries.js";
import { OutboundWebhookStore } from "../../src/db/stores/outbound-webhooks.js";
import type { EndpointRecord } from "../../src/notifications/records.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";

let database: TestDatabase;
let endpoints: OutboundWebhookStore;
let deliveries: OutboundDeliveryStore;

const endpoint = (id: string, extra: Partial<EndpointRecord>): EndpointRecord => ({
  id,
  organizationId: "o1",
  kind: "slack",
  url: `https://hooks.slack.example/services/T0/B0/${id}`,
  secret: "",
  channel: null,
  eventTypes: [],
  repositoryIds: [],
  codeOwners: [],
  description: "",
  enabled: true,
  disabledReason: null,
  disabledAt: null,
  failingSince: null,
  createdAt: 1,
  updatedAt: 1,
  ...extra,
});

beforeEach(async () => {
  database = await createTestDatabase();
  const { db, dialect } = database.handle;
  await new OrganizationStore(db).ensure({ id: "o1", slug: "acme", createdAt: 1 });
  endpoints = new OutboundWebhookStore(db);
  deliveries = new OutboundDeliveryStore(db, dialect);
});
afterEach(async () => {
  await database.cleanup();
});

async function addEvent(seq: number, type: string): Promise<void> {
  await database.handle.db
    .insertInto("outboundEvents")
    .values({
      seq,
      id: `msg_${String(seq)}`,
      organizationId: "o1",
      repositoryId: null,
      type,
      subject: `s${String(seq)}`,
      facts: '{"kind":"ping","at":1}',
      payload: null,
      createdAt: 1,
      preparedAt: null,
    })
    .execute();
}

describe("chat destinations in the outbound stores", () => {
  it("fans a test's event out to its owners' endpoints, a queue event to all", async () => {
    await endpoints.createEndpoint(endpoint("we_pay", { codeOwners: ["@ACME/Payments"] }));
    await endpoints.createEndpoint(
      endpoint("we_bot", {
        kind: "slack_bot",
        url: "",
        secret: "xoxb-1-2-token",
        channel: "C0ALICE",
        codeOwners: ["alice"],
      }),
    );
    await endpoints.createEndpoint(endpoint("we_all", { kind: "teams" }));
    await addEvent(1, "test_case.status_changed");
    await addEvent(2, "pull_request.failed");
    expect(await deliveries.prepareEvent(1, "{}", 2, ["@acme/payments"])).toBe(true);
    expect(await deliveries.prepareEvent(2, "{}", 2, [])).toBe(true);

    const claimed = await deliveries.claimDeliveries("me", 3, 1000, 10);
    const byEvent = (id: string) =>
      claimed
        .filter((d) => d.eventId === id)
        .map((d) => d.endpointId)
        .sort();
    expect(byEvent("msg_1")).toEqual(["we_all", "we_pay"]);
    expect(byEvent("msg_2")).toEqual(["we_all", "we_bot", "we_pay"]);
    const bot = claimed.find((d) => d.endpointId === "we_bot");
    expect(bot).toMatchObject({
      kind: "slack_bot",
      channel: "C0ALICE",
      secret: "xoxb-1-2-token",
      eventType: "pull_request.failed",
    });
    expect(claimed.find((d) => d.endpointId === "we_all")?.kind).toBe("teams");
  });

  it("keeps endpoints stored before migration 0033 as webhooks; goes down and up", async () => {
    const db = database.handle.db as never;
    const types = columnTypes(database.handle.dialect);
    await chatDestinations.down(db, types);
    await database.handle.db
      .insertInto("outboundEndpoints")
      .values({
        id: "we_old",
        organizationId: "o1",
        url: "https://hooks.example.com/in",
        secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj",
        eventTypes: "[]",
        repositoryIds: "[]",
        description: "",
        enabled: 1,
        disabledReason: null,
        disabledAt: null,
        failingSince: null,
        createdAt: 1,
        updatedAt: 1,
      } as never)
      .execute();
    await chatDestinations.up(db, types);
    expect(await endpoints.findEndpoint("o1", "we_old")).toMatchObject({
      kind: "webhook",
      channel: null,
      codeOwners: [],
      url: "https://hooks.example.com/in",
    });
    const updated = await endpoints.updateEndpoint(
      "o1",
      "we_old",
      { codeOwners: ["@acme/search"], channel: null },
      2,
    );
    expect(updated?.codeOwners).toEqual(["@acme/search"]);
  });
});
