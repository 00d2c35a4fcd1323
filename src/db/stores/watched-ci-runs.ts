import type { Kysely, Selectable } from "kysely";
import type {
  WatchedCiRun,
  WatchedCiRunRecords,
  WatchedRunStatus,
} from "../../mergequeue/watched-ci-runs.js";
import type { Database, WatchedCiRunsTable } from "../schema.js";

function toRecord(row: Selectable<WatchedCiRunsTable>): WatchedCiRun {
  return {
    queueId: row.queueId,
    runId: row.runId,
    request: JSON.parse(row.request) as WatchedCiRun["request"],
    status: row.status as WatchedRunStatus,
    required: row.required === null ? null : (JSON.parse(row.required) as WatchedCiRun["required"]),
    result: row.result === null ? null : (JSON.parse(row.result) as WatchedCiRun["result"]),
    testPrNumber: row.testPrNumber,
    createdAt: row.createdAt,
    finishedAt: row.finishedAt,
  };
}

/** The CI runs the GitHub and GitLab providers watch (`watched_ci_runs`), by queue and run id. */
export class WatchedCiRunStore implements WatchedCiRunRecords {
  constructor(private readonly db: Kysely<Database>) {}

  async create(run: WatchedCiRun): Promise<boolean> {
    const result = await this.db
      .insertInto("watchedCiRuns")
      .values({
        queueId: run.queueId,
        runId: run.runId,
        sha: run.request.sha,
        request: JSON.stringify(run.request),
        status: run.status,
        required: run.required === null ? null : JSON.stringify(run.required),
        result: run.result === null ? null : JSON.stringify(run.result),
        testPrNumber: run.testPrNumber,
        createdAt: run.createdAt,
        finishedAt: run.finishedAt,
      })
      .onConflict((oc) => oc.columns(["queueId", "runId"]).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async get(queueId: string, runId: string): Promise<WatchedCiRun | undefined> {
    const row = await this.db
      .selectFrom("watchedCiRuns")
      .selectAll()
      .where("queueId", "=", queueId)
      .where("runId", "=", runId)
      .executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  async prepared(
    queueId: string,
    runId: string,
    fields: Parameters<WatchedCiRunRecords["prepared"]>[2],
  ): Promise<void> {
    await this.db
      .updateTable("watchedCiRuns")
      .set({
        ...(fields.required ? { required: JSON.stringify(fields.required) } : {}),
        ...(fields.testPrNumber === undefined ? {} : { testPrNumber: fields.testPrNumber }),
      })
      .where("queueId", "=", queueId)
      .where("runId", "=", runId)
      .execute();
  }

  async finish(
    queueId: string,
    runId: string,
    status: Exclude<WatchedRunStatus, "watching">,
    result: WatchedCiRun["result"],
    now: number,
  ): Promise<boolean> {
    const updated = await this.db
      .updateTable("watchedCiRuns")
      .set({
        status,
        result: result === null ? null : JSON.stringify(result),
        finishedAt: now,
      })
      .where("queueId", "=", queueId)
      .where("runId", "=", runId)
      .where("status", "=", "watching")
      .executeTakeFirst();
    return updated.numUpdatedRows > 0n;
  }

  async watching(): Promise<WatchedCiRun[]> {
    const rows = await this.db
      .selectFrom("watchedCiRuns")
      .selectAll()
      .where("status", "=", "watching")
      .orderBy("createdAt")
      .orderBy("runId")
      .execute();
    return rows.map(toRecord);
  }

  async watchingSha(sha: string): Promise<WatchedCiRun[]> {
    const rows = await this.db
      .selectFrom("watchedCiRuns")
      .selectAll()
      .where("sha", "=", sha)
      .where("status", "=", "watching")
      .orderBy("createdAt")
      .execute();
    return rows.map(toRecord);
  }
}
