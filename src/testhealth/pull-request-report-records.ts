/**
 * What the comment of test results on pull requests keeps in storage, and how it follows the
 * processed uploads that name a pull request: a cursor (by processing time) under a lease, and
 * per pull request what its comment shows. Implemented by `db/stores/pull-request-reports.ts`.
 */

/** A processed upload that names a pull request. */
export interface PullRequestUploadMark {
  repositoryId: string;
  prNumber: number;
  /** When it was processed (epoch ms). */
  processedAt: number;
}

/** The commit a pull request's latest processed upload tested, and when its first was made. */
export interface PullRequestHead {
  sha: string;
  /** When the pull request's first upload was made: tests first seen since are new in it. */
  firstUploadAt: number;
}

export interface PullRequestReport {
  repositoryId: string;
  prNumber: number;
  commentId: number | null;
  headSha: string | null;
  /** A digest of the comment's body as last written; null: none written. */
  presented: string | null;
  /** A creation whose outcome is unknown: look for the comment before making it again. */
  unsure: boolean;
  updatedAt: number;
}

export interface PullRequestReportRecords {
  /** Takes or renews the cursor's lease; undefined when another owner holds it. */
  claimCursor(
    name: string,
    owner: string,
    now: number,
    leaseUntil: number,
    start: number,
  ): Promise<number | undefined>;
  advanceCursor(name: string, owner: string, position: number, now: number): Promise<boolean>;
  releaseCursor(name: string, owner: string): Promise<void>;
  /** Uploads naming a pull request processed after `after`, by processing time. */
  processedAfter(after: number, limit: number): Promise<PullRequestUploadMark[]>;
  head(repositoryId: string, prNumber: number): Promise<PullRequestHead | undefined>;
  find(repositoryId: string, prNumber: number): Promise<PullRequestReport | undefined>;
  save(report: PullRequestReport): Promise<void>;
}
