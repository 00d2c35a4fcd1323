import { beforeAll, describe, expect, it } from "vitest";
import {
  REPO,
  eventually,
  finishRun,
  queueWithPullRequests,
  runOf,
  startLocalizationWorld,
  type LocalizationWorld,
} from "../helpers/localization.js";
import { defined } from "../helpers/planner-harness.js";

/**
 * getQueue's extensions (Mainline's, not Trunk's): `batchSize` with batching on and
 * `localizations`, and `waitingFor` of the pull requests in and behind a failed batch being
 * localized; against the real engine, an in-memory git host and a CI whose results the test
 * gives. The clock stands still, so that no presumption is made while the test reads.
 */

let world: LocalizationWorld;

beforeAll(async () => {
  world = await startLocalizationWorld();
  return () => world.server.close();
});

interface Waiting {
  reason: string;
  message: string;
  prNumbers?: number[];
  runId?: string;
}
interface Item {
  prNumber: number;
  state: string;
  waitingFor?: Waiting;
}
interface Localization {
  id: string;
  runId: string;
  prNumbers: number[];
  cleared: number[];
  suspects: number[];
  prefixes: { runId: string; prNumbers: number[] }[];
  presumedCulprit: number | null;
  summary: string;
}
interface QueueBody {
  batch: boolean;
  enqueuedPullRequests: Item[];
  batchSize?: { size: number; ceiling: number; estimatedFailureRate: number; reason: string };
  localizations: Localization[];
}

async function getQueue(address: object): Promise<QueueBody> {
  const answer = await world.server.call<QueueBody>("getQueue", address);
  expect(answer.status).toBe(200);
  return answer.body;
}

const BATCHING = {
  requiredStatuses: ["test"],
  batch: true,
  batchingMaxWaitTimeMinutes: 30,
};

