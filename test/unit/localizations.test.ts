import { describe, expect, it } from "vitest";
import { computeBoard, type QueueBoard } from "../../src/mergequeue/dashboard.js";
import type { QueueSnapshot } from "../../src/mergequeue/model.js";
import { queueLive, type QueueLinks } from "../../src/web/pages/merge-queue.js";
import { localizationsOf } from "../../src/mergequeue/localizations.js";
import { waitsOf } from "../../src/mergequeue/waiting.js";
import { batchSizeChoice } from "../../src/mergequeue/batch-size.js";
import { NO_VERDICTS, recordVerdict } from "../../src/mergequeue/speculation.js";
import { PlannerHarness, defined } from "../helpers/planner-harness.js";

/**
 * What the queue page, getQueue and the CLI say about a failed batch being localized, read from
 * the planner's own snapshots: the suspects, the prefixes, the cleared pull requests (also once
 * they merged), the presumed culprit, and what each pull request waits for; and the batch size
 * in use, with why.
 */

/** The entry id of a queued pull request. */
const idOf = (h: PlannerHarness, number: number) =>
  defined(h.snapshot.prIndex[String(number)], `entry of #${number}`);

describe("a localization as it is shown", () => {
  it("names its suspects and prefixes, and a cleared pull request after it merged", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 4, bisectionConcurrency: 3 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4], { checks: ["unit"] });
    const [view] = localizationsOf(h.snapshot);
    const batchRun = defined(view).runId;
    expect(view).toEqual({
      id: expect.any(String) as string,
      runId: batchRun,
      prNumbers: [1, 2, 3, 4],
      cleared: [],
      suspects: [1, 2, 3, 4],
      prefixes: [
        { runId: h.run(1).id, prNumbers: [1] },
        { runId: h.run(1, 2).id, prNumbers: [1, 2] },
        { runId: h.run(1, 2, 3).id, prNumbers: [1, 2, 3] },
      ],
      presumedCulprit: null,
      summary: `testing 3 prefixes of batch run ${batchRun} to find the failing pull request (one of #1, #2, #3, #4)`,
    });
    // Each suspect waits for it, and says which.
    const waits = waitsOf(h.snapshot);
    for (const n of [1, 2, 3, 4]) {
      expect(waits.get(idOf(h, n))).toEqual({
        reason: "under_localization",
        message: `under localization: ${defined(view).summary}`,
        prNumbers: [1, 2, 3, 4],
        runId: batchRun,
      });
    }
    const board = computeBoard(h.snapshot, null, h.now);
    expect(board.bisections).toEqual([view]);
    expect(board.entries.map((e) => e.localization)).toEqual(
      [1, 2, 3, 4].map(() => ({ runId: batchRun, role: "suspect" })),
    );
    expect(board.runs.filter((r) => r.kind === "bisection").map((r) => r.localizes)).toEqual([
      batchRun,
      batchRun,
      batchRun,
    ]);

    // #1 passes alone: it is cleared and merges at once, leaving the snapshot; the
    // localization still names it, from its runs.
    const [two, three] = [h.run(1, 2).id, h.run(1, 2, 3).id];
    h.pass(1);
    expect(h.merged).toEqual([1]);
    expect(h.snapshot.prIndex["1"]).toBeUndefined();
    const [after] = localizationsOf(h.snapshot);
    expect(after).toMatchObject({
      prNumbers: [1, 2, 3, 4],
      cleared: [1],
      suspects: [2, 3, 4],
      prefixes: [
        { runId: two, prNumbers: [2] },
        { runId: three, prNumbers: [2, 3] },
      ],
    });
    expect(defined(after).summary).toBe(
      `testing 2 prefixes of batch run ${batchRun} to find the failing pull request (one of #2, #3, #4)`,
    );
    expect([...waitsOf(h.snapshot).values()].map((w) => w.prNumbers)).toEqual([
      [2, 3, 4],
      [2, 3, 4],
      [2, 3, 4],
    ]);
  });

  it("says who waits behind it, then the presumed culprit, and who is presumed good", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, concurrency: 2 });
    for (const n of [1, 2, 3, 4, 5, 6]) h.submit(n);
    h.at(30).fail([1, 2]);
    // #3 keeps its place behind the batch: it waits for the localization, naming the suspects.
    expect(waitsOf(h.snapshot).get(idOf(h, 3))).toEqual({
      reason: "bisection_ahead",
      message: "waiting for the localization of the failed batch ahead (suspects #1, #2)",
      prNumbers: [1, 2],
    });
    const [view] = localizationsOf(h.snapshot);
    expect(view).toMatchObject({ suspects: [1, 2], presumedCulprit: null });
    expect(defined(view).summary).toBe(
      `testing 1 prefix of batch run ${defined(view).runId} to find the failing pull request (one of #1, #2)`,
    );

    // The window passes: #2 is presumed to fail it, #1 presumed good, the lane goes on.
    h.tick(60);
    const [presumed] = localizationsOf(h.snapshot);
    expect(presumed).toMatchObject({ suspects: [1, 2], presumedCulprit: 2 });
    expect(defined(presumed).summary).toMatch(
      /\(one of #1, #2\); #2 is presumed to fail it and the queue goes on behind it$/,
    );
    const board = computeBoard(h.snapshot, null, h.now);
    const role = (n: number) => board.entries.find((e) => e.number === n)?.localization?.role;
    expect([role(1), role(2), role(3)]).toEqual(["presumed_good", "presumed_culprit", undefined]);
    expect(waitsOf(h.snapshot).has(idOf(h, 3))).toBe(false);

    // #1 passed: #2 alone is tested once more (the batch run was the only one to fail)…
    h.at(70).pass(1);
    expect(h.state(2)).toBe("pending_failure");
    // …and fails: decided, it is gone, and nothing waits for it any more.
    h.at(75).fail([2]);
    expect(h.state(2)).toBe("failed");
    expect(localizationsOf(h.snapshot)).toEqual([]);
    expect([...waitsOf(h.snapshot).values()].filter((w) => w.reason !== "batch_forming")).toEqual(
      [],
    );
  });

  it("ends when one of its suspects leaves the queue: nothing is left to show", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 3, bisectionConcurrency: 2 });
    for (const n of [1, 2, 3]) h.submit(n);
    h.fail([1, 2, 3]);
    expect(localizationsOf(h.snapshot)).toHaveLength(1);
    h.send({ type: "cancel", prNumber: 2, actor: { kind: "user", name: "ana" } });
    expect(localizationsOf(h.snapshot)).toEqual([]);
    expect(computeBoard(h.snapshot, null, h.now).entries.map((e) => e.localization)).toEqual([
      null,
      null,
    ]);
  });
});

