/** How pages read a repository from their address (`?repo=owner/name&host=…`). */
import type { RepoRef } from "../organizations/repositories.js";

/** `owner/name` (GitLab owners may hold slashes: the name is after the last one). */
export function parseRepo(repo: string | undefined): { owner: string; name: string } | undefined {
  if (repo === undefined) return undefined;
  const at = repo.lastIndexOf("/");
  if (at <= 0 || at === repo.length - 1) return undefined;
  return { owner: repo.slice(0, at), name: repo.slice(at + 1) };
}

/** `repo=owner/name` and `host=` as a repository reference (GitHub unless `host` says). */
export function repoRef(query: {
  repo?: string | undefined;
  host?: string | undefined;
}): RepoRef | undefined {
  const repo = parseRepo(query.repo);
  return repo ? { ...repo, host: query.host || "github.com" } : undefined;
}
