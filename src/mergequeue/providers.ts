/**
 * What the queue driver needs from the outside world, implemented by the local git host and
 * built-in runner (one machine), by GitHub, and by the simulator on virtual time: a change here
 * must fit all of them.
 */
import type { OwnedRepoRef } from "../organizations/repositories.js";
import type { MergeMethod } from "./settings.js";
import type { PullRequestInfo, TransitionReason } from "./model.js";

export interface TestBranchRequest {
  repo: OwnedRepoRef;
  targetBranch: string;
  runId: string;
  /** The commit the run is based on (the target branch's head when planned). */
  baseSha: string;
  /** Merged onto the base in this order. */
  prs: { number: number; headSha: string }[];
  /**
   * The run's slot among the queue's running runs, when the run needs no branch of its own (no
   * pull request is opened for it): a host may then publish it on the slot's branch, kept and
   * moved by the next run in the slot, instead of creating and deleting a branch per run.
   */
  slot?: number;
}

export type TestBranchResult =
  | { ok: true; branch: string; sha: string }
  | {
      ok: false;
      reason: "merge_conflict";
      /** The PR that could not be merged onto the others, and where. */
      prNumber: number;
      files: string[];
      /**
       * The PRs ahead of it in the request that it conflicts with; empty: it conflicts with the
       * base itself; absent: the host cannot tell (the planner then names every PR ahead).
       */
      conflictsWith?: number[];
      /**
       * When it conflicts with the base itself: the PRs already landed on the target whose
       * changes it conflicts with, where the host can tell.
       */
      landedConflicts?: number[];
      message: string;
    };

export interface MergeRequest {
  repo: OwnedRepoRef;
  targetBranch: string;
  prNumber: number;
  /** The PR must still be at this commit (GitHub: `sha` of `PUT /pulls/{n}/merge`). */
  headSha: string;
  /** The target branch must still be here (a compare-and-swap where the host can do one). */
  expectedBaseSha: string;
  method: MergeMethod;
  title: string;
  /**
   * The head of the test branch of the run that cleared this merge, when a run did: the PR lands
   * as a commit whose tree is that branch's tree up to and including this PR (what passed with
   * it), never a fresh merge. Without it (a direct merge) the host merges the head onto the base.
   */
  testedSha?: string;
}

export type MergeResult =
  | { ok: true; sha: string }
  | {
      ok: false;
      /** `base_moved`/`head_moved`: retry after re-reading; the rest fail the entry. */
      reason: "base_moved" | "head_moved" | "merge_conflict" | "rejected";
      message: string;
      /**
       * The pull request landed, but not as it was tested (its tree differs from the tested
       * one): the queue is paused until someone looks. Only with `rejected`.
       */
      pauseQueue?: boolean;
    };

/** What a pull request read needs beyond its state and mergeability. */
export interface PullRequestReadOptions {
  /**
   * Whether `upToDate` and `checksPassed` are needed (only a direct merge uses them); without it
   * a host may leave both false and spare the reads they cost.
   */
  readiness?: boolean;
}

/**
 * A git host: reads pull requests and branches, builds test branches, merges. Every mutating call
 * is idempotent for the same arguments (a retried merge of an already merged PR reports success
 * with the commit it produced), so the driver may repeat a step after a crash.
 */
export interface GitHost {
  pullRequest(
    repo: OwnedRepoRef,
    number: number,
    options?: PullRequestReadOptions,
  ): Promise<PullRequestInfo | undefined>;
  branchHead(repo: OwnedRepoRef, branch: string): Promise<string | undefined>;
  createTestBranch(request: TestBranchRequest): Promise<TestBranchResult>;
  deleteTestBranch(repo: OwnedRepoRef, branch: string): Promise<void>;
  merge(request: MergeRequest): Promise<MergeResult>;
  /** A file's contents at a commit (`.mainline.yml`, `.trunk/trunk.yaml`), undefined if absent. */
  readFile(repo: OwnedRepoRef, sha: string, path: string): Promise<string | undefined>;
  /**
   * The host's rate limit holding every request for the repository now, if any (GitHub's): the
   * queue's state shows it. Hosts without rate limits leave it out.
   */
  rateLimit?(repo: OwnedRepoRef): Promise<HostRateLimit | undefined>;
}

