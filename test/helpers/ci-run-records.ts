import type { CiRunRecord, CiRunRecords } from "../../src/mergequeue/ci-run-records.js";

const unfinished = (record: CiRunRecord) =>
  record.status === "queued" || record.status === "running";

/**
 * `CiRunRecords` in memory, for the runner's own tests (the database store, `CiRunStore`, is tested in test/db). Records are copied in and out, so
 * that a test sees what was stored, not the runner's live object.
 */
export class InMemoryCiRunRecords implements CiRunRecords {
  private readonly runs = new Map<string, CiRunRecord>();

  private static key(queueId: string, runId: string): string {
    return `${queueId}\u0000${runId}`;
  }

  create(record: CiRunRecord): Promise<boolean> {
    const key = InMemoryCiRunRecords.key(record.queueId, record.runId);
    if (this.runs.has(key)) return Promise.resolve(false);
    this.runs.set(key, structuredClone(record));
    return Promise.resolve(true);
  }

  get(queueId: string, runId: string): Promise<CiRunRecord | undefined> {
    const record = this.runs.get(InMemoryCiRunRecords.key(queueId, runId));
    return Promise.resolve(record && structuredClone(record));
  }

  update(record: CiRunRecord): Promise<void> {
    const key = InMemoryCiRunRecords.key(record.queueId, record.runId);
    const stored = this.runs.get(key);
    if (stored === undefined) return Promise.reject(new Error(`unknown run ${record.runId}`));
    // Only the fields the interface says `update` replaces.
    const { status, checks, error, flakyOnly, finishedAt } = structuredClone(record);
    this.runs.set(key, { ...stored, status, checks, error, flakyOnly, finishedAt });
    return Promise.resolve();
  }

  claim(queueId: string, runId: string, owner: string, now: number, until: number) {
    const stored = this.runs.get(InMemoryCiRunRecords.key(queueId, runId));
    if (stored === undefined || !unfinished(stored) || stored.leaseUntil >= now) {
      return Promise.resolve(false);
    }
    stored.owner = owner;
    stored.leaseUntil = until;
    return Promise.resolve(true);
  }

  renew(owner: string, until: number): Promise<void> {
    for (const stored of this.runs.values()) {
      if (stored.owner === owner && unfinished(stored)) stored.leaseUntil = until;
    }
    return Promise.resolve();
  }

  release(owner: string): Promise<void> {
    return this.renew(owner, 0);
  }

  unfinished(): Promise<CiRunRecord[]> {
    const open = [...this.runs.values()].filter(unfinished);
    open.sort((a, b) => a.createdAt - b.createdAt);
    return Promise.resolve(open.map((record) => structuredClone(record)));
  }
}
