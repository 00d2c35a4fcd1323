import { WebhookDeliveryStore } from "../../../../src/db/stores/webhook-deliveries.js";
import { NOW, DAY } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `WebhookDeliveryStore` (`src/db/stores/webhook-deliveries.ts`) whose SQL is recorded
 * into `src/db/queries/webhook-deliveries.{sqlite,postgres}.sql`; a method added to the store gets
 * a call here.
 */

const DELIVERY = {
  source: "github",
  deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  event: "pull_request",
  action: "opened",
  installationId: 42,
  payload: "{}",
  receivedAt: NOW,
};
const DELIVERY_ROW = {
  key: 5,
  source: "github",
  delivery_id: DELIVERY.deliveryId,
  event: "pull_request",
  action: "opened",
  installation_id: 42,
  received_at: NOW,
  state: "processing",
  attempts: 1,
  lease_until: NOW + 30_000,
  lease_owner: "worker-1",
  next_attempt_at: NOW,
  error: null,
  processed_at: null,
};
const CLAIMED = {
  ...DELIVERY,
  key: 5,
  state: "processing" as const,
  attempts: 1,
  leaseUntil: NOW + 30_000,
  leaseOwner: "worker-1",
  nextAttemptAt: NOW,
  error: null,
  processedAt: null,
};

export const webhookDeliveriesScenario = scenario({
  file: "webhook-deliveries",
  name: "WebhookDeliveryStore",
  create: (handle) => new WebhookDeliveryStore(handle.db, handle.dialect),
  calls: [
    {
      method: "storeMany",
      answer: when([
        /^insert into "webhook_deliveries"/,
        [
          { key: 5, source: "github", delivery_id: DELIVERY.deliveryId },
          { key: 6, source: "github", delivery_id: "second" },
        ],
      ]),
      run: (s) => s.storeMany([DELIVERY, { ...DELIVERY, deliveryId: "second" }]),
    },
    {
      method: "claim",
      answer: when([/^update/, [DELIVERY_ROW]], [/^select/, [{ delivery_key: 5, payload: "{}" }]]),
      run: (s) => s.claim("github", NOW, NOW + 30_000, "worker-1", 4),
    },
    { method: "renew", run: (s) => s.renew(CLAIMED, NOW + 30_000) },
    {
      method: "complete",
      answer: when([/^update/, [{ key: 5 }]]),
      run: (s) => s.complete([CLAIMED, { ...CLAIMED, key: 6, attempts: 2 }], NOW),
    },
    {
      method: "retryLater",
      run: (s) => s.retryLater(CLAIMED, NOW + 5_000, "GitHub answered 502"),
    },
    { method: "fail", run: (s) => s.fail(CLAIMED, "GitHub answered 502", NOW) },
    { method: "park", run: (s) => s.park(CLAIMED, NOW) },
    { method: "unpark", run: (s) => s.unpark("github", 42, NOW) },
    { method: "prune", run: (s) => s.prune(NOW - 7 * DAY, NOW - 30 * DAY) },
    { method: "find", run: (s) => s.find("github", DELIVERY.deliveryId) },
  ],
});
