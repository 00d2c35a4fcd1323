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

/**
 * The folder of the data directory that holds the local git host's repositories: each at
 * `{data dir}/git/{organization id}/{owner}/{name}.git` (src/providers/local/git/layout.ts).
 * `mainline repo create` prints that path as the remote to push to and clone from.
 */
export const LOCAL_GIT_DIRECTORY = "git";

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const LOCAL_SEGMENT = "[A-Za-z0-9_-][A-Za-z0-9._-]*";
const LOCAL_REMOTE = new RegExp(
  `(?:^|[/:])${LOCAL_GIT_DIRECTORY}/${UUID}/(${LOCAL_SEGMENT})/(${LOCAL_SEGMENT})\\.git/?$`,
  "i",
);

/**
 * The repository on the local git host that a git remote points at (the path `repo create`
 * printed, as a path, a `file://` URL or over ssh), `local/owner/name`; null for any other remote.
 * Mainline serves no git over http(s) or git://, so such a URL names another host.
 */
export function localRepositoryOfRemote(remoteUrl: string): RepoRef | null {
  const remote = remoteUrl.trim();
  if (/^(?:https?|git):\/\//i.test(remote)) return null;
  const match = LOCAL_REMOTE.exec(remote);
  if (match === null) return null;
  const [, owner = "", name = ""] = match;
  return { host: LOCAL_HOST, owner, name };
}
