import { OutboundWebhookStore } from "../../../../src/db/stores/outbound-webhooks.js";
import { OutboundDeliveryStore } from "../../../../src/db/stores/outbound-deliveries.js";
import type { EndpointRecord } from "../../../../src/notifications/records.js";
import { NOW, ORG } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of the outbound webhook stores (`src/db/stores/outbound-webhooks.ts`,
 * `outbound-deliveries.ts`), recorded into `src/db/queries/outbound-*.{sqlite,postgres}.sql`.
 */

const ENDPOINT: EndpointRecord = {
  id: "we_1",
  organizationId: ORG,
  kind: "webhook",
  url: "https://hooks.example.com/x",
  secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj",
  channel: null,
  eventTypes: [],
  repositoryIds: [],
  codeOwners: [],
  description: "",
  enabled: true,
  disabledReason: null,
  disabledAt: null,
  failingSince: null,
  createdAt: NOW,
  updatedAt: NOW,
};
const ENDPOINT_ROW = {
  ...ENDPOINT,
  event_types: "[]",
  repository_ids: "[]",
  code_owners: "[]",
  enabled: 1,
};
const EVENT_ROW = { seq: 1, id: "msg_1", facts: '{"kind":"ping","at":1}', payload: "{}" };

export const outboundWebhooksScenario = scenario({
  file: "outbound-webhooks",
  name: "OutboundWebhookStore",
  create: (handle) => new OutboundWebhookStore(handle.db),
  calls: [
    { method: "createEndpoint", run: (s) => s.createEndpoint(ENDPOINT) },
    { method: "listEndpoints", run: (s) => s.listEndpoints(ORG) },
    { method: "findEndpoint", run: (s) => s.findEndpoint(ORG, "we_1") },
    {
      method: "updateEndpoint",
      answer: when([/^update/, [ENDPOINT_ROW]]),
      run: (s) => s.updateEndpoint(ORG, "we_1", { enabled: false, eventTypes: [] }, NOW),
    },
    { method: "deleteEndpoint", run: (s) => s.deleteEndpoint(ORG, "we_1") },
    {
      method: "listEvents",
      answer: when([/^select "?outbound_events"?\.\*|select \*/, [EVENT_ROW]]),
      run: (s) => s.listEvents(ORG, { offset: 0, limit: 10 }),
    },
    { method: "findEvent", run: (s) => s.findEvent(ORG, "msg_1") },
    {
      method: "listDeliveries",
      answer: when([/"d"\."id"/, [{ id: "dlv_1", state: "pending" }]]),
      run: (s) =>
        s.listDeliveries(ORG, { endpointId: "we_1", eventId: "msg_1" }, { offset: 0, limit: 10 }),
    },
    {
      method: "pullRequestContext",
      answer: when(
        [/from "mq_entries"/, [{ queue_id: "q1", pr_number: 7 }]],
        [/from "merge_queues"/, [{ queue_id: "q1" }]],
        [/from "mq_runs"/, [{ prs: "[]" }]],
      ),
      run: (s) => s.pullRequestContext("entry-1", "run-1"),
    },
    {
      method: "queueContext",
      answer: when(
        [/from "merge_queues"/, [{ queue_id: "q1" }]],
        [/from "mq_runs"/, [{ prs: "[]" }]],
      ),
      run: (s) => s.queueContext("q1", "run-1"),
    },
    { method: "addDelivery", run: (s) => s.addDelivery(1, "we_1", "test:1", NOW) },
    {
      method: "addDirectEvent",
      answer: when([/^insert into "outbound_events"/, [{ seq: 1 }]]),
      run: (s) =>
        s.addDirectEvent(
          {
            id: "msg_1",
            organizationId: ORG,
            repositoryId: null,
            type: "mainline.ping",
            subject: "ping:we_1",
            facts: { kind: "ping", at: NOW },
            payload: "{}",
            createdAt: NOW,
          },
          "we_1",
        ),
    },
  ],
});

export const outboundDeliveriesScenario = scenario({
  file: "outbound-deliveries",
  name: "OutboundDeliveryStore",
  create: (handle) => new OutboundDeliveryStore(handle.db, handle.dialect),
  calls: [
    { method: "unpreparedEvents", run: (s) => s.unpreparedEvents(100) },
    {
      method: "prepareEvent",
      answer: when(
        [
          /^update "outbound_events"/,
          [{ organization_id: ORG, repository_id: null, type: "mainline.ping", subject: "s" }],
        ],
        [/from "outbound_endpoints"/, [ENDPOINT_ROW]],
      ),
      run: (s) => s.prepareEvent(1, "{}", NOW, ["@acme/payments"]),
    },
    {
      method: "claimDeliveries",
      answer: when([/^update "outbound_deliveries"/, [{ id: "dlv_1" }]]),
      run: (s) => s.claimDeliveries("worker-1", NOW, NOW + 30_000, 20),
    },
    {
      method: "recordAttempts",
      run: (s) =>
        s.recordAttempts("worker-1", [
          {
            deliveryId: "dlv_1",
            attempt: { at: NOW, statusCode: 500, error: null, durationMs: 12, response: "nope" },
            outcome: { state: "pending", attempts: 1, nextAttemptAt: NOW + 5_000 },
          },
        ]),
    },
    {
      method: "updateEndpointHealth",
      run: (s) => s.updateEndpointHealth("we_1", { failingSince: NOW }, NOW),
    },
    { method: "nextDue", run: (s) => s.nextDue() },
  ],
});
