/** What git knows about the working directory, asked with `git` itself (no answer = null). */
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import path from "node:path";
import type { GitFacts } from "./context.js";

function git(cwd: string, args: string[]): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      "git",
      args,
      { cwd, encoding: "utf8", timeout: 10_000, maxBuffer: 1024 * 1024 },
      (error, stdout) => {
        const text = stdout.trim();
        resolve(error || text === "" ? null : text);
      },
    );
  });
}

export async function readGitFacts(cwd: string): Promise<GitFacts> {
  const [topLevel, remoteUrl, headSha, headBranch, headSubject] = await Promise.all([
    git(cwd, ["rev-parse", "--show-toplevel"]),
    git(cwd, ["remote", "get-url", "origin"]),
    git(cwd, ["rev-parse", "--verify", "--quiet", "HEAD"]),
    git(cwd, ["rev-parse", "--abbrev-ref", "HEAD"]),
    git(cwd, ["log", "-1", "--format=%s", "HEAD"]),
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
export async function commitDetails(cwd: string, sha: string): Promise<CommitDetails | null> {
  const text = await git(cwd, ["log", "-1", "--format=%ct%x00%an%x00%ae%x00%B", sha, "--"]);
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
