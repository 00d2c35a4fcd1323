/**
 * A local mirror of each GitLab project the queue serves: GitLab's REST API cannot make a merge
 * commit on an arbitrary base, so test branches are assembled here with git's own merges and
 * pushed (docs/gitlab.md, "Test branches"). Fetches ask only for the refs a step needs; the
 * token goes to git in its environment, never on a command line or in a URL.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { SerialPerKey } from "../../lib/serial-per-key.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import { git, runGit } from "../local/git/git.js";
import { RepositoryGit } from "../local/git/repository-git.js";

/** Where a merge request's head is fetched to (GitLab keeps `refs/merge-requests/:iid/head`). */
export function mergeRequestRef(iid: number): string {
  return `refs/mr/${String(iid)}`;
}

/** Where a target branch is fetched to. */
export function remoteBranchRef(branch: string): string {
  return `refs/remotes/origin/${branch}`;
}

export interface MirrorOptions {
  /** The server's data directory (mirrors go under `gitlab/`). */
  dataDir: string;
  /** The instance's address. */
  url: string;
}

export class GitLabMirrors {
  /** Each mirror's git work, one command sequence at a time (refs are locked by git). */
  private readonly line = new SerialPerKey();
  private readonly created = new Set<string>();

  constructor(private readonly options: MirrorOptions) {}

  /** The mirror's git plumbing (commits are dated by the caller). */
  repository(repo: OwnedRepoRef): RepositoryGit {
    return new RepositoryGit(this.gitDir(repo));
  }

  /** Runs `work` alone on the repository's mirror, created first if need be. */
  exclusive<T>(repo: OwnedRepoRef, work: (git: RepositoryGit) => Promise<T>): Promise<T> {
    const dir = this.gitDir(repo);
    return this.line.run(dir, async () => {
      if (!this.created.has(dir)) {
        await mkdir(dir, { recursive: true });
        await git(["init", "--quiet", "--bare", dir]);
        this.created.add(dir);
      }
      return work(new RepositoryGit(dir));
    });
  }

  /** The commits of `shas` the mirror does not have. */
  async missingCommits(git: RepositoryGit, shas: readonly string[]): Promise<string[]> {
    const missing: string[] = [];
    for (const sha of shas) if ((await git.resolve(sha)) !== sha) missing.push(sha);
    return missing;
  }

  /** Fetches `sources` (`refs/heads/x`, `refs/merge-requests/1/head`) to `targets`. */
  async fetch(
    repo: OwnedRepoRef,
    token: string,
    refs: readonly { source: string; target: string }[],
  ): Promise<void> {
    const specs = refs.map(({ source, target }) => `+${source}:${target}`);
    await git(this.fetchArgs(repo, specs), { gitDir: this.gitDir(repo), env: authEnv(token) });
  }

  /**
   * Fetches commits by id (GitLab's Gitaly allows any commit in a want): one request after the
   * capabilities, no list of refs (protocol v2 lists none when only ids are asked). False when
   * GitLab refused; the caller fetches by ref instead.
   */
  async fetchCommits(repo: OwnedRepoRef, token: string, shas: readonly string[]): Promise<boolean> {
    const result = await runGit(this.fetchArgs(repo, shas), {
      gitDir: this.gitDir(repo),
      env: authEnv(token),
    });
    return result.code === 0;
  }

  /** A quiet fetch over protocol v2 of `wants` (refspecs or commit ids), no tags, no FETCH_HEAD. */
  private fetchArgs(repo: OwnedRepoRef, wants: readonly string[]): string[] {
    return [
      "-c",
      "protocol.version=2",
      "fetch",
      "--quiet",
      "--no-tags",
      "--no-write-fetch-head",
      this.remote(repo),
      ...wants,
    ];
  }

  /** Makes `branch` on GitLab point at `sha`, whatever it pointed at (test branches only). */
  async push(repo: OwnedRepoRef, token: string, sha: string, branch: string): Promise<void> {
    await git(
      [
        "push",
        "--quiet",
        "--force",
        "--no-verify",
        this.remote(repo),
        `${sha}:refs/heads/${branch}`,
      ],
      { gitDir: this.gitDir(repo), env: authEnv(token) },
    );
  }

  /** Deletes `branch` on GitLab; one already gone is fine. */
  async deleteBranch(repo: OwnedRepoRef, token: string, branch: string): Promise<void> {
    const result = await runGit(
      ["push", "--quiet", "--no-verify", this.remote(repo), `:refs/heads/${branch}`],
      { gitDir: this.gitDir(repo), env: authEnv(token) },
    );
    if (result.code !== 0 && !/remote ref does not exist/i.test(result.stderr)) {
      throw new Error(`could not delete ${branch} on GitLab: ${result.stderr.trim()}`);
    }
  }

  private remote(repo: OwnedRepoRef): string {
    return `${this.options.url}/${repo.owner}/${repo.name}.git`;
  }

  private gitDir(repo: OwnedRepoRef): string {
    // The path's parts are GitLab's path segments: letters, digits, `_`, `-`, `.` (never `..`).
    const parts = [...repo.owner.split("/"), `${repo.name}.git`];
    if (parts.some((part) => !/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(part) || part.includes(".."))) {
      throw new Error(`not a GitLab project path: ${repo.owner}/${repo.name}`);
    }
    return join(this.options.dataDir, "gitlab", repo.organizationId, ...parts);
  }
}

/** Git over HTTPS with a GitLab token: any user name, the token as password (Basic auth). */
function authEnv(token: string): Record<string, string> {
  const basic = Buffer.from(`oauth2:${token}`).toString("base64");
  return {
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: "http.extraHeader",
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
    GIT_CONFIG_KEY_1: "credential.helper",
    GIT_CONFIG_VALUE_1: "",
  };
}
