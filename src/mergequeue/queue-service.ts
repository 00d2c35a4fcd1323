import { randomUUID } from "node:crypto";
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import {
  repositoryName,
  type OwnedRepoRef,
  type RepoRef,
  type Repository,
} from "../organizations/repositories.js";
import type {
  MergeQueueRecord,
  MergeQueueRecords,
  QueueOverview,
  RepositoryRecords,
} from "./records.js";
import { tokenActor, type Principal } from "../organizations/service.js";
import type { PrState, PriorityName } from "./model.js";
import type { WaitingFor } from "./waiting.js";
import type { BatchSizeChoice } from "./batch-size.js";
import type { LocalizationView } from "./localizations.js";
import type { HostTrouble } from "./records.js";
import {
  applySettingsUpdate,
  initialConfiguration,
  type QueueMode,
  type QueueSettingsPatch,
} from "./settings.js";

/**
 * A submission of a pull request as getQueue and listPullRequests show it (Trunk's mergeItem).
 * Times are epoch milliseconds.
 */
export interface EnqueuedPullRequest {
  id: string;
  state: PrState;
  prNumber: number;
  prTitle: string;
  prSha: string;
  prBaseBranch: string;
  prAuthor: string;
  stateChangedAt: number;
  priorityValue: number;
  priorityName: PriorityName;
  /** `"medium"` when the submission named no priority; absent otherwise. */
  usedDefaultPriorityName?: string;
  skipTheLine: boolean;
  noBatch: boolean;
  /**
   * A pending pull request the queue holds on purpose, or a suspect of a failed batch being
   * localized: what it waits for.
   */
  waitingFor?: WaitingFor;
}

/** getQueue's view of what a queue is doing now, besides its settings. */
export interface QueueActivity {
  /** The pull requests in the queue, in queue order. */
  enqueued: EnqueuedPullRequest[];
  /** With batching on: the batch size the queue uses now, and why; null with batching off. */
  batchSize: BatchSizeChoice | null;
  /** The failed batches being localized. */
  localizations: LocalizationView[];
  /** What the queue's driver last found of its git host: null while it answers. */
  hostTrouble: HostTrouble | null;
}

/** What the queue service needs to know about the pull requests of a queue. */
export interface QueueContents {
  enqueued(queueId: string): Promise<EnqueuedPullRequest[]>;
  /**
   * The queue's pull requests, its batch size in use and its localizations in progress. `repo`:
   * the queue's repository, for what its git host says now (a rate limit).
   */
  activity(queue: MergeQueueRecord, repo?: OwnedRepoRef): Promise<QueueActivity>;
}

export interface QueueAddress {
  repo: RepoRef;
  targetBranch: string;
}

/** `branch main of github.com/acme/app`, for messages. */
export function describeQueue(address: QueueAddress): string {
  return `branch ${address.targetBranch} of ${repositoryName(address.repo)}`;
}

/**
 * What createQueue says besides creating the queue (Mainline's extension): the queue exists, but
 * cannot work yet.
 */
export interface QueueWarning {
  /** `host_not_connected`: no provider for the repository's host on this server. */
  code: "host_not_connected";
  message: string;
}

/** The warning of a queue created on a host this server has no provider for. */
export function hostNotConnectedWarning(host: string): QueueWarning {
  return {
    code: "host_not_connected",
    message: `No provider for host ${host} is configured on this server: the queue was created, but it cannot read, test or merge its pull requests, and submitting one is refused (host_not_connected), until the server is configured for ${host} (for GitHub: the GitHub App, MAINLINE_GITHUB_APP_ID and the others; see mainline github setup).`,
  };
}

/** createQueue / getQueue / updateQueue / deleteQueue. */
export class MergeQueueService {
  constructor(
    private readonly deps: {
      repositories: Pick<RepositoryRecords, "ensure">;
      /**
       * Hosts whose repositories are made through Mainline (`local`), by lower-case host: the
       * organization's repository, or a 404. A queue is never the way such a repository comes
       * to exist, so it can never point at another organization's.
       */
      existingRepositories?: ReadonlyMap<
        string,
        (principal: Principal, ref: RepoRef) => Promise<Repository>
      >;
      queues: MergeQueueRecords;
      contents: QueueContents;
      clock: Clock;
      /** Tells the queue's driver that its settings changed (it replans at once). */
      settingsChanged?: (queueId: string) => void;
      /** Whether the queue's driver reaches a host's repositories (a provider serves it). */
      hostConnected?: (host: string) => boolean;
    },
  ) {}

