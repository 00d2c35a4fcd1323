/**
 * The local git host's API: repositories as bare git repositories in the data directory, and pull
 * requests opened and closed through Mainline. Git holds the code; people push with plain git. A
 * change Mainline makes itself (a closed PR) is reported to the queues at once; pushes are found by
 * the ref watcher.
 */
import type { Clock } from "../../../lib/clock.js";
import { ApiError } from "../../../lib/errors.js";
import type { RepositoryRecords } from "../../../mergequeue/records.js";
import type { OwnedRepoRef, RepoRef, Repository } from "../../../organizations/repositories.js";
import type { Principal } from "../../../organizations/service.js";
import { LOCAL_HOST, validateRepositoryName, type LocalRepositoryAddress } from "./layout.js";
import type {
  LocalPullRequestManagement,
  LocalPullRequestRecord,
  LocalPullRequestState,
} from "../../../mergequeue/local-pull-request-records.js";

/**
 * What the service needs of the bare repositories on disk (`LocalRepositories`), each in its
 * organization's tree.
 */
export interface BareRepositories {
  /** Creates the bare repository; `created: false` when it already exists. */
  create(repo: LocalRepositoryAddress): Promise<{ created: boolean; path: string }>;
  exists(repo: LocalRepositoryAddress): Promise<boolean>;
  path(repo: LocalRepositoryAddress): string;
  branches(repo: LocalRepositoryAddress): Promise<Map<string, string>>;
  /** The author name of the oldest commit `head` has that `base` lacks (else of `head`'s). */
  changesAuthor(
    repo: LocalRepositoryAddress,
    head: string,
    base: string,
  ): Promise<string | undefined>;
}

export interface LocalHostServiceDeps {
  repositories: Pick<RepositoryRecords, "find" | "ensure">;
  pullRequests: LocalPullRequestManagement;
  bare: BareRepositories;
  clock: Clock;
  /** A pull request changed through the API (closed): its queues re-read it. */
  pullRequestChanged(repo: OwnedRepoRef, number: number): Promise<void>;
}

export interface OpenPullRequestInput {
  head: string;
  base: string;
  title?: string | undefined;
  /** Who opened it; default: the author of its changes (`BareRepositories.changesAuthor`). */
  author?: string | undefined;
  /** The pull request's description (GitHub's `body`). */
  description?: string | undefined;
}

export class LocalHostService {
  constructor(private readonly deps: LocalHostServiceDeps) {}

  /**
   * Creates a local repository for the token's organization: its row and its bare repository,
   * in the organization's own tree on disk (another organization's repository of the same name
   * is another directory). Answers the path to push to. A repository that exists already is a
   * 409.
   */
  async createRepository(
    principal: Principal,
    ref: RepoRef,
  ): Promise<{ repository: Repository; remoteUrl: string }> {
    const local = this.localRef(ref);
    const organizationId = principal.organizationId;
    const existing = await this.deps.repositories.find(organizationId, local);
    // The path on disk is the one the organization's repository was created with: another
    // spelling of its name (names match case-insensitively) is the same repository.
    const onDisk = {
      organizationId,
      owner: (existing ?? local).owner,
      name: (existing ?? local).name,
    };
    const { created } = await this.deps.bare.create(onDisk);
    if (!created && existing) {
      throw new ApiError(
        "conflict",
        `The local repository ${local.owner}/${local.name} exists already.`,
      );
    }
    const repository = await this.deps.repositories.ensure(
      organizationId,
      local,
      this.deps.clock.now(),
    );
    return { repository, remoteUrl: this.deps.bare.path(repository) };
  }

