/**
 * The webhook inbox's storage (migration 0025): a delivery's payload lives in a row of its own
 * from its storage until its completion; claims take several deliveries at once with their
 * payloads; a claim that was never completed (its process died) is taken again, payload
 * included, once its lease ends; redeliveries stay deduplicated; the migration moves existing
 * payloads over and back.
 */
import { sql, type Kysely } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { webhookPayloads } from "../../src/db/migrations/0025_webhook_payloads.js";
import { columnTypes } from "../../src/db/migrations/types.js";
import { WebhookDeliveryStore } from "../../src/db/stores/webhook-deliveries.js";
import type { NewDelivery } from "../../src/mergequeue/webhook-delivery-records.js";
import { TEST_DIALECT, createTestDatabase, type TestDatabase } from "../helpers/database.js";

const T = 1_800_000_000_000;
const LEASE = 30_000;

let database: TestDatabase;
let store: WebhookDeliveryStore;
beforeEach(async () => {
  database = await createTestDatabase();
  store = new WebhookDeliveryStore(database.handle.db, database.handle.dialect);
});
afterEach(async () => {
  await database.cleanup();
});

function delivery(id: string, at = T): NewDelivery {
  return {
    source: "github",
    deliveryId: id,
    event: "pull_request",
    action: "opened",
    installationId: 7,
    payload: JSON.stringify({ action: "opened", number: id, body: "x".repeat(20_000) }),
    receivedAt: at,
  };
}

/** The payloads stored, by delivery id. */
async function payloads(): Promise<Record<string, string>> {
  const rows = await database.handle.db
    .selectFrom("webhookPayloads")
    .innerJoin("webhookDeliveries", "webhookDeliveries.key", "webhookPayloads.deliveryKey")
    .select(["webhookDeliveries.deliveryId", "webhookPayloads.payload"])
    .execute();
  return Object.fromEntries(rows.map((row) => [row.deliveryId, row.payload]));
}

