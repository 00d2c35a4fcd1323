/**
 * Why a pull request failed in the queue, answered without a click: the reason in words, the
 * checks that failed in the run that failed it, the tests that failed there (from the run's JUnit,
 * as test health ingested it) each with whose red it is, and the last lines of the first failing
 * check's log where the CI keeps one (the built-in runner). The pull request's page, `pr status`,
 * `getSubmittedPullRequest` and the comment on GitHub all show this one answer.
 */
import type { OwnedRepoRef } from "../organizations/repositories.js";
import type { CiFailures, ExplainedTest } from "../testhealth/ci-failures.js";
import { describeReason } from "./reasons.js";
import type { EntryRecord, RunRecord, RuntimeRecords, TransitionRecord } from "./records.js";

/** At most this many failing tests are named (the count says how many more). */
export const EXPLAINED_TEST_LIMIT = 50;
/** The log excerpt: the last lines of the failing check's log. */
export const LOG_EXCERPT_LINES = 30;
/** A line of the excerpt longer than this is cut (a minified bundle, a base64 blob). */
const LOG_LINE_CHARS = 400;
/** Uploads made this long before the run started may still be its own (a CI job's clock). */
const UPLOAD_SLACK_MS = 60_000;

export interface FailedCheck {
  name: string;
  conclusion: string;
  url: string | null;
}

export interface LogExcerpt {
  check: string;
  /** The last lines, oldest first, without terminal colour codes. */
  lines: string[];
  /** Lines before these were left out. */
  truncated: boolean;
}

export interface PullRequestFailure {
  /** The reason code of the transition that failed it, and that reason in words. */
  reason: string;
  message: string;
  detail: string | null;
  at: number;
  /** The run that failed it; null when no run did (a conflict, a closed pull request). */
  runId: string | null;
  failedChecks: FailedCheck[];
  /** The tests that failed in that run, the ones most likely the pull request's own first. */
  tests: ExplainedTest[];
  /** More tests failed than are named. */
  testsTruncated: boolean;
  /** Test results of the run are still being processed: more may follow. */
  testsPending: boolean;
  /** Test result uploads of the run that were processed (0: the CI uploaded none). */
  uploads: number;
  log: LogExcerpt | null;
}

export interface FailureExplainerDeps {
  /** Test health's view of the run's failures; absent: no test is named. */
  failures?: Pick<CiFailures, "explain"> | undefined;
  /** Where `explainEntry` reads an entry's transitions and the run that failed it. */
  runtime?: Pick<RuntimeRecords, "transitions" | "run"> | undefined;
  /** A check's log, where Mainline's own CI ran it; undefined when it has none. */
  checkLog?:
    ((queueId: string, runId: string, check: string) => Promise<string | undefined>) | undefined;
}

const passed = (conclusion: string | null) =>
  conclusion === null || ["success", "neutral", "skipped"].includes(conclusion);

// eslint-disable-next-line no-control-regex -- terminal colour codes are control characters
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** The last `count` non-empty-at-the-end lines of a log, uncoloured, each cut to a readable width. */
export function logTail(text: string, count = LOG_EXCERPT_LINES): Omit<LogExcerpt, "check"> {
  const lines = text.replace(ANSI, "").replace(/\r\n?/g, "\n").split("\n");
  while (lines.length > 0 && lines[lines.length - 1]?.trim() === "") lines.pop();
  const tail = lines
    .slice(-count)
    .map((line) => (line.length > LOG_LINE_CHARS ? `${line.slice(0, LOG_LINE_CHARS)}…` : line));
  return { lines: tail, truncated: lines.length > count };
}

export class FailureExplainer {
  constructor(private readonly deps: FailureExplainerDeps) {}

  /**
   * Why the entry failed; null unless it is failed or failed behind pull requests ahead
   * (`pending_failure`). `transitions` are the entry's (any submission's: its own are picked);
   * `runs` the runs they name, as far as they were read.
   */
  async explain(
    repo: OwnedRepoRef,
    entry: EntryRecord,
    transitions: readonly TransitionRecord[],
    runs: readonly RunRecord[],
  ): Promise<PullRequestFailure | null> {
    if (entry.state !== "failed" && entry.state !== "pending_failure") return null;
    const last = [...transitions]
      .reverse()
      .find((t) => t.entryId === entry.id && t.to === entry.state);
    if (!last) return null;
    const run = last.runId === null ? undefined : runs.find((r) => r.id === last.runId);
    return this.explainTransition(repo, last, run, entry.submittedAt);
  }

  /** Why one transition to failed or pending_failure happened, with the run it names. */
  async explainTransition(
    repo: OwnedRepoRef,
    last: Pick<TransitionRecord, "reason" | "detail" | "at" | "runId">,
    run: RunRecord | undefined,
    submittedAt: number,
  ): Promise<PullRequestFailure> {
    const failedChecks = (run?.checks ?? [])
      .filter((check) => !passed(check.conclusion))
      .map((check) => ({ name: check.name, conclusion: check.conclusion ?? "", url: check.url }));
    const [tests, log] = await Promise.all([
      this.tests(repo, submittedAt, run),
      this.log(run, failedChecks),
    ]);
    return {
      reason: last.reason,
      message: describeReason(last.reason),
      detail: last.detail,
      at: last.at,
      runId: last.runId,
      failedChecks,
      ...tests,
      log,
    };
  }

  /** `explain`, reading the entry's transitions and the run that failed it first. */
  async explainEntry(repo: OwnedRepoRef, entry: EntryRecord): Promise<PullRequestFailure | null> {
    const { runtime } = this.deps;
    if (!runtime || (entry.state !== "failed" && entry.state !== "pending_failure")) return null;
    const transitions = await runtime.transitions(entry.id);
    const runId = [...transitions].reverse().find((t) => t.to === entry.state)?.runId ?? null;
    const run = runId === null ? undefined : await runtime.run(entry.queueId, runId);
    return this.explain(repo, entry, transitions, run ? [run] : []);
  }

  private async tests(repo: OwnedRepoRef, submittedAt: number, run: RunRecord | undefined) {
    const none = { tests: [], testsTruncated: false, testsPending: false, uploads: 0 };
    const { failures } = this.deps;
    if (!failures || !run?.testBranchSha) return none;
    const answer = await failures.explain(
      { repo, sha: run.testBranchSha, since: run.startedAt - UPLOAD_SLACK_MS },
      EXPLAINED_TEST_LIMIT,
      submittedAt,
    );
    return {
      tests: answer.tests,
      testsTruncated: answer.truncated,
      testsPending: answer.waiting,
      uploads: answer.uploads,
    };
  }

  private async log(
    run: RunRecord | undefined,
    failedChecks: readonly FailedCheck[],
  ): Promise<LogExcerpt | null> {
    const { checkLog } = this.deps;
    const check = failedChecks[0];
    if (!checkLog || !run || !check) return null;
    const text = await checkLog(run.queueId, run.id, check.name);
    if (text === undefined) return null;
    return { check: check.name, ...logTail(text) };
  }
}
