import { InvalidArgumentError } from "commander";
import type { RepoRef } from "../db/stores/repositories.js";

const URL_PREFIX = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?/i;
const SCP_PREFIX = /^[^@/:]+@([^:/]+):/;

/**
 * `host/owner/name` (GitLab owners may contain slashes: `gitlab.com/group/sub/app`), or
 * `owner/name` for github.com. Also what people copy: `https://host/owner/name(.git)` and
 * `git@host:owner/name.git`, which always name their host.
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
    return { host: "github.com", owner, name };
  }
  if (parts.length >= 3) {
    const host = parts[0] as string;
    const name = parts[parts.length - 1] as string;
    return { host, owner: parts.slice(1, -1).join("/"), name };
  }
  throw new InvalidArgumentError("expected host/owner/name, e.g. github.com/acme/app");
}
