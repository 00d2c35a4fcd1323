/**
 * Carries what happens on a git host (a branch moved, a pull request changed) to the queues that
 * care, as queue commands, whatever the host: each provider turns its own notices into these
 * events. The driver reads the branch or pull request again itself, so a late or repeated event is
 * harmless.
 */
import type { QueueCommand } from "./model.js";
import type { MergeQueueRecords } from "./records.js";
import { type OwnedRepoRef } from "../organizations/repositories.js";

/** Something that happened on a git host, in host-neutral words. */
export type HostChange =
  | {
      type: "branch_moved";
      repo: OwnedRepoRef;
      branch: string;
      /** Where the host said the branch went, when it said (a queue already there reads nothing). */
      headSha?: string;
      /** The open pull requests whose head is this branch (they moved with it). */
      pullRequests: readonly number[];
    }
  | {
      type: "pull_request_changed";
      repo: OwnedRepoRef;
      number: number;
    };

export interface HostChangesDeps {
  queues: Pick<MergeQueueRecords, "listForHost">;
  engine: { notify(queueId: string, command: QueueCommand): Promise<void> };
}

export class HostChanges {
  constructor(private readonly deps: HostChangesDeps) {}

  /** The repositories of a host that have a queue: the ones worth watching. */
  async watched(host: string): Promise<OwnedRepoRef[]> {
    const queues = await this.deps.queues.listForHost(host);
    const unique = new Map<string, OwnedRepoRef>();
    for (const { repo } of queues) {
      unique.set(`${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase(), repo);
    }
    return [...unique.values()];
  }

  /** Whether any queue serves the repository (a provider may skip work for the others). */
  async hasQueues(repo: OwnedRepoRef): Promise<boolean> {
    return (await this.deps.queues.listForHost(repo.host, repo)).length > 0;
  }

  /** The queue commands a change makes, and the queues they go to. */
  async commands(change: HostChange): Promise<{ queueId: string; command: QueueCommand }[]> {
    const queues = await this.deps.queues.listForHost(change.repo.host, change.repo);
    if (change.type === "pull_request_changed") {
      // Every queue of the repository reads it again: a retargeted PR leaves one and joins another.
      return queues.map((queue) => ({
        queueId: queue.id,
        command: { type: "pr_changed", prNumber: change.number },
      }));
    }
    return queues.flatMap((queue) => {
      const commands: QueueCommand[] = [
        ...(queue.targetBranch === change.branch
          ? [
              {
                type: "branch_moved" as const,
                ...(change.headSha ? { headSha: change.headSha } : {}),
              },
            ]
          : []),
        ...change.pullRequests.map((prNumber) => ({ type: "pr_changed" as const, prNumber })),
      ];
      return commands.map((command) => ({ queueId: queue.id, command }));
    });
  }

  /** Hands a change to the queues it concerns. */
  async apply(change: HostChange): Promise<void> {
    for (const { queueId, command } of await this.commands(change)) {
      await this.deps.engine.notify(queueId, command);
    }
  }
}
