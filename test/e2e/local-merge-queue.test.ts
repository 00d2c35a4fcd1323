/**
 * The whole merge queue on one machine (issue: local git host and built-in CI): a real bare
 * repository on the local git host, branches pushed with git, pull requests opened through the
 * API, checks run by the built-in runner from `.mainline.yml`, merges made with real git.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/lib/clock.js";
import {
  createLocalProject,
  testsPassAtMain,
  type LocalProject,
} from "../helpers/local-project.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

const LOCAL = { host: "local", owner: "acme", name: "shop" };
const QUEUE = { repo: LOCAL, targetBranch: "main" };
const TERMINAL = new Set(["merged", "failed", "cancelled"]);

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

interface SubmittedPr {
  state: string;
  prNumber: number;
}

interface TimelineEntry {
  at: string;
  toState: string;
  reason: string;
  detail: string | null;
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

async function ok<T>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const answered = await response;
  if (answered.status !== 200) throw new Error(`${String(answered.status)}: ${answered.text}`);
  return answered.body;
}

async function setUp(
  s: TestServer,
  settings: Record<string, unknown>,
): Promise<{ project: LocalProject; numbers: Map<number, number> }> {
  const { remoteUrl } = await ok(
    s.call<{ remoteUrl: string }>("local/createRepository", { repo: LOCAL }),
  );
  const project = await createLocalProject(remoteUrl);
  await ok(s.call("createQueue", QUEUE));
  await ok(s.call("updateQueue", { ...QUEUE, testingTimeoutMinutes: 0, ...settings }));
  const numbers = new Map<number, number>();
  for (let k = 1; k <= 12; k++) {
    await project.branch(`pr-${String(k)}`, changesOf(k), `Add ${String(k)}`);
    const { number } = await ok(
      s.call<{ number: number }>("local/openPullRequest", {
        repo: LOCAL,
        head: `pr-${String(k)}`,
        base: "main",
        title: `Add ${String(k)}`,
        author: "dev",
      }),
    );
    numbers.set(k, number);
  }
  return { project, numbers };
}

async function states(s: TestServer, numbers: Iterable<number>): Promise<Map<number, string>> {
  const found = new Map<number, string>();
  for (const number of numbers) {
    const pr = await ok(
      s.call<SubmittedPr>("getSubmittedPullRequest", { ...QUEUE, pr: { number } }),
    );
    found.set(number, pr.state);
  }
  return found;
}

async function lastTransition(s: TestServer, number: number): Promise<TimelineEntry | undefined> {
  const pr = await ok(
    s.call<{ timeline: TimelineEntry[] }>("getSubmittedPullRequest", {
      ...QUEUE,
      pr: { number },
      includeTimeline: true,
    }),
  );
  return pr.timeline.at(-1);
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
      const { project, numbers } = await setUp(s, {
        concurrency,
        batch,
        batchingMinSize: 4,
        batchingMaxWaitTimeMinutes: 1,
        bisectionConcurrency: concurrency,
        // Unbatched, every PR is in the queue before the first run starts: checks this quick
        // could otherwise merge #8 before #9 is submitted, which then waits as not mergeable
        // instead of failing its test merge. (Batches wait for four PRs anyway.)
        ...(batch ? {} : { state: "paused" }),
      });
      for (const number of numbers.values()) {
        await ok(s.call("submitPullRequest", { ...QUEUE, pr: { number } }));
      }
      if (!batch) await ok(s.call("updateQueue", { ...QUEUE, state: "running" }));
      await waitFor(
        async () =>
          [...(await states(s, numbers.values())).values()].every((st) => TERMINAL.has(st)),
        "every pull request to conclude",
        { timeoutMs: 150_000, intervalMs: 250 },
      );

      const byK = await states(s, numbers.values());
      const stateOf = (k: number) => byK.get(numbers.get(k) ?? -1);
      const good = [1, 2, 3, 4, 6, 7, 8, 10, 11, 12];
      for (const k of good) expect(stateOf(k), `#${String(k)}`).toBe("merged");
      expect(stateOf(BREAKING)).toBe("failed");
      expect(stateOf(9)).toBe("failed");

      const breaking = await lastTransition(s, numbers.get(BREAKING) ?? -1);
      expect(breaking).toMatchObject({ toState: "failed", reason: "failing_required_check" });
      expect(breaking?.detail).toContain("test");
      const conflicting = await lastTransition(s, numbers.get(9) ?? -1);
      expect(conflicting).toMatchObject({ toState: "failed", reason: "merge_conflict" });
      expect(conflicting?.detail).toContain("shared.txt");

      // One commit each (squash), nothing else, in the order the queue merged them. That is the
      // submission order, except that a bisected batch's good pull requests come back behind
      // what was in flight (research merge-queue §2.7).
      const mergedAt = new Map<number, string>();
      for (const k of good) {
        const last = await lastTransition(s, numbers.get(k) ?? -1);
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
