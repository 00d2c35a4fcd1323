import type { IngestRecords, TestSettingsRecords, UploadRecords } from "../ports.js";
import { UploadTakenOver, type ClaimedUpload } from "../records.js";
import type { BundleStorage } from "./bundle-storage.js";
import type { Clock } from "../../lib/clock.js";
import { windowLookbackMs } from "../classifier.js";
import { BackgroundLoop, keepLease } from "../../lib/background-loop.js";
import { isDatabaseUnavailable } from "../../lib/faults.js";
import { classifyCandidates } from "./classify-tests.js";
import type { UploadProcessor } from "./processor.js";
import { DAY_MS as DAY, MINUTE_MS as MINUTE } from "../../lib/time.js";

export interface WorkerOptions {
  /**
   * How long a claimed upload stays ours without renewal: a crashed worker's uploads are taken
   * over by another process (or this one restarted) once it ends. Renewed every third of it
   * while the batch is processed.
   */
  leaseMs: number;
  /** Re-classification of tests with active monitors, so that they resolve as windows slide. */
  sweepIntervalMs: number;
  /** Raw runs older than this are pruned. */
  retentionDays: number;
  retentionIntervalMs: number;
  /** How often to look for work when nobody wakes the worker. */
  pollIntervalMs: number;
  /** Uploads of one repository processed together (one final transaction, one classification). */
  batchSize: number;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = {
  leaseMs: 30_000,
  sweepIntervalMs: MINUTE,
  retentionDays: 90,
  retentionIntervalMs: 6 * 60 * MINUTE,
  pollIntervalMs: 2_000,
  batchSize: 32,
};

export interface WorkerLogger {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface WorkerDependencies {
  uploads: Pick<
    UploadRecords,
    | "claimBatch"
    | "extendLease"
    | "markFailed"
    | "oldBundles"
    | "deleteExpiredUnused"
    | "forgetBundle"
  >;
  ingest: Pick<
    IngestRecords,
    | "transaction"
    | "activeCandidates"
    | "runsForClassification"
    | "applyClassifications"
    | "repositoriesWithActiveMonitors"
    | "pruneRuns"
    | "pruneAggregates"
  >;
  settings: Pick<TestSettingsRecords, "get">;
  processor: UploadProcessor;
  bundles: BundleStorage;
  clock: Clock;
  logger: WorkerLogger;
}

/**
 * The background side of ingestion: processes stored bundles one at a time (resuming those a
 * crash left behind), re-classifies tests whose windows slide, and prunes old runs.
 */
export class IngestWorker {
  private readonly options: WorkerOptions;
  /** Passes: every waiting upload, then maintenance; a failed one backs off. */
  private readonly loop: BackgroundLoop;
  private lastSweep = 0;
  private lastRetention = 0;
  /** Repositories whose monitor settings changed: all their recent tests are re-classified. */
  private readonly reclassifyQueue = new Set<string>();
  /** Claims a database outage interrupted, to give back once the database answers again. */
  private readonly interrupted: ClaimedUpload[] = [];

