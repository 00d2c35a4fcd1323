/**
 * The merge queue's vocabulary and the planner's plain data: pull-request entries, test runs,
 * the queue's state, the events it reacts to and the decisions it takes. No I/O here; everything
 * is JSON-serializable so that the state can be stored and replayed.
 */
import type { QueueConfiguration } from "./settings.js";
import type { VerdictRecord } from "./speculation.js";

export const PR_STATES = [
  "not_ready",
  "pending",
  "testing",
  "tests_passed",
  "pending_failure",
  "merged",
  "failed",
  "cancelled",
] as const;
export type PrState = (typeof PR_STATES)[number];
export const TERMINAL_PR_STATES: readonly PrState[] = ["merged", "failed", "cancelled"];
export const isTerminal = (state: PrState): boolean => TERMINAL_PR_STATES.includes(state);

/**
 * Why a pull request changed state. Trunk's vocabulary where it has a word, ours where it has none.
 */
export const TRANSITION_REASONS = [
  // entering and leaving the queue
  "submitted",
  "resubmitted",
  "ready",
  "not_mergeable",
  /** It conflicts with its target branch (the files are in the detail): its author must act. */
  "conflicts_with_base",
  /** The host requires approving reviews the pull request lacks (GitHub: branch protection). */
  "review_required",
  "base_branch_mismatch",
  "awaiting_impacted_targets",
  "not_ready_timeout",
  // testing
  "test_run_started",
  "tests_passed",
  "restarted_by_user",
  "restarted_on_new_base",
  "preempted_by_urgent",
  "prerequisite_merge_item_failed",
  "prerequisite_merge_item_removed",
  "retried_flaky_failure",
  "bisection_passed",
  "bisection_inconclusive",
  "bisection_started",
  "settings_changed",
  /** A PR it is stacked on came into the queue ahead of it: its run included neither. */
  "stacked_pr_ahead",
  // failures
  "failing_required_check",
  "test_run_timeout",
  "merge_conflict",
  "no_required_statuses",
  "config_parsing_failure",
  "merge_failed",
  // merges
  "merged_by_queue",
  "merged_optimistically",
  "merged_directly",
  "merged_manually",
  /** Every commit of the PR landed inside another PR the queue merged (stacked on it). */
  "merged_through_stack",
  // cancellations
  "cancelled_by_user",
  "pr_closed",
  "pr_pushed_to",
  "pr_draft",
  "pr_base_branch_changed",
] as const;
export type TransitionReason = (typeof TRANSITION_REASONS)[number];

/** Who caused a transition: a user (by name or token), the queue itself, or the git host. */
export type Actor = { kind: "user"; name: string } | { kind: "queue" } | { kind: "git_host" };

export const QUEUE_ACTOR: Actor = Object.freeze({ kind: "queue" });

export type Mergeability = "unspecified" | "in_progress" | "mergeable" | "not_mergeable";

/** `"ALL"`: depends on everything; `[]`: on nothing. */
export type ImpactedTargets = "ALL" | string[];

/** What the git host says about a pull request; refreshed by `pr_updated` events. */
export interface PullRequestInfo {
  number: number;
  title: string;
  author: string;
  headSha: string;
  headBranch: string;
  /** The branch the PR wants to merge into. */
  baseBranch: string;
  mergeability: Mergeability;
  /** For direct merge: the PR contains the target branch's current head. */
  upToDate: boolean;
  /** For direct merge: the PR's own required checks passed at `headSha`. */
  checksPassed: boolean;
  state: "open" | "closed" | "merged";
  draft: boolean;
  /**
   * Open pull requests into the same branch whose head commit this one's head contains (it is
   * stacked on them), each with the head it contains. Absent: the host does not tell.
   */
  contains?: { number: number; headSha: string }[];
  /**
   * The files it conflicts on with its target branch, when it is not mergeable and the host can
   * tell (the built-in git host can; GitHub does not say).
   */
  conflicts?: readonly string[];
  /**
   * The target branch requires approving reviews this pull request lacks (it is not ready until
   * they are given: `review_required`). Absent: none lacking, or the host does not require any.
   */
  reviewRequired?: boolean;
}

