import { InvalidArgumentError } from "commander";
import type { RepoRef } from "../db/stores/repositories.js";

/**
 * `host/owner/name` (GitLab owners may contain slashes: `gitlab.com/group/sub/app`), or
 * `owner/name` for github.com.
 */
export function parseRepoArg(value: string): RepoRef {
  const parts = value.split("/").filter((p) => p.length > 0);
  if (parts.length === 2) {
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