  /**
   * Creates the queue; on a host this server has no provider for, with a warning: the queue is
   * there (a Terraform configuration creates queues before the App is configured), idle until
   * the host is connected.
   */
  async create(
    principal: Principal,
    address: QueueAddress,
    options: { mode?: QueueMode; concurrency?: number },
  ): Promise<{ queue: MergeQueueRecord; warnings: QueueWarning[] }> {
    const now = this.deps.clock.now();
    const existing = this.deps.existingRepositories?.get(address.repo.host.toLowerCase());
    const repository = existing
      ? await existing(principal, address.repo)
      : await this.deps.repositories.ensure(principal.organizationId, address.repo, now);
    const record = {
      id: randomUUID(),
      repositoryId: repository.id,
      targetBranch: address.targetBranch,
      configuration: initialConfiguration(options),
      createdAt: now,
    };
    if (!(await this.deps.queues.insert(record))) {
      throw new ApiError("conflict", `A merge queue already exists for ${describeQueue(address)}.`);
    }
    const connected = this.deps.hostConnected?.(address.repo.host) ?? true;
    return {
      queue: { ...record, updatedAt: now, version: 1 },
      warnings: connected ? [] : [hostNotConnectedWarning(address.repo.host)],
    };
  }

  /** Every queue of the caller's organization, with its state and pull requests by state. */
  overview(principal: Principal): Promise<QueueOverview[]> {
    return this.deps.queues.overview(principal.organizationId);
  }

  async get(
    principal: Principal,
    address: QueueAddress,
  ): Promise<{ queue: MergeQueueRecord } & QueueActivity> {
    // Its settings as last written, through any process: a pause is read back at once.
    const queue = await requireQueue(this.deps.queues, principal, address, { fresh: true });
    const repo = { organizationId: principal.organizationId, ...address.repo };
    return { queue, ...(await this.deps.contents.activity(queue, repo)) };
  }

  async update(
    principal: Principal,
    address: QueueAddress,
    patch: QueueSettingsPatch,
  ): Promise<MergeQueueRecord> {
    const queue = await this.require(principal, address);
    // Decided before the write: a pull request entering the queue meanwhile is planned with
    // whichever mode the write leaves, which is harmless.
    const inFlight = (await this.deps.contents.enqueued(queue.id)).length > 0;
    const updated = await this.deps.queues.modify(
      principal.organizationId,
      address.repo,
      address.targetBranch,
      this.deps.clock.now(),
      (current) => {
        const outcome = applySettingsUpdate(current.configuration, patch, inFlight);
        if (outcome.ok) return outcome.configuration;
        if (outcome.reason === "conflicting_required_statuses") {
          throw new ApiError(
            "invalid_request",
            "Send either requiredStatuses or deleteRequiredStatuses: true, not both.",
            [
              {
                path: "deleteRequiredStatuses",
                message: "cannot be true when requiredStatuses is given",
              },
            ],
          );
        }
        throw new ApiError(
          "conflict",
          `The merge queue for ${describeQueue(address)} is switching modes; its settings can change once it has drained.`,
        );
      },
      tokenActor(principal),
    );
    if (!updated) throw new ApiError("not_found", `No merge queue for ${describeQueue(address)}.`);
    this.deps.settingsChanged?.(updated.id);
    return updated;
  }

  async delete(principal: Principal, address: QueueAddress): Promise<void> {
    const queue = await this.require(principal, address);
    const enqueued = await this.deps.contents.enqueued(queue.id);
    if (enqueued.length > 0) {
      throw new ApiError(
        "invalid_request",
        `The merge queue for ${describeQueue(address)} still holds ${enqueued.length} pull request(s); drain it first.`,
      );
    }
    await this.deps.queues.delete(queue.id);
  }

  private require(principal: Principal, address: QueueAddress): Promise<MergeQueueRecord> {
    return requireQueue(this.deps.queues, principal, address);
  }
}

/** The queue at an address of the principal's organization, or a 404 that names the address. */
export async function requireQueue(
  queues: Pick<MergeQueueRecords, "find">,
  principal: Principal,
  address: QueueAddress,
  options?: { fresh: boolean },
): Promise<MergeQueueRecord> {
  const { organizationId } = principal;
  const queue = await queues.find(organizationId, address.repo, address.targetBranch, options);
  if (!queue) throw new ApiError("not_found", `No merge queue for ${describeQueue(address)}.`);
  return queue;
}
