import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle, uploadState, type CaseSpec } from "../helpers/uploads.js";

/**
 * The worker processes the waiting uploads of a repository together (one final transaction,
 * one aggregation, one classification). Whatever the batch, the outcome must be the one of
 * processing the same uploads one at a time: both servers here get the same bundles while
 * their workers are stopped, then one processes them in batches and the other one by one.
 */

const HOUR = 3_600_000;
const clock = { at: Date.UTC(2026, 10, 22, 9), now: () => clock.at };

const commit = (n: number) => n.toString(16).padStart(40, "0");
const many = (count: number, status: NonNullable<CaseSpec["status"]>): CaseSpec[] =>
  Array.from({ length: count }, (_, i) => ({ name: `bulk_${i}`, status }));

/** Bundles in upload order; `null` stands for bytes that are no bundle at all. */
async function workload(): Promise<(Buffer | null)[]> {
  const at = clock.at;
  const first = await bundle({
    commit: commit(1),
    uploadedAt: at,
    branch: "main",
    files: [junit([{ name: "retried", status: "failed" }, { name: "steady" }])],
  });
  return [
    first,
    // The same commit again (a re-run): `retried` passes now, so it is flaky.
    await bundle({
      commit: commit(1),
      uploadedAt: at + 60_000,
      branch: "main",
      files: [junit([{ name: "retried" }, { name: "steady" }])],
    }),
    null,
    // The same bytes as the first upload: counted once.
    first,
    await bundle({
      commit: commit(2),
      uploadedAt: at + 120_000,
      branch: "feature/x",
      pr: 41,
      files: [
        junit([{ name: "on_pr", status: "failed", message: "boom" }, { name: "steady" }]),
        "<testsuites><testsuite><testcase", // a broken file: the others of the bundle count
      ],
    }),
    // Nearly everything failed: infrastructure, excluded from detection.
    await bundle({
      commit: commit(3),
      uploadedAt: at + 180_000,
      branch: "main",
      files: [junit([...many(12, "failed"), { name: "steady", status: "failed" }])],
    }),
    await bundle({
      commit: commit(4),
      uploadedAt: at + 240_000,
      branch: "main",
      files: [junit([{ name: "steady" }, { name: "retried" }, ...many(12, "passed")])],
    }),
  ];
}

async function upload(server: TestServer, body: Buffer | null): Promise<string> {
  if (body) return putBundle(server, body);
  return putBundle(server, Buffer.from("this is not a bundle"));
}

/** Everything the API and the aggregates say about the repository, keyed by names. */
async function observed(server: TestServer, ids: readonly string[]) {
  const db = server.services.database.db;
  const uploads = [];
  for (const id of ids) {
    const state = await uploadState(server, id);
    uploads.push({
      state: state.state,
      reason: state.reason,
      duplicate: typeof state.duplicate_of === "string" ? ids.indexOf(state.duplicate_of) : null,
      tests: [state.tests_passed, state.tests_failed, state.tests_skipped],
      infrastructure: state.infrastructure_failure,
      files: state.file_errors,
    });
  }
  const tests = await db
    .selectFrom("testCases")
    .select(["name", "status", "statusReason", "lastRunAt", "lastFailureAt", "monitorsActive"])
    .orderBy("name")
    .execute();
  const { rows: hourly } = await sql<{ name: string; passed: number }>`
    select t.name, h.hour, h.passed, h.failed, h.excluded_failed
    from test_hourly_stats h join test_cases t on t.key = h.test_key
    order by t.name, h.hour`.execute(db);
  const { rows: prs } = await sql`
    select t.name, p.pr_number, p.last_failed_at
    from test_pr_failures p join test_cases t on t.key = p.test_key order by t.name`.execute(db);
  const { rows: groups } = await sql`
    select t.name, g.hour, g.signature, g.occurrences, g.last_at, g.summary
    from test_failure_groups g join test_cases t on t.key = g.test_key
    order by t.name, g.hour, g.signature`.execute(db);
  const quarantined = await server.call<{ testIds: string[] }>("metrics/getQuarantineConfig", {
    repo: REPO,
    orgUrlSlug: "acme",
  });
  return {
    uploads,
    tests: tests.map((t) => ({ ...t, monitorsActive: Boolean(t.monitorsActive) })),
    hourly,
    prs,
    groups,
    quarantined: [...quarantined.body.testIds].sort(),
  };
}

