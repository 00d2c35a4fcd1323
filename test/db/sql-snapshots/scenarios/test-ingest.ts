import { TestIngestStore } from "../../../../src/db/stores/test-ingest.js";
import { NOW, DAY, REPO_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `TestIngestStore` (`src/db/stores/test-ingest.ts`) whose SQL is recorded into
 * `src/db/queries/test-ingest.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

const RUN = {
  testKey: 1,
  uploadKey: 10,
  fileIndex: 0,
  at: NOW,
  status: "failed" as const,
  attempt: "final" as const,
  durationMs: 12,
  failureSignature: "sig",
  failureSummary: "expected 1 to be 2",
  failureText: "AssertionError: expected 1 to be 2",
};

export const testIngestScenario = scenario({
  file: "test-ingest",
  name: "TestIngestStore",
  create: (handle) => new TestIngestStore(handle),
  calls: [
    {
      method: "ensureTestCases",
      run: (s) =>
        s.ensureTestCases(
          REPO_ID,
          [
            {
              id: "test-1",
              name: "adds",
              classname: "Widgets",
              parent: null,
              file: "widgets.test.ts",
              variant: "",
            },
          ],
          NOW,
        ),
    },
    { method: "insertRunsNow", variant: "one run", run: (s) => s.insertRunsNow([RUN]) },
    {
      method: "insertRunsNow",
      variant: "51 runs (SQLite: 50 per statement, then one by one)",
      run: (s) =>
        s.insertRunsNow(Array.from({ length: 51 }, (_, i) => ({ ...RUN, testKey: i + 1 }))),
    },
    { method: "deleteRuns", variant: "an upload", run: (s) => s.deleteRuns(10) },
    { method: "deleteRuns", variant: "one file", run: (s) => s.deleteRuns(10, 2) },
    {
      method: "transaction",
      variant: "writing runs",
      run: (s) => s.transaction(REPO_ID, (tx) => tx.insertRuns([RUN])),
    },
    {
      method: "aggregateUpload",
      variant: "inside `transaction`",
      run: (s) =>
        s.transaction(REPO_ID, ({ trx }) =>
          s.aggregateUpload(trx, {
            key: 10,
            repositoryId: REPO_ID,
            prNumber: 7,
            excluded: false,
          }),
        ),
    },
    {
      method: "aggregateUploads",
      variant: "inside `transaction`, some uploads excluded",
      run: (s) =>
        s.transaction(REPO_ID, ({ trx }) =>
          s.aggregateUploads(trx, REPO_ID, [
            { key: 10, repositoryId: REPO_ID, prNumber: 7, excluded: false },
            { key: 11, repositoryId: REPO_ID, prNumber: null, excluded: true },
          ]),
        ),
    },
    {
      method: "aggregateUploads",
      variant: "inside `transaction`, every upload excluded",
      run: (s) =>
        s.transaction(REPO_ID, ({ trx }) =>
          s.aggregateUploads(trx, REPO_ID, [
            { key: 11, repositoryId: REPO_ID, prNumber: null, excluded: true },
          ]),
        ),
    },
    {
      method: "refreshFigures",
      variant: "inside `transaction`",
      run: (s) => s.transaction(REPO_ID, ({ trx }) => s.refreshFigures(trx, [10, 11], NOW)),
    },
    {
      method: "candidatesOfUploads",
      variant: "inside `transaction`",
      run: (s) =>
        s.transaction(REPO_ID, ({ trx }) => s.candidatesOfUploads(trx, [10, 11], NOW - 7 * DAY)),
    },
    {
      method: "activeCandidates",
      variant: "active monitors",
      run: (s, db) => s.activeCandidates(db, REPO_ID),
    },
    {
      method: "activeCandidates",
      variant: "and recent failures",
      run: (s, db) => s.activeCandidates(db, REPO_ID, NOW - DAY),
    },
    { method: "repositoriesWithActiveMonitors", run: (s) => s.repositoriesWithActiveMonitors() },
    {
      method: "runsForClassification",
      answer: when([
        /from test_runs/,
        [{ test_key: 1, at: NOW, status: "failed", upload_key: 10 }],
      ]),
      run: (s, db) => s.runsForClassification(db, [1, 2], NOW - 7 * DAY, [9], [10]),
    },
    {
      method: "applyClassifications",
      run: (s, db) =>
        s.applyClassifications(db, [
          {
            key: 1,
            status: "flaky",
            reason: "failed and passed on the same commit",
            changedAt: NOW,
            monitorStates: "{}",
            monitorsActive: true,
          },
          {
            key: 2,
            status: "healthy",
            reason: "",
            changedAt: null,
            monitorStates: "{}",
            monitorsActive: false,
          },
        ]),
    },
    { method: "pruneRuns", run: (s) => s.pruneRuns(NOW - 30 * DAY, 1000) },
    { method: "pruneAggregates", run: (s) => s.pruneAggregates(NOW - 30 * DAY) },
  ],
});
