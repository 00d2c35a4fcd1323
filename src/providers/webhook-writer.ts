/**
 * Stores deliveries that arrive together in one transaction (a group commit, as the queue's command
 * inbox does): one wait for the disk for all of them, so that a burst of deliveries is acknowledged
 * as fast as one. Each caller resumes once its delivery is durable, learning whether it was new or
 * a redelivery.
 */
import { GroupWriter } from "../lib/group-writer.js";
import type { DeliveryRecords, NewDelivery } from "../mergequeue/webhook-delivery-records.js";

/** A batch stops growing past this many payload bytes (a few large deliveries go alone). */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
const MAX_BATCH_DELIVERIES = 100;

export class DeliveryWriter {
  private readonly group: GroupWriter<NewDelivery, boolean>;

  constructor(storage: Pick<DeliveryRecords, "storeMany">) {
    this.group = new GroupWriter({
      write: async (batch) => {
        // A delivery sent twice in one batch (GitHub duplicates them) is stored, and new, once.
        const unique = new Map<string, NewDelivery>();
        for (const delivery of batch) {
          const key = `${delivery.source} ${delivery.deliveryId}`;
          if (!unique.has(key)) unique.set(key, delivery);
        }
        const stored = await storage.storeMany([...unique.values()]);
        const answered = new Set<string>();
        return batch.map((delivery) => {
          const key = `${delivery.source} ${delivery.deliveryId}`;
          const isNew = stored.has(delivery.deliveryId) && !answered.has(key);
          answered.add(key);
          return isNew;
        });
      },
      take: batchSize,
    });
  }

  /** Stores a delivery durably; false when it was stored before (a redelivery). */
  store(delivery: NewDelivery): Promise<boolean> {
    return this.group.write(delivery);
  }
}

/** How many of the waiting deliveries the next transaction takes. */
function batchSize(waiting: readonly NewDelivery[]): number {
  let bytes = 0;
  let count = 0;
  for (const delivery of waiting) {
    if (
      count > 0 &&
      (bytes + delivery.payload.length > MAX_BATCH_BYTES || count >= MAX_BATCH_DELIVERIES)
    ) {
      break;
    }
    bytes += delivery.payload.length;
    count++;
  }
  return count;
}
