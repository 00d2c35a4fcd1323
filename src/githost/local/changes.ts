/**
 * Carries what happens on the local git host to the queues that care: a branch that moved (a
 * push, seen by the ref watcher) and a pull request changed through the API (closed). The queue's
 * driver reads the branch or pull request again itself, so a late or repeated notice is harmless.
 */
import type { LocalPullRequestRecords } from "../../mergequeue/local-pull-request-records.js";
import type { QueueCommand } from "../../mergequeue/model.js";
import type { OwnedRepoRef } from "../../mergequeue/providers.js";
import type { QueueListing } from "../../db/stores/merge-queues.js";
import { LOCAL_HOST } from "./layout.js";

export interface LocalHostChangesDeps {
  queues: { listForHost(host: string, repo?: OwnedRepoRef): Promise<QueueListing[]> };
  pullRequests: Pick<LocalPullRequestRecords, "listOpen">;
  engine: { notify(queueId: string, command: QueueCommand): Promise<void> };
}

export class LocalHostChanges {
  constructor(private readonly deps: LocalHostChangesDeps) {}

  /** The local repositories that have a queue: the ones worth watching. */
  async watched(): Promise<OwnedRepoRef[]> {
    const queues = await this.deps.queues.listForHost(LOCAL_HOST);
    const unique = new Map<string, OwnedRepoRef>();
    for (const { repo } of queues) {
      unique.set(`${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase(), repo);
    }
    return [...unique.values()];
  }

  /** A branch appeared, moved or disappeared: its queue (target branch) and its PRs (head). */
  async branchChanged(repo: OwnedRepoRef, branch: string): Promise<void> {
    const queues = await this.deps.queues.listForHost(LOCAL_HOST, repo);
    if (queues.length === 0) return;
    const heads = (await this.deps.pullRequests.listOpen(repo)).filter(
      (pr) => pr.headBranch === branch,
    );
    for (const queue of queues) {
      if (queue.targetBranch === branch) {
        await this.deps.engine.notify(queue.id, { type: "branch_moved" });
      }
      for (const pr of heads) {
        await this.deps.engine.notify(queue.id, { type: "pr_changed", prNumber: pr.number });
      }
    }
  }

  /** A pull request changed through the API: every queue of its repository reads it again. */
  async pullRequestChanged(repo: OwnedRepoRef, number: number): Promise<void> {
    for (const queue of await this.deps.queues.listForHost(LOCAL_HOST, repo)) {
      await this.deps.engine.notify(queue.id, { type: "pr_changed", prNumber: number });
    }
  }
}
