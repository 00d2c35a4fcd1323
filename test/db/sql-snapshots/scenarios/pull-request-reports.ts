import { PullRequestReportStore } from "../../../../src/db/stores/pull-request-reports.js";
import { NOW, REPO_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `PullRequestReportStore` (`src/db/stores/pull-request-reports.ts`) whose SQL is
 * recorded into `src/db/queries/pull-request-reports.{sqlite,postgres}.sql`.
 */
export const pullRequestReportsScenario = scenario({
  file: "pull-request-reports",
  name: "PullRequestReportStore",
  create: (handle) => new PullRequestReportStore(handle.db),
  calls: [
    {
      method: "claimCursor",
      answer: when([/^select/, []], [/^update/, [{ last_id: NOW }]]),
      run: (s) => s.claimCursor("github-pr-test-results", "worker-1", NOW, NOW + 60_000, NOW),
    },
    {
      method: "advanceCursor",
      run: (s) => s.advanceCursor("github-pr-test-results", "worker-1", NOW + 1, NOW),
    },
    { method: "releaseCursor", run: (s) => s.releaseCursor("github-pr-test-results", "worker-1") },
    { method: "processedAfter", run: (s) => s.processedAfter(NOW - 10_000, 500) },
    { method: "head", run: (s) => s.head(REPO_ID, 7) },
    { method: "find", run: (s) => s.find(REPO_ID, 7) },
    {
      method: "save",
      run: (s) =>
        s.save({
          repositoryId: REPO_ID,
          prNumber: 7,
          commentId: 1001,
          headSha: "a".repeat(40),
          presented: "digest",
          unsure: false,
          updatedAt: NOW,
        }),
    },
  ],
});
