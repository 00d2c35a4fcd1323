/**
 * A repository, named the one way the whole code base names it. Every repository belongs to
 * exactly one organization; two organizations may each have one with the same host/owner/name.
 */

/** `{host, owner, name}` as clients send it in every request. */
export interface RepoRef {
  host: string;
  owner: string;
  name: string;
}

/** The `host` of repositories on the built-in local git host. */
export const LOCAL_HOST = "local";

/** A repository reference with the organization it belongs to (how git hosts address it). */
export interface OwnedRepoRef extends RepoRef {
  organizationId: string;
}

/** A stored repository. */
export interface Repository extends RepoRef {
  id: string;
  organizationId: string;
  createdAt: number;
}

/** The case-insensitive key repositories are looked up by. */
export function repositoryLookupKey(ref: RepoRef): string {
  return `${ref.host}/${ref.owner}/${ref.name}`.toLowerCase();
}

/**
 * How the dashboard and the CLI name a repository to people, the form `--repo` takes:
 * `owner/name` for one on the local git host (as typed at `mainline repo create`), else
 * `host/owner/name` (`github.com/acme/app`).
 */
export function repositoryName(repo: RepoRef): string {
  const name = `${repo.owner}/${repo.name}`;
  return repo.host.toLowerCase() === LOCAL_HOST ? name : `${repo.host}/${name}`;
}

/** `host/owner/name`, spelled as given: Trunk hashes the spelling, so it must not be normalized. */
export function repoFullName(repository: RepoRef): string {
  return `${repository.host}/${repository.owner}/${repository.name}`;
}
