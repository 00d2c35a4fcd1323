import { WatchedCiRunStore } from "../../../../src/db/stores/watched-ci-runs.js";
import { NOW, QUEUE_ID, OWNED_REPO } from "./fixtures.js";
import { scenario } from "./types.js";

/**
 * The calls of `WatchedCiRunStore` (`src/db/stores/watched-ci-runs.ts`) whose SQL is recorded into
 * `src/db/queries/watched-ci-runs.{sqlite,postgres}.sql`; a method added to the store gets a call
 * here.
 */

export const watchedCiRunsScenario = scenario({
  file: "watched-ci-runs",
  name: "WatchedCiRunStore",
  create: (handle) => new WatchedCiRunStore(handle.db),
  calls: [
    {
      method: "create",
      run: (s) =>
        s.create({
          queueId: QUEUE_ID,
          runId: "run-1",
          request: {
            repo: { ...OWNED_REPO, host: "github.com" },
            queueId: QUEUE_ID,
            runId: "run-1",
            targetBranch: "main",
            testBranch: "trunk-merge/main/run-1",
            sha: "a".repeat(40),
            prNumbers: [7],
            requiredStatuses: null,
          },
          status: "watching",
          required: null,
          result: null,
          testPrNumber: null,
          createdAt: NOW,
          finishedAt: null,
        }),
    },
    { method: "get", run: (s) => s.get(QUEUE_ID, "run-1") },
    {
      method: "prepared",
      run: (s) =>
        s.prepared(QUEUE_ID, "run-1", {
          required: { source: "branch_protection", checks: [{ context: "ci", appId: null }] },
          testPrNumber: 12,
        }),
    },
    { method: "finish", run: (s) => s.finish(QUEUE_ID, "run-1", "cancelled", null, NOW) },
    { method: "watching", run: (s) => s.watching() },
    { method: "watchingSha", run: (s) => s.watchingSha("a".repeat(40)) },
  ],
});
