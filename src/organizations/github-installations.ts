/**
 * GitHub App installations and the organizations they belong to: once linked to an organization,
 * the repositories an installation grants become that organization's repositories. The records and
 * storage port live in the domain, so that storage implements them and the GitHub provider uses
 * them. ADR 0020 gives the tenancy rules.
 */
import type { OwnedRepoRef } from "./repositories.js";

/** `User`, `Organization` or `Enterprise`, as GitHub names the account an App is installed on. */
export type GitHubAccountType = string;

/** What GitHub says of an installation (`GET /app/installations/{id}`, `installation` events). */
export interface GitHubInstallationFacts {
  id: number;
  accountId: number;
  accountLogin: string;
  accountType: GitHubAccountType;
  /** `all` repositories of the account, or `selected` ones. */
  repositorySelection: string;
  /** When GitHub says it was suspended (epoch ms); null while active. */
  suspendedAt: number | null;
}

export interface GitHubInstallationRecord extends GitHubInstallationFacts {
  /** The Mainline organization it is linked to; null until linked. */
  organizationId: string | null;
  linkedAt: number | null;
  /** When GitHub said it no longer exists (uninstalled); its rows are kept. */
  deletedAt: number | null;
  /** When its repositories were last read from GitHub. */
  syncedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** A repository as an installation's repository list names it. */
export interface GitHubRepositoryFacts {
  /** GitHub's repository id: stays the same through renames and transfers. */
  githubId: number;
  owner: string;
  name: string;
}

export interface GitHubRepositoryRecord extends GitHubRepositoryFacts {
  installationId: number;
  /** The organization its installation was linked to when it was last synced. */
  organizationId: string | null;
  /** The Mainline repository (of that organization) it is. */
  repositoryId: string | null;
  /** When the installation stopped granting it (removed, deleted, transferred away). */
  removedAt: number | null;
  updatedAt: number;
}

/** What one sync of an installation's repositories changed. */
export interface RepositorySyncOutcome {
  added: GitHubRepositoryFacts[];
  renamed: { from: { owner: string; name: string }; to: GitHubRepositoryFacts }[];
  removed: GitHubRepositoryFacts[];
}

/**
 * A GitHub repository resolved for an organization: the installation that grants it, in the
 * state it is in (the provider turns a removed repository or a suspended installation into a
 * clear refusal).
 */
export interface ResolvedGitHubRepository {
  installation: GitHubInstallationRecord;
  repository: GitHubRepositoryRecord;
}

export interface GitHubInstallationRecords {
  find(installationId: number): Promise<GitHubInstallationRecord | undefined>;
  list(): Promise<GitHubInstallationRecord[]>;
  listForOrganization(organizationId: string): Promise<GitHubInstallationRecord[]>;
  /** Records what GitHub says of an installation (a deleted one comes back); keeps its link. */
  upsert(facts: GitHubInstallationFacts, now: number): Promise<GitHubInstallationRecord>;
  /** GitHub no longer has it: marked deleted, its repositories removed (their data is kept). */
  markDeleted(installationId: number, now: number): Promise<void>;
  /**
   * Links an unlinked installation to an organization (compare-and-set): `linked`, `unchanged`
   * when it already is this organization's, or the organization it is linked to instead.
   */
  link(
    installationId: number,
    organizationId: string,
    now: number,
  ): Promise<
    { outcome: "linked" | "unchanged" } | { outcome: "elsewhere"; organizationId: string }
  >;
  /** Unlinks it, only from `organizationId`; false when it is not linked there. */
  unlink(installationId: number, organizationId: string, now: number): Promise<boolean>;
  /**
   * Makes the installation's stored repositories the `listed` ones, in one transaction: new ones
   * added, renamed ones renamed, missing ones removed; those of a linked installation become (or
   * stay) repositories of its organization on `host`.
   */
  syncRepositories(
    installationId: number,
    listed: readonly GitHubRepositoryFacts[],
    host: string,
    now: number,
  ): Promise<RepositorySyncOutcome>;
  /** The installation's repositories, removed ones too. */
  repositories(installationId: number): Promise<GitHubRepositoryRecord[]>;
  /** A repository by GitHub's id (the installation that has it now is in the record). */
  findRepository(githubId: number): Promise<GitHubRepositoryRecord | undefined>;
  /** The organization's repository `repo` as a GitHub repository, if an installation grants it. */
  resolve(repo: OwnedRepoRef): Promise<ResolvedGitHubRepository | undefined>;
}

/** How the listed repositories differ from the stored ones (by GitHub's repository id). */
export interface RepositoryDiff {
  added: GitHubRepositoryFacts[];
  renamed: { stored: GitHubRepositoryRecord; listed: GitHubRepositoryFacts }[];
  /** Stored ones that are back after being removed (their name may have changed too). */
  restored: { stored: GitHubRepositoryRecord; listed: GitHubRepositoryFacts }[];
  removed: GitHubRepositoryRecord[];
}

/** Pure: what a sync must change to make the stored repositories the listed ones. */
export function diffRepositories(
  stored: readonly GitHubRepositoryRecord[],
  listed: readonly GitHubRepositoryFacts[],
): RepositoryDiff {
  const byId = new Map(stored.map((row) => [row.githubId, row]));
  const listedIds = new Set(listed.map((repo) => repo.githubId));
  const diff: RepositoryDiff = { added: [], renamed: [], restored: [], removed: [] };
  for (const repo of listed) {
    const row = byId.get(repo.githubId);
    if (!row) diff.added.push(repo);
    else if (row.removedAt !== null) diff.restored.push({ stored: row, listed: repo });
    else if (row.owner !== repo.owner || row.name !== repo.name) {
      diff.renamed.push({ stored: row, listed: repo });
    }
  }
  for (const row of stored) {
    if (row.removedAt === null && !listedIds.has(row.githubId)) diff.removed.push(row);
  }
  return diff;
}
