/**
 * The local merge queue across crashes, with real `mainline serve` processes: a server killed
 * with SIGKILL in the middle of the queue and started again finishes it with no pull request lost
 * and nothing merged twice; on PostgreSQL, two servers on one database and one data directory
 * drive the queue together the same way.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from "../helpers/database.js";
import {
  PROJECT_FILES,
  mainlineYml,
  testsPassAtMain,
  type LocalProject,
} from "../helpers/local-project.js";
import {
  QUEUE,
  allConcluded,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  stateOf,
  submit,
  type Call,
} from "../helpers/local-queue.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";

/** Checks that take a moment, so that the kill lands while runs are in flight. */
const SLOW_PROJECT: Record<string, string> = {
  ...PROJECT_FILES,
  ".mainline.yml": mainlineYml("sleep 0.4 && sh test.sh"),
};

const PRS = 8;

let database: TestDatabase;
let token: string;
let env: Record<string, string>;
beforeEach(async () => {
  database = await createTestDatabase();
  token = randomBytes(32).toString("hex");
  env = {
    ...database.env,
    MAINLINE_BOOTSTRAP_ORG: "acme",
    MAINLINE_BOOTSTRAP_TOKEN: token,
    // A killed server's queue and checks are taken over 5 s after its last renewal, not 30.
    MAINLINE_QUEUE_LEASE_SECONDS: "5",
  };
});
afterEach(async () => {
  await stopAllProcesses();
  await database.cleanup();
});
afterAll(stopAllProcesses);

const callOn =
  (server: () => RunningServer): Call =>
  (operation, body) =>
    post(server().url, operation, body, token);

/** Opens and submits PRS pull requests, each adding a file of its own. */
async function fillQueue(call: Call, project: LocalProject): Promise<number[]> {
  const numbers: number[] = [];
  for (let k = 1; k <= PRS; k++) {
    numbers.push(
      await openPullRequest(call, project, k, { [`numbers/p${String(k)}.txt`]: `${String(k)}\n` }),
    );
  }
  for (const number of numbers) await submit(call, number);
  return numbers;
}

/** Every pull request merged exactly once, in order, and nothing left behind. */
async function expectFinished(call: Call, project: LocalProject, numbers: number[]) {
  for (const number of numbers) expect(await stateOf(call, number)).toBe("merged");
  expect(await project.mainHistory()).toEqual([
    "Start the project",
    ...numbers.map((n, i) => `Add ${String(i + 1)} (#${String(n)})`),
  ]);
  expect(await testsPassAtMain(project.remote)).toBe(true);
  await waitFor(
    async () => !(await project.remoteBranches()).some((b) => b.startsWith("mainline-merge/")),
    "test branches to be removed",
  );
  const { runs } = await ok<{ runs: { status: string }[] }>(call, "local/listCiRuns", {
    ...QUEUE,
    take: 100,
  });
  expect(runs.filter((r) => r.status === "queued" || r.status === "running")).toEqual([]);
}

describe("the local merge queue across crashes", () => {
  it("a server killed with SIGKILL mid-queue finishes it after a restart: nothing lost, nothing merged twice", async () => {
    let server = await startServer(env);
    const call = callOn(() => server);
    const project = await createRepositoryAndQueue(
      call,
      { concurrency: 2, testingTimeoutMinutes: 0 },
      SLOW_PROJECT,
    );
    const numbers = await fillQueue(call, project);
    await waitFor(
      async () => (await stateOf(call, numbers[1] ?? -1)) === "merged",
      "the first merges",
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(await server.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
    const before = await project.mainHistory();
    expect(before.length).toBeLessThan(PRS + 1);

    server = await startServer(env);
    await waitFor(() => allConcluded(call, numbers), "the queue to finish after the restart", {
      timeoutMs: 90_000,
      intervalMs: 250,
    });
    await expectFinished(call, project, numbers);
    await server.stop();
  }, 180_000);

  // SQLite is served by one process (a second is refused: test/cli/serve.test.ts).
  if (TEST_DIALECT === "postgres") {
    it("two servers on one PostgreSQL database and data directory drive the queue together", async () => {
      const first = await startServer(env);
      const second = await startServer(env);
      let turn = 0;
      // Requests alternate between the servers, as behind a load balancer.
      const call = callOn(() => (turn++ % 2 === 0 ? first : second));
      const project = await createRepositoryAndQueue(
        call,
        { concurrency: 3, testingTimeoutMinutes: 0 },
        SLOW_PROJECT,
      );
      const numbers = await fillQueue(call, project);
      await waitFor(() => allConcluded(call, numbers), "the queue to finish", {
        timeoutMs: 120_000,
        intervalMs: 250,
      });
      await expectFinished(call, project, numbers);
    }, 180_000);
  }
});
