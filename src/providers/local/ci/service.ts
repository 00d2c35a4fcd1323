/**
 * The built-in runner's runs as the API shows them: a queue's recent runs with their checks, and
 * a check's log.
 */
import { ApiError } from "../../../lib/errors.js";
import { requireQueue, type QueueAddress } from "../../../mergequeue/queue-service.js";
import type { MergeQueueRecords } from "../../../mergequeue/records.js";
import type { Principal } from "../../../organizations/service.js";
import type { CiRunQueries, CiRunRecord, UnbuiltRun } from "../../../mergequeue/ci-run-records.js";

export interface CiRunServiceDeps {
  queues: Pick<MergeQueueRecords, "find">;
  runs: CiRunQueries;
  readLog(queueId: string, runId: string, check: string): Promise<string | undefined>;
}

export class CiRunService {
  constructor(private readonly deps: CiRunServiceDeps) {}

  /**
   * The queue's most recent runs, newest first: the runner's, and the queue's runs that never
   * reached it (their test branch could not be built: status `error`, reason `merge_conflict`;
   * or cancelled first: status `cancelled`), so that every run id a timeline names is here.
   */
  async list(principal: Principal, address: QueueAddress, take: number): Promise<CiRunRecord[]> {
    const queue = await requireQueue(this.deps.queues, principal, address);
    const [ran, unbuilt] = await Promise.all([
      this.deps.runs.list(queue.id, take),
      this.deps.runs.unbuilt(queue.id, take),
    ]);
    const runs = [
      ...ran,
      ...unbuilt.map((run) => asCiRun(queue.id, principal.organizationId, address, run)),
    ];
    runs.sort((a, b) => b.createdAt - a.createdAt || b.runId.localeCompare(a.runId));
    return runs.slice(0, take);
  }

  async log(
    principal: Principal,
    address: QueueAddress,
    runId: string,
    check: string,
  ): Promise<string> {
    const queue = await requireQueue(this.deps.queues, principal, address);
    const run = await this.deps.runs.get(queue.id, runId);
    if (!run) {
      const [unbuilt] = await this.deps.runs.unbuilt(queue.id, 1, runId);
      if (unbuilt) {
        throw new ApiError(
          "not_found",
          `Run ${runId} ran no checks, so it has no logs: ${unbuilt.message}.`,
        );
      }
      throw new ApiError("not_found", `No CI run ${runId} in this queue.`);
    }
    const ended = run.status !== "queued" && run.status !== "running";
    if (ended && run.checks.length === 0) {
      // Cancelled or ended before the runner had even read which checks to run.
      throw new ApiError(
        "not_found",
        `Run ${runId} ran no checks, so it has no logs: it ended (${run.status}) before any started.`,
      );
    }
    if (!run.checks.some((c) => c.name === check)) {
      const names = run.checks.map((c) => c.name).join(", ") || "none";
      throw new ApiError("not_found", `Run ${runId} has no check "${check}" (checks: ${names}).`);
    }
    const text = await this.deps.readLog(queue.id, runId, check);
    if (text === undefined) {
      // A run cancelled (or ended) before this check started: it never will have a log.
      if (ended && run.checks.every((c) => c.startedAt === null)) {
        throw new ApiError(
          "not_found",
          `Run ${runId} ran no checks, so it has no logs: it ended (${run.status}) before any started.`,
        );
      }
      if (ended && run.checks.find((c) => c.name === check)?.startedAt === null) {
        throw new ApiError(
          "not_found",
          `The check "${check}" of run ${runId} never started (the run ended: ${run.status}), so it has no log.`,
        );
      }
      throw new ApiError("not_found", `The check "${check}" of run ${runId} has no log yet.`);
    }
    return text;
  }
}

/** A run that never reached the runner, as the runner's runs are listed. */
function asCiRun(
  queueId: string,
  organizationId: string,
  address: QueueAddress,
  run: UnbuiltRun,
): CiRunRecord {
  return {
    queueId,
    runId: run.runId,
    request: {
      repo: { ...address.repo, organizationId },
      queueId,
      runId: run.runId,
      targetBranch: address.targetBranch,
      testBranch: "",
      sha: "",
      prNumbers: run.prNumbers,
      requiredStatuses: null,
    },
    status: run.status,
    checks: [],
    error: run.status === "error" ? { reason: "merge_conflict", message: run.message } : null,
    flakyOnly: false,
    createdAt: run.createdAt,
    finishedAt: run.finishedAt,
    owner: null,
    leaseUntil: 0,
  };
}
