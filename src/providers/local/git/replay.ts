/**
 * Rebase for a bare repository: replays a pull request's commits onto the base in a throwaway
 * worktree with `git cherry-pick` (`merge-tree --merge-base` needs git 2.40). Like `git rebase`,
 * merge commits are not replayed; commits already on the base are kept empty. The caller checks the
 * result has the tree the queue tested, so a surprise is refused rather than landed.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NO_HOOKS, git, runGit } from "./git.js";
import type { RepositoryGit } from "./repository-git.js";

export type Replay = { ok: true; sha: string } | { ok: false; message: string };

/**
 * `commits` (a pull request's own, oldest first) replayed onto `onto`. Hooks of the hosted
 * repository are the pushers' business, never run by Mainline.
 */
export async function replayOnto(
  repository: RepositoryGit,
  onto: string,
  commits: string[],
  commitEnv: Record<string, string>,
): Promise<Replay> {
  if (commits.length === 0) return { ok: true, sha: onto };

  const worktree = await mkdtemp(join(tmpdir(), "mainline-rebase-"));
  try {
    await git([...NO_HOOKS, "worktree", "add", "--quiet", "--detach", worktree, onto], {
      gitDir: repository.gitDir,
    });
    const picked = await runGit(
      [...NO_HOOKS, "cherry-pick", "--keep-redundant-commits", ...commits],
      { cwd: worktree, env: commitEnv },
    );
    if (picked.code !== 0) {
      return {
        ok: false,
        message: `replaying the commits onto the base stopped: ${firstLine(picked)}`,
      };
    }
    const { stdout: sha } = await git(["rev-parse", "HEAD"], { cwd: worktree });
    return { ok: true, sha: sha.trim() };
  } finally {
    await runGit(["worktree", "remove", "--force", worktree], { gitDir: repository.gitDir });
    await rm(worktree, { recursive: true, force: true });
    await runGit(["worktree", "prune"], { gitDir: repository.gitDir });
  }
}

function firstLine(output: { stdout: string; stderr: string }): string {
  const text = `${output.stderr}\n${output.stdout}`;
  return (
    text
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? "no output"
  );
}