describe("getQueue's batch size and localizations", () => {
  it("a queue that never ran: no batch size with batching off, none being localized", async () => {
    const address = { repo: REPO, targetBranch: "never-ran" };
    expect((await world.server.call("createQueue", address)).status).toBe(200);
    const body = await getQueue(address);
    expect(body).not.toHaveProperty("batchSize");
    expect(body.localizations).toEqual([]);
    // updateQueue answers the settings only.
    const updated = await world.server.call("updateQueue", { ...address, batch: true });
    expect(updated.body).not.toHaveProperty("batchSize");
    expect(updated.body).not.toHaveProperty("localizations");
    // Batching on, still no snapshot: the most batchingMinSize allows, no failure seen.
    const batching = await getQueue(address);
    expect(batching.batchSize).toEqual({
      size: 4,
      ceiling: 4,
      estimatedFailureRate: 0,
      reason:
        "no failure has stood in the queue's recent runs: batches of 4, the most batchingMinSize allows",
    });
    // An answer sent back as it is changes nothing.
    const back = await world.server.call("updateQueue", { ...batching, ...address });
    expect(back.status).toBe(200);
    expect(await getQueue(address)).toEqual(batching);
  });

  it("shows a failed batch being localized, what its pull requests and those behind wait for", async () => {
    const { address, numbers } = await queueWithPullRequests(
      world,
      { ...BATCHING, batchingMinSize: 3, bisectionConcurrency: 2 },
      4,
    );
    const branch = address.targetBranch;
    const [a, b, c, d] = numbers as [number, number, number, number];
    const batchRun = await finishRun(world, branch, [a, b, c], false);

    // The batch failed: its prefixes are tested at once, and #d waits behind it, in its place.
    const body = await eventually(async () => {
      const read = await getQueue(address);
      expect(read.localizations[0]?.prefixes).toHaveLength(2);
      return read;
    });
    const [prefixA, prefixAB] = [[a], [a, b]].map((prs) => defined(runOf(world, branch, prs)));
    const summary = `testing 2 prefixes of batch run ${batchRun} to find the failing pull request (one of #${a}, #${b}, #${c})`;
    expect(body.localizations).toEqual([
      {
        id: expect.any(String) as string,
        runId: batchRun,
        prNumbers: [a, b, c],
        cleared: [],
        suspects: [a, b, c],
        prefixes: [
          { runId: prefixA, prNumbers: [a] },
          { runId: prefixAB, prNumbers: [a, b] },
        ],
        presumedCulprit: null,
        summary,
      },
    ]);
    const waits = Object.fromEntries(
      body.enqueuedPullRequests.map((pr) => [pr.prNumber, [pr.state, pr.waitingFor]]),
    );
    const localized = {
      reason: "under_localization",
      message: `under localization: ${summary}`,
      prNumbers: [a, b, c],
      runId: batchRun,
    };
    expect(waits).toEqual({
      [a]: ["pending_failure", localized],
      [b]: ["pending_failure", localized],
      [c]: ["pending_failure", localized],
      [d]: [
        "pending",
        {
          reason: "bisection_ahead",
          message: `waiting for the localization of the failed batch ahead (suspects #${a}, #${b}, #${c})`,
          prNumbers: [a, b, c],
        },
      ],
    });
    // The failure stood: the queue's failure rate is no longer 0, and the size says it.
    expect(body.batchSize?.estimatedFailureRate).toBeGreaterThan(0);
    expect(body.batchSize?.reason).toMatch(/ failure rate/);
    // One pull request reads the same.
    const read = await world.server.call<Item>("getSubmittedPullRequest", {
      ...address,
      pr: { number: b },
    });
    expect(read.body.waitingFor).toEqual(localized);

    // #a passes alone: it is cleared and merges, leaving the queue; it is still named.
    await finishRun(world, branch, [a], true);
    const narrowed = await eventually(async () => {
      const again = await getQueue(address);
      expect(again.enqueuedPullRequests.map((pr) => pr.prNumber)).not.toContain(a);
      return again;
    });
    expect(narrowed.localizations[0]).toMatchObject({
      cleared: [a],
      suspects: [b, c],
      prefixes: [{ runId: prefixAB, prNumbers: [b] }],
    });

    // #a, #b fails: #b is the culprit, named by the passing and the failing run.
    await finishRun(world, branch, [a, b], false);
    const after = await eventually(async () => {
      const again = await getQueue(address);
      expect(again.localizations).toEqual([]);
      return again;
    });
    // Those sent back and behind wait for a batch at most, no longer for the localization.
    expect(
      after.enqueuedPullRequests.filter(
        (p) => p.waitingFor !== undefined && p.waitingFor.reason !== "batch_forming",
      ),
    ).toEqual([]);
    const culprit = await world.server.call<{
      state: string;
      timeline: { reason: string; detail: string | null }[];
    }>("getSubmittedPullRequest", { ...address, pr: { number: b }, includeTimeline: true });
    expect(culprit.body.state).toBe("failed");
    expect(culprit.body.timeline.at(-1)?.detail).toBe(
      `localization: run ${prefixA} (#${a}) passed; run ${prefixAB} (#${a}, #${b}) failed test`,
    );
    expect(culprit.body.timeline.map((t) => t.detail)).toContain(
      `testing 2 prefixes of batch run ${batchRun} at once to find the failing pull request`,
    );
  });

  it("a localization whose pull requests left: it ends, and nothing says it goes on", async () => {
    const { address, numbers } = await queueWithPullRequests(
      world,
      { ...BATCHING, batchingMinSize: 2 },
      2,
    );
    const branch = address.targetBranch;
    const [a, b] = numbers as [number, number];
    await finishRun(world, branch, [a, b], false);
    await eventually(async () => {
      expect((await getQueue(address)).localizations).toHaveLength(1);
    });
    const cancelled = await world.server.call("cancelPullRequest", {
      ...address,
      pr: { number: a },
    });
    expect(cancelled.status).toBe(200);
    const body = await eventually(async () => {
      const read = await getQueue(address);
      expect(read.localizations).toEqual([]);
      return read;
    });
    // The other is tested again where it stands: no longer under localization.
    expect(body.enqueuedPullRequests.map((p) => p.prNumber)).toEqual([b]);
    expect(body.enqueuedPullRequests[0]?.waitingFor?.reason).not.toBe("under_localization");
  });
});