  async openPullRequest(
    principal: Principal,
    ref: RepoRef,
    input: OpenPullRequestInput,
  ): Promise<LocalPullRequestRecord> {
    const repository = await this.repository(principal, ref);
    const head = input.head.trim();
    const base = input.base.trim();
    if (head === "") throw ApiError.invalid("head", "must name a branch");
    if (base === "") throw ApiError.invalid("base", "must name a branch");
    if (head === base) throw ApiError.invalid("head", "must differ from base");
    const branches = await this.deps.bare.branches(repository);
    for (const [field, branch] of [
      ["head", head],
      ["base", base],
    ] as const) {
      if (!branches.has(branch)) {
        throw ApiError.invalid(
          field,
          `names branch "${branch}", which does not exist in ${repository.owner}/${repository.name}; push it first`,
        );
      }
    }
    const open = await this.deps.pullRequests.list(repository.id, "open");
    const same = open.find((pr) => pr.headBranch === head && pr.baseBranch === base);
    if (same) {
      throw new ApiError(
        "conflict",
        `Pull request #${String(same.number)} from ${head} into ${base} is already open.`,
      );
    }
    const author =
      input.author?.trim() ||
      (await this.deps.bare.changesAuthor(repository, head, base))?.trim().slice(0, 255) ||
      "unknown";
    return this.deps.pullRequests.open({
      repositoryId: repository.id,
      headBranch: head,
      baseBranch: base,
      title: input.title?.trim() || head,
      author,
      description: input.description?.trim() ?? "",
      now: this.deps.clock.now(),
    });
  }

  /** Closes an open pull request (a queued one is cancelled by its queue). Closing twice is fine. */
  async closePullRequest(
    principal: Principal,
    ref: RepoRef,
    number: number,
  ): Promise<LocalPullRequestRecord> {
    const repository = await this.repository(principal, ref);
    const existing = await this.deps.pullRequests.get(repository.id, number);
    if (!existing) throw this.noPullRequest(repository, number);
    if (existing.state === "merged") {
      throw new ApiError("conflict", `Pull request #${String(number)} is merged already.`);
    }
    const closed = await this.deps.pullRequests.close(repository.id, number, this.deps.clock.now());
    if (!closed) throw this.noPullRequest(repository, number);
    await this.deps.pullRequestChanged(this.hosted(repository), number);
    return closed;
  }

  async listPullRequests(
    principal: Principal,
    ref: RepoRef,
    state?: LocalPullRequestState,
  ): Promise<{ repository: Repository; pullRequests: LocalPullRequestRecord[] }> {
    const repository = await this.repository(principal, ref);
    return { repository, pullRequests: await this.deps.pullRequests.list(repository.id, state) };
  }

  /** The repository's branches and their heads now. */
  branches(repository: Repository): Promise<Map<string, string>> {
    return this.deps.bare.branches(repository);
  }

  /** The organization's local repository, which must exist on disk too. */
  async repository(principal: Principal, ref: RepoRef): Promise<Repository> {
    const local = this.localRef(ref);
    const repository = await this.deps.repositories.find(principal.organizationId, local);
    if (!repository || !(await this.deps.bare.exists(repository))) {
      throw new ApiError(
        "not_found",
        `No local repository ${local.owner}/${local.name} in organization "${principal.organizationSlug}"; create it with \`mainline repo create ${local.owner}/${local.name}\`.`,
      );
    }
    return repository;
  }

  private localRef(ref: RepoRef): RepoRef {
    if (ref.host.toLowerCase() !== LOCAL_HOST) {
      throw ApiError.invalid(
        "repo.host",
        `must be "${LOCAL_HOST}": only repositories on the local git host are served here`,
      );
    }
    validateRepositoryName(ref.owner, ref.name);
    return { host: LOCAL_HOST, owner: ref.owner, name: ref.name };
  }

  private hosted(repository: Repository): OwnedRepoRef {
    return {
      organizationId: repository.organizationId,
      host: repository.host,
      owner: repository.owner,
      name: repository.name,
    };
  }

  private noPullRequest(repository: Repository, number: number): ApiError {
    return new ApiError(
      "not_found",
      `No pull request #${String(number)} in ${repository.owner}/${repository.name}.`,
    );
  }
}
