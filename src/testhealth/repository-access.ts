import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { RepositoryRecords } from "./ports.js";
import { ApiError } from "../lib/errors.js";
import type { Principal } from "../organizations/service.js";

/**
 * Tenancy for test-health requests: `org_url_slug` must be the token's organization (403 otherwise,
 * whether or not that organization exists), and a repository unknown to it is a 404.
 */
export class RepositoryAccess {
  constructor(private readonly repositories: Pick<RepositoryRecords, "find" | "ensure">) {}

  checkOrganization(principal: Principal, orgUrlSlug: string | null | undefined): void {
    if (orgUrlSlug === null || orgUrlSlug === undefined || orgUrlSlug === "") return;
    if (orgUrlSlug.toLowerCase() !== principal.organizationSlug) {
      throw new ApiError(
        "forbidden",
        `The API token belongs to organization "${principal.organizationSlug}", not "${orgUrlSlug}".`,
      );
    }
  }

  async find(
    principal: Principal,
    orgUrlSlug: string | null | undefined,
    ref: RepoRef,
  ): Promise<Repository> {
    this.checkOrganization(principal, orgUrlSlug);
    const repository = await this.repositories.find(principal.organizationId, ref);
    if (!repository) {
      throw new ApiError(
        "not_found",
        `No repository ${ref.host}/${ref.owner}/${ref.name} in organization "${principal.organizationSlug}"; it is created by its first upload.`,
      );
    }
    return repository;
  }

  /** For uploads: the repository is created on its first upload. */
  async ensure(
    principal: Principal,
    orgUrlSlug: string | null | undefined,
    ref: RepoRef,
    now: number,
  ): Promise<Repository> {
    this.checkOrganization(principal, orgUrlSlug);
    return this.repositories.ensure(principal.organizationId, ref, now);
  }
}
