import type { Kysely, Selectable } from "kysely";
import { publicId } from "../../lib/tokens.js";
import type { EventFacts } from "../../notifications/facts.js";
import { isEndpointKind } from "../../notifications/kinds.js";
import type {
  AttemptRecord,
  DeliveryWithAttempts,
  DeliveryState,
  EndpointChange,
  EndpointRecord,
  EndpointRecords,
  EventRecord,
} from "../../notifications/records.js";
import type { Database, OutboundEndpointsTable, OutboundEventsTable } from "../schema.js";

/** A queue (and one of its runs) as its events show it. */
export interface QueueContext {
  queueId: string;
  organizationId: string;
  targetBranch: string;
  host: string;
  owner: string;
  name: string;
  organizationSlug: string;
  run:
    | { kind: string; testBranch: string | null; testBranchSha: string | null; prCount: number }
    | undefined;
}

/** A pull request's event context: the entry, its queue and repository, the run if any. */
export interface PullRequestContext extends Omit<QueueContext, "queueId"> {
  prNumber: number;
  prAuthor: string;
  submittedAt: number;
}

/**
 * Outbound webhooks as the API manages them (migration 0031): an organization's endpoints, its
 * events and their deliveries with every attempt, and new deliveries (resend, test events). Every
 * read and write is scoped by the organization.
 */
