import type { Kysely, Selectable } from "kysely";
import type {
  CiRunRecord,
  CiRunStatus,
  CiRunStorage,
  UnbuiltRun,
} from "../../mergequeue/ci-run-records.js";
import type { CiRunsTable, Database } from "../schema.js";

const UNFINISHED: CiRunStatus[] = ["queued", "running"];

function toRecord(row: Selectable<CiRunsTable>): CiRunRecord {
  return {
    queueId: row.queueId,
    runId: row.runId,
    request: JSON.parse(row.request) as CiRunRecord["request"],
    status: row.status as CiRunStatus,
    checks: JSON.parse(row.checks) as CiRunRecord["checks"],
    error: row.error === null ? null : (JSON.parse(row.error) as CiRunRecord["error"]),
    flakyOnly: Boolean(row.flakyOnly),
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
    owner: row.owner,
    leaseUntil: row.leaseUntil,
  };
}

/**
 * A queue run that never reached the runner: its test branch could not be built (a conflict;
 * `error`), or the queue cancelled it first (`cancelled`). No check ran.
 */

/** The built-in CI runner's runs, by queue and run id. */
export class CiRunStore implements CiRunStorage {
  constructor(private readonly db: Kysely<Database>) {}

  async create(record: CiRunRecord): Promise<boolean> {
    const result = await this.db
      .insertInto("ciRuns")
      .values({
        queueId: record.queueId,
        runId: record.runId,
        request: JSON.stringify(record.request),
        status: record.status,
        checks: JSON.stringify(record.checks),
        error: record.error === null ? null : JSON.stringify(record.error),
        flakyOnly: record.flakyOnly ? 1 : 0,
        createdAt: record.createdAt,
        finishedAt: record.finishedAt,
        owner: record.owner,
        leaseUntil: record.leaseUntil,
      })
      .onConflict((oc) => oc.columns(["queueId", "runId"]).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async get(queueId: string, runId: string): Promise<CiRunRecord | undefined> {
    const row = await this.db
      .selectFrom("ciRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("runId", "=", runId)
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  async update(record: CiRunRecord): Promise<void> {
    await this.db
      .updateTable("ciRuns")
      .set({
        status: record.status,
        checks: JSON.stringify(record.checks),
        error: record.error === null ? null : JSON.stringify(record.error),
        flakyOnly: record.flakyOnly ? 1 : 0,
        finishedAt: record.finishedAt,
      })
      .where("queueId", "=", record.queueId)
      .where("runId", "=", record.runId)
      .execute();
  }

  async unfinished(): Promise<CiRunRecord[]> {
    const rows = await this.db
      .selectFrom("ciRuns")
      .selectAll()
      .where("status", "in", UNFINISHED)
      .orderBy("createdAt")
      .orderBy("runId")
      .execute();
    return rows.map(toRecord);
  }

  async claim(
    queueId: string,
    runId: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable("ciRuns")
      .set({ owner, leaseUntil: until })
      .where("queueId", "=", queueId)
      .where("runId", "=", runId)
      .where("status", "in", UNFINISHED)
      .where("leaseUntil", "<", now)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async renew(owner: string, until: number): Promise<void> {
    await this.db
      .updateTable("ciRuns")
      .set({ leaseUntil: until })
      .where("owner", "=", owner)
      .where("status", "in", UNFINISHED)
      .execute();
  }

  async release(owner: string): Promise<void> {
    await this.db
      .updateTable("ciRuns")
      .set({ leaseUntil: 0 })
      .where("owner", "=", owner)
      .where("status", "in", UNFINISHED)
      .execute();
  }

  /**
   * The queue's finished runs that never reached the runner, newest first: their test branch
   * could not be built (a merge conflict), or they were cancelled before it started them.
   */
  async unbuilt(queueId: string, limit: number, runId?: string): Promise<UnbuiltRun[]> {
    let query = this.db
      .selectFrom("mqRuns as r")
      .select(["r.id", "r.status", "r.prs", "r.baseSha", "r.startedAt", "r.finishedAt"])
      .where("r.queueId", "=", queueId)
      .where("r.status", "!=", "running")
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("ciRuns as c")
              .select("c.runId")
              .whereRef("c.queueId", "=", "r.queueId")
              .whereRef("c.runId", "=", "r.id"),
          ),
        ),
      );
    if (runId !== undefined) query = query.where("r.id", "=", runId);
    const rows = await query
      .orderBy("r.startedAt", "desc")
      .orderBy("r.id", "desc")
      .limit(limit)
      .execute();
    const runs: UnbuiltRun[] = [];
    for (const row of rows) {
      const said = await this.db
        .selectFrom("mqTransitions")
        .select("detail")
        .where("queueId", "=", queueId)
        .where("runId", "=", row.id)
        .where("reason", "=", "merge_conflict")
        .orderBy("id")
        .executeTakeFirst();
      const conflict = row.status === "failed" || said !== undefined;
      runs.push({
        runId: row.id,
        status: conflict ? "error" : "cancelled",
        prNumbers: (JSON.parse(row.prs) as { number: number }[]).map((pr) => pr.number),
        baseSha: row.baseSha,
        createdAt: row.startedAt,
        finishedAt: row.finishedAt,
        message: conflict
          ? `its test branch could not be built: ${said?.detail ?? "a merge conflict"}`
          : "it was cancelled before the runner started it",
      });
    }
    return runs;
  }

  /** A queue's runs, newest first (for the API and CLI). */
  async list(queueId: string, limit: number): Promise<CiRunRecord[]> {
    const rows = await this.db
      .selectFrom("ciRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .orderBy("createdAt", "desc")
      .orderBy("runId", "desc")
      .limit(limit)
      .execute();
    return rows.map(toRecord);
  }
}
