import { sql, type Kysely, type Selectable, type Updateable } from "kysely";
import type { DialectName } from "../connection.js";
import { sqlDialect } from "../dialect.js";
import { BySize, QueryTemplate, markers } from "../precompiled.js";
import type { Database, WebhookDeliveriesTable } from "../schema.js";
import type {
  ClaimedDelivery,
  DeliveryRecord,
  DeliveryState,
  DeliveryRecords,
  NewDelivery,
} from "../../mergequeue/webhook-delivery-records.js";

type DeliveryRow = Selectable<WebhookDeliveriesTable>;

function toRecord(row: DeliveryRow, payload: string | null): DeliveryRecord {
  return { ...row, state: row.state as DeliveryState, payload };
}

/** A new delivery's values in the insert (its payload goes to a row of its own). */
const INSERTED = 6;

/** The insert of `size` new deliveries, each with INSERTED markers of `args`. */
function insertDeliveries(db: Kysely<Database>, size: number, args: readonly string[]) {
  const at = (row: number, column: number) => args[row * INSERTED + column];
  return (
    db
      .insertInto("webhookDeliveries")
      .values(
        Array.from({ length: size }, (_, row) => ({
          source: at(row, 0) as string,
          deliveryId: at(row, 1) as string,
          event: at(row, 2) as string,
          action: at(row, 3) as string | null,
          installationId: at(row, 4) as unknown as number | null,
          receivedAt: at(row, 5) as unknown as number,
          state: "pending",
          attempts: 0,
          leaseUntil: null,
          leaseOwner: null,
          nextAttemptAt: at(row, 5) as unknown as number,
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
      .returning(["key", "source", "deliveryId"])
  );
}

/**
 * PostgreSQL: the deliveries and their payloads in one statement (one round trip, its own
 * transaction); the payloads are matched to the keys the insert gave by source and id.
 */
function insertWithPayloads(db: Kysely<Database>, size: number) {
  const args = markers(size * (INSERTED + 1));
  const deliveryArgs = args.slice(0, size * INSERTED);
  const payloadArgs = args.slice(size * INSERTED);
  const given = sql.join(
    Array.from(
      { length: size },
      (_, row) =>
        sql`(${deliveryArgs[row * INSERTED]}, ${deliveryArgs[row * INSERTED + 1]}, ${payloadArgs[row]})`,
    ),
  );
  const query = db
    .with("stored", () => insertDeliveries(db, size, deliveryArgs))
    .with("kept", (qc) =>
      qc
        .insertInto("webhookPayloads")
        .columns(["deliveryKey", "payload"])
        .expression(
          sql`select stored.key, given.payload from stored
                join (values ${given}) as given (source, delivery_id, payload)
                on given.source = stored.source and given.delivery_id = stored.delivery_id`,
        )
        .onConflict((oc) => oc.column("deliveryKey").doNothing()),
    )
    .selectFrom("stored")
    .select("deliveryId")
    .compile();
  return new QueryTemplate(query, [...deliveryArgs, ...payloadArgs]);
}

function insertPayloads(db: Kysely<Database>, size: number) {
  const args = markers(size * 2);
  const query = db
    .insertInto("webhookPayloads")
    .values(
      Array.from({ length: size }, (_, row) => ({
        deliveryKey: args[row * 2] as unknown as number,
        payload: args[row * 2 + 1] as string,
      })),
    )
    // A failed delivery made pending again by its redelivery still has its payload.
    .onConflict((oc) => oc.column("deliveryKey").doNothing())
    .compile() as never;
  return new QueryTemplate<never>(query, args);
}

/** Takes up to `limit` ready deliveries, oldest first, under a lease. */
function claimReady(db: Kysely<Database>, dialect: DialectName) {
  const [source, now, leaseUntil, owner, limit] = markers(5) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const selectReady = sqlDialect(dialect).forUpdateSkipLocked(
    db
      .selectFrom("webhookDeliveries")
      .select("key")
      .where("source", "=", source)
      .where((eb) =>
        eb.or([
          eb.and([
            eb("state", "=", "pending"),
            eb("nextAttemptAt", "<=", now as unknown as number),
          ]),
          eb.and([eb("state", "=", "processing"), eb("leaseUntil", "<", now as unknown as number)]),
        ]),
      )
      .orderBy("key")
      .limit(limit as unknown as number),
  );
  const query = db
    .updateTable("webhookDeliveries")
    .set((eb) => ({
      state: "processing",
      leaseUntil: leaseUntil as unknown as number,
      leaseOwner: owner,
      attempts: eb("attempts", "+", 1),
    }))
    .where("key", "in", selectReady)
    .returningAll()
    .compile();
  return new QueryTemplate(query, [source, now, leaseUntil, owner, limit]);
}

function payloadsOf(db: Kysely<Database>, size: number) {
  const args = markers(size);
  const query = db
    .selectFrom("webhookPayloads")
    .select(["deliveryKey", "payload"])
    .where("deliveryKey", "in", args as unknown as number[])
    .compile();
  return new QueryTemplate(query, args);
}

function completeClaims(db: Kysely<Database>, size: number) {
  // The time, then each claim's key and attempt number.
  const args = markers(1 + size * 2);
  const query = db
    .updateTable("webhookDeliveries")
    .set({
      state: "processed",
      processedAt: args[0] as unknown as number,
      leaseUntil: null,
      error: null,
    })
    .where("state", "=", "processing")
    .where((eb) =>
      eb.or(
        Array.from({ length: size }, (_, i) =>
          eb.and([
            eb("key", "=", args[i * 2 + 1] as unknown as number),
            eb("attempts", "=", args[i * 2 + 2] as unknown as number),
          ]),
        ),
      ),
    )
    .returning("key")
    .compile();
  return new QueryTemplate(query, args);
}

function deletePayloads(db: Kysely<Database>, size: number) {
  const args = markers(size);
  const query = db
    .deleteFrom("webhookPayloads")
    .where("deliveryKey", "in", args as unknown as number[])
    .compile() as never;
  return new QueryTemplate<never>(query, args);
}

/**
 * The inbox of webhook deliveries (ADR 0021). Storing them is the acknowledgement, so it waits
 * for the disk (once for all the deliveries stored together). A delivery's payload is a row of
 * its own (`webhook_payloads`) from its storage until its completion, so that the worker's
 * claims and completions rewrite only the small row of its state. A claim takes the oldest ready
 * deliveries, several in one statement, under a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so
 * that workers pass each other's claims; SQLite has one writer), and a claim's attempt number
 * fences every later write of it. The hot statements (store, claim, complete) are compiled once
 * per number of rows and then only run: building them costs more than running them on SQLite.
 */
export class WebhookDeliveryStore implements DeliveryRecords {
  private readonly insertDeliveries: BySize<{ key: number; source: string; deliveryId: string }>;
  private readonly insertPayloads: BySize<never>;
  private readonly insertWithPayloads: BySize<{ deliveryId: string }>;
  private readonly claimReady: QueryTemplate<DeliveryRow>;
  private readonly payloadsOf: BySize<{ deliveryKey: number; payload: string }>;
  private readonly completeClaims: BySize<{ key: number }>;
  private readonly deletePayloads: BySize<never>;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {
    this.insertDeliveries = new BySize((size) => {
      const args = markers(size * INSERTED);
      return new QueryTemplate(insertDeliveries(db, size, args).compile(), args);
    });
    this.insertWithPayloads = new BySize((size) => insertWithPayloads(db, size));
    this.insertPayloads = new BySize((size) => insertPayloads(db, size));
    this.claimReady = claimReady(db, dialect);
    this.payloadsOf = new BySize((size) => payloadsOf(db, size));
    this.completeClaims = new BySize((size) => completeClaims(db, size));
    this.deletePayloads = new BySize((size) => deletePayloads(db, size));
  }

  async storeMany(deliveries: readonly NewDelivery[]): Promise<Set<string>> {
    if (deliveries.length === 0) return new Set();
    const payloads = new Map<string, string>();
    const args = deliveries.flatMap((delivery) => {
      payloads.set(`${delivery.source} ${delivery.deliveryId}`, delivery.payload);
      return [
        delivery.source,
        delivery.deliveryId,
        delivery.event,
        delivery.action,
        delivery.installationId,
        delivery.receivedAt,
      ];
    });
    if (sqlDialect(this.dialect).writesInWith) {
      for (const delivery of deliveries) args.push(delivery.payload);
      const rows = await this.insertWithPayloads.get(deliveries.length).run(this.db, args);
      return new Set(rows.map((row) => row.deliveryId));
    }
    const rows = await this.db.transaction().execute(async (trx) => {
      const stored = await this.insertDeliveries.get(deliveries.length).run(trx, args);
      if (stored.length > 0) {
        await this.insertPayloads.get(stored.length).run(
          trx,
          stored.flatMap((row) => [row.key, payloads.get(`${row.source} ${row.deliveryId}`)]),
        );
      }
      return stored;
    });
    return new Set(rows.map((row) => row.deliveryId));
  }

  async claim(
    source: string,
    now: number,
    leaseUntil: number,
    owner: string,
    limit: number,
  ): Promise<ClaimedDelivery[]> {
    // The claim itself is the lease: a lost one (power cut) leaves the deliveries to be claimed
    // again when the lease ends, so its commit need not wait for the disk.
    const { rows, payloads } = await sqlDialect(this.dialect).relaxedTransaction(
      this.db,
      async (trx) => {
        const rows = await this.claimReady.run(trx, [source, now, leaseUntil, owner, limit]);
        const payloads =
          rows.length === 0
            ? []
            : await this.payloadsOf.get(rows.length).run(
                trx,
                rows.map((row) => row.key),
              );
        return { rows, payloads };
      },
    );
    const byKey = new Map(payloads.map((row) => [row.deliveryKey, row.payload]));
    return rows
      .sort((a, b) => a.key - b.key)
      .map((row) => toRecord(row, byKey.get(row.key) ?? null));
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

  async complete(claims: readonly ClaimedDelivery[], now: number): Promise<Set<number>> {
    if (claims.length === 0) return new Set();
    const args: unknown[] = [now];
    for (const claim of claims) args.push(claim.key, claim.attempts);
    // Not waiting for the disk either: an undone completion hands the delivery out again.
    const completed = await sqlDialect(this.dialect).relaxedTransaction(this.db, async (trx) => {
      const rows = await this.completeClaims.get(claims.length).run(trx, args);
      if (rows.length > 0) {
        await this.deletePayloads.get(rows.length).run(
          trx,
          rows.map((row) => row.key),
        );
      }
      return rows;
    });
    return new Set(completed.map((row) => row.key));
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

  /** Deletes old deliveries; their payloads (failed and parked ones keep theirs) go with them. */
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
      .selectAll("webhookDeliveries")
      .leftJoin("webhookPayloads", "webhookPayloads.deliveryKey", "webhookDeliveries.key")
      .select("webhookPayloads.payload")
      .where("source", "=", source)
      .where("deliveryId", "=", deliveryId)
      .executeTakeFirst();
    if (!row) return undefined;
    const { payload, ...delivery } = row;
    return toRecord(delivery, payload);
  }
}
