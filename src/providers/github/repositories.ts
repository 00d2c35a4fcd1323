/**
 * A repository of an organization as a GitHub repository it can act on: the installation that
 * grants it, GitHub's name for it now and that installation's client. Only an installation linked
 * to the repository's own organization ever serves it; any other repository is refused with a clear
 * error (its rows and data stay).
 */
import { ApiError } from "../../lib/errors.js";
import { isoTime } from "../../lib/clock.js";
import type { GitHubInstallationRecords } from "../../organizations/github-installations.js";
import type { RepositoryRecords } from "../../mergequeue/records.js";
import type { Principal } from "../../organizations/service.js";
import type { OwnedRepoRef, RepoRef, Repository } from "../../organizations/repositories.js";
import type { GitHubApp, GitHubClient } from "./client.js";

export interface GitHubRepositoryAccess {
  installationId: number;
  /** GitHub's id of the repository (stays through renames). */
  githubId: number;
  /** GitHub's owner and name for it now. */
  owner: string;
  name: string;
  /** The installation's client. */
  client: GitHubClient;
}

export class GitHubRepositories {
  constructor(
    private readonly deps: {
      store: Pick<GitHubInstallationRecords, "resolve">;
      repositories: Pick<RepositoryRecords, "find">;
      app: Pick<GitHubApp, "installation">;
    },
  ) {}

  /** The repository's GitHub access, or `host_not_connected`/`not_found` saying why not. */
  async resolve(repo: OwnedRepoRef): Promise<GitHubRepositoryAccess> {
    const resolved = await this.deps.store.resolve(repo);
    const full = `${repo.host}/${repo.owner}/${repo.name}`;
    if (!resolved) {
      throw new ApiError(
        "not_found",
        `${full} is not a repository of a GitHub App installation linked to this organization: install the App on it (or add it to the installation) and link the installation (docs/github.md).`,
      );
    }
    const { installation, repository } = resolved;
    const where = `GitHub App installation ${installation.id} (on ${installation.accountLogin})`;
    if (installation.deletedAt !== null) {
      throw new ApiError(
        "host_not_connected",
        `${full} cannot be reached: the ${where} was uninstalled on ${isoTime(installation.deletedAt)}. Its queues and data are kept; install the App again and link the new installation.`,
      );
    }
    if (repository.removedAt !== null) {
      throw new ApiError(
        "host_not_connected",
        `${full} cannot be reached: it was removed from the ${where} on ${isoTime(repository.removedAt)}. Its queues and data are kept; add it to the installation again to use it.`,
      );
    }
    if (installation.suspendedAt !== null) {
      throw new ApiError(
        "host_not_connected",
        `${full} cannot be reached: the ${where} is suspended on GitHub (since ${isoTime(installation.suspendedAt)}).`,
      );
    }
    return {
      installationId: installation.id,
      githubId: repository.githubId,
      owner: repository.owner,
      name: repository.name,
      client: this.deps.app.installation(installation.id),
    };
  }

  /**
   * The organization's repository `ref` when an installation grants it (createQueue on the
   * GitHub host): a queue never makes a GitHub repository come to exist.
   */
  async existing(principal: Principal, ref: RepoRef): Promise<Repository> {
    const owned = { organizationId: principal.organizationId, ...ref };
    await this.resolve(owned);
    const repository = await this.deps.repositories.find(principal.organizationId, ref);
    if (!repository) throw new Error(`repository ${ref.owner}/${ref.name} vanished`);
    return repository;
  }
}
