/**
 * Test results on GitHub pull requests (a repository's `pull_request_comments` setting, off by
 * default): once CI's uploads naming a pull request are processed, one comment, edited in place,
 * lists the tests that fail at its latest uploaded commit, each saying whose red it is (fails
 * here, new, broken on the stable branch too, known flaky, quarantined). No comment for a pull
 * request without failures; one that had failures says so when they are gone. docs/github.md.
 */
import { createHash } from "node:crypto";
import type { Clock } from "../../lib/clock.js";
import { BackgroundLoop } from "../../lib/background-loop.js";
import { ApiError } from "../../lib/errors.js";
import { MINUTE_MS, SECOND_MS } from "../../lib/time.js";
import type { Repository } from "../../organizations/repositories.js";
import type { CiFailures, ExplainedTest } from "../../testhealth/ci-failures.js";
import { VERDICT_ORDER, type FailureVerdict } from "../../testhealth/failure-verdicts.js";
import type {
  PullRequestReport,
  PullRequestReportRecords,
  PullRequestUploadMark,
} from "../../testhealth/pull-request-report-records.js";
import type { GitHubLogger } from "./client.js";
import type { GitHubRepositories } from "./repositories.js";
import { inlineCode, upsertStickyComment } from "./sticky-comment.js";

/** The hidden marker of the test-results comment. */
export const TEST_RESULTS_MARKER = "<!-- mainline:test-results -->";
const CURSOR = "github-pr-test-results";
/** The most failing tests a comment lists (the rest are counted). */
export const LISTED_TESTS = 30;
/** A summary is cut to this many characters. */
const SUMMARY_CHARS = 200;

export interface TestResultsOptions {
  pollIntervalMs: number;
  leaseMs: number;
  /** Uploads processed this recently are read again (a slow commit elsewhere may land behind). */
  overlapMs: number;
  batchSize: number;
}

const DEFAULTS: TestResultsOptions = {
  pollIntervalMs: 2 * SECOND_MS,
  leaseMs: MINUTE_MS,
  overlapMs: 10 * SECOND_MS,
  batchSize: 500,
};

export interface TestResultsDeps {
  store: PullRequestReportRecords;
  repositories: { findById(id: string): Promise<Repository | undefined> };
  settings: { get(repositoryId: string): Promise<{ pullRequestComments: boolean }> };
  failures: Pick<CiFailures, "explain">;
  github: Pick<GitHubRepositories, "resolve">;
  host: string;
  appId: () => Promise<number>;
  /** A test's page on the dashboard, when the server's public URL is known. */
  testPage?: ((repository: Repository, testId: string) => Promise<string | undefined>) | undefined;
  clock: Clock;
  logger: GitHubLogger;
  owner: string;
}

/** What a comment shows: the commit and its failing tests. */
export interface TestResultsView {
  sha: string;
  tests: (ExplainedTest & { url?: string | undefined })[];
  /** Failing tests beyond those listed. */
  more: number;
}

function testName(test: ExplainedTest): string {
  return test.classname === "" ? test.name : `${test.classname}.${test.name}`;
}

const HEADINGS: Record<FailureVerdict, string> = {
  failing: "Failing here, not known flaky or broken",
  new: "New in this pull request",
  broken: "Broken on the stable branch too",
  flaky: "Known flaky",
  quarantined: "Known flaky, quarantined",
};

