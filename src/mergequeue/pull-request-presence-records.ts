/**
 * What a git host's presence on pull requests (a sticky comment, a check run, state labels) keeps
 * in storage, and how it follows the queues' transitions durably: a cursor over `mq_transitions`
 * held under a lease (one worker at a time), and per pull request what was last shown there.
 * Implemented by `db/stores/pr-presence.ts`; used by the GitHub and GitLab providers.
 */

/** A transition, as much as the presence needs to know which pull request changed. */
export interface TransitionMark {
  /** `mq_transitions.id`: increasing in insertion order. */
  id: number;
  queueId: string;
  prNumber: number;
  /** When the transition happened (epoch ms). */
  at: number;
}

/** What was last shown on one pull request for one queue. */
export interface PresenceRecord {
  queueId: string;
  prNumber: number;
  /** The sticky comment's id; null until it was created or found. */
  commentId: number | null;
  /** The check run last posted, and the head commit it is on. */
  checkRunId: number | null;
  checkSha: string | null;
  /** The state label last added (removed when the state changes); null: none. */
  stateLabel: string | null;
  /** A digest of everything last shown: equal means there is nothing to change. */
  presented: string | null;
  updatedAt: number;
}

export interface PresenceRecords {
  /**
   * Takes or renews the cursor's lease for `owner` until `leaseUntil` (when free, expired or
   * already its own) and answers the cursor's position; undefined when another owner holds it.
   * A cursor that does not exist yet starts after the latest transition stored now.
   */
  claimCursor(
    name: string,
    owner: string,
    now: number,
    leaseUntil: number,
  ): Promise<number | undefined>;
  /** Moves the cursor, only while `owner` holds its lease; false when it does not any more. */
  advanceCursor(name: string, owner: string, lastId: number, now: number): Promise<boolean>;
  /** Lets the lease go (a stopping worker), so that another process takes over at once. */
  releaseCursor(name: string, owner: string): Promise<void>;
  /** Transitions after `afterId`, oldest first, with the pull request each is about. */
  transitionsAfter(afterId: number, limit: number): Promise<TransitionMark[]>;
  find(queueId: string, prNumber: number): Promise<PresenceRecord | undefined>;
  save(record: PresenceRecord): Promise<void>;
}
