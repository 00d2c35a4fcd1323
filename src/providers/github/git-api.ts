/**
 * The REST calls the GitHub git host makes, each through the installation that grants the
 * repository: conditional reads (a 304 costs nothing), pull requests, refs, and commits (kept
 * once seen: a commit never changes).
 */
import type { GitHubApp } from "./client.js";
import { statusOf } from "./conditional.js";
import type { GitHubRepositoryAccess } from "./repositories.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/** A pull request as GitHub's REST API answers it (what the queue reads of it). */
export interface PullPayload {
  number: number;
  title: string;
  state: string;
  draft?: boolean;
  merged: boolean;
  merge_commit_sha: string | null;
  mergeable: boolean | null;
  mergeable_state?: string;
  user: { login: string } | null;
  head: { sha: string; ref: string };
  base: { ref: string; sha: string };
}

/** A commit, as far as the queue needs it (commits never change: kept once seen). */
export interface CommitFacts {
  tree: string;
  parents: string[];
  /**
   * A merge this process made on a test branch (`POST /merges`): the base the branch was assembled
   * on, and the files the merge changed from its first parent (undefined: too many to list, or
   * not told).
   */
  assembled?: { base: string; files: readonly string[] | undefined };
}

/** How far a test branch is walked back to its base. */
const MAX_ASSEMBLY_DEPTH = 256;

/** GitHub's message for a failed call, without anything of the request. */
export function messageOf(error: unknown): string {
  const response = (error as { response?: { data?: unknown } } | null)?.response;
  const data = response?.data;
  if (data && typeof data === "object" && "message" in data) {
    const message = data.message;
    if (typeof message === "string") return message;
  }
  const status = statusOf(error);
  if (status !== undefined) return `HTTP ${String(status)}`;
  return error instanceof Error ? error.message : String(error);
}

/** The wait before a retry (none for 0). */
export const sleep = (ms: number) =>
  ms > 0 ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve();

/** The `owner` and `repo` parameters of a call about the repository. */
export function where(access: GitHubRepositoryAccess) {
  return { owner: access.owner, repo: access.name };
}

export class GitHubGitApi {
  /** Commits seen (answers of `POST /merges` and reads): immutable, so never read twice. */
  private readonly commits = new BoundedMap<string, CommitFacts>(4096);

  constructor(private readonly app: Pick<GitHubApp, "conditionalGet">) {}

  /**
   * A GET that repeats (ETag, a 304 costs nothing); undefined on 404 (and on the statuses in
   * `absentOn`: a permission the installation lacks reads as nothing to enforce; GitHub enforces).
   */
  async get<T>(
    access: GitHubRepositoryAccess,
    route: string,
    parameters: Record<string, unknown>,
    absentOn: number[] = [],
  ): Promise<T | undefined> {
    try {
      const answer = await this.app.conditionalGet<T>(access.installationId, route, {
        ...where(access),
        ...parameters,
      });
      return answer.data;
    } catch (error) {
      const status = statusOf(error);
      if (status === 404 || (status !== undefined && absentOn.includes(status))) return undefined;
      throw error;
    }
  }

  /** A pull request, by a conditional GET or (`fresh`: before a merge) a plain one. */
  async readPull(
    access: GitHubRepositoryAccess,
    number: number,
    conditional = true,
  ): Promise<PullPayload | undefined> {
    const route = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
    if (conditional) return this.get<PullPayload>(access, route, { pull_number: number });
    try {
      const response = await access.client.request(route, {
        ...where(access),
        pull_number: number,
      });
      return response.data;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async refHead(
    access: GitHubRepositoryAccess,
    branch: string,
    conditional: boolean,
  ): Promise<string | undefined> {
    const route = "GET /repos/{owner}/{repo}/git/ref/{ref}";
    const ref = `heads/${branch}`;
    if (conditional) {
      return (await this.get<{ object: { sha: string } }>(access, route, { ref }))?.object.sha;
    }
    try {
      const response = await access.client.request(route, { ...where(access), ref });
      return response.data.object.sha;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** What is known of a commit here, without asking GitHub. */
  known(sha: string): CommitFacts | undefined {
    return this.commits.get(sha);
  }

  /** Keeps what GitHub said of a commit it made (`POST /merges`), so it is not read. */
  rememberCommit(sha: string, facts: CommitFacts): void {
    this.commits.set(sha, facts);
  }

  /**
   * The files a test branch's commit `sha` changes from the base it was assembled on, from the
   * merges this process made there (`POST /merges` lists them); undefined when one of them is not
   * known here (another process, a restart, too many files).
   */
  assembledChanges(sha: string): Set<string> | undefined {
    const files = new Set<string>();
    let at = this.commits.get(sha);
    const base = at?.assembled?.base;
    if (base === undefined) return undefined;
    for (let step = 0; step < MAX_ASSEMBLY_DEPTH; step++) {
      const made = at?.assembled;
      if (made?.base !== base || made.files === undefined) return undefined;
      for (const file of made.files) files.add(file);
      const parent = at?.parents[0];
      if (parent === base) return files;
      at = parent === undefined ? undefined : this.commits.get(parent);
    }
    return undefined;
  }

  async commit(access: GitHubRepositoryAccess, sha: string): Promise<CommitFacts | undefined> {
    // A commit never changes: one seen (read, or made by `POST /merges`) is not read again.
    const known = this.commits.get(sha);
    if (known) return known;
    const commit = await this.get<{ tree: { sha: string }; parents: { sha: string }[] }>(
      access,
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { commit_sha: sha },
    );
    if (!commit) return undefined;
    const facts = { tree: commit.tree.sha, parents: commit.parents.map((p) => p.sha) };
    this.commits.set(sha, facts);
    return facts;
  }

  /** Moves a branch to `sha` (a forced update), creating it the first time. */
  async moveRef(access: GitHubRepositoryAccess, branch: string, sha: string): Promise<void> {
    try {
      await access.client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...where(access),
        ref: `heads/${branch}`,
        sha,
        force: true,
      });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 422 && status !== 404) throw error;
      await this.putRef(access, branch, sha);
    }
  }

  /** Creates a branch at `sha`, or moves one left over from an earlier attempt there. */
  async putRef(access: GitHubRepositoryAccess, branch: string, sha: string): Promise<void> {
    try {
      await access.client.request("POST /repos/{owner}/{repo}/git/refs", {
        ...where(access),
        ref: `refs/heads/${branch}`,
        sha,
      });
    } catch (error) {
      if (statusOf(error) !== 422 || !/already exists/i.test(messageOf(error))) throw error;
      await access.client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...where(access),
        ref: `heads/${branch}`,
        sha,
        force: true,
      });
    }
  }

  /** Deletes a branch; one that is gone already is fine. */
  async dropRef(access: GitHubRepositoryAccess, branch: string): Promise<void> {
    try {
      await access.client.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
        ...where(access),
        ref: `heads/${branch}`,
      });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 422) throw error;
    }
  }
}
