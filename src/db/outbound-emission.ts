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
  batchAction,
  pullRequestActions,
  STATUS_EVENT_TYPES,
  type BatchFacts,
  type QueueFacts,
  type QueueStateFacts,
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

/** The queue's repository and organization, when the organization has an endpoint. */
async function queueWithEndpoints(db: Kysely<Database>, queueId: string) {
  return db
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
}

/** A run as the batch events need it: the entries it decides about, with their numbers. */
export interface EmittedRun {
  id: string;
  unit: readonly string[];
  prs: readonly { entryId: string; number: number }[];
}

/**
 * A queue step's transitions: `pull_request.*` events, one per action each reaches, and for a
 * batch (a run deciding about several pull requests) one `pull_request_batch.*` event per state
 * its members reach in the step. `runs` are the step's; others named are read.
 */
export async function emitQueueEvents(
  db: Kysely<Database>,
  queueId: string,
  transitions: readonly TransitionRecord[],
  prNumbers: ReadonlyMap<string, number>,
  now: number,
  runs: readonly EmittedRun[] = [],
): Promise<number> {
  if (transitions.every((t) => pullRequestActions(t.from, t.to).length === 0)) return 0;
  const queue = await queueWithEndpoints(db, queueId);
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
  const event = (type: string, subject: string, facts: object) =>
    queueEvent(queue, type, subject, facts, now);
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
    return pullRequestActions(transition.from, transition.to).map((action) =>
      event(`pull_request.${action}`, `pr:${queueId}:${String(prNumber)}`, facts),
    );
  });
  const batches = await batchFacts(db, queueId, transitions, numbers, runs);
  events.push(
    ...batches.map((facts) =>
      event(
        `pull_request_batch.${batchAction(facts.to) ?? "testing"}`,
        `batch:${queueId}:${facts.runId}`,
        facts,
      ),
    ),
  );
  return insertEvents(db, events);
}

/** One `BatchFacts` per batch run and state its members reach in these transitions. */
async function batchFacts(
  db: Kysely<Database>,
  queueId: string,
  transitions: readonly TransitionRecord[],
  numbers: ReadonlyMap<string, number>,
  stepRuns: readonly EmittedRun[],
): Promise<BatchFacts[]> {
  const named = transitions.filter(
    (t) => t.runId !== null && t.from !== t.to && batchAction(t.to) !== undefined,
  );
  if (named.length === 0) return [];
  const runs = new Map(stepRuns.map((run) => [run.id, run]));
  const unread = [...new Set(named.map((t) => t.runId as string))].filter((id) => !runs.has(id));
  if (unread.length > 0) {
    const rows = await db
      .selectFrom("mqRuns")
      .select(["id", "unit", "prs"])
      .where("queueId", "=", queueId)
      .where("id", "in", unread)
      .execute();
    for (const row of rows) {
      runs.set(row.id, {
        id: row.id,
        unit: JSON.parse(row.unit) as string[],
        prs: JSON.parse(row.prs) as { entryId: string; number: number }[],
      });
    }
  }
  const groups = new Map<string, BatchFacts>();
  for (const transition of named) {
    const run = runs.get(transition.runId as string);
    if (!run || run.unit.length < 2 || !run.unit.includes(transition.entryId)) continue;
    const number = numbers.get(transition.entryId);
    if (number === undefined) continue;
    const key = `${run.id}:${transition.to}`;
    const group = groups.get(key) ?? {
      kind: "batch_transition" as const,
      queueId,
      runId: run.id,
      prNumbers: [],
      batchPrNumbers: run.prs.filter((pr) => run.unit.includes(pr.entryId)).map((pr) => pr.number),
      to: transition.to,
      reason: transition.reason,
      at: transition.at,
    };
    if (!group.prNumbers.includes(number)) group.prNumbers.push(number);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** A queue's state or host change: one `mainline.queue.*` event. */
export async function emitQueueStateEvent(
  db: Kysely<Database>,
  queueId: string,
  facts: QueueStateFacts,
  now: number,
): Promise<number> {
  const queue = await queueWithEndpoints(db, queueId);
  if (!queue) return 0;
  const type =
    facts.kind === "queue_state"
      ? "mainline.queue.state_changed"
      : facts.blocked
        ? "mainline.queue.blocked"
        : "mainline.queue.unblocked";
  return insertEvents(db, [queueEvent(queue, type, `queue:${queueId}`, facts, now)]);
}

/** An event of a queue's organization and repository, its body built when it is prepared. */
function queueEvent(
  queue: { organizationId: string; repositoryId: string },
  type: string,
  subject: string,
  facts: object,
  now: number,
): Insertable<OutboundEventsTable> {
  return {
    id: publicId("msg"),
    organizationId: queue.organizationId,
    repositoryId: queue.repositoryId,
    type,
    subject,
    facts: JSON.stringify(facts),
    payload: null,
    createdAt: now,
    preparedAt: null,
  };
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
