/**
 * What people do on a pull request: comment commands (`/trunk merge`, `/trunk cancel`) and the
 * queue's enqueueing label, for whoever has write access to the repository (anyone else gets a
 * reply and nothing changes). They go through the `PullRequestService` like the API's; a delivery
 * handed over twice must change nothing more (a resubmission only updates the priority).
 */
import { ApiError } from "../../lib/errors.js";
import type { Actor } from "../../mergequeue/model.js";
import {
  COMMAND_USAGE,
  parseCommand,
  type PullRequestCommand,
} from "../../mergequeue/pull-request-commands.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import type {
  MergeQueueRecord,
  MergeQueueRecords,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { Principal } from "../../organizations/service.js";
import type { GitHubApp, GitHubClient } from "./client.js";
import { statusOf } from "./conditional.js";
import type { OrganizationScope, WebhookHandlers } from "./webhooks/registry.js";

// ---- permissions ---------------------------------------------------------------------------------

const WRITERS = new Set(["admin", "maintain", "write"]);

/**
 * GitHub's permission of `login` on the repository: `admin`, `write`, `read`, `none`… Read
 * afresh each time, conditionally when `conditional` is given (the installation's ETag: a person
 * who commands the queue again costs a `304`, and a permission taken away is seen at once).
 */
export async function collaboratorPermission(
  client: GitHubClient,
  repo: { owner: string; name: string },
  login: string,
  conditional?: { app: Pick<GitHubApp, "conditionalGet">; installationId: number },
): Promise<string> {
  try {
    const route = "GET /repos/{owner}/{repo}/collaborators/{username}/permission";
    const parameters = { owner: repo.owner, repo: repo.name, username: login };
    type Permission = { permission: string; role_name: string };
    const data: Permission = conditional
      ? (
          await conditional.app.conditionalGet<Permission>(
            conditional.installationId,
            route,
            parameters,
          )
        ).data
      : (await client.request(route, parameters)).data;
    // `permission` folds maintain into write; the role keeps it.
    return WRITERS.has(data.role_name) ? data.role_name : data.permission;
  } catch (error) {
    // Not a collaborator (or no such user): no access.
    if (statusOf(error) === 404) return "none";
    throw error;
  }
}

// ---- the handlers --------------------------------------------------------------------------------

export interface PullRequestCommandDeps {
  /** The App's id: its own comments are never commands. */
  appId: () => Promise<number>;
  queues: Pick<MergeQueueRecords, "find" | "listForOrganization">;
  organizations: Pick<OrganizationRecords, "findById">;
  runtime: Pick<RuntimeRecords, "latestEntry">;
  pullRequests: Pick<PullRequestService, "submit" | "cancel">;
  /**
   * Conditional reads (ETag), shared with the git host: the pull request a command reads is the
   * read the submission's check makes again right after, answered `304` (free).
   */
  app?: Pick<GitHubApp, "conditionalGet">;
}

interface Where {
  scope: OrganizationScope & { repository: OwnedRepoRef };
  /** Conditional reads of the installation, when the App's client is at hand. */
  app?: Pick<GitHubApp, "conditionalGet">;
  /** GitHub's owner and name of the repository now (what its API takes). */
  github: { owner: string; name: string };
  number: number;
}

