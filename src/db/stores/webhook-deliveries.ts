import type { Kysely, Selectable, Transaction } from "kysely";
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
 * The inbox of webhook deliveries (ADR 0021). Storing one is the acknowledgement, so it waits for
 * the disk; a claim takes the oldest ready delivery under a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL, so that workers pass each other's claims; a compare-and-set on SQLite), and its
 * attempt number fences every later write of that claim.
 */
export class WebhookDeliveryStore implements DeliveryStorage {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async store(delivery: NewDelivery): Promise<boolean> {
    const inserted = await this.db
      .insertInto("webhookDeliveries")
      .values({
        ...delivery,
        state: "pending",
        attempts: 0,
        leaseUntil: null,
        leaseOwner: null,
        nextAttemptAt: delivery.receivedAt,
        error: null,
        processedAt: null,
      })
      .onConflict((oc) => oc.columns(["source", "deliveryId"]).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
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

  /** Fences a write to the claim it was given: only while the delivery still carries it. */
  private claimed(claim: ClaimedDelivery) {
    return this.db
      .updateTable("webhookDeliveries")
      .where("key", "=", claim.key)
      .where("attempts", "=", claim.attempts)
      .where("state", "=", "processing");
  }

  async renew(claim: ClaimedDelivery, leaseUntil: number): Promise<boolean> {
    const result = await this.claimed(claim).set({ leaseUntil }).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async complete(claim: ClaimedDelivery, now: number): Promise<boolean> {
    const result = await this.claimed(claim)
      .set({ state: "processed", processedAt: now, leaseUntil: null, error: null })
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async retryLater(claim: ClaimedDelivery, at: number, error: string): Promise<boolean> {
    const result = await this.claimed(claim)
      .set({ state: "pending", nextAttemptAt: at, leaseUntil: null, error })
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async fail(claim: ClaimedDelivery, error: string, now: number): Promise<boolean> {
    const result = await this.claimed(claim)
      .set({ state: "failed", processedAt: now, leaseUntil: null, error })
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async park(claim: ClaimedDelivery, now: number): Promise<boolean> {
    const result = await this.claimed(claim)
      .set({ state: "parked", processedAt: now, leaseUntil: null })
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
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
