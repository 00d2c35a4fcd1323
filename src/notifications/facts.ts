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

export type EventFacts = TestFacts | QueueFacts | { kind: "ping"; at: number };
