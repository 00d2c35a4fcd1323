/**
 * The reconcile loop, which catches what GitLab's webhooks missed (GitLab does not redeliver a
 * failed delivery by itself, and disables a hook that keeps failing): every interval it reads,
 * per queued GitLab project, each queue's target branch and the merge requests of the queue that
 * changed since its last pass (`updated_after`), and sends what differs as the changes a webhook
 * would have made. The queue reads GitLab again itself, so a change sent twice is harmless
 * (docs/gitlab.md, "Webhooks").
 */
import { BackgroundLoop } from "../../lib/background-loop.js";
import type { Clock } from "../../lib/clock.js";
import { SECOND_MS } from "../../lib/time.js";
import type { HostChange, HostChanges } from "../../mergequeue/host-changes.js";
import type { MergeQueueRecords, RuntimeRecords } from "../../mergequeue/records.js";
import type { ProviderLogger } from "../host-provider.js";
import { projectId } from "./client.js";
import type { GitLabConnections } from "./connections.js";

export const DEFAULT_GITLAB_RECONCILE_INTERVAL_MS = 60 * SECOND_MS;
/** Reads again what changed a little before the last pass began (clocks differ). */
const OVERLAP_MS = 30 * SECOND_MS;

export interface GitLabReconcilerDeps {
  host: string;
  connections: Pick<GitLabConnections, "access">;
  queues: Pick<MergeQueueRecords, "listForHost">;
  entries: Pick<RuntimeRecords, "activeSummaries">;
  changes: Pick<HostChanges, "apply">;
  clock: Clock;
  logger: ProviderLogger;
  intervalMs: number;
}

/** What one pass did (tests and the log). */
export interface GitLabReconcileReport {
  queues: number;
  changes: HostChange[];
  failed: number;
}

export class GitLabReconciler {
  /** Each target branch's commit as last read, by queue. */
  private readonly heads = new Map<string, string | null>();
  /** When each queue's last pass began. */
  private readonly passedAt = new Map<string, number>();
  private readonly loop: BackgroundLoop | undefined;

  constructor(private readonly deps: GitLabReconcilerDeps) {
    this.loop =
      deps.intervalMs > 0
        ? new BackgroundLoop({
            pass: async () => {
              await this.pass();
            },
            intervalMs: deps.intervalMs,
            firstPassAfterInterval: true,
            onError: (error) => {
              deps.logger.error({ err: error }, "gitlab: reconcile pass failed");
            },
          })
        : undefined;
  }

  start(): void {
    this.loop?.start();
  }

  async stop(): Promise<void> {
    await this.loop?.stop();
  }

  /** One pass over every queue of the host. */
  async pass(): Promise<GitLabReconcileReport> {
    const report: GitLabReconcileReport = { queues: 0, changes: [], failed: 0 };
    for (const queue of await this.deps.queues.listForHost(this.deps.host)) {
      report.queues++;
      try {
        const changes = await this.queuePass(queue);
        for (const change of changes) await this.deps.changes.apply(change);
        report.changes.push(...changes);
      } catch (error) {
        report.failed++;
        this.deps.logger.warn(
          { err: error, queueId: queue.id },
          "gitlab: could not reconcile a queue's project; will retry",
        );
      }
    }
    return report;
  }

  private async queuePass(queue: {
    id: string;
    targetBranch: string;
    repo: { organizationId: string; host: string; owner: string; name: string };
  }): Promise<HostChange[]> {
    const { client } = await this.deps.connections.access(queue.repo.organizationId);
    const project = `/projects/${projectId(queue.repo.owner, queue.repo.name)}`;
    const began = this.deps.clock.now();
    const changes: HostChange[] = [];
    const branch = await client.find<{ commit: { id: string } }>(
      `${project}/repository/branches/${encodeURIComponent(queue.targetBranch)}`,
    );
    const head = branch?.commit.id ?? null;
    if (this.heads.has(queue.id) && this.heads.get(queue.id) !== head) {
      changes.push({
        type: "branch_moved",
        repo: queue.repo,
        branch: queue.targetBranch,
        ...(head === null ? {} : { headSha: head }),
        pullRequests: [],
      });
    }
    this.heads.set(queue.id, head);
    const active = new Set(
      (await this.deps.entries.activeSummaries(queue.id)).map((e) => e.prNumber),
    );
    const since = this.passedAt.get(queue.id);
    if (active.size > 0) {
      const updated = await client.get<{ iid: number }[]>(`${project}/merge_requests`, {
        state: "all",
        target_branch: queue.targetBranch,
        order_by: "updated_at",
        per_page: 100,
        ...(since === undefined
          ? {}
          : { updated_after: new Date(since - OVERLAP_MS).toISOString() }),
      });
      for (const mr of updated.data) {
        if (active.has(mr.iid))
          changes.push({ type: "pull_request_changed", repo: queue.repo, number: mr.iid });
      }
    }
    this.passedAt.set(queue.id, began);
    return changes;
  }
}