describe("the batch size in use, in words", () => {
  const batching = { batch: true, batchingMinSize: 4, concurrency: 1 };

  it("is one with batching off, the most allowed until a failure stands", () => {
    expect(batchSizeChoice({ ...batching, batch: false }, NO_VERDICTS)).toEqual({
      size: 1,
      ceiling: 4,
      estimatedFailureRate: 0,
      reason: "batching is off",
    });
    expect(batchSizeChoice(batching, NO_VERDICTS)).toEqual({
      size: 4,
      ceiling: 4,
      estimatedFailureRate: 0,
      reason:
        "no failure has stood in the queue's recent runs: batches of 4, the most batchingMinSize allows",
    });
    expect(batchSizeChoice({ ...batching, batchingMinSize: 1 }, NO_VERDICTS).reason).toBe(
      "batchingMinSize is 1: one pull request at a time",
    );
  });

  it("says at which failure rate, once failures stand, and falls to one when they are many", () => {
    const after = (failures: number) => {
      let verdicts = NO_VERDICTS;
      for (let i = 0; i < 20; i++) verdicts = recordVerdict(verdicts, 1, i < failures);
      return verdicts;
    };
    const few = batchSizeChoice(batching, after(1));
    expect(few.size).toBe(4);
    expect(few.reason).toMatch(
      /^batches of 4 \(the most batchingMinSize allows\) merge the most at a \d+(\.\d)? % failure rate$/,
    );
    // Ten runs at once, one pull request in four failing: batches would fail too often.
    const many = batchSizeChoice({ ...batching, concurrency: 10 }, after(5));
    expect(many.size).toBe(1);
    const percent = `${String(Math.round(many.estimatedFailureRate * 1000) / 10)} %`;
    expect(many.reason).toBe(
      `at a ${percent} failure rate, testing one pull request at a time merges more than batches`,
    );
  });
});