/** A rate limit of a git host in force: since and until when (ms since the epoch). */
export interface HostRateLimit {
  since: number;
  until: number;
  /** In words, e.g. "GitHub's secondary rate limit". */
  message: string;
}

export interface CiRunRequest {
  repo: OwnedRepoRef;
  queueId: string;
  runId: string;
  targetBranch: string;
  testBranch: string;
  sha: string;
  prNumbers: number[];
  /**
   * The one pull request the run decides about (its unit is one pull request; the rest are ahead
   * of it): a test failing in the run fails it. Absent for a batch of several.
   */
  decidesPrNumber?: number;
  /** The queue's override; null: the CI decides from the repository's config. */
  requiredStatuses: string[] | null;
  /**
   * A localization run (a prefix of a failed batch): what failed in the batch run `fromRunId`
   * is run first. `checks` failed there; the tests that failed in them are those test health
   * knows of the commit it tested (`sha`, null when it was never built), from the uploads since
   * it started (`since`, epoch ms). Absent for any other run.
   */
  failFirst?: FailFirstRequest;
}

/** What a CI needs to run a failed run's failures first (see `CiRunRequest.failFirst`). */
export interface FailFirstRequest {
  fromRunId: string;
  checks: string[];
  /** The commit the failed run tested; null when its test branch was never built. */
  sha: string | null;
  /** Its test branch (null: never built). */
  testBranch: string | null;
  /** When it started. */
  since: number;
}

/** Where a run's required statuses came from (the precedence of `required-statuses.ts`). */
export type RequiredStatusesSource =
  | "merge_instance"
  | "mainline_config"
  | "trunk_config"
  | "branch_protection"
  /** `.mainline.yml` names none: every check it defines. */
  | "mainline_checks";

export type CheckConclusion = "success" | "failure" | "cancelled" | "timed_out" | "skipped";

export interface CiRunResult {
  queueId: string;
  runId: string;
  checks: { name: string; conclusion: CheckConclusion; url?: string }[];
  /** Set when the run could not even start (bad config, no required statuses). */
  error?: { reason: TransitionReason; message: string };
  /** Every failing test was known flaky or quarantined (from test health). */
  flakyOnly?: boolean;
  /** The required statuses the CI resolved, when the queue did not override them. */
  requiredStatuses?: { statuses: string[]; source: RequiredStatusesSource };
}

/**
 * Takes a run's result; resolves once the result is stored (the driver's inbox), so that a CI
 * that waits for it before forgetting the run loses nothing in a crash.
 */
export type CiResultListener = (result: CiRunResult) => void | Promise<void>;

/**
 * A CI system. Results arrive through the listener, possibly duplicated or out of order; the
 * driver ignores results of runs it no longer waits for.
 */
export interface CiProvider {
  start(request: CiRunRequest): Promise<void>;
  cancel(queueId: string, runId: string): Promise<void>;
  onResult(listener: CiResultListener): () => void;
}

/**
 * Whether the required checks of a finished run all passed, and which did not. A CI decides a run
 * as soon as one required check fails, stopping (or not waiting for) the others: when one failed
 * or timed out, those are the failing ones; a required check cancelled or never reported fails
 * the run too, but is named only when nothing else is.
 */
export function judgeChecks(
  required: string[],
  checks: CiRunResult["checks"],
): { passed: boolean; failing: string[] } {
  const failed: string[] = [];
  const unfinished: string[] = [];
  for (const name of required) {
    const check = checks.find((c) => c.name === name);
    if (check?.conclusion === "success" || check?.conclusion === "skipped") continue;
    if (check?.conclusion === "failure" || check?.conclusion === "timed_out") failed.push(name);
    else unfinished.push(name);
  }
  const failing = failed.length > 0 ? failed : unfinished;
  return { passed: failing.length === 0, failing };
}
