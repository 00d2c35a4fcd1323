/**
 * Outbound webhook events written by the stores inside the transaction of the change that causes
 * them (a test's status or override, a queue's transitions): never one without the other. Only
 * for organizations with an endpoint; the payload is built later by the delivery worker from the
 * facts stored here. In-process delivery workers are woken once the transaction had time to commit
 * (others poll).
 */
import type { Insertable, Kysely } from "kysely";
import { publicId } from "../lib/tokens.js";
import { outboxWritten } from "../lib/outbox-signal.js";
import {
  pullRequestActions,
  STATUS_EVENT_TYPES,
  type QueueFacts,
  type TestFacts,
} from "../notifications/events.js";
import type { TransitionRecord } from "../mergequeue/records.js";
import type { Database, OutboundEventsTable } from "./schema.js";

const KEY_CHUNK = 500;

/** A test's change: `test_status` emits the v1 and v2 status events, `test_override` one. */
export async function emitTestEvents(
  db: Kysely<Database>,
  changes: readonly TestFacts[],
  now: number,
): Promise<number> {
  if (changes.length === 0) return 0;
  const rows = [];
  for (let at = 0; at < changes.length; at += KEY_CHUNK) {
    const keys = changes.slice(at, at + KEY_CHUNK).map((change) => change.testKey);
    const found = await db
      .selectFrom("testCases as t")
      .innerJoin("repositories as r", "r.id", "t.repositoryId")
      .select(["t.key", "t.repositoryId", "r.organizationId"])
      .where("t.key", "in", keys)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom("outboundEndpoints as e")
            .select("e.id")
            .whereRef("e.organizationId", "=", "r.organizationId"),
        ),
      )
      .execute();
    rows.push(...found);
  }
  if (rows.length === 0) return 0;
  const byKey = new Map(rows.map((row) => [row.key, row]));
  const events = changes.flatMap((facts) => {
    const test = byKey.get(facts.testKey);
    if (!test) return [];
    const types =
      facts.kind === "test_status"
        ? STATUS_EVENT_TYPES
        : ["test_case.quarantining_setting_changed"];
    return types.map((type) => ({
      id: publicId("msg"),
      organizationId: test.organizationId,
      repositoryId: test.repositoryId,
      type,
      subject: `test:${String(facts.testKey)}`,
      facts: JSON.stringify(facts),
      payload: null,
      createdAt: now,
      preparedAt: null,
    }));
  });
  return insertEvents(db, events);
}

/** A queue step's transitions: `pull_request.*` events, one per action each reaches. */
export async function emitQueueEvents(
  db: Kysely<Database>,
  queueId: string,
  transitions: readonly TransitionRecord[],
  prNumbers: ReadonlyMap<string, number>,
  now: number,
): Promise<number> {
  if (transitions.every((t) => pullRequestActions(t.from, t.to).length === 0)) return 0;
  const queue = await db
    .selectFrom("mergeQueues as q")
    .innerJoin("repositories as r", "r.id", "q.repositoryId")
    .select(["q.repositoryId", "r.organizationId"])
    .where("q.id", "=", queueId)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom("outboundEndpoints as e")
          .select("e.id")
          .whereRef("e.organizationId", "=", "r.organizationId"),
      ),
    )
    .executeTakeFirst();
  if (!queue) return 0;
  const missing = transitions.filter((t) => !prNumbers.has(t.entryId)).map((t) => t.entryId);
  const numbers = new Map(prNumbers);
  if (missing.length > 0) {
    const entries = await db
      .selectFrom("mqEntries")
      .select(["id", "prNumber"])
      .where("id", "in", [...new Set(missing)])
      .execute();
    for (const entry of entries) numbers.set(entry.id, entry.prNumber);
  }
  const events = transitions.flatMap((transition) => {
    const prNumber = numbers.get(transition.entryId);
    if (prNumber === undefined) return [];
    const facts: QueueFacts = {
      kind: "queue_transition",
      queueId,
      entryId: transition.entryId,
      prNumber,
      from: transition.from,
      to: transition.to,
      reason: transition.reason,
      detail: transition.detail,
      runId: transition.runId,
      actorKind: transition.actor.kind,
      at: transition.at,
    };
    return pullRequestActions(transition.from, transition.to).map((action) => ({
      id: publicId("msg"),
      organizationId: queue.organizationId,
      repositoryId: queue.repositoryId,
      type: `pull_request.${action}`,
      subject: `pr:${queueId}:${String(prNumber)}`,
      facts: JSON.stringify(facts),
      payload: null,
      createdAt: now,
      preparedAt: null,
    }));
  });
  return insertEvents(db, events);
}

async function insertEvents(
  db: Kysely<Database>,
  events: readonly Insertable<OutboundEventsTable>[],
): Promise<number> {
  if (events.length === 0) return 0;
  for (let at = 0; at < events.length; at += KEY_CHUNK) {
    await db
      .insertInto("outboundEvents")
      .values(events.slice(at, at + KEY_CHUNK))
      .execute();
  }
  outboxWritten();
  return events.length;
}