/** One submission of a pull request to a queue, from submit until merged, failed or cancelled. */
export interface Entry {
  id: string;
  pr: PullRequestInfo;
  state: PrState;
  stateChangedAt: number;
  submittedAt: number;
  /** When the entry last became ready (pending); time in queue counts from here. */
  readyAt: number | null;
  /** Submission order, for first come, first served within a priority. */
  seq: number;
  priorityValue: number;
  /** Set when the submission named no priority. */
  usedDefaultPriority: boolean;
  noBatch: boolean;
  /** Targets uploaded for `pr.headSha` (parallel mode); null until uploaded. */
  impactedTargets: ImpactedTargets | null;
  /** The run that currently covers this entry as part of its unit, if any. */
  runId: string | null;
  /** The unit this entry was tested in last: the entries tested together, in order. */
  unit: string[];
  /** The failed run that put the entry in `pending_failure`, and what failed. */
  failure: {
    runId: string;
    reason: TransitionReason;
    checks: string[];
    /** What went wrong, in words (the failing checks, or the conflict and its files). */
    detail?: string | null;
  } | null;
  /** Same-combination retries used for failures known to be flaky (at most one). */
  flakyRetries: number;
  /**
   * Localization bookkeeping while a failed batch is searched for its culprit: the group, and
   * whether the queue presumes this entry good (it is then in flight on the prefix run that will
   * clear it, and runs are stacked on it).
   */
  bisection: { groupId: string; presumedGood?: boolean } | null;
  /** Has been tested at its position at least once (keeps its place ahead of later arrivals). */
  positioned: boolean;
  /** Why a pending entry is not being tested yet, when the planner holds it on purpose. */
  waiting?: WaitingReason | null;
  /** Set while a not-ready entry waits for approving reviews (its timeline said so once). */
  awaitingReview?: boolean;
  /** The conflict with the target branch its timeline last said (its detail), while held by one. */
  conflictShown?: string;
}

/**
 * What a pending entry waits for, as data a presenter can put in words ("batch forming: 1 of 3,
 * starts by 15:19 at the latest").
 */
export type WaitingReason =
  /** `startsBy`: epoch ms at which the batch starts at the latest (its wait ends). */
  | { kind: "batch_forming"; have: number; need: number; startsBy: number }
  /** Behind a batch under bisection (these PRs), which keeps its place in the order. */
  | { kind: "bisection_ahead"; prNumbers: number[] };

export type RunKind = "main" | "bisection";
export type RunStatus = "running" | "passed" | "failed" | "cancelled";

/**
 * One CI run: the base commit plus pull requests merged on top of it in order. `unit` are the
 * entries the run decides about; `ahead` are entries it includes because they are ahead of them.
 */
export interface TestRun {
  id: string;
  kind: RunKind;
  status: RunStatus;
  baseSha: string;
  /** Every PR merged onto the base, in order: `ahead` first, then `unit`. */
  prs: { entryId: string; number: number; headSha: string }[];
  ahead: string[];
  unit: string[];
  startedAt: number;
  finishedAt: number | null;
  /** Bisection group this run belongs to. */
  bisectionGroup: string | null;
  failingChecks: string[];
  /** Why it failed, when it did (absent in snapshots stored before this field existed). */
  failure?: { reason: TransitionReason; detail: string | null };
  attempt: number;
  /**
   * A localization run runs first what failed in the batch run `fromRunId`: these checks, and
   * within them the tests that failed there (the driver finds them from the run's test results).
   */
  failFirst?: { fromRunId: string; checks: string[] };
  /**
   * The lowest number no other running run of the queue holds when this one started: a host may
   * publish the run on a branch kept per slot and moved by the next run in it (absent in
   * snapshots stored before this field existed).
   */
  slot?: number;
}

/** A prefix of a failed batch under test: its first `length` pull requests on what is ahead. */
export interface LocalizationPrefix {
  length: number;
  runId: string;
}

/**
 * A failed batch whose failing pull request is being localized (ADR 0034): its prefixes are tested
 * at once on top of what is ahead of it; the shortest failing prefix whose predecessor passed ends
 * in the culprit. Entries before `passed` have left the group cleared; the group is decided when
 * `failsAt − passed` is 1.
 */