export function registerPullRequestCommands(
  handlers: WebhookHandlers,
  deps: PullRequestCommandDeps,
): void {
  handlers.forOrganization("issue_comment.created", async (delivery) => {
    const { payload, repository } = delivery;
    const { comment, issue } = payload;
    // Only comments on pull requests; never a bot's (ours above all: no loops).
    if (!repository || !issue.pull_request) return;
    if (
      comment.performed_via_github_app?.id === (await deps.appId()) ||
      comment.user?.type === "Bot"
    ) {
      return;
    }
    const command = parseCommand(comment.body);
    if (!command) return;
    const where: Where = {
      scope: { ...delivery, repository },
      github: { owner: payload.repository.owner.login, name: payload.repository.name },
      number: issue.number,
      ...(deps.app ? { app: deps.app } : {}),
    };
    const route = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
    const parameters = {
      owner: where.github.owner,
      repo: where.github.name,
      pull_number: issue.number,
    };
    const pr = deps.app
      ? (
          await deps.app.conditionalGet<{ base: { ref: string } }>(
            delivery.installation.id,
            route,
            parameters,
          )
        ).data
      : (await delivery.client.request(route, parameters)).data;
    const queue = await deps.queues.find(delivery.organizationId, repository, pr.base.ref);
    if (!queue) {
      // A repository without any queue here is not Mainline's to answer for (another merge
      // queue may read `/trunk` commands there); one with queues for other branches is.
      const queues = await deps.queues.listForOrganization(delivery.organizationId, repository);
      if (queues.length === 0) return;
      await reply(
        where,
        `There is no merge queue for \`${pr.base.ref}\`, this pull request's base branch: nothing was done.`,
      );
      return;
    }
    if (!queue.configuration.commandsEnabled) return;
    const login = comment.user?.login ?? payload.sender.login;
    if (command.kind === "invalid") {
      await reply(where, `@${login} ${command.problem}\n\n${COMMAND_USAGE}`);
      return;
    }
    const verb = command.kind === "merge" ? "submit this pull request" : "cancel it";
    if (!(await mayWrite(where, login, verb))) return;
    const done = await act(deps, where, queue, login, command);
    // The queue's comment, when it shows one, answers the command: a reaction would repeat it.
    if (done && !queue.configuration.commentsEnabled) {
      await delivery.client.request(
        "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        {
          owner: where.github.owner,
          repo: where.github.name,
          comment_id: comment.id,
          content: "+1",
        },
      );
    }
  });

  handlers.forOrganization(["pull_request.labeled", "pull_request.unlabeled"], async (delivery) => {
    const { payload, repository } = delivery;
    const label = payload.label?.name;
    if (!repository || label === undefined || payload.sender.type === "Bot") return;
    const pr = payload.pull_request;
    const queue = await deps.queues.find(delivery.organizationId, repository, pr.base.ref);
    const { enqueueingLabel, labelCommandsEnabled } = queue?.configuration ?? {};
    if (
      !queue ||
      !labelCommandsEnabled ||
      !enqueueingLabel ||
      label.toLowerCase() !== enqueueingLabel.toLowerCase()
    ) {
      return;
    }
    const where: Where = {
      scope: { ...delivery, repository },
      github: { owner: payload.repository.owner.login, name: payload.repository.name },
      number: pr.number,
      ...(deps.app ? { app: deps.app } : {}),
    };
    const login = payload.sender.login;
    if (payload.action === "unlabeled") {
      // Only a pull request still in this queue is taken out; otherwise there is nothing to do.
      const entry = await deps.runtime.latestEntry(queue.id, pr.number);
      if (!entry || entry.concludedAt !== null) return;
      if (!(await mayWrite(where, login, `cancel it by removing \`${label}\``))) return;
      await act(deps, where, queue, login, { kind: "cancel" });
      return;
    }
    if (pr.state !== "open") return;
    if (!(await mayWrite(where, login, `submit it with \`${label}\``))) return;
    await act(deps, where, queue, login, { kind: "merge", priority: null, noBatch: false });
  });
}

async function reply(where: Where, body: string): Promise<void> {
  await where.scope.client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
    owner: where.github.owner,
    repo: where.github.name,
    issue_number: where.number,
    body,
  });
}

/** True when `login` may act; otherwise replies why. */
async function mayWrite(where: Where, login: string, verb: string): Promise<boolean> {
  const permission = await collaboratorPermission(
    where.scope.client,
    where.github,
    login,
    where.app && { app: where.app, installationId: where.scope.installation.id },
  );
  if (WRITERS.has(permission)) return true;
  await reply(
    where,
    `@${login} Only people with write access to ${where.github.owner}/${where.github.name} can ${verb} (your access: ${permission}). Nothing was changed.`,
  );
  return false;
}

/** Submits or cancels; a refusal of the queue is replied. True when it was done. */
async function act(
  deps: PullRequestCommandDeps,
  where: Where,
  queue: MergeQueueRecord,
  login: string,
  command: Extract<PullRequestCommand, { kind: "merge" | "cancel" }>,
): Promise<boolean> {
  const { organizationId, repository } = where.scope;
  const organization = await deps.organizations.findById(organizationId);
  const principal: Principal = {
    organizationId,
    organizationSlug: organization?.slug ?? "",
    tokenId: "github-app",
  };
  const address = {
    repo: { host: repository.host, owner: repository.owner, name: repository.name },
    targetBranch: queue.targetBranch,
  };
  const actor: Actor = { kind: "user", name: `github:${login}` };
  try {
    if (command.kind === "merge") {
      await deps.pullRequests.submit(
        principal,
        address,
        { prNumber: where.number, priority: command.priority, noBatch: command.noBatch },
        actor,
      );
    } else {
      await deps.pullRequests.cancel(principal, address, where.number, actor);
    }
    return true;
  } catch (error) {
    // The queue's refusals (closed, draining, not queued…) are the person's to read.
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    const what = command.kind === "merge" ? "submit" : "cancel";
    await reply(where, `@${login} Could not ${what} this pull request: ${error.message}`);
    return false;
  }
}