/** The comment's body (pure). */
export function renderTestResults(view: TestResultsView): string {
  const short = view.sha.slice(0, 7);
  const lines = [TEST_RESULTS_MARKER, "### Test results", ""];
  const total = view.tests.length + view.more;
  if (total === 0) {
    lines.push(`No failing tests at ${short}.`);
    return lines.join("\n");
  }
  const yours = view.tests.filter((t) => t.verdict === "failing" || t.verdict === "new").length;
  lines.push(
    `${String(total)} failing test${total === 1 ? "" : "s"} at ${short}` +
      (yours === view.tests.length
        ? "."
        : `; ${String(view.tests.length - yours)} of them known to test health (not this change's doing).`),
    "",
  );
  for (const verdict of VERDICT_ORDER) {
    const tests = view.tests.filter((t) => t.verdict === verdict);
    if (tests.length === 0) continue;
    lines.push(`**${HEADINGS[verdict]}**`);
    for (const test of tests) {
      const name = test.url
        ? `[${inlineCode(testName(test))}](${test.url})`
        : inlineCode(testName(test));
      const summary = test.summary ? ` — ${inlineCode(test.summary.slice(0, SUMMARY_CHARS))}` : "";
      lines.push(`- ${name}${summary}`);
    }
    lines.push("");
  }
  if (view.more > 0) lines.push(`…and ${String(view.more)} more.`);
  return lines.join("\n").trimEnd();
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

export class PullRequestTestResults {
  private readonly options: TestResultsOptions;
  private readonly loop: BackgroundLoop;
  /** Per pull request, the processing time of the latest upload it was shown for. */
  private readonly shownUpTo = new Map<string, number>();

  constructor(
    private readonly deps: TestResultsDeps,
    options: Partial<TestResultsOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.loop = new BackgroundLoop({
      pass: () => this.pass(),
      intervalMs: this.options.pollIntervalMs,
      onError: (error) => {
        deps.logger.warn({ err: error }, "github: test-results pass failed; will retry");
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.deps.store.releaseCursor(CURSOR, this.deps.owner).catch(() => undefined);
  }

  /** Resolves once every upload processed so far is shown (tests). */
  idle(): Promise<void> {
    return this.loop.runNow();
  }

  /** One pass over the uploads processed since the cursor. */
  async pass(): Promise<void> {
    const { store, clock, owner } = this.deps;
    const now = clock.now();
    const { leaseMs, overlapMs, batchSize } = this.options;
    const cursor = await store.claimCursor(CURSOR, owner, now, now + leaseMs, now);
    if (cursor === undefined) return;
    const marks = await store.processedAfter(cursor - overlapMs, batchSize);
    for (const [key, upTo] of this.shownUpTo) {
      if (upTo <= cursor - overlapMs) this.shownUpTo.delete(key);
    }
    const latest = new Map<string, PullRequestUploadMark>();
    for (const mark of marks) latest.set(`${mark.repositoryId}#${String(mark.prNumber)}`, mark);
    let failed = false;
    for (const [key, { repositoryId, prNumber, processedAt }] of latest) {
      // Read again in the overlap, already shown: nothing new for it.
      if ((this.shownUpTo.get(key) ?? -1) >= processedAt) continue;
      try {
        await this.show(repositoryId, prNumber);
        this.shownUpTo.set(key, processedAt);
      } catch (error) {
        failed = true;
        this.deps.logger.warn(
          { err: error, repositoryId, prNumber },
          "github: could not update a pull request's test-results comment; will retry",
        );
      }
    }
    const last = marks.at(-1)?.processedAt;
    if (!failed && last !== undefined && last > cursor) {
      await store.advanceCursor(CURSOR, owner, last, clock.now());
    }
  }

  /** Brings one pull request's comment to what test health knows now. */
  async show(repositoryId: string, prNumber: number): Promise<void> {
    const { deps } = this;
    const repository = await deps.repositories.findById(repositoryId);
    if (repository?.host.toLowerCase() !== deps.host.toLowerCase()) return;
    if (!(await deps.settings.get(repositoryId)).pullRequestComments) return;
    const head = await deps.store.head(repositoryId, prNumber);
    if (!head) return;
    // What is processed now: each further upload of the commit, once processed, brings this pull
    // request back (so nothing waits for the repository's other uploads). A test first seen
    // since the pull request's first upload is new in it.
    const explained = await deps.failures.explain(
      { repo: repository, sha: head.sha, since: deps.clock.now() },
      LISTED_TESTS + 1,
      head.firstUploadAt,
    );
    const previous = await deps.store.find(repositoryId, prNumber);
    // Nothing failed and nothing was said: no comment.
    if (explained.tests.length === 0 && previous?.presented == null) return;
    const listed = explained.tests.slice(0, LISTED_TESTS);
    const tests = await Promise.all(
      listed.map(async (test) => ({ ...test, url: await deps.testPage?.(repository, test.id) })),
    );
    const more = explained.tests.length - listed.length + (explained.truncated ? 1 : 0);
    const body = renderTestResults({ sha: head.sha, tests, more });
    if (previous?.presented === digest(body)) return;

    let access;
    try {
      access = await deps.github.resolve(repository);
    } catch (error) {
      if (error instanceof ApiError) return; // no installation serves it: nothing to show there
      throw error;
    }
    const record: PullRequestReport = previous ?? {
      repositoryId,
      prNumber,
      commentId: null,
      headSha: null,
      presented: null,
      unsure: false,
      updatedAt: 0,
    };
    const commentId = await upsertStickyComment(access.client, {
      repo: { owner: access.owner, repo: access.name },
      prNumber,
      known: record.unsure ? null : record.commentId,
      marker: TEST_RESULTS_MARKER,
      body,
      search: record.unsure,
      appId: deps.appId,
      onUnknown: () =>
        deps.store.save({ ...record, commentId: null, unsure: true, updatedAt: deps.clock.now() }),
    });
    await deps.store.save({
      repositoryId,
      prNumber,
      commentId,
      headSha: head.sha,
      presented: digest(body),
      unsure: false,
      updatedAt: deps.clock.now(),
    });
  }
}
