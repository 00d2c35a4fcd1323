/**
 * Fail first (docs/fail-first.md): a localization run (a prefix of a failed batch) runs first
 * what failed in the batch run, so that a failing prefix fails in seconds. What failed is what
 * test health knows of the commit the failed run tested: the built-in runner asks here before its
 * checks start, and a CI elsewhere asks through `getFailFirstTests` (`mainline test` does).
 */
import { ApiError } from "../lib/errors.js";
import type { OwnedRepoRef } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import type { CiFailures, FailedTestsAnswer } from "../testhealth/ci-failures.js";
import type { FailedTestCase } from "../testhealth/records.js";
import type { FailFirstRequest } from "./providers.js";
import { describeQueue, requireQueue, type QueueAddress } from "./queue-service.js";
import type { MergeQueueRecords, RunRecord, RuntimeRecords } from "./records.js";

/** At most this many failed tests are listed (a batch that broke more is not a few tests). */
export const FAIL_FIRST_TEST_LIMIT = 1000;
/**
 * Uploads created this long before the failed run started may still be its own (a CI's clock, a
 * job that started before the run was recorded), as for the flaky-only retry of a hosted CI.
 */
export const FAIL_FIRST_UPLOAD_SLACK_MS = 60_000;

export type FailedTestsSource = Pick<CiFailures, "failedTests">;

/** What test health knows now of the tests that failed in the run a `FailFirstRequest` names. */
export async function failedTestsOf(
  failures: FailedTestsSource,
  repo: OwnedRepoRef,
  failFirst: FailFirstRequest,
): Promise<FailedTestsAnswer> {
  if (failFirst.sha === null) return { waiting: false, uploads: 0, tests: [], truncated: false };
  return failures.failedTests(
    { repo, sha: failFirst.sha, since: failFirst.since - FAIL_FIRST_UPLOAD_SLACK_MS },
    FAIL_FIRST_TEST_LIMIT,
  );
}

/** Which run a CI asks about: by id, or by the test branch it runs on (and its commit). */
export type RunQuestion = { runId: string } | { testBranch: string; sha?: string | undefined };

export interface FailFirstTests {
  /** The run asked about. */
  runId: string;
  /** The failed run whose failures it runs first; null: it is no localization run. */
  fromRunId: string | null;
  /** The checks that failed there. */
  checks: string[];
  tests: FailedTestCase[];
  /** False while uploads since the failed run started are not processed yet (ask again). */
  complete: boolean;
  /** More tests failed than are listed. */
  truncated: boolean;
}

export interface FailFirstDeps {
  queues: Pick<MergeQueueRecords, "find">;
  runtime: Pick<RuntimeRecords, "run" | "runOnTestBranch">;
  failures: FailedTestsSource;
}

export class FailFirstService {
  constructor(private readonly deps: FailFirstDeps) {}

  /** The tests a run of the principal's queue at `address` runs first (none for most runs). */
  async tests(
    principal: Principal,
    address: QueueAddress,
    question: RunQuestion,
  ): Promise<FailFirstTests> {
    const queue = await requireQueue(this.deps.queues, principal, address);
    const run = await this.find(queue.id, address, question);
    const failFirst = run.failFirst ?? null;
    const none = { runId: run.id, checks: [], tests: [], complete: true, truncated: false };
    if (failFirst === null) return { ...none, fromRunId: null };
    const from = await this.deps.runtime.run(queue.id, failFirst.fromRunId);
    const answer = await failedTestsOf(
      this.deps.failures,
      { ...address.repo, organizationId: principal.organizationId },
      {
        fromRunId: failFirst.fromRunId,
        checks: failFirst.checks,
        sha: from?.testBranchSha ?? null,
        testBranch: from?.testBranch ?? null,
        since: from?.startedAt ?? 0,
      },
    );
    return {
      runId: run.id,
      fromRunId: failFirst.fromRunId,
      checks: [...failFirst.checks],
      tests: answer.tests,
      complete: !answer.waiting,
      truncated: answer.truncated,
    };
  }

  private async find(
    queueId: string,
    address: QueueAddress,
    question: RunQuestion,
  ): Promise<RunRecord> {
    if ("runId" in question) {
      const run = await this.deps.runtime.run(queueId, question.runId);
      if (run) return run;
      throw new ApiError(
        "not_found",
        `No test run ${question.runId} in the merge queue for ${describeQueue(address)}.`,
      );
    }
    const run = await this.deps.runtime.runOnTestBranch(queueId, question.testBranch, question.sha);
    if (run) return run;
    const at = question.sha === undefined ? "" : ` at ${question.sha}`;
    throw new ApiError(
      "not_found",
      `No test run on ${question.testBranch}${at} in the merge queue for ${describeQueue(address)}.`,
    );
  }
}