describe(`the webhook inbox's storage on ${TEST_DIALECT}`, () => {
  it("claims only the deliveries of the host that asks (each host's worker has its own)", async () => {
    const fromGitLab = { ...delivery("g"), source: "gitlab", installationId: null };
    await store.storeMany([delivery("a"), fromGitLab, delivery("b", T + 1)]);
    const github = await store.claim("github", T + 10, T + 10 + LEASE, "github-worker", 10);
    expect(github.map((d) => d.deliveryId)).toEqual(["a", "b"]);
    const gitlab = await store.claim("gitlab", T + 10, T + 10 + LEASE, "gitlab-worker", 10);
    expect(gitlab.map((d) => [d.source, d.deliveryId, d.payload])).toEqual([
      ["gitlab", "g", fromGitLab.payload],
    ]);
  });

  it("keeps a payload in its own row until its delivery is handled", async () => {
    const [a, b, c] = [delivery("a"), delivery("b", T + 1), delivery("c", T + 2)];
    expect(await store.storeMany([a, b, c])).toEqual(new Set(["a", "b", "c"]));
    // The delivery's own row holds no payload: claims and completions rewrite only it.
    const { rows } = await sql<Record<string, unknown>>`select * from webhook_deliveries`.execute(
      database.handle.db,
    );
    expect(rows).toHaveLength(3);
    expect(rows.every((row) => !("payload" in row))).toBe(true);
    expect(Object.keys(await payloads()).sort()).toEqual(["a", "b", "c"]);

    // Several at once, oldest first, each with its payload.
    const claimed = await store.claim("github", T + 10, T + 10 + LEASE, "worker-1", 2);
    expect(claimed.map((d) => [d.deliveryId, d.state, d.attempts, d.leaseOwner])).toEqual([
      ["a", "processing", 1, "worker-1"],
      ["b", "processing", 1, "worker-1"],
    ]);
    expect(claimed.map((d) => d.payload)).toEqual([a.payload, b.payload]);
    const rest = await store.claim("github", T + 10, T + 10 + LEASE, "worker-2", 5);
    expect(rest.map((d) => [d.deliveryId, d.payload])).toEqual([["c", c.payload]]);
    expect(await store.claim("github", T + 10, T + 10 + LEASE, "worker-2", 5)).toEqual([]);

    // Completed together: each handled delivery's payload goes, the others' stay.
    const [first] = claimed;
    if (!first) throw new Error("nothing claimed");
    expect(await store.complete([first, ...rest], T + 20)).toEqual(
      new Set([first.key, rest[0]?.key]),
    );
    expect(Object.keys(await payloads())).toEqual(["b"]);
    expect(await store.find("github", "a")).toMatchObject({
      state: "processed",
      processedAt: T + 20,
      payload: null,
    });
    expect((await store.find("github", "b"))?.payload).toBe(b.payload);
  });

  it("hands a claim that was never completed to another worker once its lease ends, payload included", async () => {
    const a = delivery("a");
    await store.storeMany([a]);
    const [lost] = await store.claim("github", T, T + LEASE, "crashed", 4);
    if (!lost) throw new Error("nothing claimed");
    // Its worker's process died here. Another process, with its own connection, looks for work.
    const other = new WebhookDeliveryStore(database.handle.db, database.handle.dialect);
    expect(await other.claim("github", T + LEASE - 1, T + 2 * LEASE, "next", 4)).toEqual([]);
    const [again] = await other.claim("github", T + LEASE + 1, T + 2 * LEASE, "next", 4);
    expect(again).toMatchObject({ deliveryId: "a", attempts: 2, leaseOwner: "next" });
    expect(again?.payload).toBe(a.payload);
    if (!again) throw new Error("not claimed again");
    // The first claim, fenced by its attempt number, completes nothing.
    expect(await store.complete([lost], T + LEASE + 2)).toEqual(new Set());
    expect(Object.keys(await payloads())).toEqual(["a"]);
    expect(await other.complete([again], T + LEASE + 3)).toEqual(new Set([again.key]));
    expect(await payloads()).toEqual({});
    expect((await store.find("github", "a"))?.state).toBe("processed");
  });

  it("stores a redelivery once, before and after its handling; a failed one is tried again with its payload", async () => {
    const a = delivery("a");
    expect(await store.storeMany([a])).toEqual(new Set(["a"]));
    expect(await store.storeMany([{ ...a, receivedAt: T + 5 }])).toEqual(new Set());
    const [claim] = await store.claim("github", T + 10, T + 10 + LEASE, "w", 4);
    if (!claim) throw new Error("nothing claimed");
    expect(await store.complete([claim], T + 11)).toEqual(new Set([claim.key]));
    // Redelivered after its handling: still once, and its payload is not stored again.
    expect(await store.storeMany([a, delivery("b")])).toEqual(new Set(["b"]));
    expect(Object.keys(await payloads())).toEqual(["b"]);

    const [b] = await store.claim("github", T + 20, T + 20 + LEASE, "w", 4);
    if (!b) throw new Error("b not claimed");
    expect(await store.fail(b, "GitHub answered 502", T + 21)).toBe(true);
    // A failed delivery keeps its payload; someone presses "Redeliver": pending again.
    expect(await store.storeMany([{ ...delivery("b"), receivedAt: T + 30 }])).toEqual(
      new Set(["b"]),
    );
    const [retried] = await store.claim("github", T + 30, T + 30 + LEASE, "w", 4);
    expect(retried).toMatchObject({ deliveryId: "b", attempts: 2 });
    expect(retried?.payload).toBe(delivery("b").payload);
  });

  it("prunes old deliveries with their payloads", async () => {
    await store.storeMany([delivery("a"), delivery("b")]);
    const claims = await store.claim("github", T, T + LEASE, "w", 4);
    const [a, b] = claims;
    if (!a || !b) throw new Error("not claimed");
    await store.complete([a], T + 1);
    await store.fail(b, "gone", T + 1);
    expect(Object.keys(await payloads())).toEqual(["b"]);
    expect(await store.prune(T + 2, T + 2)).toBe(2);
    expect(await database.handle.db.selectFrom("webhookPayloads").selectAll().execute()).toEqual(
      [],
    );
  });

  it("are moved to their own table by migration 0025, every one, and back by its down", async () => {
    const db = database.handle.db as unknown as Kysely<unknown>;
    const types = columnTypes(database.handle.dialect);
    await webhookPayloads.down(db, types);
    for (const [id, state] of [
      ["a", "processed"],
      ["b", "pending"],
      ["c", "failed"],
    ] as const) {
      await sql`insert into webhook_deliveries (source, delivery_id, event, action,
        installation_id, payload, received_at, state, attempts, next_attempt_at)
        values ('github', ${id}, 'push', null, null, ${`{"id":"${id}"}`}, ${T}, ${state}, 1, ${T})`.execute(
        db,
      );
    }
    await webhookPayloads.up(db, types);
    expect(await payloads()).toEqual({ a: '{"id":"a"}', b: '{"id":"b"}', c: '{"id":"c"}' });
    const [claim] = await store.claim("github", T, T + LEASE, "w", 4);
    expect(claim).toMatchObject({ deliveryId: "b", payload: '{"id":"b"}' });
    if (!claim) throw new Error("not claimed");
    await store.complete([claim], T + 1);
    await webhookPayloads.down(db, types);
    const { rows } = await sql<{
      deliveryId: string;
      payload: string;
    }>`select delivery_id, payload from webhook_deliveries order by delivery_id`.execute(db);
    expect(rows).toEqual([
      { deliveryId: "a", payload: '{"id":"a"}' },
      // Handled after the move: its payload was deleted with its completion.
      { deliveryId: "b", payload: "{}" },
      { deliveryId: "c", payload: '{"id":"c"}' },
    ]);
    await webhookPayloads.up(db, types);
  });
});
