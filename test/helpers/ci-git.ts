import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "vitest";
import { git } from "./local-project.js";

/** Real git for the CI runner's tests: a bare repository as the local git host keeps them. */
const exec = promisify(execFile);

export interface TestRepository {
  bare: string;
  /** Commits these files (path → content) on `main` and pushes; answers the commit. */
  commit(files: Record<string, string>): Promise<string>;
  /** The git host's `readFile`: a file at a commit, undefined when absent. */
  readFile(sha: string, file: string): Promise<string | undefined>;
  /** What the integrator provides: a detached working tree of `sha` at `dir`. */
  checkout(sha: string, dir: string): Promise<void>;
}

export async function createRepository(root: string): Promise<TestRepository> {
  const bare = path.join(root, "git", "acme", "app.git");
  const work = path.join(root, "work-clone");
  await mkdir(bare, { recursive: true });
  await git(root, "init", "--quiet", "--bare", "--initial-branch=main", bare);
  await git(root, "clone", "--quiet", bare, work);
  return {
    bare,
    async commit(files) {
      for (const [file, content] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(work, file)), { recursive: true });
        await writeFile(path.join(work, file), content);
      }
      await git(work, "add", "--all");
      await git(work, "commit", "--quiet", "--allow-empty", "-m", "change");
      await git(work, "push", "--quiet", "origin", "HEAD:main");
      return git(work, "rev-parse", "HEAD");
    },
    async readFile(sha, file) {
      try {
        return (await exec("git", ["--git-dir", bare, "show", `${sha}:${file}`])).stdout;
      } catch {
        return undefined;
      }
    },
    async checkout(sha, dir) {
      await git(root, "clone", "--quiet", "--shared", "--no-checkout", bare, dir);
      await git(dir, "checkout", "--quiet", "--detach", sha);
    },
  };
}

/** Whether a process still runs (a zombie left for a non-reaping PID 1 counts as gone). */
async function isRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${String(pid)}/stat`, "utf8").catch(() => "");
  return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
}

/** Waits (a second at most) for a killed process to be gone: SIGKILL is sure but not instant. */
export async function expectGone(pid: number): Promise<void> {
  const deadline = Date.now() + 1000;
  while ((await isRunning(pid)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect(await isRunning(pid)).toBe(false);
}
