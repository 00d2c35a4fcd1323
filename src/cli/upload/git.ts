/** What git knows about the working directory, asked with `git` itself (no answer = null). */
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { GitFacts } from "./context.js";

/** The environment git runs with (default: this process's). */
export type GitEnv = Readonly<Record<string, string | undefined>>;

function git(cwd: string, args: string[], env: GitEnv = process.env): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      "git",
      args,
      { cwd, env: { ...env }, encoding: "utf8", timeout: 10_000, maxBuffer: 1024 * 1024 },
      (error, stdout) => {
        const text = stdout.trim();
        resolve(error || text === "" ? null : text);
      },
    );
  });
}

export async function readGitFacts(cwd: string, env?: GitEnv): Promise<GitFacts> {
  const [topLevel, remoteUrl, headSha, headBranch, headSubject] = await Promise.all([
    git(cwd, ["rev-parse", "--show-toplevel"], env),
    git(cwd, ["remote", "get-url", "origin"], env),
    git(cwd, ["rev-parse", "--verify", "--quiet", "HEAD"], env),
    git(cwd, ["rev-parse", "--abbrev-ref", "HEAD"], env),
    git(cwd, ["log", "-1", "--format=%s", "HEAD"], env),
  ]);
  return { topLevel, remoteUrl, headSha, headBranch, headSubject };
}

export interface CommitDetails {
  epochSeconds: number;
  authorName: string;
  authorEmail: string;
  message: string;
}

/** The commit's time, author and message, when the commit is in the local clone. */
export async function commitDetails(
  cwd: string,
  sha: string,
  env?: GitEnv,
): Promise<CommitDetails | null> {
  const format = "--format=%ct%x00%an%x00%ae%x00%B";
  const text = await git(cwd, ["log", "-1", format, sha, "--"], env);
  if (text === null) return null;
  const [epoch = "", authorName = "", authorEmail = "", ...message] = text.split("\0");
  const epochSeconds = Number(epoch);
  if (!Number.isInteger(epochSeconds)) return null;
  return { epochSeconds, authorName, authorEmail, message: message.join("\0").trim() };
}

/** Where GitHub and GitLab look for CODEOWNERS, in this order. */
export const CODEOWNERS_LOCATIONS = [
  ".github/CODEOWNERS",
  "CODEOWNERS",
  "docs/CODEOWNERS",
  ".gitlab/CODEOWNERS",
] as const;

/** The first CODEOWNERS file under `root`, as an absolute path; null when there is none. */
export async function findCodeowners(root: string): Promise<string | null> {
  for (const location of CODEOWNERS_LOCATIONS) {
    const candidate = path.join(root, location);
    try {
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not there
    }
  }
  return null;
}
