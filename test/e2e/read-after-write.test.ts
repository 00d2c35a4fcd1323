/**
 * A read that follows an acknowledged write of the same organization sees it, on any server
 * process (docs/api.md, "Merge-queue pull requests"): real `mainline serve` processes on the local
 * git host, each write followed at once by getQueue, listPullRequests and getSubmittedPullRequests
 * — through the server that took the write and, on PostgreSQL, through another server on the
 * same database.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, TEST_DIALECT, type TestDatabase } from "../helpers/database.js";
import { PROJECT_FILES, mainlineYml } from "../helpers/local-project.js";
import {
  QUEUE,
  createRepositoryAndQueue,
  ok,
  openPullRequest,
  type Call,
} from "../helpers/local-queue.js";
import { startServer, stopAllProcesses, waitFor, withBootstrapToken } from "../helpers/process.js";

/** Pull requests submitted one after another, each read back at once. */
const PRS = 24;

/** Checks that last long enough for a restart to find the run in flight. */
const SLOW_PROJECT: Record<string, string> = {
  ...PROJECT_FILES,
  ".mainline.yml": mainlineYml("sleep 5 && sh test.sh"),
};

interface Item {
  prNumber: number;
  state: string;
  prSha: string;
  readiness?: { hasImpactedTargets: boolean };
  timeline?: { reason: string }[];
}

type Read = "getQueue" | "listPullRequests" | "getSubmittedPullRequests";

let database: TestDatabase | undefined;
afterEach(async () => {
  await stopAllProcesses();
  await database?.cleanup();
  database = undefined;
});
afterAll(stopAllProcesses);

/** The three reads of a pull request, made together: what each of them shows of it. */
async function readBack(call: Call, number: number): Promise<Record<Read, Item | undefined>> {
  const [queue, list, many] = await Promise.all([
    ok<{ enqueuedPullRequests: Item[] }>(call, "getQueue", QUEUE),
    ok<{ pullRequests: Item[] }>(call, "listPullRequests", { ...QUEUE, take: 100 }),
    ok<{ pullRequests: Item[] }>(call, "getSubmittedPullRequests", {
      ...QUEUE,
      prs: [{ number }],
      includeTimeline: true,
    }),
  ]);
  const of = (items: Item[]) => items.find((item) => item.prNumber === number);
  return {
    getQueue: of(queue.enqueuedPullRequests),
    listPullRequests: of(list.pullRequests),
    getSubmittedPullRequests: of(many.pullRequests),
  };
}

type Reads = Partial<Record<Read, Item | undefined>>;

/** The reads that do not show what `holds` expects, e.g. "submit #3: listPullRequests". */
function misses(
  write: string,
  number: number,
  reads: Reads,
  holds: (item: Item | undefined) => boolean,
): string[] {
  return Object.entries(reads)
    .filter(([, item]) => !holds(item))
    .map(([read]) => `${write} #${String(number)}: ${read}`);
}

const SETUPS =
  TEST_DIALECT === "postgres"
    ? (["one server", "two servers"] as const)
    : (["one server"] as const);

describe(`a read after an acknowledged write sees it (${TEST_DIALECT})`, () => {
  it.each(SETUPS)(
    "%s: submissions, impacted targets, cancellations, pause and restart",
    async (setup) => {
      database = await createTestDatabase();
      const { env, token } = withBootstrapToken(database.env);
      const writer = await startServer(env);
      const reader = setup === "two servers" ? await startServer(env) : writer;
      const write: Call = (operation, body) => post(writer.url, operation, body, token);
      const read: Call = (operation, body) => post(reader.url, operation, body, token);

      // Paused: submissions are taken and wait, so that every read finds them in the queue.
      const project = await createRepositoryAndQueue(write, { state: "paused" }, SLOW_PROJECT);
      const numbers: number[] = [];
      for (let k = 1; k <= PRS; k++) {
        numbers.push(
          await openPullRequest(write, project, k, { [`numbers/p${String(k)}.txt`]: `${k}\n` }),
        );
      }

      // Every write is followed at once by the reads; what they missed is listed at the end.
      const missed: string[] = [];
      for (const number of numbers) {
        await ok(write, "submitPullRequest", { ...QUEUE, pr: { number } });
        const reads = await readBack(read, number);
        missed.push(...misses("submit", number, reads, (item) => item !== undefined));
      }
      await waitFor(async () => {
        const { pullRequests } = await ok<{ pullRequests: Item[] }>(read, "listPullRequests", {
          ...QUEUE,
          take: 100,
        });
        return pullRequests.length === PRS;
      }, "every submission applied");

      for (const number of numbers.slice(0, 6)) {
        const { getSubmittedPullRequests: pr } = await readBack(read, number);
        await ok(write, "setImpactedTargets", {
          ...QUEUE,
          pr: { number, sha: pr?.prSha },
          impactedTargets: ["//app:lib"],
        });
        const after = await readBack(read, number);
        missed.push(
          ...misses(
            "setImpactedTargets",
            number,
            { getSubmittedPullRequests: after.getSubmittedPullRequests },
            (item) => item?.readiness?.hasImpactedTargets === true,
          ),
        );
      }

      for (const number of numbers.slice(-6)) {
        await ok(write, "cancelPullRequest", { ...QUEUE, pr: { number } });
        const reads = await readBack(read, number);
        missed.push(
          ...misses("cancel", number, { getQueue: reads.getQueue }, (item) => item === undefined),
          ...misses(
            "cancel",
            number,
            {
              listPullRequests: reads.listPullRequests,
              getSubmittedPullRequests: reads.getSubmittedPullRequests,
            },
            (item) => item?.state === "cancelled",
          ),
        );
      }

      await ok(write, "updateQueue", { ...QUEUE, state: "running" });
      expect((await ok<{ state: string }>(read, "getQueue", QUEUE)).state).toBe("running");
      const first = numbers[0] as number;
      await waitFor(
        async () => (await readBack(read, first)).getSubmittedPullRequests?.state === "testing",
        `#${String(first)} testing`,
      );
      await ok(write, "restartTestsOnPullRequest", { ...QUEUE, pr: { number: first } });
      const { getSubmittedPullRequests } = await readBack(read, first);
      missed.push(
        ...misses("restart", first, { getSubmittedPullRequests }, (item) =>
          Boolean(item?.timeline?.some((t) => t.reason === "restarted_by_user")),
        ),
      );
      await ok(write, "updateQueue", { ...QUEUE, state: "paused" });
      expect((await ok<{ state: string }>(read, "getQueue", QUEUE)).state).toBe("paused");
      expect(missed, "reads right after an acknowledged write that missed it").toEqual([]);
    },
    120_000,
  );
});
