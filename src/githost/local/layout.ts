/**
 * Where local repositories live on disk (docs/contract.md §6): `{dataDir}/git/{owner}/{name}.git`. Owner
 * and name become path segments, so they are checked before any path is built from them. Also
 * where Mainline's own branches live inside them.
 */
import { join } from "node:path";
import { ApiError } from "../../lib/errors.js";

const NAME_PATTERN = /^[A-Za-z0-9._-]+$/;

/** The `host` of repositories on the local git host. */
export const LOCAL_HOST = "local";

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

/** The bare repository's directory; validates the names first. */
export function repositoryPath(dataDir: string, owner: string, name: string): string {
  validateRepositoryName(owner, name);
  return join(dataDir, "git", owner, `${name}.git`);
}

/** Test branches live under this prefix, apart from the branches people push (docs/contract.md §6). */
export const TEST_BRANCH_PREFIX = "mainline-merge/";

export function testBranchName(targetBranch: string, runId: string): string {
  return `${TEST_BRANCH_PREFIX}${targetBranch}/${runId}`;
}