  constructor(
    private readonly deps: WorkerDependencies,
    options: Partial<WorkerOptions> = {},
  ) {
    this.options = { ...DEFAULT_WORKER_OPTIONS, ...options };
    this.loop = new BackgroundLoop({
      intervalMs: this.options.pollIntervalMs,
      pass: () => this.pass(),
      onError: (error) => {
        this.deps.logger.error({ err: error }, "test-health worker step failed");
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Finishes the upload in hand, then stops. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** New work arrived (a bundle was stored). */
  wake(): void {
    this.loop.wake();
  }

  /** A repository's monitor settings changed: re-classify its tests soon (in the worker). */
  reclassify(repositoryId: string): void {
    this.reclassifyQueue.add(repositoryId);
    this.wake();
  }

  /** Whether uploads are being processed now. */
  get busy(): boolean {
    return this.loop.busy;
  }

  /** Waits until every stored bundle has been processed. */
  idle(): Promise<void> {
    return this.loop.idle();
  }

  private async pass(): Promise<void> {
    while (this.loop.running && (await this.processNext()));
    await this.maintenance();
  }

  /** Processes the next batch of waiting uploads; false when none is waiting. */
  async processNext(): Promise<boolean> {
    const { uploads, processor, clock, logger } = this.deps;
    await this.releaseInterrupted();
    const now = clock.now();
    const batch = await uploads.claimBatch(now, now + this.options.leaseMs, this.options.batchSize);
    if (batch.length === 0) return false;
    // Renewed on a timer, so also while a long batch is being processed (it yields to the event
    // loop between bundles and chunks); a renewal that fails is retried at the next tick.
    const release = keepLease(this.options.leaseMs, () => {
      const at = clock.now();
      return Promise.all(
        batch.map((upload) => uploads.extendLease(upload, at + this.options.leaseMs)),
      );
    });
    const started = performance.now();
    try {
      const results = await processor.processBatch(batch);
      const ms = Math.round(performance.now() - started);
      batch.forEach((upload, index) => {
        logger.info({ upload: upload.id, result: results[index], ms }, "upload processed");
      });
    } catch (error) {
      if (error instanceof UploadTakenOver) {
        // This worker stalled past its lease and another one has the uploads now: its work
        // was rolled back, the other's counts.
        logger.error({ err: error }, "upload taken over by another worker; batch abandoned");
        return true;
      }
      if (isDatabaseUnavailable(error)) {
        // The database went away (lost connection, restart): not the bundles' fault, so no
        // upload is failed for it. They are given back for the next attempt as soon as the
        // database answers (or, if this process dies first, when the lease runs out).
        logger.error(
          { err: error, uploads: batch.map((u) => u.id) },
          "upload processing interrupted: database unavailable; will retry",
        );
        this.interrupted.push(...batch);
        await this.releaseInterrupted().catch(() => undefined);
        throw error;
      }
      // An unexpected fault (not a bad bundle): the lease runs out and another attempt follows,
      // each upload alone, up to a limit, so that a poison bundle cannot loop forever.
      for (const upload of batch) {
        logger.error({ err: error, upload: upload.id }, "upload processing failed");
        if (upload.attempts >= 3) {
          await uploads.markFailed(
            upload.key,
            "Processing failed three times with an internal error; see the server log.",
            clock.now(),
          );
        } else {
          await uploads.extendLease(upload, clock.now());
        }
      }
    } finally {
      release();
    }
    return true;
  }

  /** Gives back the claims a database outage interrupted (fenced: only if still ours). */
  private async releaseInterrupted(): Promise<void> {
    while (this.interrupted.length > 0) {
      const [claim] = this.interrupted;
      if (claim) await this.deps.uploads.extendLease(claim, this.deps.clock.now());
      this.interrupted.shift();
    }
  }

  private async maintenance(): Promise<void> {
    for (const repositoryId of [...this.reclassifyQueue]) {
      this.reclassifyQueue.delete(repositoryId);
      await this.classifyRepository(repositoryId, true);
    }
    const now = this.deps.clock.now();
    if (now - this.lastSweep >= this.options.sweepIntervalMs) {
      this.lastSweep = now;
      await this.sweep();
    }
    if (now - this.lastRetention >= this.options.retentionIntervalMs) {
      this.lastRetention = now;
      await this.prune();
    }
  }

  /** Re-classifies every test with an active monitor, with the current time. */
  async sweep(): Promise<number> {
    let changed = 0;
    for (const repositoryId of await this.deps.ingest.repositoriesWithActiveMonitors()) {
      changed += await this.classifyRepository(repositoryId, false);
    }
    return changed;
  }

  /**
   * Classifies a repository's tests with an active monitor and, when `recentFailures`, also those
   * with a counted failure within the windows (what a change of monitor settings can affect).
   */
  async classifyRepository(repositoryId: string, recentFailures: boolean): Promise<number> {
    const { ingest, settings, clock } = this.deps;
    const repositorySettings = await settings.get(repositoryId);
    const window = windowLookbackMs(repositorySettings.monitors);
    return ingest.transaction(repositoryId, async ({ trx }) => {
      const now = clock.now();
      const candidates = await ingest.activeCandidates(
        trx,
        repositoryId,
        recentFailures ? now - window : undefined,
      );
      const runs = await ingest.runsForClassification(
        trx,
        candidates.map((c) => c.key),
        now - window,
        [],
        [],
      );
      const updates = classifyCandidates(candidates, runs, repositorySettings.monitors, now);
      await ingest.applyClassifications(trx, updates);
      return updates.length;
    });
  }

  async prune(): Promise<{ runs: number }> {
    const { ingest, uploads, clock } = this.deps;
    const now = clock.now();
    const before = now - this.options.retentionDays * DAY;
    const runs = await ingest.pruneRuns(before);
    await ingest.pruneAggregates(before);
    await uploads.deleteExpiredUnused(now - DAY);
    for (const old of await uploads.oldBundles(before)) {
      await this.deps.bundles.remove(old.bundlePath);
      await uploads.forgetBundle(old.key);
    }
    return { runs };
  }
}
