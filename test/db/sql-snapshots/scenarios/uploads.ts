import { UploadStore } from "../../../../src/db/stores/uploads.js";
import { NOW, HOUR, DAY, ORG, REPO_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `UploadStore` (`src/db/stores/uploads.ts`) whose SQL is recorded into
 * `src/db/queries/uploads.{sqlite,postgres}.sql`; a method added to the store gets a call here.
 */

export const uploadsScenario = scenario({
  file: "uploads",
  name: "UploadStore",
  create: (handle) => new UploadStore(handle.db, handle.dialect),
  calls: [
    {
      method: "create",
      run: (s) =>
        s.create({
          id: "upload-1",
          organizationId: ORG,
          repositoryId: REPO_ID,
          clientVersion: "0.1.0",
          createdAt: NOW,
          urlExpiresAt: NOW + HOUR,
        }),
    },
    { method: "find", variant: "any organization", run: (s) => s.find("upload-1") },
    { method: "find", variant: "one organization", run: (s) => s.find("upload-1", ORG) },
    { method: "findByKey", run: (s) => s.findByKey(10) },
    {
      method: "markReceived",
      run: (s) =>
        s.markReceived("upload-1", {
          bundlePath: "bundles/upload-1",
          bundleBytes: 1024,
          contentHash: "hash",
          receivedAt: NOW,
        }),
    },
    { method: "claimNext", run: (s) => s.claimNext(NOW, NOW + 60_000) },
    {
      method: "claimBatch",
      answer: when([/^select/, [{ key: 10, repository_id: REPO_ID, attempts: 0 }]]),
      run: (s) => s.claimBatch(NOW, NOW + 60_000, 8),
    },
    { method: "extendLease", run: (s) => s.extendLease({ key: 10, attempts: 1 }, NOW + 60_000) },
    {
      method: "findDuplicate",
      run: (s) => s.findDuplicate({ key: 10, repositoryId: REPO_ID, contentHash: "hash" } as never),
    },
    {
      method: "markProcessed",
      run: (s, db) =>
        s.markProcessed(
          db,
          { key: 10, attempts: 1 },
          {
            commitSha: "a".repeat(40),
            branch: "main",
            prNumber: null,
            jobName: "test",
            jobUrl: null,
            variant: "",
            uploadedAt: NOW,
            filesTotal: 1,
            fileErrors: [],
            testsPassed: 10,
            testsFailed: 1,
            testsSkipped: 0,
            infrastructureFailure: false,
          },
          NOW,
        ),
    },
    {
      method: "markFailed",
      variant: "no meta.json read",
      run: (s) => s.markFailed(10, "unreadable bundle", NOW),
    },
    {
      method: "markFailed",
      variant: "with what meta.json said",
      run: (s) =>
        s.markFailed(10, "r.xml: empty file", NOW, {
          fileErrors: [{ file: "r.xml", reason: "empty file" }],
          description: {
            commitSha: "a".repeat(40),
            branch: "main",
            prNumber: 7,
            jobName: "test",
            jobUrl: null,
            variant: "",
            uploadedAt: NOW,
            filesTotal: 1,
          },
        }),
    },
    {
      method: "sameCommit",
      run: (s, db) => s.sameCommit(db, REPO_ID, ["a".repeat(40)]),
    },
    {
      method: "commitFailures",
      run: (s) => s.commitFailures(REPO_ID, "a".repeat(40), "trunk-merge/main/r1", NOW - HOUR, 500),
    },
    { method: "list", answer: when([/count/, [{ n: 1 }]]), run: (s) => s.list(REPO_ID, 0, 25) },
    { method: "oldBundles", run: (s) => s.oldBundles(NOW - 30 * DAY) },
    { method: "forgetBundle", run: (s) => s.forgetBundle([10, 11]) },
    { method: "deleteExpiredUnused", run: (s) => s.deleteExpiredUnused(NOW) },
    { method: "countByState", run: (s) => s.countByState() },
  ],
});
