/**
 * Where local repositories live on disk: one tree per organization,
 * `{dataDir}/git/{organizationId}/{owner}/{name}.git`, so that no organization reaches another's.
 * Owner and name become path segments, so they are checked before any path is built from them. Also
 * where Mainline's own branches live inside them.
 */
import { join } from "node:path";
import { ApiError } from "../../../lib/errors.js";
import { LOCAL_GIT_DIRECTORY } from "../../../organizations/repositories.js";

const NAME_PATTERN = /^[A-Za-z0-9._-]+$/;

/**
 * The longest owner or name of a local repository. `{name}.git` must fit in one file name (255
 * bytes on the usual file systems); 100 is GitHub's own limit for repository names.
 */
export const MAX_LOCAL_NAME_LENGTH = 100;

/** What locates a local repository on disk: its organization, owner and name. */
export interface LocalRepositoryAddress {
  organizationId: string;
  owner: string;
  name: string;
}

/** Organization ids are UUIDs; anything that is not a plain path segment never becomes one. */
const ORGANIZATION_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export { LOCAL_HOST } from "../../../organizations/repositories.js";

/**
 * Throws a 400 naming the field (`repo.owner`, `repo.name`, as API requests spell them) unless owner and name are safe path segments: letters, digits,
 * `.`, `_`, `-`; not starting with `.` (no `..`, no hidden directories, which also keeps the
 * temporary names of repositories being created apart) and not ending with `.git` (the suffix
 * is added on disk; `app.git.git` would only confuse).
 */
export function validateRepositoryName(owner: string, name: string): void {
  for (const [field, value] of [
    ["owner", owner],
    ["name", name],
  ] as const) {
    if (value.length > MAX_LOCAL_NAME_LENGTH) {
      throw ApiError.invalid(
        `repo.${field}`,
        `must be at most ${String(MAX_LOCAL_NAME_LENGTH)} characters for a local repository`,
      );
    }
    if (!NAME_PATTERN.test(value)) {
      throw ApiError.invalid(`repo.${field}`, `may only contain letters, digits, ".", "_" and "-"`);
    }
    if (value.startsWith(".")) {
      throw ApiError.invalid(`repo.${field}`, `must not start with "."`);
    }
    if (value.toLowerCase().endsWith(".git")) {
      throw ApiError.invalid(`repo.${field}`, `must not end with ".git"`);
    }
  }
}

/** The directory of an organization's local repositories. */
export function organizationDirectory(dataDir: string, organizationId: string): string {
  if (!ORGANIZATION_ID_PATTERN.test(organizationId)) {
    throw new Error(`${JSON.stringify(organizationId)} is not an organization id`);
  }
  return join(dataDir, LOCAL_GIT_DIRECTORY, organizationId);
}

/** The bare repository's directory; validates the names first. */
export function repositoryPath(dataDir: string, repo: LocalRepositoryAddress): string {
  validateRepositoryName(repo.owner, repo.name);
  return join(organizationDirectory(dataDir, repo.organizationId), repo.owner, `${repo.name}.git`);
}

/** Test branches live under this prefix, apart from the branches people push. */
export const TEST_BRANCH_PREFIX = "mainline-merge/";

export function testBranchName(targetBranch: string, runId: string): string {
  return `${TEST_BRANCH_PREFIX}${targetBranch}/${runId}`;
}
