/**
 * Commands in merge request notes (`/trunk merge`, `/trunk cancel`; `/mainline` alike) for whoever
 * is at least a Developer of the project (anyone else gets a reply and nothing changes). GitLab
 * strips only its own quick actions from a note, so these reach the Note Hook as written; only a
 * new note counts (GitLab 16.11+ also sends edits), never a system note or the token user's own.
 * They go through the `PullRequestService` like the API's; a delivery handled twice changes
 * nothing more (a resubmission only updates the priority).
 */
import { ApiError } from "../../lib/errors.js";
import type { Actor } from "../../mergequeue/model.js";
import {
  COMMAND_USAGE,
  parseCommand,
  type PullRequestCommand,
} from "../../mergequeue/pull-request-commands.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import type { MergeQueueRecord, MergeQueueRecords } from "../../mergequeue/records.js";
import type { GitLabConnectionRecord } from "../../organizations/gitlab-connections.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import { GitLabError, projectId, type GitLabClient } from "./client.js";
import type { GitLabConnections } from "./connections.js";

/** GitLab's Developer role: may push to unprotected branches and merge where allowed. */
export const DEVELOPER = 30;

export interface NotePayload {
  object_attributes?: {
    id?: number;
    note?: string;
    noteable_type?: string;
    system?: boolean;
    action?: string;
    author_id?: number;
  };
  merge_request?: { iid?: number; target_branch?: string };
  user?: { id?: number; username?: string };
}

export interface GitLabCommandDeps {
  connections: Pick<GitLabConnections, "access">;
  queues: Pick<MergeQueueRecords, "find" | "listForOrganization">;
  organizations: Pick<OrganizationRecords, "findById">;
  pullRequests: Pick<PullRequestService, "submit" | "cancel">;
}

interface Where {
  client: GitLabClient;
  repo: OwnedRepoRef;
  /** `/projects/:id/merge_requests/:iid`. */
  mr: string;
  number: number;
}

export class GitLabCommands {
  constructor(private readonly deps: GitLabCommandDeps) {}

  async handle(
    connection: GitLabConnectionRecord,
    repo: OwnedRepoRef,
    payload: NotePayload,
  ): Promise<void> {
    const note = payload.object_attributes;
    const iid = payload.merge_request?.iid;
    const target = payload.merge_request?.target_branch;
    const authorId = note?.author_id ?? payload.user?.id;
    if (
      !note ||
      note.noteable_type !== "MergeRequest" ||
      note.system === true ||
      (note.action !== undefined && note.action !== "create") ||
      authorId === connection.userId ||
      typeof iid !== "number" ||
      typeof target !== "string" ||
      typeof note.id !== "number"
    ) {
      return;
    }
    const command = parseCommand(note.note ?? "");
    if (!command) return;
    const { client } = await this.deps.connections.access(repo.organizationId);
    const where: Where = {
      client,
      repo,
      mr: `/projects/${projectId(repo.owner, repo.name)}/merge_requests/${String(iid)}`,
      number: iid,
    };
    const queue = await this.deps.queues.find(repo.organizationId, repo, target);
    if (!queue) {
      // A project without any queue here is not Mainline's to answer for.
      const queues = await this.deps.queues.listForOrganization(repo.organizationId, repo);
      if (queues.length > 0) {
        await reply(
          where,
          `There is no merge queue for \`${target}\`, this merge request's target branch: nothing was done.`,
        );
      }
      return;
    }
    if (!queue.configuration.commandsEnabled) return;
    const username = payload.user?.username ?? "someone";
    if (command.kind === "invalid") {
      await reply(where, `@${username} ${command.problem}\n\n${COMMAND_USAGE}`);
      return;
    }
    const verb = command.kind === "merge" ? "submit this merge request" : "cancel it";
    if (authorId === undefined || !(await this.mayAct(where, authorId, username, verb))) return;
    const done = await this.act(where, queue, username, command);
    // The queue's note, when it shows one, answers the command: an emoji would repeat it.
    if (done && !queue.configuration.commentsEnabled) {
      try {
        await client.request("POST", `${where.mr}/notes/${String(note.id)}/award_emoji`, {
          body: { name: "thumbsup" },
        });
      } catch (error) {
        // Awarded already (a delivery handled again): GitLab answers 404 "has already been taken".
        if (!(error instanceof GitLabError && error.status === 404)) throw error;
      }
    }
  }

  /** True when the user is at least a Developer of the project; otherwise replies why. */
  private async mayAct(where: Where, userId: number, username: string, verb: string) {
    let level = 0;
    try {
      const member = await where.client.get<{ access_level: number }>(
        `/projects/${projectId(where.repo.owner, where.repo.name)}/members/all/${String(userId)}`,
      );
      level = member.data.access_level;
    } catch (error) {
      if (!(error instanceof GitLabError && error.status === 404)) throw error;
    }
    if (level >= DEVELOPER) return true;
    await reply(
      where,
      `@${username} Only Developers and above of ${where.repo.owner}/${where.repo.name} can ${verb}. Nothing was changed.`,
    );
    return false;
  }

  /** Submits or cancels; a refusal of the queue is replied. True when it was done. */
  private async act(
    where: Where,
    queue: MergeQueueRecord,
    username: string,
    command: Extract<PullRequestCommand, { kind: "merge" | "cancel" }>,
  ): Promise<boolean> {
    const { organizationId, host, owner, name } = where.repo;
    const organization = await this.deps.organizations.findById(organizationId);
    const principal = {
      organizationId,
      organizationSlug: organization?.slug ?? "",
      tokenId: "gitlab",
    };
    const address = { repo: { host, owner, name }, targetBranch: queue.targetBranch };
    const actor: Actor = { kind: "user", name: `gitlab:${username}` };
    try {
      if (command.kind === "merge") {
        await this.deps.pullRequests.submit(
          principal,
          address,
          { prNumber: where.number, priority: command.priority, noBatch: command.noBatch },
          actor,
        );
      } else {
        await this.deps.pullRequests.cancel(principal, address, where.number, actor);
      }
      return true;
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      const what = command.kind === "merge" ? "submit" : "cancel";
      await reply(where, `@${username} Could not ${what} this merge request: ${error.message}`);
      return false;
    }
  }
}

async function reply(where: Where, body: string): Promise<void> {
  await where.client.request("POST", `${where.mr}/notes`, { body: { body } });
}
