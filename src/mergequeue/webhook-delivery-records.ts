/**
 * The durable inbox of a git host's webhook deliveries (ADR 0021): a delivery is stored before it
 * is acknowledged, then claimed by one worker at a time under a fenced lease and dispatched to
 * its handlers. Storage implements the port; the GitHub and GitLab providers use it, each
 * claiming its own `source`.
 */

/** `pending` waits for a worker (again, after a failed attempt, from `nextAttemptAt`);
 * `processing` is claimed; `parked` waits for its installation to be linked; `processed` and
 * `failed` are done (kept until pruned). */
export type DeliveryState = "pending" | "processing" | "parked" | "processed" | "failed";

export interface NewDelivery {
  /** Which host sent it (`github`). */
  source: string;
  /** The host's id of the delivery (`X-GitHub-Delivery`): the same on a redelivery. */
  deliveryId: string;
  event: string;
  action: string | null;
  /** The installation it concerns (the payload's `installation.id`), when it names one. */
  installationId: number | null;
  /** The body as received (JSON text). */
  payload: string;
  receivedAt: number;
}

export interface DeliveryRecord extends Omit<NewDelivery, "payload"> {
  key: number;
  state: DeliveryState;
  attempts: number;
  leaseUntil: number | null;
  /** The worker that holds (or last held) the claim. */
  leaseOwner: string | null;
  nextAttemptAt: number;
  /** Why the last attempt failed. */
  error: string | null;
  processedAt: number | null;
  /** The body as received, kept until the delivery is handled (null after). */
  payload: string | null;
}

/** A claim: the delivery as claimed. Its attempt number fences every later write. */
export type ClaimedDelivery = DeliveryRecord;

export interface DeliveryRecords {
  /**
   * Stores deliveries durably, in one transaction (one wait for the disk for all of them);
   * answers the ids of those it stored: the others were stored before (redeliveries). A
   * redelivery of one kept as failed makes it pending again (and is answered as stored).
   */
  storeMany(deliveries: readonly NewDelivery[]): Promise<Set<string>>;
  /**
   * Claims up to `limit` of the oldest deliveries from `source` ready for work (pending and due,
   * or processing under a lease that ran out) for `owner` until `leaseUntil`, in one transaction,
   * with their payloads; oldest first, none when none is ready.
   */
  claim(
    source: string,
    now: number,
    leaseUntil: number,
    owner: string,
    limit: number,
  ): Promise<ClaimedDelivery[]>;
  /** Renews the claim's lease; false when the claim is no longer this worker's. */
  renew(claim: ClaimedDelivery, leaseUntil: number): Promise<boolean>;
  /**
   * The claims' work is done, in one transaction: each becomes processed and its payload is
   * deleted. Answers the keys of those completed: a claim no longer this worker's is not.
   */
  complete(claims: readonly ClaimedDelivery[], now: number): Promise<Set<number>>;
  /** Tries again from `at`, keeping `error`. */
  retryLater(claim: ClaimedDelivery, at: number, error: string): Promise<boolean>;
  /** Gives up: kept as failed with its error. */
  fail(claim: ClaimedDelivery, error: string, now: number): Promise<boolean>;
  /** Waits for its installation to be linked. */
  park(claim: ClaimedDelivery, now: number): Promise<boolean>;
  /** The parked deliveries of an installation become pending again; answers how many. */
  unpark(source: string, installationId: number, now: number): Promise<number>;
  /** Deletes processed deliveries older than `processedBefore`, failed and parked ones older
   * than `keptBefore`; answers how many. */
  prune(processedBefore: number, keptBefore: number): Promise<number>;
  find(source: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
}