let batched: TestServer;
let single: TestServer;
beforeAll(async () => {
  batched = await startTestServer({ clock, startWorker: false, worker: { batchSize: 16 } });
  single = await startTestServer({ clock, startWorker: false, worker: { batchSize: 1 } });
});
afterAll(async () => {
  await batched.close();
  await single.close();
});

describe("batched processing", () => {
  it("claims the oldest upload with the waiting first attempts of its repository, up to the limit", async () => {
    const server = await startTestServer({ clock, startWorker: false });
    try {
      const other = { host: "github.com", owner: "acme", name: "other" };
      const body = (n: number) =>
        bundle({ commit: commit(100 + n), uploadedAt: clock.at, files: [junit([{ name: "t" }])] });
      const a1 = await putBundle(server, await body(1));
      const b1 = await putBundle(server, await body(2), other);
      const a2 = await putBundle(server, await body(3));
      const a3 = await putBundle(server, await body(4));
      const a4 = await putBundle(server, await body(5));
      const { uploads } = server.services.stores;
      const lease = clock.at + 60_000;

      const first = await uploads.claimBatch(clock.at, lease, 3);
      expect(first.map((u) => u.id)).toEqual([a1, a2, a3]);
      expect(first.every((u) => u.state === "processing" && u.attempts === 1)).toBe(true);
      // The other repository's upload is now the oldest.
      expect((await uploads.claimBatch(clock.at, lease, 3)).map((u) => u.id)).toEqual([b1]);
      expect((await uploads.claimBatch(clock.at, lease, 3)).map((u) => u.id)).toEqual([a4]);
      expect(await uploads.claimBatch(clock.at, lease, 3)).toEqual([]);

      // Leases ran out (the worker died): each upload is retried alone.
      const later = lease + 1;
      const retried = await uploads.claimBatch(later, later + 60_000, 3);
      expect(retried.map((u) => u.id)).toEqual([a1]);
      expect(retried[0]?.attempts).toBe(2);
    } finally {
      await server.close();
    }
  });

  it("ends exactly as processing the same uploads one by one", async () => {
    const bodies = await workload();
    const batchedIds: string[] = [];
    const singleIds: string[] = [];
    for (const body of bodies) {
      batchedIds.push(await upload(batched, body));
      singleIds.push(await upload(single, body));
    }
    for (const id of batchedIds) expect((await uploadState(batched, id)).state).toBe("pending");
    clock.at += HOUR;
    for (const server of [batched, single]) {
      server.services.worker.start();
      server.services.worker.wake();
      await server.services.worker.idle();
    }

    const result = await observed(batched, batchedIds);
    expect(result).toEqual(await observed(single, singleIds));

    // And it is the right outcome.
    const states = result.uploads.map((u) => u.state);
    expect(states).toEqual([
      "processed",
      "processed",
      "failed",
      "processed",
      "processed",
      "processed",
      "processed",
    ]);
    expect(result.uploads[2]?.reason).toMatch(/bundle|tar|gzip|zstd/i);
    expect(result.uploads[3]?.duplicate).toBe(0);
    expect(result.uploads[4]?.files).toHaveLength(1);
    expect(result.uploads[5]?.infrastructure).toBe(true);
    const status = Object.fromEntries(result.tests.map((t) => [t.name, t.status]));
    expect(status.retried).toBe("flaky");
    expect(status.steady).toBe("healthy");
    expect(status.bulk_0).toBe("healthy"); // its failures were the infrastructure's
    expect(result.prs).toEqual([expect.objectContaining({ name: "on_pr", prNumber: 41 })]);
    expect(result.quarantined).toHaveLength(1);
    const counted = result.hourly
      .filter((h) => h.name === "steady")
      .reduce((sum, h) => sum + h.passed, 0);
    // main ×2, feature, last main; the duplicate and the excluded upload's failure not counted.
    expect(counted).toBe(4);
  });
});
