/**
 * Stores deliveries that arrive together in one transaction (a group commit, as the queue's
 * command inbox does: ADR 0015): one wait for the disk for all of them, so that a burst of
 * deliveries is acknowledged as fast as one. Each caller resumes once its delivery is durable,
 * learning whether it was new or a redelivery.
 */
import type { DeliveryStorage, NewDelivery } from "../../../mergequeue/webhook-delivery-records.js";

interface Waiting {
  delivery: NewDelivery;
  stored: (isNew: boolean) => void;
  failed: (error: unknown) => void;
}

/** A batch stops growing past this many payload bytes (a few large deliveries go alone). */
const MAX_BATCH_BYTES = 8 * 1024 * 1024;
const MAX_BATCH_DELIVERIES = 100;

export class DeliveryWriter {
  private waiting: Waiting[] = [];
  private flushing: Promise<void> | null = null;

  constructor(private readonly storage: Pick<DeliveryStorage, "storeMany">) {}

  /** Stores a delivery durably; false when it was stored before (a redelivery). */
  store(delivery: NewDelivery): Promise<boolean> {
    return new Promise<boolean>((stored, failed) => {
      this.waiting.push({ delivery, stored, failed });
      // One turn of the event loop first, so that deliveries that arrive together go together.
      this.flushing ??= new Promise<void>((resolve) => {
        setImmediate(resolve);
      }).then(() => this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.take();
      // A delivery sent twice in one batch (GitHub duplicates them) is stored, and new, once.
      const unique = new Map<string, NewDelivery>();
      for (const { delivery } of batch) {
        const key = `${delivery.source} ${delivery.deliveryId}`;
        if (!unique.has(key)) unique.set(key, delivery);
      }
      try {
        const stored = await this.storage.storeMany([...unique.values()]);
        const answered = new Set<string>();
        for (const { delivery, stored: resolve } of batch) {
          const key = `${delivery.source} ${delivery.deliveryId}`;
          resolve(stored.has(delivery.deliveryId) && !answered.has(key));
          answered.add(key);
        }
      } catch (error) {
        for (const { failed } of batch) failed(error);
      }
    }
    this.flushing = null;
  }

  private take(): Waiting[] {
    let bytes = 0;
    let count = 0;
    for (const { delivery } of this.waiting) {
      if (
        count > 0 &&
        (bytes + delivery.payload.length > MAX_BATCH_BYTES || count >= MAX_BATCH_DELIVERIES)
      ) {
        break;
      }
      bytes += delivery.payload.length;
      count++;
    }
    return this.waiting.splice(0, count);
  }
}
