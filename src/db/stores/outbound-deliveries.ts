import type { Kysely } from "kysely";
import { publicId } from "../../lib/tokens.js";
import type {
  ClaimedDelivery,
  DeliveryRecords,
  EndpointHealth,
  EventRecord,
  RecordedAttempt,
} from "../../notifications/records.js";
import { isEndpointKind } from "../../notifications/kinds.js";
import { takesEvent } from "../../notifications/routing.js";
import { sqlDialect } from "../dialect.js";
import type { DialectName } from "../connection.js";
import type { Database } from "../schema.js";
import { newDelivery, toEndpoint, toEvent } from "./outbound-webhooks.js";

/**
 * The delivery worker's storage (migration 0031): events prepared (body stored, deliveries fanned
 * out) in one transaction each, deliveries claimed under a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL) in order per endpoint and subject, attempts recorded with their outcome.
 */
export class OutboundDeliveryStore implements DeliveryRecords {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async unpreparedEvents(limit: number): Promise<EventRecord[]> {
    const rows = await this.db
      .selectFrom("outboundEvents")
      .selectAll()
      .where("preparedAt", "is", null)
      .orderBy("seq")
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }

  async prepareEvent(
    seq: number,
    payload: string | null,
    now: number,
    owners: readonly string[] = [],
  ): Promise<boolean> {
    // Redone from the stored event if lost: its commit need not wait for the disk.
    return sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      // The guard takes the row: a second process waits here, then finds it prepared.
      const event = await trx
        .updateTable("outboundEvents")
        .set({ payload, preparedAt: now })
        .where("seq", "=", seq)
        .where("preparedAt", "is", null)
        .returning(["organizationId", "repositoryId", "type", "subject"])
        .executeTakeFirst();
      if (!event) return false;
      if (payload === null) return true;
      const endpoints = await trx
        .selectFrom("outboundEndpoints")
        .selectAll()
        .where("organizationId", "=", event.organizationId)
        .where("enabled", "=", 1)
        .execute();
      const route = { type: event.type, repositoryId: event.repositoryId, owners };
      const wanted = endpoints.map(toEndpoint).filter((endpoint) => takesEvent(endpoint, route));
      if (wanted.length > 0) {
        await trx
          .insertInto("outboundDeliveries")
          .values(
            wanted.map((endpoint) =>
              newDelivery(publicId("dlv"), seq, endpoint.id, event.subject, now),
            ),
          )
          .execute();
      }
      return true;
    });
  }

  async claimDeliveries(
    owner: string,
    now: number,
    leaseUntil: number,
    limit: number,
  ): Promise<ClaimedDelivery[]> {
    const due = this.db
      .selectFrom("outboundDeliveries as d")
      .innerJoin("outboundEndpoints as p", "p.id", "d.endpointId")
      .select("d.id")
      .where("d.state", "=", "pending")
      .where("d.nextAttemptAt", "<=", now)
      .where((eb) => eb.or([eb("d.leaseUntil", "is", null), eb("d.leaseUntil", "<", now)]))
      .where("p.enabled", "=", 1)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("outboundDeliveries as o")
              .select("o.id")
              .whereRef("o.endpointId", "=", "d.endpointId")
              .whereRef("o.subject", "=", "d.subject")
              .where("o.state", "=", "pending")
              .where((eb) =>
                eb.or([
                  eb("o.eventSeq", "<", eb.ref("d.eventSeq")),
                  eb.and([
                    eb("o.eventSeq", "=", eb.ref("d.eventSeq")),
                    eb("o.id", "<", eb.ref("d.id")),
                  ]),
                ]),
              ),
          ),
        ),
      )
      .orderBy("d.eventSeq")
      .limit(limit)
      .$if(this.dialect === "postgres", (qb) => qb.forUpdate(["d"]).skipLocked());
    const claimed = await this.db
      .updateTable("outboundDeliveries")
      .set({ leaseOwner: owner, leaseUntil })
      .where("id", "in", due)
      .returning("id")
      .execute();
    if (claimed.length === 0) return [];
    const rows = await this.db
      .selectFrom("outboundDeliveries as d")
      .innerJoin("outboundEndpoints as p", "p.id", "d.endpointId")
      .innerJoin("outboundEvents as e", "e.seq", "d.eventSeq")
      .select([
        "d.id",
        "e.id as eventId",
        "e.type as eventType",
        "d.endpointId",
        "p.kind",
        "p.url",
        "p.secret",
        "p.channel",
        "e.payload",
        "d.attempts",
        "d.eventSeq",
        "p.failingSince",
      ])
      .where(
        "d.id",
        "in",
        claimed.map((row) => row.id),
      )
      .where("d.leaseOwner", "=", owner)
      .orderBy("d.eventSeq")
      .execute();
    return rows.map(({ eventSeq: _seq, payload, kind, ...row }) => ({
      ...row,
      kind: isEndpointKind(kind) ? kind : "webhook",
      payload: payload ?? "",
    }));
  }

  async recordAttempts(owner: string, attempts: readonly RecordedAttempt[]): Promise<void> {
    if (attempts.length === 0) return;
    // One commit a pass, not waiting for the disk: a lost record means a resend (same id).
    await sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      await trx
        .insertInto("outboundAttempts")
        .values(attempts.map(({ deliveryId, attempt }) => ({ deliveryId, ...attempt })))
        .execute();
      for (const { deliveryId, attempt, outcome } of attempts) {
        await trx
          .updateTable("outboundDeliveries")
          .set({ ...outcome, leaseOwner: null, leaseUntil: null, updatedAt: attempt.at })
          .where("id", "=", deliveryId)
          .where("leaseOwner", "=", owner)
          .execute();
      }
    });
  }

  async updateEndpointHealth(
    endpointId: string,
    change: EndpointHealth,
    now: number,
  ): Promise<void> {
    const { enabled, ...rest } = change;
    await this.db
      .updateTable("outboundEndpoints")
      .set({
        ...rest,
        ...(enabled === undefined ? {} : { enabled: enabled ? 1 : 0 }),
        updatedAt: now,
      })
      .where("id", "=", endpointId)
      .execute();
  }

  async nextDue(): Promise<number | undefined> {
    const row = await this.db
      .selectFrom("outboundDeliveries as d")
      .innerJoin("outboundEndpoints as p", "p.id", "d.endpointId")
      .select((eb) => eb.fn.min("d.nextAttemptAt").as("at"))
      .where("d.state", "=", "pending")
      .where("p.enabled", "=", 1)
      .executeTakeFirst();
    const at = row?.at as number | string | null | undefined;
    return at === null || at === undefined ? undefined : Number(at);
  }
}
