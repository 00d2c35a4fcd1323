/**
 * The ingestion worker's lease on the uploads it claims: short (30 s), so that the uploads of a
 * process that died while processing them are resumed soon by another process (or the same one
 * restarted), and fenced by the claim's attempt number, so that a worker that lost its lease
 * changes nothing. A real crash of a server process is in test/e2e/database-faults.test.ts.
 */
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_WORKER_OPTIONS } from "../../src/testhealth/ingest/worker.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle, uploadState } from "../helpers/uploads.js";
import { type UploadOutcome, UploadTakenOver } from "../../src/testhealth/records.js";

const clock = { at: Date.UTC(2026, 10, 20, 12), now: () => clock.at };

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer({ clock, startWorker: false });
});
afterEach(async () => {
  await server.close();
});

async function stored(name: string): Promise<string> {
  return putBundle(
    server,
    await bundle({ uploadedAt: clock.at, files: [junit([{ name, status: "failed" }])] }),
  );
}

describe("the ingestion worker's lease", () => {
  it("a crashed worker's upload is resumed by another within 30 s, and counted once", async () => {
    const id = await stored("resumed");
    // Another process's worker claimed the upload, with its lease, and died.
    const { uploads } = server.services.stores;
    const [claimed] = await uploads.claimBatch(
      clock.at,
      clock.at + DEFAULT_WORKER_OPTIONS.leaseMs,
      DEFAULT_WORKER_OPTIONS.batchSize,
    );
    expect(claimed?.id).toBe(id);
    expect((await uploadState(server, id)).state).toBe("processing");

    // While the lease lasts, the claim is respected (its holder may be alive and busy).
    clock.at += 29_000;
    expect(await server.services.worker.processNext()).toBe(false);
    expect((await uploadState(server, id)).state).toBe("processing");

    // Just past 30 s it is taken over and processed once.
    clock.at += 1_001;
    expect(await server.services.worker.processNext()).toBe(true);
    expect((await uploadState(server, id)).state).toBe("processed");
    const { rows } = await sql<{ n: number }>`select count(*) as n from test_runs`.execute(
      server.services.database.db,
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });

  it("a worker whose lease ran out and was taken over can neither renew, give up nor finish the claim", async () => {
    await stored("fenced");
    const { uploads } = server.services.stores;
    const [stale] = await uploads.claimBatch(clock.at, clock.at + 1_000, 1);
    clock.at += 2_000;
    const [current] = await uploads.claimBatch(clock.at, clock.at + 30_000, 1);
    expect(stale && current && stale.key === current.key).toBe(true);
    if (!stale || !current) return;
    expect(await uploads.extendLease(stale, clock.at + 60_000)).toBe(false);
    // Giving the claim back (lease until now) would let a third worker in: refused as well.
    expect(await uploads.extendLease(stale, clock.at)).toBe(false);
    expect(await uploads.claimBatch(clock.at + 1, clock.at + 30_000, 1)).toEqual([]);
    expect(await uploads.extendLease(current, clock.at + 60_000)).toBe(true);

    // Nor record an outcome: its final transaction rolls back, the current claim stays open.
    const outcome: UploadOutcome = {
      commitSha: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
      branch: "main",
      prNumber: null,
      jobName: null,
      jobUrl: null,
      variant: "",
      uploadedAt: clock.at,
      filesTotal: 1,
      fileErrors: [],
      testsPassed: 0,
      testsFailed: 1,
      testsSkipped: 0,
      infrastructureFailure: false,
    };
    const { ingest } = server.services.stores;
    const record = (claim: typeof stale) =>
      ingest.transaction(claim.repositoryId, ({ trx }) =>
        uploads.markProcessed(trx, claim, outcome, clock.at),
      );
    await expect(record(stale)).rejects.toBeInstanceOf(UploadTakenOver);
    expect((await uploads.find(current.id))?.state).toBe("processing");
    await record(current);
    expect((await uploads.find(current.id))?.state).toBe("processed");
  });
});
