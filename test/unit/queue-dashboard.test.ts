import { describe, expect, it } from "vitest";
import {
  computeBoard,
  healthOf,
  percentile,
  typicalRunDuration,
  type QueueBoard,
} from "../../src/mergequeue/dashboard.js";
import type { EntryRecord } from "../../src/mergequeue/records.js";
import { batchSizeChoice } from "../../src/mergequeue/batch-size.js";
import { DAY_MS, MINUTE_MS } from "../../src/lib/time.js";
import { assetCatalog } from "../../src/web/assets/catalog.js";
import { renderDocument } from "../../src/web/layout.js";
import { busySnapshot } from "../helpers/queue-snapshots.js";
import { renderQueue, type QueueLinks, type QueuePlace } from "../../src/web/pages/merge-queue.js";

/**
 * The merge-queue dashboard's pure parts: the board of a planner snapshot (positions, runs on
 * top of what, estimates), percentiles, a queue's health by day, and the queue page's weight
 * with 200 pull requests (the budget: 150 KB with its files, before compression).
 */

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const snapshotOf = (count: number, concurrency = 3) => busySnapshot(NOW, count, concurrency);

describe("the board of a snapshot", () => {
  it("lists runs on top of what, positions, and estimates that never go back in time", () => {
    const board = computeBoard(snapshotOf(10), 5 * MINUTE_MS, NOW);
    expect(board.runs.map((r) => [r.id, r.ahead, r.unit])).toEqual([
      ["r1", [], [1]],
      ["r2", [1], [2]],
      ["r3", [1, 2], [3]],
    ]);
    expect(board.entries.map((e) => e.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, null]);
    // Runs in flight end a typical run after they started: 3 minutes from now.
    expect(board.entries[0]?.estimatedMergeAt).toBe(NOW + 3 * MINUTE_MS);
    // Pending: waves of 3 (the concurrency), each a typical run after the runs in flight.
    expect(board.entries[3]?.estimatedMergeAt).toBe(NOW + 8 * MINUTE_MS);
    expect(board.entries[6]?.estimatedMergeAt).toBe(NOW + 13 * MINUTE_MS);
    const etas = board.entries.flatMap((e) =>
      e.estimatedMergeAt === null ? [] : [e.estimatedMergeAt],
    );
    expect(etas).toEqual([...etas].sort((a, b) => a - b));
    expect(board.entries.at(-1)).toMatchObject({
      number: 999,
      state: "not_ready",
      estimatedMergeAt: null,
    });
  });

  it("names pull requests ahead that merged meanwhile by the run's own list", () => {
    const snapshot = snapshotOf(3);
    delete snapshot.entries.e1;
    snapshot.order.shift();
    expect(computeBoard(snapshot, null, NOW).runs.map((r) => r.ahead)).toEqual([[], [1], [1, 2]]);
  });

  it("estimates nothing without a finished run, and is empty without a snapshot", () => {
    const board = computeBoard(snapshotOf(4), null, NOW);
    expect(board.entries.map((e) => [e.estimatedMergeAt, e.noEstimate, e.expectedStartAt])).toEqual(
      [...Array.from({ length: 4 }, () => [null, "no_history", null]), [null, "not_ready", null]],
    );
    expect(board.runs.map((r) => [r.estimatedEndAt, r.overrunMs])).toEqual(
      board.runs.map(() => [null, null]),
    );
    expect(computeBoard(undefined, 1000, NOW)).toEqual({ entries: [], runs: [], bisections: [] });
  });

  it("has no merge estimate on a paused queue, and says why pending ones wait", () => {
    const snapshot = snapshotOf(6);
    snapshot.configuration = { ...snapshot.configuration, state: "paused" };
    const board = computeBoard(snapshot, 5 * MINUTE_MS, NOW);
    // Nothing merges while paused; the runs in flight still finish.
    expect(board.entries.map((e) => e.estimatedMergeAt)).toEqual(board.entries.map(() => null));
    expect(board.entries.map((e) => e.noEstimate)).toEqual([
      ...Array.from({ length: 6 }, () => "paused"),
      "not_ready",
    ]);
    expect(board.runs.map((r) => r.estimatedEndAt)).toEqual(
      [0, 0, 0].map(() => NOW + 3 * MINUTE_MS),
    );
    expect(board.entries.filter((e) => e.state === "pending").map((e) => e.waitsFor)).toEqual(
      [0, 0, 0].map(() => ({ kind: "paused" })),
    );
    expect(board.entries.every((e) => e.expectedStartAt === null)).toBe(true);
    // Draining: runs finish and merge, the estimates stay.
    snapshot.configuration = { ...snapshot.configuration, state: "draining" };
    const draining = computeBoard(snapshot, 5 * MINUTE_MS, NOW);
    expect(draining.entries[0]?.estimatedMergeAt).toBe(NOW + 3 * MINUTE_MS);
  });

  it("grows an overrunning run's end with the time, never in the past, and what waits on it", () => {
    // The runs started 2 minutes ago; a typical run takes 1: each has overrun by 1 minute.
    const snapshot = snapshotOf(4);
    const board = computeBoard(snapshot, MINUTE_MS, NOW);
    for (const run of board.runs) {
      expect(run.overrunMs).toBe(MINUTE_MS);
      expect(run.expectedMs).toBe(MINUTE_MS);
      // As long again as it overran so far (more than a quarter of a typical run).
      expect(run.estimatedEndAt).toBe(NOW + MINUTE_MS);
    }
    expect(board.entries[0]?.estimatedMergeAt).toBe(NOW + MINUTE_MS);
    expect(board.entries[3]?.expectedStartAt).toBe(NOW + MINUTE_MS);
    expect(board.entries[3]?.estimatedMergeAt).toBe(NOW + 2 * MINUTE_MS);
    // Ten minutes later, still running: the end moved on, later than now.
    const later = NOW + 10 * MINUTE_MS;
    const after = computeBoard(snapshot, MINUTE_MS, later);
    expect(after.runs[0]?.overrunMs).toBe(11 * MINUTE_MS);
    expect(after.runs[0]?.estimatedEndAt).toBe(later + 11 * MINUTE_MS);
    expect(after.entries[3]?.estimatedMergeAt).toBe(later + 12 * MINUTE_MS);
    // Barely over: a quarter of a typical run from now, not "now".
    const barely = computeBoard(snapshot, 2 * MINUTE_MS - 1000, NOW);
    expect(barely.runs[0]?.overrunMs).toBe(1000);
    expect(barely.runs[0]?.estimatedEndAt).toBe(NOW + (2 * MINUTE_MS - 1000) / 4);
    // Never past its testing timeout while that is ahead: it ends by then.
    snapshot.configuration = { ...snapshot.configuration, testingTimeoutMinutes: 30 };
    const timedOut = computeBoard(snapshot, MINUTE_MS, later + 10 * MINUTE_MS);
    expect(timedOut.runs[0]?.estimatedEndAt).toBe(NOW - 2 * MINUTE_MS + 30 * MINUTE_MS);
    // Not yet overrun: no overrun, and it ends a typical run after it started.
    const onTime = computeBoard(snapshot, 5 * MINUTE_MS, NOW);
    expect(onTime.runs[0]).toMatchObject({ overrunMs: null, estimatedEndAt: NOW + 3 * MINUTE_MS });
  });

  it("says a pending pull request waits for a free slot, and when it should start", () => {
    const snapshot = snapshotOf(8);
    const board = computeBoard(snapshot, 5 * MINUTE_MS, NOW);
    const pending = board.entries.filter((e) => e.state === "pending");
    expect(pending.map((e) => e.waitsFor)).toEqual(
      pending.map(() => ({ kind: "free_slot", runsInFlight: 3, concurrency: 3 })),
    );
    // Waves of three after the runs in flight end (3 minutes from now), a typical run each.
    expect(pending.map((e) => e.expectedStartAt)).toEqual([
      NOW + 3 * MINUTE_MS,
      NOW + 3 * MINUTE_MS,
      NOW + 3 * MINUTE_MS,
      NOW + 8 * MINUTE_MS,
      NOW + 8 * MINUTE_MS,
    ]);
    // A slot free: no such reason (the planner starts it, or gives its own).
    snapshot.configuration = { ...snapshot.configuration, concurrency: 4 };
    const free = computeBoard(snapshot, 5 * MINUTE_MS, NOW);
    expect(free.entries.filter((e) => e.state === "pending").map((e) => e.waitsFor)).toEqual(
      pending.map(() => null),
    );
    // The planner's own reason stays, and is the only one given.
    const held = snapshotOf(8);
    const fourth = held.entries.e4;
    if (!fourth) throw new Error("no #4");
    fourth.waiting = { kind: "bisection_ahead", prNumbers: [1] };
    const withReason = computeBoard(held, 5 * MINUTE_MS, NOW).entries[3];
    expect(withReason).toMatchObject({
      waiting: { kind: "bisection_ahead", prNumbers: [1] },
      waitsFor: null,
    });
  });

  it("takes the median of finished runs only", () => {
    const timing = (status: "passed" | "failed" | "cancelled" | "running", ms: number | null) => ({
      kind: "main" as const,
      status,
      startedAt: NOW - 10 * MINUTE_MS,
      finishedAt: ms === null ? null : NOW - 10 * MINUTE_MS + ms,
    });
    expect(
      typicalRunDuration([
        timing("passed", 1000),
        timing("failed", 3000),
        timing("passed", 2000),
        timing("cancelled", 50),
        timing("running", null),
      ]),
    ).toEqual({ ms: 2000, sample: 3 });
    expect(typicalRunDuration([])).toEqual({ ms: null, sample: 0 });
  });
});

