/**
 * Planner snapshots of a busy queue, for the dashboard's tests: `count` pull requests, the first
 * `concurrency` tested in as many runs (each on top of the ones ahead), the rest pending, and one
 * not ready.
 */
import type { Entry, QueueSnapshot, TestRun } from "../../src/mergequeue/model.js";
import { initialSnapshot } from "../../src/mergequeue/planner/index.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { MINUTE_MS } from "../../src/lib/time.js";

function entry(now: number, n: number, state: Entry["state"], runId: string | null = null): Entry {
  return {
    id: `e${n}`,
    pr: {
      number: n,
      title: `Change number ${n} of the checkout flow`,
      author: `dev${n % 7}`,
      headSha: n.toString(16).padStart(40, "a"),
      headBranch: `b${n}`,
      baseBranch: "main",
      mergeability: "mergeable",
      upToDate: false,
      checksPassed: false,
      state: "open",
      draft: false,
    },
    state,
    stateChangedAt: now - n * 1000,
    submittedAt: now - n * 60_000,
    readyAt: now - n * 60_000,
    seq: n,
    priorityValue: 100,
    usedDefaultPriority: true,
    noBatch: false,
    impactedTargets: null,
    runId,
    unit: runId ? [`e${n}`] : [],
    failure: null,
    flakyRetries: 0,
    bisection: null,
    positioned: runId !== null,
  };
}

function run(id: string, ahead: number[], unit: number[], startedAt: number): TestRun {
  const ids = (ns: number[]) => ns.map((n) => `e${n}`);
  return {
    id,
    kind: "main",
    status: "running",
    baseSha: "c".repeat(40),
    prs: [...ahead, ...unit].map((n) => ({ entryId: `e${n}`, number: n, headSha: "a" })),
    ahead: ids(ahead),
    unit: ids(unit),
    startedAt,
    finishedAt: null,
    bisectionGroup: null,
    failingChecks: [],
    attempt: 1,
  };
}

/** A queue of `count` pull requests: the first three tested in three runs, the rest pending. */
export function busySnapshot(
  now: number,
  count: number,
  concurrency = 3,
  queueId = "q",
): QueueSnapshot {
  const snapshot = initialSnapshot({
    queueId,
    targetBranch: "main",
    configuration: { ...initialConfiguration({ concurrency }), mode: "single" },
    headSha: "c".repeat(40),
  });
  for (let n = 1; n <= count; n++) {
    const runId = n <= concurrency ? `r${n}` : null;
    snapshot.entries[`e${n}`] = entry(now, n, runId ? "testing" : "pending", runId);
    snapshot.order.push(`e${n}`);
    if (runId) {
      snapshot.runs[runId] = run(
        runId,
        Array.from({ length: n - 1 }, (_, i) => i + 1),
        [n],
        now - 2 * MINUTE_MS,
      );
    }
  }
  snapshot.entries.e999 = { ...entry(now, 999, "not_ready"), id: "e999" };
  snapshot.notReady.push("e999");
  return snapshot;
}
