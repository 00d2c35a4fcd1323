/**
 * The whole merge queue on one machine (issue: local git host and built-in CI): a real bare
 * repository on the local git host, branches pushed with git, pull requests opened through the
 * API, checks run by the built-in runner from `.mainline.yml`, merges made with real git.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/lib/clock.js";
import { testsPassAtMain } from "../helpers/local-project.js";
import {
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  stateOf,
  submit,
  timeline,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

/** PR k adds numbers/pk.txt holding k; #5 breaks the tests; #8 and #9 change the same line. */
const BREAKING = 5;
const CONFLICTS = [8, 9] as const;

function changesOf(k: number): Record<string, string> {
  const files: Record<string, string> = {
    [`numbers/p${String(k)}.txt`]: k === BREAKING ? "five\n" : `${String(k)}\n`,
  };
  if ((CONFLICTS as readonly number[]).includes(k)) {
    files["shared.txt"] = `the first line, as #${String(k)} has it\n`;
  }
  return files;
}

let server: TestServer | undefined;
let ticker: NodeJS.Timeout | undefined;
afterEach(async () => {
  if (ticker) clearInterval(ticker);
  await server?.close();
  server = undefined;
});

/**
 * Real time, running faster while `fast` is on, so that batches waiting for their minimum size
 * time out in a moment (the queue's timeouts are virtual; the checks' are real).
 */
function acceleratedClock(fast: boolean): Clock {
  let skipped = 0;
  if (fast) {
    ticker = setInterval(() => {
      skipped += 30_000;
    }, 100);
  }
  return { now: () => Date.now() + skipped };
}

const SCENARIOS = [
  { batch: false, concurrency: 1 },
  { batch: false, concurrency: 4 },
  { batch: true, concurrency: 1 },
  { batch: true, concurrency: 4 },
];

describe.each(SCENARIOS)(
  "a merge queue on the local git host and built-in CI (batching $batch, concurrency $concurrency)",
  ({ batch, concurrency }) => {
    it("merges every good pull request in order, fails the breaking and the conflicting one, and leaves no test branch", async () => {
      server = await startTestServer({
        clock: acceleratedClock(batch),
        startWorker: false,
        engine: { pollMs: 100 },
      });
      const s = server;
      const call: Call = (operation, body) => s.call(operation, body);
      const project = await createRepositoryAndQueue(call, {
        testingTimeoutMinutes: 0,
        concurrency,
        batch,
        batchingMinSize: 4,
        batchingMaxWaitTimeMinutes: 1,
        bisectionConcurrency: concurrency,
      });
      const numbers = new Map<number, number>();
      for (let k = 1; k <= 12; k++)
        numbers.set(k, await openPullRequest(call, project, k, changesOf(k)));
      // Every pull request is queued before anything merges: a PR that conflicts with main when
      // it is submitted (#9 after #8 landed) would wait as not_ready instead of failing.
      await ok(call, "updateQueue", { ...QUEUE, state: "paused" });
      for (const number of numbers.values()) await submit(call, number);
      await ok(call, "updateQueue", { ...QUEUE, state: "running" });
      await waitFor(() => allConcluded(call, numbers.values()), "every pull request to conclude", {
        timeoutMs: 150_000,
        intervalMs: 250,
      });

      const numberOf = (k: number) => numbers.get(k) ?? -1;
      const lastTransition = async (k: number) => (await timeline(call, numberOf(k))).at(-1);
      // Of the two that conflict, the first to land wins. That is #8, except that a bisected batch
      // leaves the main queue (background §merge-queue-2.7): #9, behind it, may land first.
      const [landed, conflicted] =
        batch && (await stateOf(call, numberOf(9))) === "merged"
          ? ([9, 8] as const)
          : ([8, 9] as const);
      const good = [1, 2, 3, 4, 6, 7, landed, 10, 11, 12];
      for (const k of good)
        expect(await stateOf(call, numberOf(k)), `#${String(k)}`).toBe("merged");
      expect(await stateOf(call, numberOf(BREAKING))).toBe("failed");
      expect(await stateOf(call, numberOf(conflicted))).toBe("failed");

      const breaking = await lastTransition(BREAKING);
      expect(breaking).toMatchObject({ toState: "failed", reason: "failing_required_check" });
      expect(breaking?.detail).toContain("test");
      const conflicting = await lastTransition(conflicted);
      expect(conflicting).toMatchObject({ toState: "failed", reason: "merge_conflict" });
      expect(conflicting?.detail).toContain("shared.txt");

      // One commit each (squash), nothing else, in the order the queue merged them. That is the
      // submission order, except that a bisected batch's good pull requests come back behind
      // what was in flight (background §merge-queue-2.7).
      const mergedAt = new Map<number, string>();
      for (const k of good) {
        const last = await lastTransition(k);
        mergedAt.set(k, last?.at ?? "");
      }
      const queueOrder = [...good].sort((a, b) =>
        (mergedAt.get(a) ?? "").localeCompare(mergedAt.get(b) ?? ""),
      );
      if (!batch) expect(queueOrder).toEqual(good);
      expect(await project.mainHistory()).toEqual([
        "Start the project",
        ...queueOrder.map((k) => `Add ${String(k)} (#${String(numbers.get(k))})`),
      ]);
      expect(await testsPassAtMain(project.remote)).toBe(true);
      await waitFor(
        async () => !(await project.remoteBranches()).some((b) => b.startsWith("mainline-merge/")),
        "test branches to be removed",
      );
    }, 200_000);
  },
);
