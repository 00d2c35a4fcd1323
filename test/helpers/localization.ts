/**
 * A server running the real merge-queue engine on an in-memory git host and a CI whose results
 * the test gives, with a clock that stands still (no batching deadline passes and no culprit is
 * presumed while a test reads): for what getQueue and the CLI say about a failed batch being
 * localized.
 */
import { expect } from "vitest";
import { MemoryCi } from "../../src/mergequeue/simulator/memory-host.js";
import { InMemoryGitHost } from "./git-host.js";
import { defined } from "./planner-harness.js";
import { startTestServer, type TestServer } from "./server.js";

export const REPO = { host: "github.com", owner: "acme", name: "app" };
export const FROZEN_NOW = Date.UTC(2026, 11, 1, 12, 0);

export interface LocalizationWorld {
  server: TestServer;
  git: InMemoryGitHost;
  ci: MemoryCi;
}

export async function startLocalizationWorld(): Promise<LocalizationWorld> {
  const git = new InMemoryGitHost();
  const ci = new MemoryCi();
  const server = await startTestServer({
    gitHost: git,
    ci,
    startWorker: false,
    clock: { now: () => FROZEN_NOW },
  });
  return { server, git, ci };
}

/** Retries `check` until it stops throwing, for what the engine does after answering. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

let branchCounter = 0;

/**
 * A queue of its own branch (which exists on the host, so that the queue can merge into it)
 * with `settings`, and `count` pull requests opened into it and submitted in order.
 */
export async function queueWithPullRequests(
  world: LocalizationWorld,
  settings: Record<string, unknown>,
  count: number,
): Promise<{ address: { repo: typeof REPO; targetBranch: string }; numbers: number[] }> {
  const address = { repo: REPO, targetBranch: `localizing-${++branchCounter}` };
  const branch = address.targetBranch;
  world.git.push(REPO, branch, `${branch}-base`);
  expect((await world.server.call("createQueue", address)).status).toBe(200);
  expect((await world.server.call("updateQueue", { ...address, ...settings })).status).toBe(200);
  const numbers: number[] = [];
  for (let k = 1; k <= count; k++) {
    const { number } = world.git.openPullRequest({
      ...REPO,
      head: `${branch}/pr-${k}`,
      base: branch,
      title: `Change ${k}`,
      author: "alice",
    });
    numbers.push(number);
  }
  for (const number of numbers) {
    const submitted = await world.server.call("submitPullRequest", { ...address, pr: { number } });
    expect(submitted.status).toBe(200);
  }
  return { address, numbers };
}

/** The id of the CI run started for `targetBranch` with exactly these pull requests, if any. */
export function runOf(
  world: LocalizationWorld,
  targetBranch: string,
  prNumbers: number[],
): string | undefined {
  return [...world.ci.started.values()].find(
    (r) => r.targetBranch === targetBranch && r.prNumbers.join(",") === prNumbers.join(","),
  )?.runId;
}

/** Waits for that run to start, then reports its one check, `test`; answers its id. */
export async function finishRun(
  world: LocalizationWorld,
  targetBranch: string,
  prNumbers: number[],
  passed: boolean,
): Promise<string> {
  const run = await eventually(() =>
    Promise.resolve(
      defined(
        [...world.ci.started.values()].find(
          (r) => r.targetBranch === targetBranch && r.prNumbers.join(",") === prNumbers.join(","),
        ),
        `run of ${prNumbers.join(", ")}`,
      ),
    ),
  );
  world.ci.finish(run.queueId, run.runId, [
    { name: "test", conclusion: passed ? "success" : "failure" },
  ]);
  return run.runId;
}
