import type { Kysely, Selectable, Transaction, Updateable } from "kysely";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import type { Database, WebhookDeliveriesTable } from "../schema.js";
import type {
  ClaimedDelivery,
  DeliveryRecord,
  DeliveryState,
  DeliveryStorage,
  NewDelivery,
} from "../../mergequeue/webhook-delivery-records.js";

type Db = Kysely<Database> | Transaction<Database>;

function toRecord(row: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return { ...row, state: row.state as DeliveryState };
}

/**
 * The inbox of webhook deliveries (ADR 0021). Storing them is the acknowledgement, so it waits
 * for the disk (once for all the deliveries stored together); a claim takes the oldest ready delivery under a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so that workers pass each other's claims; a compare-and-set on SQLite), and its
 * attempt number fences every later write of that claim.
 */
export class WebhookDeliveryStore implements DeliveryStorage {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async storeMany(deliveries: readonly NewDelivery[]): Promise<Set<string>> {
    if (deliveries.length === 0) return new Set();
    const rows = await this.db
      .insertInto("webhookDeliveries")
      .values(
        deliveries.map((delivery) => ({
          ...delivery,
          state: "pending",
          attempts: 0,
          leaseUntil: null,
          leaseOwner: null,
          nextAttemptAt: delivery.receivedAt,
          error: null,
          processedAt: null,
        })),
      )
      // A redelivery of one kept as failed (someone pressed "Redeliver") is tried once more;
      // any other redelivery changes nothing. The attempt number keeps counting: it fences.
      .onConflict((oc) =>
        oc
          .columns(["source", "deliveryId"])
          .doUpdateSet((eb) => ({
            state: "pending",
            nextAttemptAt: eb.ref("excluded.receivedAt"),
            processedAt: null,
          }))
          .where("webhookDeliveries.state", "=", "failed"),
      )
      .returning("deliveryId")
      .execute();
    return new Set(rows.map((row) => row.deliveryId));
  }

  async claim(
    now: number,
    leaseUntil: number,
    owner: string,
  ): Promise<ClaimedDelivery | undefined> {
    const ready = (db: Db) =>
      db
        .selectFrom("webhookDeliveries")
        .select("key")
        .where((eb) =>
          eb.or([
            eb.and([eb("state", "=", "pending"), eb("nextAttemptAt", "<=", now)]),
            eb.and([eb("state", "=", "processing"), eb("leaseUntil", "<", now)]),
          ]),
        )
        .orderBy("key")
        .limit(1);
    // The claim itself is the lease: a lost one (power cut) leaves the delivery to be claimed
    // again when the lease ends, so its commit need not wait for the disk.
    const row = await sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      const first = await sqlDialect(this.dialect)
        .forUpdateSkipLocked(ready(trx))
        .executeTakeFirst();
      if (!first) return undefined;
      return trx
        .updateTable("webhookDeliveries")
        .set((eb) => ({
          state: "processing",
          leaseUntil,
          leaseOwner: owner,
          attempts: eb("attempts", "+", 1),
        }))
        .where("key", "=", first.key)
        .where((eb) =>
          eb.or([
            eb.and([eb("state", "=", "pending"), eb("nextAttemptAt", "<=", now)]),
            eb.and([eb("state", "=", "processing"), eb("leaseUntil", "<", now)]),
          ]),
        )
        .returningAll()
        .executeTakeFirst();
    });
    return row ? toRecord(row) : undefined;
  }

  /**
   * Changes a claimed delivery, fenced by its claim: only while the delivery still carries it.
   * The commit does not wait for the disk: a change a power loss undoes leaves the delivery
   * claimed, to be handled again when the lease ends (handlers treat deliveries as hints).
   */
  private async updateClaimed(
    claim: ClaimedDelivery,
    values: Updateable<WebhookDeliveriesTable>,
  ): Promise<boolean> {
    const result = await sqlDialect(this.dialect).relaxedTransaction(this.db, (trx) =>
      trx
        .updateTable("webhookDeliveries")
        .set(values)
        .where("key", "=", claim.key)
        .where("attempts", "=", claim.attempts)
        .where("state", "=", "processing")
        .executeTakeFirst(),
    );
    return result.numUpdatedRows > 0n;
  }

  renew(claim: ClaimedDelivery, leaseUntil: number): Promise<boolean> {
    return this.updateClaimed(claim, { leaseUntil });
  }

  complete(claim: ClaimedDelivery, now: number): Promise<boolean> {
    return this.updateClaimed(claim, {
      state: "processed",
      processedAt: now,
      leaseUntil: null,
      error: null,
    });
  }

  retryLater(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
    return this.updateClaimed(claim, {
      state: "pending",
      nextAttemptAt: at,
      leaseUntil: null,
      error,
    });
  }

  fail(claim: ClaimedDelivery, error: string, now: number): Promise<boolean> {
    return this.updateClaimed(claim, {
      state: "failed",
      processedAt: now,
      leaseUntil: null,
      error,
    });
  }

  park(claim: ClaimedDelivery, now: number): Promise<boolean> {
    return this.updateClaimed(claim, { state: "parked", processedAt: now, leaseUntil: null });
  }

  async unpark(source: string, installationId: number, now: number): Promise<number> {
    const result = await this.db
      .updateTable("webhookDeliveries")
      .set({ state: "pending", nextAttemptAt: now, processedAt: null })
      .where("source", "=", source)
      .where("installationId", "=", installationId)
      .where("state", "=", "parked")
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async prune(processedBefore: number, keptBefore: number): Promise<number> {
    const result = await this.db
      .deleteFrom("webhookDeliveries")
      .where((eb) =>
        eb.or([
          eb.and([eb("state", "=", "processed"), eb("processedAt", "<", processedBefore)]),
          eb.and([eb("state", "in", ["failed", "parked"]), eb("processedAt", "<", keptBefore)]),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async find(source: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
    const row = await this.db
      .selectFrom("webhookDeliveries")
      .selectAll()
      .where("source", "=", source)
      .where("deliveryId", "=", deliveryId)
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }
}
