/**
 * The worker behind the webhook inbox: claims stored deliveries under leases fenced by attempt
 * number, so that any number of processes on one database handle each delivery once and a crashed
 * process's claims are taken over; lets the receiver's answers go first; retries failures with
 * growing waits, then keeps them as failed (docs/github.md, "Webhooks"). Each host runs its own
 * worker over its own `source` of the one inbox table.
 */
import { BackgroundLoop, keepLease } from "../lib/background-loop.js";
import type { Clock } from "../lib/clock.js";
import { isDatabaseUnavailable } from "../lib/faults.js";
import { redactSecrets } from "../lib/redact.js";
import { DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS } from "../lib/time.js";
import type { ClaimedDelivery, DeliveryRecords } from "../mergequeue/webhook-delivery-records.js";
import type { ProviderLogger } from "./host-provider.js";

/** What handling a delivery came to: done, or waiting for its installation to be linked. */
export type DispatchOutcome = "done" | "parked";

export interface InboxOptions {
  /** How long a claim stays this worker's without renewal (renewed every third of it). */
  leaseMs: number;
  /** How often to look for work when nothing wakes the worker. */
  pollIntervalMs: number;
  /** Deliveries handled at once. */
  concurrency: number;
  /** Attempts before a delivery is kept as failed. */
  maxAttempts: number;
  /** The wait after the first failed attempt; it doubles after each one, up to `maxRetryMs`. */
  firstRetryMs: number;
  maxRetryMs: number;
  /** Handled deliveries are kept this long (GitHub lets a delivery be redelivered for 3 days). */
  processedRetentionMs: number;
  /** Failed and parked deliveries are kept this long. */
  keptRetentionMs: number;
  pruneIntervalMs: number;
}

export const DEFAULT_INBOX_OPTIONS: InboxOptions = {
  leaseMs: 30 * SECOND_MS,
  pollIntervalMs: 2 * SECOND_MS,
  concurrency: 4,
  maxAttempts: 8,
  firstRetryMs: 5 * SECOND_MS,
  maxRetryMs: 5 * MINUTE_MS,
  processedRetentionMs: 7 * DAY_MS,
  keptRetentionMs: 30 * DAY_MS,
  pruneIntervalMs: HOUR_MS,
};

/** Completions that arrive together are written together, up to this many. */
const MAX_COMPLETIONS = 100;

/** One turn of the event loop: what waits for it (answers, inserts) goes first. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Completion {
  claim: ClaimedDelivery;
  done: (completed: boolean) => void;
  failed: (error: unknown) => void;
}

export interface InboxDeps {
  deliveries: Omit<DeliveryRecords, "storeMany" | "find">;
  dispatch: (delivery: ClaimedDelivery) => Promise<DispatchOutcome>;
  /** After a delivery was parked: whether its installation is linked by now (a link raced it). */
  linkedNow: (installationId: number) => Promise<boolean>;
  clock: Clock;
  logger: ProviderLogger;
  /** The host whose deliveries it claims (`github`, `gitlab`); also its log lines' prefix. */
  source: string;
  /** This worker's name in the claims it takes. */
  owner: string;
}

/** The wait before attempt `attempts + 1`, after `attempts` failed. */
export function retryDelay(
  attempts: number,
  options: Pick<InboxOptions, "firstRetryMs" | "maxRetryMs">,
): number {
  return Math.min(options.maxRetryMs, options.firstRetryMs * 2 ** Math.max(0, attempts - 1));
}

export class WebhookInbox {
  private readonly options: InboxOptions;
  /** Passes: a claim for the free slots, then maintenance; a failed one backs off. */
  private readonly loop: BackgroundLoop;
  /** Whether the last pass claimed fewer deliveries than it had free slots (none left ready). */
  private exhausted = false;
  private readonly active = new Set<Promise<void>>();
  private lastPrune = 0;
  private completions: Completion[] = [];
  private completing: Promise<void> | null = null;

