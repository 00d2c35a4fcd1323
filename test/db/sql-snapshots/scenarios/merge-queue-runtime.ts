import { MergeQueueRuntimeStore } from "../../../../src/db/stores/merge-queue-runtime.js";
import { NOW, HOUR, DAY, QUEUE_ID } from "./fixtures.js";
import { scenario, when } from "./types.js";

/**
 * The calls of `MergeQueueRuntimeStore` (`src/db/stores/merge-queue-runtime.ts`) whose SQL is
 * recorded into `src/db/queries/merge-queue-runtime.{sqlite,postgres}.sql`; a method added to the
 * store gets a call here.
 */

const ENTRY = {
  id: "entry-1",
  queueId: QUEUE_ID,
  prNumber: 7,
  prTitle: "Add widgets",
  prSha: "a".repeat(40),
  prHeadBranch: "feature",
  prBaseBranch: "main",
  prAuthor: "ada",
  state: "testing" as const,
  stateChangedAt: NOW,
  submittedAt: NOW,
  concludedAt: null,
  priorityValue: 100,
  usedDefaultPriority: true,
  noBatch: false,
  seq: 1,
  readiness: {
    mergeability: "mergeable" as const,
    baseBranchMatches: true,
    requiresImpactedTargets: false,
    impactedTargets: null,
  },
  lastReason: "",
};

export const mergeQueueRuntimeScenario = scenario({
  file: "merge-queue-runtime",
  name: "MergeQueueRuntimeStore",
  create: (handle) => new MergeQueueRuntimeStore(handle.db, handle.dialect),
  calls: [
    { method: "acquireLease", run: (s) => s.acquireLease(QUEUE_ID, "engine-1", NOW, 30_000) },
    { method: "releaseLease", run: (s) => s.releaseLease(QUEUE_ID, "engine-1", 3) },
    { method: "loadSnapshot", run: (s) => s.loadSnapshot(QUEUE_ID) },
    { method: "loadDriverState", run: (s) => s.loadDriverState(QUEUE_ID) },
    { method: "issueIds", run: (s) => s.issueIds(QUEUE_ID, 3, 200) },
    { method: "sharedSnapshot", run: (s) => s.sharedSnapshot(QUEUE_ID) },
    {
      method: "recordHostTrouble",
      // The queue's host answered before: its trouble starts, an event for endpoints.
      answer: when([/^select "host_trouble"/, [{ host_trouble: null }]]),
      run: (s) =>
        s.recordHostTrouble(
          QUEUE_ID,
          3,
          {
            state: "unreachable",
            code: "unavailable",
            since: NOW,
            message: "GitHub answered 502",
            retryAt: NOW + 1_000,
            failures: 1,
          },
          [
            {
              id: 11,
              result: {
                ok: false,
                code: "unavailable",
                message: "The merge queue cannot reach github.com",
                retryAfterSeconds: 1,
              },
            },
          ],
          NOW,
        ),
    },
    { method: "hostTrouble", run: (s) => s.hostTrouble(QUEUE_ID) },
    {
      method: "commit",
      answer: when(
        [/^select .*"mq_runtime"/, [{ lease_epoch: 3 }]],
        [/^insert into "mq_entries"/, [{ id: "entry-1" }]],
      ),
      run: (s) =>
        s.commit({
          queueId: QUEUE_ID,
          epoch: 3,
          now: NOW,
          snapshot: { version: 1 },
          wakeAt: NOW + 60_000,
          entries: [ENTRY],
          transitions: [
            {
              entryId: "entry-1",
              queueId: QUEUE_ID,
              at: NOW,
              from: "pending",
              to: "testing",
              reason: "started",
              actor: { kind: "queue" },
              runId: "run-1",
              detail: null,
            },
          ],
          runs: [
            {
              id: "run-1",
              queueId: QUEUE_ID,
              kind: "main",
              status: "running",
              baseSha: "b".repeat(40),
              testBranch: "mainline/test/run-1",
              testBranchSha: null,
              prs: [{ entryId: "entry-1", number: 7, headSha: "a".repeat(40) }],
              unit: ["entry-1"],
              requiredStatuses: ["ci"],
              requiredStatusesSource: null,
              checks: [],
              startedAt: NOW,
              finishedAt: null,
            },
          ],
          appliedCommands: [{ id: 1, result: { ok: true } }],
        }),
    },
    {
      method: "enqueueCommand",
      answer: () => [{ id: 1 }],
      run: (s) => s.enqueueCommand(QUEUE_ID, { op: "noop" }, NOW),
    },
    {
      method: "enqueueCommands",
      answer: () => [{ id: 1 }, { id: 2 }],
      run: (s) =>
        s.enqueueCommands(
          [
            { queueId: QUEUE_ID, payload: { op: "noop" } },
            { queueId: "queue-2", payload: { op: "noop" } },
          ],
          NOW,
        ),
    },
    { method: "pendingCommands", run: (s) => s.pendingCommands(QUEUE_ID, 100) },
    { method: "command", run: (s) => s.command(1) },
    { method: "dueQueues", run: (s) => s.dueQueues(NOW) },
    { method: "latestEntry", run: (s) => s.latestEntry(QUEUE_ID, 7) },
    { method: "latestEntryByBranch", run: (s) => s.latestEntryByBranch(QUEUE_ID, "feature") },
    { method: "activeEntries", run: (s) => s.activeEntries(QUEUE_ID) },
    { method: "latestTransitionId", run: (s) => s.latestTransitionId(QUEUE_ID) },
    { method: "failures", run: (s) => s.failures(QUEUE_ID, ["entry-1", "entry-2"]) },
    { method: "recentlyConcluded", run: (s) => s.recentlyConcluded(QUEUE_ID, 10) },
    { method: "runsByIds", run: (s) => s.runsByIds(QUEUE_ID, ["run-1", "run-2"]) },
    { method: "runTimings", run: (s) => s.runTimings(QUEUE_ID, NOW - 86_400_000, 50) },
    { method: "activeSummaries", run: (s) => s.activeSummaries(QUEUE_ID) },
    {
      method: "listEntries",
      variant: "first page",
      run: (s) => s.listEntries(QUEUE_ID, { take: 50 }),
    },
    {
      method: "listEntries",
      variant: "each pull request's latest submission",
      run: (s) => s.listEntries(QUEUE_ID, { take: 50, latestOnly: true }),
    },
    {
      method: "listEntries",
      variant: "every filter",
      run: (s) =>
        s.listEntries(QUEUE_ID, {
          state: "merged",
          concludedSince: NOW - DAY,
          afterSeq: 10,
          take: 50,
        }),
    },
    { method: "transitions", run: (s) => s.transitions("entry-1") },
    { method: "pullRequestTransitions", run: (s) => s.pullRequestTransitions(QUEUE_ID, 7) },
    { method: "run", run: (s) => s.run(QUEUE_ID, "run-1") },
    {
      method: "runOnTestBranch",
      run: (s) => s.runOnTestBranch(QUEUE_ID, "mainline-merge/main/slot-0", "a".repeat(40)),
    },
    { method: "transitionsSince", run: (s) => s.transitionsSince(QUEUE_ID, NOW - HOUR) },
  ],
});