export class OutboundWebhookStore implements EndpointRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async createEndpoint(endpoint: EndpointRecord): Promise<void> {
    await this.db.insertInto("outboundEndpoints").values(endpointRow(endpoint)).execute();
  }

  async listEndpoints(organizationId: string): Promise<EndpointRecord[]> {
    const rows = await this.db
      .selectFrom("outboundEndpoints")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .orderBy("createdAt")
      .orderBy("id")
      .execute();
    return rows.map(toEndpoint);
  }

  async findEndpoint(organizationId: string, id: string): Promise<EndpointRecord | undefined> {
    const row = await this.db
      .selectFrom("outboundEndpoints")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toEndpoint(row);
  }

  async updateEndpoint(
    organizationId: string,
    id: string,
    change: EndpointChange,
    now: number,
  ): Promise<EndpointRecord | undefined> {
    const row = await this.db
      .updateTable("outboundEndpoints")
      .set({ ...changeRow(change), updatedAt: now })
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    return row && toEndpoint(row);
  }

  async deleteEndpoint(organizationId: string, id: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom("outboundEndpoints")
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async listEvents(
    organizationId: string,
    page: { offset: number; limit: number },
  ): Promise<{ total: number; events: EventRecord[] }> {
    const [count, rows] = await Promise.all([
      this.db
        .selectFrom("outboundEvents")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .where("organizationId", "=", organizationId)
        .executeTakeFirst(),
      this.db
        .selectFrom("outboundEvents")
        .selectAll()
        .where("organizationId", "=", organizationId)
        .orderBy("seq", "desc")
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
    ]);
    return { total: Number(count?.n ?? 0), events: rows.map(toEvent) };
  }

  async findEvent(organizationId: string, id: string): Promise<EventRecord | undefined> {
    const row = await this.db
      .selectFrom("outboundEvents")
      .selectAll()
      .where("organizationId", "=", organizationId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toEvent(row);
  }

  async listDeliveries(
    organizationId: string,
    filter: { endpointId?: string | undefined; eventId?: string | undefined },
    page: { offset: number; limit: number },
  ): Promise<{ total: number; deliveries: DeliveryWithAttempts[] }> {
    const base = this.db
      .selectFrom("outboundDeliveries as d")
      .innerJoin("outboundEvents as e", "e.seq", "d.eventSeq")
      .where("e.organizationId", "=", organizationId)
      .$if(filter.endpointId !== undefined, (qb) =>
        qb.where("d.endpointId", "=", filter.endpointId ?? ""),
      )
      .$if(filter.eventId !== undefined, (qb) => qb.where("e.id", "=", filter.eventId ?? ""));
    const [count, rows] = await Promise.all([
      base.select((eb) => eb.fn.countAll<number | string>().as("n")).executeTakeFirst(),
      base
        .select([
          "d.id",
          "e.id as eventId",
          "e.type as eventType",
          "d.endpointId",
          "d.subject",
          "d.state",
          "d.attempts",
          "d.nextAttemptAt",
          "d.createdAt",
          "d.updatedAt",
        ])
        .orderBy("d.createdAt", "desc")
        .orderBy("d.id", "desc")
        .limit(page.limit)
        .offset(page.offset)
        .execute(),
    ]);
    const total = Number(count?.n ?? 0);
    if (rows.length === 0) return { total, deliveries: [] };
    const attempts = await this.db
      .selectFrom("outboundAttempts")
      .select(["deliveryId", "at", "statusCode", "error", "durationMs", "response"])
      .where(
        "deliveryId",
        "in",
        rows.map((row) => row.id),
      )
      .orderBy("deliveryId")
      .orderBy("id")
      .execute();
    const byDelivery = new Map<string, AttemptRecord[]>();
    for (const { deliveryId, ...attempt } of attempts) {
      byDelivery.set(deliveryId, [...(byDelivery.get(deliveryId) ?? []), attempt]);
    }
    return {
      total,
      deliveries: rows.map((row) => ({
        ...row,
        state: row.state as DeliveryState,
        attemptLog: byDelivery.get(row.id) ?? [],
      })),
    };
  }

  /** What a `pull_request.*` event shows of its pull request, queue, repository and run. */
  async pullRequestContext(
    entryId: string,
    runId: string | null,
  ): Promise<PullRequestContext | undefined> {
    const entry = await this.db
      .selectFrom("mqEntries")
      .select(["queueId", "prNumber", "prAuthor", "submittedAt"])
      .where("id", "=", entryId)
      .executeTakeFirst();
    const queue = entry && (await this.queueContext(entry.queueId, runId ?? undefined));
    if (!entry || !queue) return undefined;
    return {
      prNumber: entry.prNumber,
      prAuthor: entry.prAuthor,
      submittedAt: entry.submittedAt,
      organizationId: queue.organizationId,
      targetBranch: queue.targetBranch,
      host: queue.host,
      owner: queue.owner,
      name: queue.name,
      organizationSlug: queue.organizationSlug,
      run: queue.run,
    };
  }

  /** What a queue's events show of it (and of one of its runs). */
  async queueContext(queueId: string, runId?: string): Promise<QueueContext | undefined> {
    const row = await this.db
      .selectFrom("mergeQueues as q")
      .innerJoin("repositories as r", "r.id", "q.repositoryId")
      .innerJoin("organizations as o", "o.id", "r.organizationId")
      .select([
        "q.id as queueId",
        "r.organizationId",
        "q.targetBranch",
        "r.host",
        "r.owner",
        "r.name",
        "o.slug as organizationSlug",
      ])
      .where("q.id", "=", queueId)
      .executeTakeFirst();
    if (!row) return undefined;
    const run =
      runId === undefined
        ? undefined
        : await this.db
            .selectFrom("mqRuns")
            .select(["kind", "testBranch", "testBranchSha", "prs"])
            .where("queueId", "=", queueId)
            .where("id", "=", runId)
            .executeTakeFirst();
    return {
      ...row,
      run: run && {
        kind: run.kind,
        testBranch: run.testBranch,
        testBranchSha: run.testBranchSha,
        prCount: (JSON.parse(run.prs) as unknown[]).length,
      },
    };
  }

  async addDelivery(
    eventSeq: number,
    endpointId: string,
    subject: string,
    now: number,
  ): Promise<string> {
    const id = publicId("dlv");
    await this.db
      .insertInto("outboundDeliveries")
      .values(newDelivery(id, eventSeq, endpointId, subject, now))
      .execute();
    return id;
  }

  async addDirectEvent(
    event: Omit<EventRecord, "seq" | "preparedAt" | "payload"> & { payload: string },
    endpointId: string,
  ): Promise<string> {
    return this.db.transaction().execute(async (trx) => {
      const { seq } = await trx
        .insertInto("outboundEvents")
        .values({
          id: event.id,
          organizationId: event.organizationId,
          repositoryId: event.repositoryId,
          type: event.type,
          subject: event.subject,
          facts: JSON.stringify(event.facts),
          payload: event.payload,
          createdAt: event.createdAt,
          preparedAt: event.createdAt,
        })
        .returning("seq")
        .executeTakeFirstOrThrow();
      const id = publicId("dlv");
      await trx
        .insertInto("outboundDeliveries")
        .values(newDelivery(id, seq, endpointId, event.subject, event.createdAt))
        .execute();
      return id;
    });
  }
}

/** A pending delivery's row, due at once. */
export function newDelivery(
  id: string,
  eventSeq: number,
  endpointId: string,
  subject: string,
  now: number,
) {
  return {
    id,
    eventSeq,
    endpointId,
    subject,
    state: "pending",
    attempts: 0,
    nextAttemptAt: now,
    leaseOwner: null,
    leaseUntil: null,
    createdAt: now,
    updatedAt: now,
  };
}

function endpointRow(endpoint: EndpointRecord) {
  return {
    ...endpoint,
    eventTypes: JSON.stringify(endpoint.eventTypes),
    repositoryIds: JSON.stringify(endpoint.repositoryIds),
    codeOwners: JSON.stringify(endpoint.codeOwners),
    enabled: endpoint.enabled ? 1 : 0,
  };
}

function changeRow(change: EndpointChange) {
  const { eventTypes, repositoryIds, codeOwners, enabled, ...rest } = change;
  return {
    ...rest,
    ...(eventTypes === undefined ? {} : { eventTypes: JSON.stringify(eventTypes) }),
    ...(repositoryIds === undefined ? {} : { repositoryIds: JSON.stringify(repositoryIds) }),
    ...(codeOwners === undefined ? {} : { codeOwners: JSON.stringify(codeOwners) }),
    ...(enabled === undefined ? {} : { enabled: enabled ? 1 : 0 }),
  };
}

export function toEndpoint(row: Selectable<OutboundEndpointsTable>): EndpointRecord {
  return {
    ...row,
    kind: isEndpointKind(row.kind) ? row.kind : "webhook",
    eventTypes: JSON.parse(row.eventTypes) as string[],
    repositoryIds: JSON.parse(row.repositoryIds) as string[],
    codeOwners: JSON.parse(row.codeOwners) as string[],
    enabled: Boolean(row.enabled),
  };
}

export function toEvent(row: Selectable<OutboundEventsTable>): EventRecord {
  return { ...row, facts: JSON.parse(row.facts) as EventFacts };
}