  constructor(
    private readonly deps: InboxDeps,
    options: Partial<InboxOptions> = {},
  ) {
    this.options = { ...DEFAULT_INBOX_OPTIONS, ...options };
    this.loop = new BackgroundLoop({
      intervalMs: this.options.pollIntervalMs,
      pass: () => this.pass(),
      onError: (error) => {
        this.deps.logger.error({ err: error }, `${this.deps.source}: webhook inbox step failed`);
      },
      isIdle: () => this.exhausted && this.active.size === 0,
      drain: () => Promise.all([...this.active]),
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Finishes the deliveries in hand, then stops. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** A delivery was stored (or unparked): look now. */
  wake(): void {
    this.loop.wake();
  }

  /** Resolves once nothing is ready and nothing is in hand (tests). */
  idle(): Promise<void> {
    if (!this.loop.running) return Promise.resolve();
    this.wake();
    return this.loop.idle();
  }

  private async pass(): Promise<void> {
    this.exhausted = false;
    const free = this.options.concurrency - this.active.size;
    if (free > 0) {
      await nextTurn();
      const claims = await this.claim(free);
      this.exhausted = claims.length < free;
      for (const claim of claims) this.handle(claim);
    }
    await this.maintenance();
  }

  private claim(limit: number): Promise<ClaimedDelivery[]> {
    const now = this.deps.clock.now();
    return this.deps.deliveries.claim(
      this.deps.source,
      now,
      now + this.options.leaseMs,
      this.deps.owner,
      limit,
    );
  }

  /** Completes a claim with the others completed in the same turn (one transaction). */
  private complete(claim: ClaimedDelivery): Promise<boolean> {
    return new Promise<boolean>((done, failed) => {
      this.completions.push({ claim, done, failed });
      this.completing ??= nextTurn().then(() => this.flushCompletions());
    });
  }

  private async flushCompletions(): Promise<void> {
    while (this.completions.length > 0) {
      const batch = this.completions.splice(0, MAX_COMPLETIONS);
      try {
        const completed = await this.deps.deliveries.complete(
          batch.map(({ claim }) => claim),
          this.deps.clock.now(),
        );
        for (const { claim, done } of batch) done(completed.has(claim.key));
      } catch (error) {
        for (const { failed } of batch) failed(error);
      }
    }
    this.completing = null;
  }

  private handle(claim: ClaimedDelivery): void {
    const work = this.process(claim).finally(() => {
      this.active.delete(work);
      // A free slot: look for more at once.
      this.wake();
    });
    this.active.add(work);
  }

  /** Handles one claimed delivery and records how it went (fenced by the claim). */
  async process(claim: ClaimedDelivery): Promise<void> {
    const { deliveries, clock, logger } = this.deps;
    const release = keepLease(this.options.leaseMs, () =>
      deliveries.renew(claim, clock.now() + this.options.leaseMs),
    );
    const fields = {
      delivery: claim.deliveryId,
      event: claim.event,
      action: claim.action,
      installation: claim.installationId,
      attempt: claim.attempts,
    };
    try {
      const outcome = await this.deps.dispatch(claim);
      if (outcome === "parked") {
        await deliveries.park(claim, clock.now());
        logger.info(
          fields,
          `${this.deps.source}: delivery waits for its installation to be linked`,
        );
        // A link that came while this delivery was being handled found nothing parked yet.
        if (claim.installationId !== null && (await this.deps.linkedNow(claim.installationId))) {
          await deliveries.unpark(claim.source, claim.installationId, clock.now());
          this.wake();
        }
      } else if (!(await this.complete(claim))) {
        logger.warn(
          fields,
          `${this.deps.source}: delivery was taken over by another worker while handled`,
        );
      }
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        // Not the delivery's fault: its lease runs out and it is taken again.
        logger.warn(
          { ...fields, err: error },
          `${this.deps.source}: delivery interrupted: database unavailable`,
        );
        return;
      }
      const message = redactSecrets(error instanceof Error ? error.message : String(error)).slice(
        0,
        2000,
      );
      try {
        if (claim.attempts >= this.options.maxAttempts) {
          await deliveries.fail(claim, message, clock.now());
          logger.error(
            { ...fields, err: error },
            `${this.deps.source}: delivery failed; kept with its error`,
          );
        } else {
          const at = clock.now() + retryDelay(claim.attempts, this.options);
          await deliveries.retryLater(claim, at, message);
          logger.warn(
            { ...fields, err: error, retryAt: new Date(at).toISOString() },
            `${this.deps.source}: delivery failed; will retry`,
          );
        }
      } catch (recording) {
        logger.error(
          { ...fields, err: recording },
          `${this.deps.source}: could not record a failed delivery`,
        );
      }
    } finally {
      release();
    }
  }

  private async maintenance(): Promise<void> {
    const now = this.deps.clock.now();
    if (now - this.lastPrune < this.options.pruneIntervalMs) return;
    this.lastPrune = now;
    const pruned = await this.deps.deliveries.prune(
      now - this.options.processedRetentionMs,
      now - this.options.keptRetentionMs,
    );
    if (pruned > 0)
      this.deps.logger.info({ pruned }, `${this.deps.source}: old webhook deliveries pruned`);
  }
}