export interface BisectionGroup {
  id: string;
  /** The failed run that started it (the whole batch: the longest failing prefix). */
  runId: string;
  /** The batch, in queue order. */
  entries: string[];
  /** How many leading entries a passed prefix cleared, and that run. */
  passed: number;
  passedRunId: string | null;
  /** The shortest prefix known to fail, and the run that showed it. */
  failsAt: number;
  failedRunId: string;
  /** The prefixes being tested now. */
  prefixes: LocalizationPrefix[];
  /** When the current round of prefixes started (null: none started yet). */
  roundStartedAt: number | null;
  /**
   * Set while the queue presumes `entries[failsAt − 1]` is the culprit (its shorter prefix has not
   * failed within the window failing runs take): the lane is refilled behind it, nothing merges
   * on the presumption, and runs built on it are invalidated if a shorter prefix fails.
   */
  presumedAt: number | null;
}

/**
 * The target branch as the queue knows it: its head, and the queue's own merges since the last
 * change that came from elsewhere (so that a run's base can be related to the head).
 */
export interface BaseLineage {
  headSha: string;
  /** Oldest first: each queue merge, the head it produced and the PR's impacted targets. */
  merges: { entryId: string; number: number; sha: string; targets: ImpactedTargets }[];
  /** The head before the first of `merges`. */
  anchorSha: string;
}

/** Everything the planner knows about one queue. */
export interface QueueSnapshot {
  /** The shape's version (`snapshot.ts` upgrades older ones when they are loaded). */
  version: number;
  queueId: string;
  targetBranch: string;
  configuration: QueueConfiguration;
  base: BaseLineage;
  /** Every entry that is not terminal, in no particular order. */
  entries: Record<string, Entry>;
  /** Queued entries by PR number (as a string key). */
  prIndex: Record<string, string>;
  /** Impacted targets uploaded for a PR commit not (yet) queued, by PR number. */
  uploadedTargets: Record<string, { headSha: string; targets: ImpactedTargets; at: number }>;
  /** Entries in `not_ready`, oldest first (their timeouts). */
  notReady: string[];
  /** Queue order of entries that are ready (pending or further), front first. */
  order: string[];
  runs: Record<string, TestRun>;
  bisections: Record<string, BisectionGroup>;
  /** The merge in flight (merges happen one at a time, in order), and what cleared it. */
  merging: {
    entryId: string;
    runId: string | null;
    reason: "merged_by_queue" | "merged_optimistically" | "merged_directly";
  } | null;
  nextSeq: number;
  /**
   * How long the queue's failing localization runs took, most recent last (at most 20): the
   * window after which it presumes the culprit (absent in snapshots stored before it existed).
   */
  failingRunMs?: number[];
  /** Counter for ids the planner assigns (runs, entries, bisection groups). */
  nextId: number;
  /**
   * The queue's recent verdicts, from which `speculationThresholdPercent` estimates how likely
   * a run is to be used.
   */
  verdicts: VerdictRecord;
  /**
   * Heads of stacked-on pull requests that landed inside another PR the queue merged, by PR
   * number: a later submission of that head is merged, not tested.
   */
  landedThrough: Record<string, { headSha: string; by: number }>;
  /** Entries that carry a `waiting` reason (so that clearing them needs no scan). */
  waiting?: string[];
}

/** A PR number plus the name of the submitter, for transitions. */
interface Command {
  actor: Actor;
}

export type QueueEvent =
  | (Command & {
      type: "submit";
      pr: PullRequestInfo;
      /** Parsed priority, or null for the default. */
      priority: number | null;
      noBatch: boolean;
      /** The new entry's id (assigned by the driver, so that replays give the same ids). */
      entryId?: string;
    })
  | (Command & { type: "cancel"; prNumber: number })
  | (Command & { type: "restart"; prNumber: number })
  | { type: "set_impacted_targets"; prNumber: number; headSha: string; targets: ImpactedTargets }
  | {
      type: "run_finished";
      runId: string;
      outcome: "passed" | "failed";
      failingChecks: string[];
      /** The reason of a failure (default `failing_required_check`). */
      reason?: TransitionReason;
      /** Every failure was a known flaky or quarantined test: worth one retry. */
      flakyOnly?: boolean;
      /** What went wrong, in words, when the failing checks do not say it (a conflict). */
      detail?: string;
      /**
       * The test branch could not be built: the first PR in the run's order that does not apply
       * onto the base and the PRs ahead of it, the PRs among those it conflicts with (absent:
       * unknown, all of them; empty: the target branch itself) and the files.
       */
      conflict?: {
        prNumber: number;
        files: string[];
        conflictsWith?: number[];
        /** PRs already on the target that it conflicts with (it does not apply onto the base). */
        landedConflicts?: number[];
      };
    }
  | { type: "merge_finished"; entryId: string; newHeadSha: string }
  | { type: "merge_failed"; entryId: string; reason: TransitionReason; message: string }
  | { type: "pr_updated"; pr: PullRequestInfo }
  | { type: "base_pushed"; headSha: string }
  | { type: "settings_changed"; configuration: QueueConfiguration }
  | { type: "tick" };

