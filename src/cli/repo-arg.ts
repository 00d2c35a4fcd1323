import { InvalidArgumentError } from "commander";
import { LOCAL_HOST, repositoryName, type RepoRef } from "../organizations/repositories.js";

const URL_PREFIX = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?/i;
const SCP_PREFIX = /^[^@/:]+@([^:/]+):/;

/**
 * The one rule for every command's repository argument (`--repo`, `repo create`): `owner/name`
 * is a repository on Mainline's own git host, `local/owner/name`; a repository anywhere else is
 * written with its host, `host/owner/name` (GitLab owners may contain slashes:
 * `gitlab.com/group/sub/app`). Also what people copy: `https://host/owner/name(.git)` and
 * `git@host:owner/name.git`, which always name their host. Two segments whose first names a host
 * (`github.com/acme`) are refused: the repository's name is missing (a local repository whose
 * owner looks like a host name is written in full, `local/my.org/app`).
 */
export function parseRepoArg(value: string): RepoRef {
  const trimmed = value.trim();
  const namesHost = URL_PREFIX.test(trimmed) || SCP_PREFIX.test(trimmed);
  const path = trimmed
    .replace(URL_PREFIX, "")
    .replace(SCP_PREFIX, "$1/")
    .replace(/\.git\/?$/, "");
  const parts = path.split("/").filter((p) => p.length > 0);
  if (parts.length === 2 && !namesHost) {
    const [owner, name] = parts as [string, string];
    // `github.com/acme`: a host and an owner, the repository's name missing. Read as owner/name
    // it would be a local repository owned by "github.com".
    if (looksLikeHost(owner)) throw new InvalidArgumentError(missingName(owner, name));
    return { host: LOCAL_HOST, owner, name };
  }
  if (parts.length === 2) {
    const [host, owner] = parts as [string, string];
    throw new InvalidArgumentError(missingName(host, owner));
  }
  if (parts.length >= 3) {
    const host = parts[0] as string;
    const name = parts[parts.length - 1] as string;
    return { host, owner: parts.slice(1, -1).join("/"), name };
  }
  throw new InvalidArgumentError(
    "expected owner/name (a repository on Mainline's local git host) or host/owner/name, e.g. acme/app or github.com/acme/app",
  );
}

/**
 * A first segment that names a host rather than an owner: a domain name (`github.com`,
 * `git.example.org`), one with a port, `localhost`, or `local` (Mainline's own git host).
 */
function looksLikeHost(segment: string): boolean {
  return (
    /^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(:\d+)?$/i.test(segment) ||
    /^[^:]+:\d+$/.test(segment) ||
    /^(localhost|local)$/i.test(segment)
  );
}

function missingName(host: string, owner: string): string {
  return `${host}/${owner} names a host (${host}) and an owner (${owner}) but no repository: expected host/owner/name, e.g. github.com/acme/app`;
}

/** The same rule, for commands that work only on the local git host: another host is refused. */
export function parseLocalRepoArg(value: string): RepoRef {
  const ref = parseRepoArg(value);
  if (ref.host.toLowerCase() !== LOCAL_HOST) {
    throw new InvalidArgumentError(
      `${repositoryName(ref)} is not on Mainline's local git host, the only one this command works on; name a local repository as owner/name, e.g. acme/app`,
    );
  }
  return { ...ref, host: LOCAL_HOST };
}
