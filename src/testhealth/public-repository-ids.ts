/**
 * Public repository ids (`x-trunk-public-repo-id`), for CI of pull requests from forks, which holds
 * no secrets: the id permits only creating uploads for its repository (capped in size and rate) and
 * reading its quarantined test ids. It must never grant anything else.
 */
import { randomBytes } from "node:crypto";
import {
  repositoryLookupKey,
  type RepoRef,
  type Repository,
} from "../organizations/repositories.js";
import type { RepositoryRecords } from "./ports.js";
import type { Clock } from "../lib/clock.js";
import { ApiError } from "../lib/errors.js";
import type { Principal } from "../organizations/service.js";
import type { RepositoryAccess } from "./repository-access.js";
import { HOUR_MS as HOUR } from "../lib/time.js";

/** Uploads a public id may create per repository in any hour (a sliding window). */
export const PUBLIC_UPLOADS_PER_HOUR = 60;
/** The largest bundle an upload created with a public id takes. */
export const PUBLIC_MAX_BUNDLE_BYTES = 100 * 1024 * 1024;
const PREFIX = "mlpub_";
const SHAPE = /^mlpub_[A-Za-z0-9_-]{24}$/;

/** The caller of a request that presented a public repository id. */
export interface PublicRepositoryCaller {
  organizationId: string;
  organizationSlug: string;
  repository: Repository;
}

export interface PublicRepositoryIdDependencies {
  repositories: Pick<RepositoryRecords, "publicId" | "setPublicId" | "findByPublicId">;
  access: RepositoryAccess;
  clock: Clock;
  organizationSlug(organizationId: string): Promise<string>;
  /** Default `PUBLIC_UPLOADS_PER_HOUR`. */
  perHour?: number | undefined;
  /** Default `PUBLIC_MAX_BUNDLE_BYTES`. */
  maxBundleBytes?: number | undefined;
}

export class PublicRepositoryIds {
  /** Per repository, when its recent public uploads were created (in this process). */
  private readonly recent = new Map<string, number[]>();

  private readonly perHour: number;
  /** The largest bundle an upload created with a public id takes. */
  readonly maxBundleBytes: number;

  constructor(private readonly deps: PublicRepositoryIdDependencies) {
    this.perHour = deps.perHour ?? PUBLIC_UPLOADS_PER_HOUR;
    this.maxBundleBytes = deps.maxBundleBytes ?? PUBLIC_MAX_BUNDLE_BYTES;
  }

  /** The repository's public id, given now if it has none (the repository too, if new). */
  async get(principal: Principal, orgUrlSlug: string, repo: RepoRef): Promise<string> {
    const repository = await this.deps.access.ensure(
      principal,
      orgUrlSlug,
      repo,
      this.deps.clock.now(),
    );
    return this.deps.repositories.setPublicId(repository.id, generate(), false);
  }

  /** A new public id for the repository; the old one stops working at once. */
  async rotate(principal: Principal, orgUrlSlug: string, repo: RepoRef): Promise<string> {
    const repository = await this.deps.access.ensure(
      principal,
      orgUrlSlug,
      repo,
      this.deps.clock.now(),
    );
    return this.deps.repositories.setPublicId(repository.id, generate(), true);
  }

  /** The caller a presented public id stands for; 401 for anything that is not a current id. */
  async authenticate(presented: string): Promise<PublicRepositoryCaller> {
    const repository = SHAPE.test(presented)
      ? await this.deps.repositories.findByPublicId(presented)
      : undefined;
    if (!repository) {
      throw new ApiError(
        "unauthorized",
        "Unknown public repository id (x-trunk-public-repo-id); ask the repository's owners for its current one.",
      );
    }
    return {
      organizationId: repository.organizationId,
      organizationSlug: await this.deps.organizationSlug(repository.organizationId),
      repository,
    };
  }

  /**
   * A request of a public-id caller about `repo` in `orgUrlSlug`: only its own repository, in
   * its own organization (403 otherwise, naming neither the other repository nor its data).
   */
  checkScope(caller: PublicRepositoryCaller, orgUrlSlug: string | null, repo: RepoRef): void {
    if (orgUrlSlug && orgUrlSlug.toLowerCase() !== caller.organizationSlug) {
      throw new ApiError(
        "forbidden",
        `The public repository id belongs to organization "${caller.organizationSlug}", not "${orgUrlSlug}".`,
      );
    }
    if (repositoryLookupKey(repo) !== repositoryLookupKey(caller.repository)) {
      throw new ApiError(
        "forbidden",
        "A public repository id permits uploads for its own repository only.",
      );
    }
  }

  /** Counts one upload of the caller's repository, or refuses it past the hourly limit (429). */
  takeUploadSlot(caller: PublicRepositoryCaller): void {
    const now = this.deps.clock.now();
    const id = caller.repository.id;
    const recent = (this.recent.get(id) ?? []).filter((at) => at > now - HOUR);
    if (recent.length >= this.perHour) {
      this.recent.set(id, recent);
      const retryInS = Math.max(1, Math.ceil(((recent[0] ?? now) + HOUR - now) / 1000));
      throw new ApiError(
        "rate_limited",
        `Uploads with a public repository id are limited to ${this.perHour} an hour per repository; retry in ${retryInS} s or use an API token.`,
      );
    }
    recent.push(now);
    this.recent.set(id, recent);
  }
}

function generate(): string {
  return PREFIX + randomBytes(18).toString("base64url");
}