describe("percentiles and health", () => {
  it("takes nearest-rank percentiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 95)).toBe(95);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  it("counts conclusions by reason and day, times in queue, runs per merged pull request", () => {
    const record = (n: number, state: "merged" | "failed", reason: string, daysAgo: number) =>
      ({
        seq: n,
        prNumber: n,
        prTitle: `#${n}`,
        prAuthor: "dev",
        state,
        lastReason: reason,
        submittedAt: NOW - daysAgo * DAY_MS - n * MINUTE_MS,
        concludedAt: NOW - daysAgo * DAY_MS,
      }) as EntryRecord;
    const entries = [
      record(1, "merged", "merged_by_queue", 0),
      record(2, "merged", "merged_by_queue", 1),
      record(3, "failed", "failing_required_check", 1),
      record(4, "failed", "merge_conflict", 0),
      record(5, "merged", "merged_by_queue", 30), // outside a 7-day range
    ];
    const runs = [0, 0, 1, 1, 1, 40].map((d) => ({
      kind: "main" as const,
      status: "passed" as const,
      startedAt: NOW - d * DAY_MS,
      finishedAt: NOW - d * DAY_MS + 1000,
    }));
    const health = healthOf(entries, runs, 7, NOW);
    expect([health.merged, health.failed, health.cancelled]).toEqual([2, 2, 0]);
    expect(health.byReason.map((r) => [r.state, r.reason, r.count])).toEqual([
      ["merged", "merged_by_queue", 2],
      ["failed", "failing_required_check", 1],
      ["failed", "merge_conflict", 1],
    ]);
    expect(health.timeInQueue).toEqual({ p50: MINUTE_MS, p95: 2 * MINUTE_MS, p99: 2 * MINUTE_MS });
    expect(health.runs).toBe(5);
    expect(health.runsPerMerged).toBe(2.5);
    expect(health.daily).toHaveLength(7);
    expect(health.daily.at(-1)).toMatchObject({ merged: 1, failed: 1, runs: 2 });
    expect(health.daily.at(-2)).toMatchObject({ merged: 1, failed: 1, runs: 3 });
    expect(health.needsAttention.map((f) => f.number)).toEqual([4, 3]);
  });

  it("lists a pull request that needs attention once, and not once its latest submission merged", () => {
    const submission = (seq: number, n: number, state: "merged" | "failed", hoursAgo: number) =>
      ({
        id: `e${seq}`,
        seq,
        prNumber: n,
        prTitle: `#${n}`,
        prAuthor: "dev",
        state,
        lastReason: state === "merged" ? "merged_by_queue" : "failing_required_check",
        submittedAt: NOW - hoursAgo * 3_600_000 - MINUTE_MS,
        concludedAt: NOW - hoursAgo * 3_600_000,
      }) as EntryRecord;
    // #7 failed twice; #8 failed, then merged when submitted again. Newest first, as read.
    const entries = [
      submission(4, 8, "merged", 1),
      submission(3, 7, "failed", 2),
      submission(2, 8, "failed", 3),
      submission(1, 7, "failed", 4),
    ];
    const health = healthOf(entries, [], 7, NOW);
    expect(health.failed).toBe(3);
    expect(health.needsAttention.map((f) => [f.number, f.entryId])).toEqual([[7, "e3"]]);
  });
});

