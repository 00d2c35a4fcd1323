import { type OwnedRepoRef } from "../organizations/repositories.js";
/**
 * What the local git host keeps about pull requests outside git (git holds the branches and
 * commits): their numbers, branches, title, author and state, and the merge the queue made.
 * Implemented over the database by `db/stores/local-pull-requests.ts`.
 */

export type LocalPullRequestState = "open" | "closed" | "merged";

export interface LocalPullRequestRecord {
  repositoryId: string;
  number: number;
  headBranch: string;
  baseBranch: string;
  title: string;
  author: string;
  /** What the pull request is about, in words (`""` when none was given). */
  description: string;
  state: LocalPullRequestState;
  /**
   * The commit the queue is landing on the base branch for this PR, written before the branch
   * moves: after a crash, a repeated merge finds it (already on the branch: done).
   */
  mergingSha: string | null;
  /** The commit that landed it, once merged. */
  mergedSha: string | null;
  createdAt: number;
  closedAt: number | null;
}

export interface LocalPullRequestRecords {
  find(repo: OwnedRepoRef, number: number): Promise<LocalPullRequestRecord | undefined>;
  /** Open PRs of a repository (the ref watcher compares their heads). */
  listOpen(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]>;
  /** PRs of a repository that the queue merged (their `mergedSha` set). */
  listMerged(repo: OwnedRepoRef): Promise<LocalPullRequestRecord[]>;
  /** Records the commit about to land (before the compare-and-swap of the base branch). */
  markMerging(repo: OwnedRepoRef, number: number, sha: string): Promise<void>;
  /** The PR landed as `sha`: state `merged`. */
  markMerged(repo: OwnedRepoRef, number: number, sha: string, now: number): Promise<void>;
}

export interface OpenPullRequest {
  repositoryId: string;
  headBranch: string;
  baseBranch: string;
  title: string;
  author: string;
  description?: string;
  now: number;
}

/** What the local host's API does with its pull requests (open, close, list). */
export interface LocalPullRequestManagement {
  /** Opens a pull request with the repository's next number. */
  open(input: OpenPullRequest): Promise<LocalPullRequestRecord>;
  /** Closes an open pull request; a closed or merged one is returned as it is. */
  close(
    repositoryId: string,
    number: number,
    now: number,
  ): Promise<LocalPullRequestRecord | undefined>;
  get(repositoryId: string, number: number): Promise<LocalPullRequestRecord | undefined>;
  /** A repository's pull requests, newest first, optionally in one state. */
  list(repositoryId: string, state?: LocalPullRequestState): Promise<LocalPullRequestRecord[]>;
}

/** The local pull requests in storage (implemented by `db/stores/local-pull-requests.ts`). */
export type LocalPullRequestStorage = LocalPullRequestRecords & LocalPullRequestManagement;