export type Decision =
  | { type: "start_run"; run: TestRun }
  | { type: "cancel_run"; runId: string; reason: TransitionReason }
  | {
      type: "merge";
      entryId: string;
      prNumber: number;
      headSha: string;
      /** The target branch must still be at this commit (compare-and-swap). */
      expectedBaseSha: string;
      method: QueueConfiguration["mergeMethod"];
      /** The passed run that cleared this merge. */
      runId: string | null;
      reason: "merged_by_queue" | "merged_optimistically" | "merged_directly";
    }
  | {
      type: "transition";
      entryId: string;
      prNumber: number;
      from: PrState | null;
      to: PrState;
      reason: TransitionReason;
      actor: Actor;
      runId: string | null;
      detail: string | null;
    }
  | { type: "queue_state"; configuration: QueueConfiguration };

export interface PlanResult {
  snapshot: QueueSnapshot;
  decisions: Decision[];
  /** When the planner next needs a `tick` (timeouts, batching waits); null: no timer. */
  wakeAt: number | null;
  /** Entries that concluded in this plan, as they were last (they have left the snapshot). */
  concluded: Entry[];
  /** Set when a command was refused (nothing changed): the API's error code and sentence. */
  rejection: { code: "not_found" | "conflict"; message: string } | null;
}

// ---- priorities ---------------------------------------------------------------------------------

export const PRIORITY_NAMES = { urgent: 0, high: 10, medium: 100, low: 200 } as const;
export type PriorityName = keyof typeof PRIORITY_NAMES;
export const DEFAULT_PRIORITY: PriorityName = "medium";
export const URGENT_PRIORITY = 0;

/** A name (any case) or a whole number 0..255; undefined when it is neither. */
export function parsePriority(input: string | number): number | undefined {
  if (typeof input === "number") {
    return Number.isInteger(input) && input >= 0 && input <= 255 ? input : undefined;
  }
  const key = input.trim().toLowerCase();
  if (key in PRIORITY_NAMES) return PRIORITY_NAMES[key as PriorityName];
  if (/^\d{1,3}$/.test(key)) return parsePriority(Number(key));
  return undefined;
}

/** The named level nearest a value; ties go to the more urgent name. */
export function priorityName(value: number): PriorityName {
  let best: PriorityName = "urgent";
  for (const [name, level] of Object.entries(PRIORITY_NAMES) as [PriorityName, number][]) {
    if (Math.abs(level - value) < Math.abs(PRIORITY_NAMES[best] - value)) best = name;
  }
  return best;
}

/**
 * A request from the API or CLI, stored in the queue's command inbox until its driver applies it.
 * The driver turns it into a planner event (looking the pull request up on the git host).
 */
export type QueueCommand =
  | { type: "submit"; prNumber: number; priority: number | null; noBatch: boolean; actor: Actor }
  | { type: "cancel"; prNumber: number; actor: Actor }
  | { type: "restart"; prNumber: number; actor: Actor }
  | { type: "set_impacted_targets"; prNumber: number; headSha: string; targets: ImpactedTargets }
  /** The queue's settings changed in storage; the driver reloads them. */
  | { type: "reload_settings" }
  /** The git host saw a PR change (pushed to, closed, retargeted); the driver reads it again. */
  | { type: "pr_changed"; prNumber: number }
  /**
   * The git host saw the target branch move (to `headSha`, when it said); the driver reads its
   * head again, unless the queue's base is already there (its own merge, heard of again).
   */
  | { type: "branch_moved"; headSha?: string };
