/**
 * A GitLab project as a repository of an organization: createQueue makes one only when the
 * organization's token can see the project, and registers the project's webhook to this server
 * when the server knows its public address and the token may (a Maintainer's); otherwise a
 * Maintainer adds it by hand from what `/v1/gitlab/getConnection` shows.
 */
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { RepositoryRecords } from "../../mergequeue/records.js";
import type { RepoRef, Repository } from "../../organizations/repositories.js";
import type { Principal } from "../../organizations/service.js";
import type { ProviderLogger } from "../host-provider.js";
import { projectId } from "./client.js";
import { asApiError, type GitLabConnections } from "./connections.js";
import { HOOK_EVENTS } from "./routes.js";
import { gitlabWebhookUrl } from "./webhooks.js";

export interface GitLabRepositoriesDeps {
  connections: Pick<GitLabConnections, "access">;
  repositories: Pick<RepositoryRecords, "ensure">;
  clock: Clock;
  logger: ProviderLogger;
  publicUrl: string | undefined;
}

export class GitLabRepositories {
  constructor(private readonly deps: GitLabRepositoriesDeps) {}

  async existing(principal: Principal, ref: RepoRef): Promise<Repository> {
    const { connections, repositories, clock, logger } = this.deps;
    const { client, connection } = await connections.access(principal.organizationId);
    const project = await client
      .find<{ path_with_namespace: string }>(`/projects/${projectId(ref.owner, ref.name)}`)
      .catch((error: unknown) => {
        throw asApiError(error);
      });
    if (!project) {
      throw new ApiError(
        "not_found",
        `GitLab has no project ${ref.owner}/${ref.name} that ${connection.username} can see.`,
      );
    }
    const repository = await repositories.ensure(principal.organizationId, ref, clock.now());
    await this.ensureHook(principal.organizationId, ref).catch((error: unknown) => {
      logger.warn(
        { err: error, repo: `${ref.owner}/${ref.name}` },
        "gitlab: could not register the project's webhook; a Maintainer adds it (docs/gitlab.md)",
      );
    });
    return repository;
  }

  /** The project's webhook to this server, registered unless it is there already. */
  private async ensureHook(organizationId: string, ref: RepoRef): Promise<void> {
    const base = this.deps.publicUrl;
    if (base === undefined) return;
    const { client, connection } = await this.deps.connections.access(organizationId);
    const url = gitlabWebhookUrl(base, connection.hookKey);
    const path = `/projects/${projectId(ref.owner, ref.name)}/hooks`;
    const hooks = (await client.get<{ url: string }[]>(path, { per_page: 100 })).data;
    if (hooks.some((hook) => hook.url === url)) return;
    await client.request("POST", path, {
      body: {
        url,
        token: connection.webhookSecret,
        enable_ssl_verification: url.startsWith("https:"),
        ...Object.fromEntries(HOOK_EVENTS.map((event) => [event, true])),
      },
    });
  }
}