describe("on the queue page", () => {
  const links: QueueLinks = {
    queue: "/q",
    health: "/h",
    events: "/e",
    stateAction: "/s",
    pullRequest: (n) => `/pr/${n}`,
    pullRequestAction: (n, a) => `/pr/${n}/${a}`,
    log: () => undefined,
  };
  const place = {
    org: "acme",
    repo: { host: "local", owner: "acme", name: "shop" },
    branch: "main",
  };
  const page = (snapshot: QueueSnapshot, now: number) => {
    const board: QueueBoard = {
      queue: {
        id: "q",
        repositoryId: "r",
        targetBranch: "main",
        configuration: snapshot.configuration,
        createdAt: 0,
        updatedAt: 0,
        version: 1,
      },
      version: "1.1",
      ...computeBoard(snapshot, null, now),
      batchSize: batchSizeChoice(snapshot.configuration, snapshot.verdicts),
      concluded: [],
      typicalRunMs: null,
      estimateSample: 0,
      hostTrouble: null,
    };
    return queueLive(board, place, links, now).toString();
  };

  it("shows the batch size in use, and each localization: cleared, suspects, prefixes, presumption", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 2, concurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.at(30).fail([1, 2]);
    const html = page(h.snapshot, h.now);
    expect(html).toMatch(
      /<p class="batch-size">Batch size in use: <strong>2<\/strong> of at most 2 <span class="muted">· batches of 2 \(the most batchingMinSize allows\) merge the most at a [\d.]+ % failure rate<\/span><\/p>/,
    );
    const [view] = localizationsOf(h.snapshot);
    const prefixRun = defined(view?.prefixes[0]).runId;
    expect(html).toContain('<h3 id="localizations">Failed batches being localized</h3>');
    expect(html).toContain(`<p>Testing 1 prefix of batch run ${defined(view).runId} to find`);
    expect(html).toContain(
      '<dt>Cleared</dt><dd><span class="muted">none yet</span></dd><dt>Suspects</dt><dd><a href="/pr/1">#1</a>, <a href="/pr/2">#2</a></dd>',
    );
    expect(html).toContain(
      `<li><a href="/pr/1">#1</a> <span class="muted">in <a href="#run-${prefixRun}">run ${prefixRun}</a></span></li>`,
    );
    expect(html).toContain(`<li class="run" id="run-${prefixRun}"`);
    expect(html).toContain("a suspect in the localization of batch run");
    expect(html).toContain(
      "waiting for the localization of the failed batch ahead (suspects #1, #2)",
    );
    expect(html).not.toContain("Presumed culprit");

    h.tick(60);
    const presumed = page(h.snapshot, h.now);
    expect(presumed).toContain(
      '<dt>Presumed culprit</dt><dd><a href="/pr/2">#2</a> <span class="muted">· the queue goes on behind it; nothing merges on the presumption</span></dd>',
    );
    expect(presumed).toContain("presumed to fail batch run");
    expect(presumed).toContain("presumed good in the localization of batch run");
  });

  it("shows no batch size with batching off, and no localization when none is in progress", () => {
    const h = new PlannerHarness({ batch: false });
    h.submit(1);
    const html = page(h.snapshot, h.now);
    expect(html).not.toContain("batch-size");
    expect(html).not.toContain("localiz");
  });
});
