/**
 * Whether a failed run of a CI Mainline does not run itself (GitHub's) failed only on known flaky
 * or quarantined tests, from the uploads naming the tested commit (the built-in runner asks
 * `providers/local/ci/test-results.ts`). An upload names its commit only once processed: while
 * uploads since the run started are unprocessed, the answer says so and the caller may wait.
 */
import type { OwnedRepoRef } from "../organizations/repositories.js";
import type { RepositoryRecords, TestCaseRecords, UploadRecords } from "./ports.js";
import type { QuarantineSettings } from "./quarantine.js";
import type { CommitFailedTest, FailedTestCase } from "./records.js";
import { byVerdict, failureVerdict, type FailureVerdict } from "./failure-verdicts.js";

/** More failing tests than this are not "a few flaky ones": the run fails as it is. */
export const MAX_FAILED_TESTS_CHECKED = 500;

export interface CiFailureDeps {
  repositories: Pick<RepositoryRecords, "find">;
  uploads: Pick<UploadRecords, "commitFailures">;
  testCases: Pick<TestCaseRecords, "flakyOrQuarantined" | "standing">;
  settings: { get(repositoryId: string): Promise<{ quarantine: QuarantineSettings }> };
}

export interface CommitFailureQuestion {
  repo: OwnedRepoRef;
  /** The tested commit. */
  sha: string;
  /**
   * The run's own test branch, when it has a draft testing pull request: an upload naming it
   * since the run started is the run's too (that pull request's workflow tests GitHub's merge
   * commit of it, another sha). Absent: only the tested commit's uploads are the run's (a slot's
   * branch is shared by the runs in the slot).
   */
  branch?: string;
  /** When the run started (epoch ms): uploads since then may still be the run's. */
  since: number;
}

export interface CommitFailureAnswer {
  /** Every failed test of the commit's uploads is known flaky or quarantined (and one failed). */
  flakyOnly: boolean;
  /** Uploads of the repository since the run started are not processed yet. */
  waiting: boolean;
  /** Processed uploads of the commit, and the distinct tests that failed in them. */
  uploads: number;
  failedTests: number;
}

export interface FailedTestsAnswer {
  /** Uploads of the repository since the run started are not processed yet. */
  waiting: boolean;
  /** Processed uploads of the commit. */
  uploads: number;
  /** The tests whose final attempt failed in them, by id. */
  tests: FailedTestCase[];
  /** More tests failed than the limit asked for. */
  truncated: boolean;
}

/** A failed test with what test health knows of it: is the red the pull request's? */
export interface ExplainedTest extends CommitFailedTest {
  verdict: FailureVerdict;
}

export interface ExplainedFailures extends Omit<FailedTestsAnswer, "tests"> {
  /** The failing tests first, then new, broken, flaky and quarantined ones; at most the limit. */
  tests: ExplainedTest[];
}

export class CiFailures {
  constructor(private readonly deps: CiFailureDeps) {}

  /** What test health knows now of the tested commit's failures. */
  async ofCommit(question: CommitFailureQuestion): Promise<CommitFailureAnswer> {
    const { repo } = question;
    const repository = await this.deps.repositories.find(repo.organizationId, repo);
    if (!repository) return { flakyOnly: false, waiting: false, uploads: 0, failedTests: 0 };
    const found = await this.deps.uploads.commitFailures(
      repository.id,
      question.sha,
      question.branch,
      question.since,
      MAX_FAILED_TESTS_CHECKED,
    );
    const answer = {
      waiting: found.unfinished > 0,
      uploads: found.uploads,
      failedTests: found.failedTests.length,
    };
    const ids = found.failedTests.map((test) => test.id);
    if (ids.length === 0 || ids.length > MAX_FAILED_TESTS_CHECKED) {
      return { ...answer, flakyOnly: false };
    }
    const { quarantine } = await this.deps.settings.get(repository.id);
    const known = await this.deps.testCases.flakyOrQuarantined(repository.id, ids, quarantine);
    return { ...answer, flakyOnly: ids.every((id) => known.has(id)) };
  }

  /**
   * The tests that failed at the tested commit (its processed uploads), at most `limit`: what a
   * localization run runs first. `waiting`: uploads of the repository since the run started are
   * not processed yet, so the list may still grow.
   */
  async failedTests(question: CommitFailureQuestion, limit: number): Promise<FailedTestsAnswer> {
    const found = await this.commitFailures(question, limit);
    return found ? found.answer : { waiting: false, uploads: 0, tests: [], truncated: false };
  }

  /** The commit's failed tests (at most `limit`) and the repository they are of. */
  private async commitFailures(question: CommitFailureQuestion, limit: number) {
    const { repo } = question;
    const repository = await this.deps.repositories.find(repo.organizationId, repo);
    if (!repository) return undefined;
    const found = await this.deps.uploads.commitFailures(
      repository.id,
      question.sha,
      question.branch,
      question.since,
      limit,
    );
    const answer = {
      waiting: found.unfinished > 0,
      uploads: found.uploads,
      tests: found.failedTests.slice(0, limit),
      truncated: found.failedTests.length > limit,
    };
    return { repositoryId: repository.id, answer };
  }

  /**
   * The tests that failed at the tested commit, each with its verdict (`failure-verdicts.ts`). A
   * test first seen since `newSince` (the pull request's submission) is new.
   */
  async explain(
    question: CommitFailureQuestion,
    limit: number,
    newSince = question.since,
  ): Promise<ExplainedFailures> {
    const found = await this.commitFailures(question, limit);
    if (!found) return { waiting: false, uploads: 0, tests: [], truncated: false };
    const { repositoryId, answer } = found;
    const [standing, { quarantine }] = await Promise.all([
      this.deps.testCases.standing(
        repositoryId,
        answer.tests.map((test) => test.id),
      ),
      this.deps.settings.get(repositoryId),
    ]);
    const byId = new Map(standing.map((test) => [test.id, test]));
    const tests = answer.tests.map((test) => ({
      ...test,
      verdict: failureVerdict(byId.get(test.id), quarantine, newSince),
    }));
    return { ...answer, tests: byVerdict(tests) };
  }
}
