/**
 * The bare repositories of the local git host, on disk under the data directory. People push to
 * them with plain git; Mainline creates them and reads their branches.
 */
import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ApiError, isStorageFull } from "../../../lib/errors.js";
import { git } from "./git.js";
import { repositoryPath, type LocalRepositoryAddress } from "./layout.js";

export interface CreateRepositoryResult {
  /** False when the repository already existed (it is left as it was). */
  created: boolean;
  path: string;
}

/** Errors of `rename` onto a directory that is there and not empty. */
const TARGET_EXISTS = new Set(["ENOTEMPTY", "EEXIST"]);

export class LocalRepositories {
  constructor(private readonly dataDir: string) {}

  path(repo: LocalRepositoryAddress): string {
    return repositoryPath(this.dataDir, repo);
  }

  /** Whether a git repository is there (a bare repository always has `HEAD`). */
  async exists(repo: LocalRepositoryAddress): Promise<boolean> {
    try {
      return (await stat(join(this.path(repo), "HEAD"))).isFile();
    } catch {
      return false;
    }
  }

  /**
   * Creates an empty bare repository whose default branch is `main`. Creating one that exists is
   * not an error but reports `created: false`, so that callers can answer 409 or carry on. The
   * repository is initialised beside its final place and renamed into it, so that concurrent
   * creates and crashes never leave a half-made repository where one is expected (the temporary
   * name starts with ".", which no repository name may).
   */
  async create(repo: LocalRepositoryAddress): Promise<CreateRepositoryResult> {
    const path = this.path(repo);
    if (await this.exists(repo)) return { created: false, path };
    await mkdir(dirname(path), { recursive: true });
    const staging = join(dirname(path), `.creating-${randomBytes(8).toString("hex")}`);
    try {
      await git(["init", "--quiet", "--bare", "--initial-branch=main", staging]);
      await rename(staging, path);
      return { created: true, path };
    } catch (error) {
      if (TARGET_EXISTS.has((error as NodeJS.ErrnoException).code ?? "")) {
        return { created: false, path };
      }
      if (isStorageFull(error)) {
        throw new ApiError(
          "insufficient_storage",
          `The server's disk is full, so the repository ${repo.owner}/${repo.name} was not created; retry later.`,
        );
      }
      throw error;
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  /** Every branch and the commit it points at, by branch name (without `refs/heads/`). */
  async branches(repo: LocalRepositoryAddress): Promise<Map<string, string>> {
    const { stdout } = await git(
      ["for-each-ref", "--format=%(objectname) %(refname:strip=2)", "refs/heads"],
      { gitDir: this.path(repo) },
    );
    const branches = new Map<string, string>();
    for (const line of stdout.split("\n")) {
      const space = line.indexOf(" ");
      if (space > 0) branches.set(line.slice(space + 1), line.slice(0, space));
    }
    return branches;
  }

  /**
   * Who wrote the changes of `head` that `base` lacks: the author name of the oldest such commit
   * (merges left out), else of `head`'s own commit (a branch with nothing new). Undefined when
   * `head` does not resolve.
   */
  async changesAuthor(
    repo: LocalRepositoryAddress,
    head: string,
    base: string,
  ): Promise<string | undefined> {
    const gitDir = this.path(repo);
    const heads = `refs/heads/${head}`;
    const own = await git(
      ["log", "--reverse", "--no-merges", "--format=%an", heads, `^refs/heads/${base}`, "--"],
      { gitDir },
    );
    const first = own.stdout.split("\n").find((line) => line.trim() !== "");
    if (first !== undefined) return first.trim();
    const tip = await git(["log", "-1", "--format=%an", heads, "--"], { gitDir });
    return tip.stdout.trim() || undefined;
  }
}
