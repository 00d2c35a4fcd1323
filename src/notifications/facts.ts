/** What a change knew when it emitted its events (stored with them), and the queue's actions. */

export const PULL_REQUEST_ACTIONS = [
  "submitted",
  "queued",
  "testing",
  "pending_failure",
  "failed",
  "canceled",
  "merged",
] as const;
export type PullRequestAction = (typeof PULL_REQUEST_ACTIONS)[number];

/** What a test-health change knew, stored with its event. */
export type TestFacts =
  | {
      kind: "test_status";
      testKey: number;
      previous: string;
      current: string;
      reason: string;
      at: number;
    }
  | {
      kind: "test_override";
      testKey: number;
      previous: string;
      updated: string;
      actor: string | null;
      reason: string | null;
      at: number;
    };

/** What a merge-queue transition knew, stored with its event. */
export interface QueueFacts {
  kind: "queue_transition";
  queueId: string;
  entryId: string;
  prNumber: number;
  from: string | null;
  to: string;
  reason: string;
  detail: string | null;
  runId: string | null;
  actorKind: string;
  at: number;
}

/** The batch actions: Trunk's `pull_request_batch.*` that a batch's run reaches. */
export const BATCH_ACTIONS = [
  "testing",
  "pending_failure",
  "failed",
  "canceled",
  "merged",
] as const;
export type BatchAction = (typeof BATCH_ACTIONS)[number];

/** What a step knew of a batch (a run deciding about several pull requests) reaching a state. */
export interface BatchFacts {
  kind: "batch_transition";
  queueId: string;
  runId: string;
  /** The pull requests of this step that reached the state (Trunk's `pr_numbers`). */
  prNumbers: number[];
  /** Every pull request the run decides about (`pr_numbers_in_batch`). */
  batchPrNumbers: number[];
  to: string;
  reason: string;
  at: number;
}

/** A queue's own state: paused, drained, running again; its host down or back. */
export type QueueStateFacts =
  | {
      kind: "queue_state";
      queueId: string;
      previous: string;
      state: string;
      actor: string | null;
      at: number;
    }
  | {
      kind: "queue_host";
      queueId: string;
      blocked: boolean;
      /** Why (`host_not_connected`, `unavailable`, `rate_limited`); null when unblocked. */
      cause: string | null;
      message: string | null;
      since: number;
      at: number;
    };

export type EventFacts =
  TestFacts | QueueFacts | BatchFacts | QueueStateFacts | { kind: "ping"; at: number };
