/**
 * The built-in runner's runs as the API shows them: a queue's recent runs with their checks, and
 * a check's log.
 */
import type { CiRunStore } from "../db/stores/ci-runs.js";
import type { MergeQueueStore } from "../db/stores/merge-queues.js";
import { ApiError } from "../lib/errors.js";
import { requireQueue, type QueueAddress } from "../mergequeue/queue-service.js";
import type { Principal } from "../organizations/service.js";
import type { CiRunRecord } from "./records.js";

export interface CiRunServiceDeps {
  queues: Pick<MergeQueueStore, "find">;
  runs: Pick<CiRunStore, "list" | "get">;
  readLog(queueId: string, runId: string, check: string): Promise<string | undefined>;
}

export class CiRunService {
  constructor(private readonly deps: CiRunServiceDeps) {}

  /** The queue's most recent runs, newest first. */
  async list(principal: Principal, address: QueueAddress, take: number): Promise<CiRunRecord[]> {
    const queue = await requireQueue(this.deps.queues, principal, address);
    return this.deps.runs.list(queue.id, take);
  }

  async log(
    principal: Principal,
    address: QueueAddress,
    runId: string,
    check: string,
  ): Promise<string> {
    const queue = await requireQueue(this.deps.queues, principal, address);
    const run = await this.deps.runs.get(queue.id, runId);
    if (!run) throw new ApiError("not_found", `No CI run ${runId} in this queue.`);
    if (!run.checks.some((c) => c.name === check)) {
      const names = run.checks.map((c) => c.name).join(", ") || "none";
      throw new ApiError("not_found", `Run ${runId} has no check "${check}" (checks: ${names}).`);
    }
    const text = await this.deps.readLog(queue.id, runId, check);
    if (text === undefined) {
      throw new ApiError("not_found", `The check "${check}" of run ${runId} has no log yet.`);
    }
    return text;
  }
}