describe("the queue page with 200 pull requests", () => {
  // How fast it renders is `bench:dashboard`'s to measure, not a test's.
  it("weighs under 150 KB with its files", async () => {
    const snapshot = snapshotOf(200, 10);
    const board: QueueBoard = {
      queue: {
        id: "q",
        repositoryId: "r",
        targetBranch: "main",
        configuration: snapshot.configuration,
        createdAt: NOW,
        updatedAt: NOW,
        version: 3,
      },
      version: "3.1234",
      ...computeBoard(snapshot, 4 * MINUTE_MS, NOW),
      batchSize: batchSizeChoice(snapshot.configuration, snapshot.verdicts),
      concluded: Array.from({ length: 10 }, (_, i) => ({
        number: 1000 + i,
        title: "A concluded change",
        state: "merged" as const,
        reason: "merged_by_queue",
        at: NOW - i * MINUTE_MS,
        tookMs: 20 * MINUTE_MS,
      })),
      typicalRunMs: 4 * MINUTE_MS,
      estimateSample: 50,
      hostTrouble: null,
    };
    const place: QueuePlace = {
      org: "acme",
      repo: { host: "github.com", owner: "acme", name: "app" },
      branch: "main",
    };
    const q = "repo=acme/app&branch=main";
    const links: QueueLinks = {
      queue: `/acme/merge-queue/queue?${q}`,
      health: `/acme/merge-queue/health?${q}`,
      events: `/acme/merge-queue/events?${q}`,
      stateAction: `/acme/merge-queue/queue/state?${q}`,
      pullRequest: (n) => `/acme/merge-queue/pr/${n}?${q}`,
      pullRequestAction: (n, a) => `/acme/merge-queue/pr/${n}/${a}?${q}`,
      log: () => undefined,
    };
    const assets = await assetCatalog();
    const html = renderDocument(renderQueue(board, place, links, "x".repeat(43), NOW), {
      orgSlug: "acme",
      csrf: "x".repeat(43),
      assets,
    });
    // Every time has its instant and full timestamp; the day's own without a date.
    const times = [...html.matchAll(/<time([^>]*)>([^<]*)<\/time>/g)];
    expect(times.length).toBeGreaterThan(200);
    for (const [, attributes, shown] of times) {
      expect(attributes).toMatch(/^ datetime="[^"]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"$/);
      expect(shown).not.toMatch(/^\d{4}-/);
    }
    expect((html.match(/<tr data-pr="/g) ?? []).length).toBe(211);
    expect((html.match(/<li class="run"/g) ?? []).length).toBe(10);
    const bytes = Buffer.byteLength(html) + assets.bytes(["live-queue"]);
    expect(bytes).toBeLessThan(150 * 1024);
    expect(html).not.toContain("host-trouble");

    // A host that does not answer: said once, with since when, why and the next attempt.
    const troubled = renderDocument(
      renderQueue(
        {
          ...board,
          hostTrouble: {
            state: "unreachable",
            code: "unavailable",
            since: NOW - 5 * MINUTE_MS,
            message: "GitHub answered 502 Bad Gateway",
            retryAt: NOW + 30_000,
            failures: 4,
          },
        },
        place,
        links,
        "x".repeat(43),
        NOW,
      ),
      { orgSlug: "acme", csrf: "x".repeat(43), assets },
    );
    const notice = /<p class="notice host-trouble"[^>]*>(.*?)<\/p>/s.exec(troubled)?.[1] ?? "";
    expect(notice).toContain("The queue cannot reach its git host");
    expect(notice).toContain("GitHub answered 502 Bad Gateway");
    expect(notice).toContain(`datetime="${new Date(NOW + 30_000).toISOString()}"`);
  });
});
