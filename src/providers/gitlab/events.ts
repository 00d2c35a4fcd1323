/**
 * What a GitLab webhook means to the queues, handled by the inbox's worker: a push moves a
 * branch, a merge request event changes a merge request, a pipeline event has news of a test
 * branch's run. Events are hints: the queue reads GitLab again itself, so a late, repeated or
 * lost delivery is harmless (the reconcile pass and the CI's poll find what was lost).
 */
import type { HostChange, HostChanges } from "../../mergequeue/host-changes.js";
import type { ClaimedDelivery } from "../../mergequeue/webhook-delivery-records.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { DispatchOutcome } from "../webhook-inbox.js";
import type { GitLabCommands, NotePayload } from "./commands.js";
import type { GitLabConnections } from "./connections.js";
import { hookKeyOf } from "./webhooks.js";

const DELETED = /^0{40}$/;

export interface GitLabEventDeps {
  hostName: string;
  testBranchPrefix: string;
  connections: Pick<GitLabConnections, "byHookKey">;
  changes: Pick<HostChanges, "apply">;
  /** A Push Hook's news of a branch, for the git host's known heads. */
  branchMoved(repo: OwnedRepoRef, branch: string, sha: string | undefined): void;
  /** A pipeline changed on this commit (its status now, when the hook said). */
  pipelineChanged(sha: string, status: string | undefined): Promise<void>;
  /** Commands in merge request notes. */
  commands: Pick<GitLabCommands, "handle">;
  /** The queue's note and labels are brought up to date soon. */
  presenceWake(): void;
}

interface Payload extends NotePayload {
  object_kind?: string;
  ref?: string;
  after?: string;
  project?: { path_with_namespace?: string };
  object_attributes?: NotePayload["object_attributes"] & {
    iid?: number;
    sha?: string;
    status?: string;
  };
}

export class GitLabEvents {
  constructor(private readonly deps: GitLabEventDeps) {}

  async dispatch(delivery: ClaimedDelivery): Promise<DispatchOutcome> {
    if (delivery.payload === null) throw new Error("the delivery's payload is missing");
    const connection = await this.deps.connections.byHookKey(hookKeyOf(delivery.deliveryId));
    // Disconnected since: nothing of the organization is served any more.
    if (!connection) return "done";
    const payload = JSON.parse(delivery.payload) as Payload;
    const repo = this.repoOf(connection.organizationId, payload);
    if (payload.object_kind === "pipeline") {
      const { sha, status } = payload.object_attributes ?? {};
      if (typeof sha === "string") {
        await this.deps.pipelineChanged(sha, typeof status === "string" ? status : undefined);
      }
      return "done";
    }
    if (!repo) return "done";
    if (payload.object_kind === "note") {
      await this.deps.commands.handle(connection, repo, payload);
      return "done";
    }
    const change = this.changeOf(repo, payload);
    if (change) await this.deps.changes.apply(change);
    if (change?.type === "pull_request_changed") this.deps.presenceWake();
    return "done";
  }

  private changeOf(repo: OwnedRepoRef, payload: Payload): HostChange | undefined {
    if (payload.object_kind === "push") {
      const branch = payload.ref?.startsWith("refs/heads/") ? payload.ref.slice(11) : undefined;
      // The queue's own test branches move only when it moves them.
      if (branch === undefined || branch.startsWith(this.deps.testBranchPrefix)) return undefined;
      const after = payload.after;
      this.deps.branchMoved(
        repo,
        branch,
        typeof after === "string" && !DELETED.test(after) ? after : undefined,
      );
      return {
        type: "branch_moved",
        repo,
        branch,
        ...(typeof after === "string" && !DELETED.test(after) ? { headSha: after } : {}),
        pullRequests: [],
      };
    }
    if (payload.object_kind === "merge_request") {
      const iid = payload.object_attributes?.iid;
      return typeof iid === "number"
        ? { type: "pull_request_changed", repo, number: iid }
        : undefined;
    }
    return undefined;
  }

  /** The project a payload is about, as a repository of the organization. */
  private repoOf(organizationId: string, payload: Payload): OwnedRepoRef | undefined {
    const path = payload.project?.path_with_namespace;
    if (typeof path !== "string") return undefined;
    const cut = path.lastIndexOf("/");
    if (cut <= 0) return undefined;
    return {
      organizationId,
      host: this.deps.hostName,
      owner: path.slice(0, cut),
      name: path.slice(cut + 1),
    };
  }
}
