import { afterAll, describe, expect, it } from "vitest";
import { simulationOptions, type SimulateFlags } from "../../src/cli/commands/simulate.js";
import * as planner from "../../src/mergequeue/planner/index.js";
import {
  EventHeap,
  Random,
  SimulationOptionError,
  arrivalTimes,
  capMergesPerHour,
  effectiveFailureRate,
  expectedMergesPerHour,
  generatePullRequests,
  parseFanOut,
  parsePriorities,
  percentile,
  simulate,
  unitsPerRound,
  type SimulationOptions,
  type SimulationReport,
} from "../../src/mergequeue/simulator/index.js";
import { runCli, stopAllProcesses } from "../helpers/process.js";

afterAll(stopAllProcesses);

/** Flags of a small, quick run; each test changes what it is about. */
const FLAGS: SimulateFlags = {
  prs: "60",
  arrivalsPerHour: "20",
  ciMinutes: "30",
  failureRate: "0.05",
  concurrency: "5",
  seed: "7",
};
const optionsOf = (flags: Partial<SimulateFlags> = {}): SimulationOptions =>
  simulationOptions({ ...FLAGS, ...flags });
const run = (flags: Partial<SimulateFlags> = {}) => simulate(optionsOf(flags), planner).report;

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const stdev = (values: readonly number[]) => {
  const m = mean(values);
  return Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
};

describe("the random source", () => {
  it("repeats itself for a seed and stream, and differs across seeds and streams", () => {
    const draw = (seed: number, stream: string) => {
      const random = new Random(seed, stream);
      return Array.from({ length: 5 }, () => random.nextUint32());
    };
    expect(draw(1, "ci")).toEqual(draw(1, "ci"));
    expect(draw(1, "ci")).not.toEqual(draw(2, "ci"));
    expect(draw(1, "ci")).not.toEqual(draw(1, "arrivals"));
    // The high 32 bits of a seed count too.
    expect(draw(2 ** 40, "")).not.toEqual(draw(0, ""));
    expect(() => new Random(-1)).toThrow(RangeError);
  });

  it("is uniform enough: mean, spread and both halves", () => {
    const random = new Random(42, "uniform");
    const values = Array.from({ length: 100_000 }, () => random.next());
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    expect(mean(values)).toBeCloseTo(0.5, 2);
    expect(stdev(values)).toBeCloseTo(Math.sqrt(1 / 12), 2);
    expect(values.filter((v) => v < 0.5).length / values.length).toBeCloseTo(0.5, 2);
  });

  it("draws weighted values and distinct samples", () => {
    const random = new Random(3, "weighted");
    const table = [
      { weight: 0.7, value: "a" },
      { weight: 0.2, value: "b" },
      { weight: 0.1, value: "c" },
    ];
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 50_000; i++) {
      const value = random.weighted(table);
      counts[value] = (counts[value] ?? 0) + 1;
    }
    expect((counts.a ?? 0) / 50_000).toBeCloseTo(0.7, 2);
    expect((counts.c ?? 0) / 50_000).toBeCloseTo(0.1, 2);
    for (let i = 0; i < 100; i++) {
      const sample = random.sample(["w", "x", "y", "z"], 2);
      expect(new Set(sample).size).toBe(2);
      expect([...sample].sort()).toEqual(sample); // in the original order
    }
  });
});

describe("the event heap", () => {
  it("pops by time, and in insertion order among equal times", () => {
    const heap = new EventHeap<{ at: number; name: string }>();
    const items = [
      { at: 5, name: "e1" },
      { at: 1, name: "a1" },
      { at: 5, name: "e2" },
      { at: 0, name: "z" },
      { at: 1, name: "a2" },
      { at: 5, name: "e3" },
      { at: 1, name: "a3" },
    ];
    for (const item of items) heap.push(item);
    const popped: string[] = [];
    for (let item = heap.pop(); item; item = heap.pop()) popped.push(item.name);
    expect(popped).toEqual(["z", "a1", "a2", "a3", "e1", "e2", "e3"]);
  });
});

describe("arrivals and pull requests", () => {
  it("a burst submits everything at time 0", () => {
    expect(arrivalTimes({ kind: "burst" }, 5, new Random(1))).toEqual([0, 0, 0, 0, 0]);
  });

  it("a Poisson process has exponential gaps at the given rate", () => {
    const times = arrivalTimes({ kind: "poisson", perHour: 40 }, 20_000, new Random(9, "a"));
    const gaps = times.map((t, i) => t - (i === 0 ? 0 : (times[i - 1] ?? 0)));
    const meanGap = mean(gaps);
    expect(meanGap / 90_000).toBeGreaterThan(0.98); // 3600 s / 40 = 90 s
    expect(meanGap / 90_000).toBeLessThan(1.02);
    expect(stdev(gaps) / meanGap).toBeGreaterThan(0.97); // exponential: CV = 1
    expect(stdev(gaps) / meanGap).toBeLessThan(1.03);
    // Counts in 100 hours: Poisson(4000), σ ≈ 63.
    const inWindow = times.filter((t) => t < 100 * 3_600_000).length;
    expect(Math.abs(inWindow - 4000)).toBeLessThan(4 * 63);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it("a backlog arrives at 0 before the process starts", () => {
    const times = arrivalTimes({ kind: "poisson", perHour: 10, backlog: 3 }, 6, new Random(1));
    expect(times.slice(0, 3)).toEqual([0, 0, 0]);
    expect(times[3]).toBeGreaterThan(0);
  });

  it("draws badness, priorities and targets at the given rates", () => {
    const prs = generatePullRequests(
      optionsOf({
        prs: "20000",
        failureRate: "0.1",
        priorities: "0.05x0,0.2xhigh,0.75x100",
        targetsFanout: "0.75x1,0.15x2,0.09x3,0.01xALL",
      }),
    );
    const share = (test: (pr: (typeof prs)[number]) => boolean) =>
      prs.filter(test).length / prs.length;
    expect(share((pr) => pr.bad)).toBeCloseTo(0.1, 2);
    expect(share((pr) => pr.priority === 0)).toBeCloseTo(0.05, 2);
    expect(share((pr) => pr.priority === 10)).toBeCloseTo(0.2, 2);
    expect(share((pr) => Array.isArray(pr.targets) && pr.targets.length === 1)).toBeCloseTo(
      0.75,
      2,
    );
    expect(share((pr) => pr.targets === "ALL")).toBeCloseTo(0.01, 2);
    const names = new Set(prs.flatMap((pr) => (Array.isArray(pr.targets) ? pr.targets : [])));
    expect([...names].sort()).toEqual(["alpha", "bravo", "charlie", "delta"]);
    expect(prs.map((pr) => pr.number)).toEqual(prs.map((_, i) => i + 1));
  });
});

describe("the throughput model (background §merge-queue-5.2)", () => {
  it("gives the cap column: (1-p)/p per T", () => {
    expect(capMergesPerHour(0.02, 30)).toBeCloseTo(98, 6);
    expect(capMergesPerHour(0.05, 30)).toBeCloseTo(38, 6);
    expect(capMergesPerHour(0.1, 30)).toBeCloseTo(18, 6);
    expect(capMergesPerHour(0.2, 30)).toBeCloseTo(8, 6);
    expect(capMergesPerHour(0, 30)).toBe(Number.POSITIVE_INFINITY);
  });

  it("gives the round-model rows for batches", () => {
    const perHour = (p: number, b: number, c: number) =>
      expectedMergesPerHour({ failureRate: p, batchSize: b, concurrency: c, ciMinutes: 30 });
    expect(perHour(0.05, 4, 5)).toBeCloseTo(22.5, 1);
    expect(perHour(0.05, 4, 10)).toBeCloseTo(30.6, 1);
    expect(perHour(0.02, 8, 10)).toBeCloseTo(73, 0);
  });

  // The table is an event-driven Monte Carlo, not the formula: they agree exactly at C=1 and
  // within 12% elsewhere (the widest gap, p=0.2 and C=50, is 8.0/h against 7.2/h).
  it("matches the Monte Carlo table: exactly at C=1, within 12% elsewhere", () => {
    const table: [number, number[]][] = [
      [0.02, [2.0, 9.7, 19.1, 41.3, 64.4]],
      [0.05, [1.9, 8.9, 15.7, 27.9, 34.2]],
      [0.1, [1.8, 7.5, 11.5, 16.0, 16.4]],
      [0.2, [1.6, 5.2, 6.6, 7.8, 7.2]],
    ];
    const concurrencies = [1, 5, 10, 25, 50];
    for (const [p, row] of table) {
      row.forEach((simulated, i) => {
        const c = concurrencies[i] ?? 1;
        const model = expectedMergesPerHour({
          failureRate: p,
          batchSize: 1,
          concurrency: c,
          ciMinutes: 30,
        });
        if (c === 1) expect(model).toBeCloseTo(simulated, 1);
        else expect(Math.abs(model / simulated - 1)).toBeLessThan(0.12);
      });
    }
  });

  it("counts flakes into p and treats a zero failure rate as C merges per round", () => {
    expect(effectiveFailureRate(0.05, 0.1)).toBeCloseTo(0.145, 10);
    expect(unitsPerRound(0, 7)).toBe(7);
    expect(unitsPerRound(1e-12, 7)).toBeCloseTo(7, 6);
  });

  it("takes nearest-rank percentiles", () => {
    expect(percentile([], 0.5)).toBeNull();
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(percentile([1, 2, 3, 4], 0.95)).toBe(4);
    expect(percentile([5], 0.95)).toBe(5);
  });
});

describe("flags", () => {
  it("take the defaults of everything optional", () => {
    const o = optionsOf();
    expect(o).toMatchObject({
      prs: 60,
      arrivals: { kind: "poisson", perHour: 20 },
      ciJitter: 0,
      flakeRate: 0,
      batch: false,
      bisectionConcurrency: 1,
      pendingFailureDepth: 0,
      optimistic: false,
      optimizationMode: "off",
      speculationThresholdPercent: 0,
      testingTimeoutMinutes: 60,
      priorities: null,
      targetsFanout: null,
      maxHours: 720,
    });
    expect(optionsOf({ ciMinutes: "50", ciJitter: "0.2" }).testingTimeoutMinutes).toBe(120);
    expect(optionsOf({ arrivalsPerHour: undefined, burst: true }).arrivals).toEqual({
      kind: "burst",
    });
  });

  it.each<[Partial<SimulateFlags>, RegExp]>([
    [{ prs: undefined }, /--prs is required/],
    [{ seed: undefined }, /--seed is required/],
    [{ prs: "0" }, /--prs takes a whole number from 1/],
    [{ prs: "ten" }, /--prs takes a whole number/],
    [{ burst: true }, /either --burst or --arrivals-per-hour/],
    [{ arrivalsPerHour: undefined }, /--burst .* or --arrivals-per-hour/],
    [{ failureRate: "1" }, /--failure-rate takes a number from 0 up to/],
    [{ flakeRate: "-0.1" }, /--flake-rate takes a number/],
    [{ ciMinutes: "0" }, /--ci-minutes takes a number above 0/],
    [{ concurrency: "2.5" }, /--concurrency takes a whole number/],
    [{ batchSize: "4" }, /need --batch/],
    [{ targets: "6" }, /--targets needs --targets-fanout/],
    [{ targetsFanout: "0.5x1,0.4x2" }, /sum to 0.9, not 1/],
    [{ targetsFanout: "1x5" }, /5 targets per PR, but --targets is 4/],
    [{ targetsFanout: "1xfew" }, /not a number of targets or ALL/],
    [{ priorities: "1xsoon" }, /not a priority/],
    [{ priorities: "0.5" }, /is not <probability>x<value>/],
    [{ optimizationMode: "fast" }, /--optimization-mode takes/],
    [
      { speculationThresholdPercent: "101" },
      /--speculation-threshold-percent takes a whole number from 0 to 100/,
    ],
    [
      { speculationThresholdPercent: "30%" },
      /--speculation-threshold-percent takes a whole number/,
    ],
  ])("refuse %o", (flags, message) => {
    expect(() => optionsOf(flags)).toThrow(SimulationOptionError);
    expect(() => optionsOf(flags)).toThrow(message);
  });

  it("parse distribution specs, scaling weights to exactly 1", () => {
    expect(parseFanOut("0.75x1,0.15x2,0.09x3,0.01xall").map((r) => r.value)).toEqual([
      1,
      2,
      3,
      "ALL",
    ]);
    expect(parsePriorities("0.5xurgent, 0.5x200")).toEqual([
      { weight: 0.5, value: 0 },
      { weight: 0.5, value: 200 },
    ]);
    const rows = parseFanOut("0.3333x1,0.3333x2,0.3334x3");
    expect(rows.reduce((sum, row) => sum + row.weight, 0)).toBeCloseTo(1, 12);
  });
});

describe("a simulation", () => {
  it("is the same for the same seed, to the byte, and differs for another", () => {
    const a = JSON.stringify(run({ flakeRate: "0.1", ciJitter: "0.2" }));
    const b = JSON.stringify(run({ flakeRate: "0.1", ciJitter: "0.2" }));
    const c = JSON.stringify(run({ flakeRate: "0.1", ciJitter: "0.2", seed: "8" }));
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });

  it.each<[string, Partial<SimulateFlags>]>([
    ["single lane", {}],
    ["burst with jitter", { arrivalsPerHour: undefined, burst: true, ciJitter: "0.3" }],
    ["batches with bisection", { batch: true, batchSize: "4", bisectionConcurrency: "2" }],
    [
      "batches skipping redundant tests",
      { batch: true, optimizationMode: "bisection_skip_redundant_tests" },
    ],
    ["pending failure depth", { pendingFailureDepth: "2" }],
    ["a speculation threshold", { batch: true, speculationThresholdPercent: "50" }],
    ["priorities", { priorities: "0.1x0,0.2x10,0.7x100" }],
    ["parallel lanes", { targetsFanout: "0.75x1,0.15x2,0.09x3,0.01xALL" }],
  ])("%s: concludes every PR, merges no bad one, and breaks no rule", (_, flags) => {
    expectSound(run(flags), flags);
  });

  function expectSound(report: SimulationReport, flags: Partial<SimulateFlags>): void {
    expect(report.stopReason).toBe("completed");
    expect(report.merged + report.failed + report.cancelled + report.unfinished).toBe(report.prs);
    expect(report.unfinished).toBe(0);
    expect(report.badMerged).toBe(0);
    expect(report.goodPrsEvicted).toBe(0); // no flakes: only bad PRs may fail
    expect(report.failed).toBe(report.details.badPrs);
    expect(report.details.merges).toBe(report.merged);
    expect(Object.values(report.details.anomalies).every((count) => count === 0)).toBe(true);
    expect(report.ciRuns).toBeGreaterThanOrEqual(report.merged / (flags.batch ? 4 : 1));
  }

  it("a speculation threshold spends fewer CI runs per merged PR on a failing, saturated queue", () => {
    const busy = {
      prs: "400",
      arrivalsPerHour: "60",
      failureRate: "0.1",
      concurrency: "8",
      batch: true,
    } satisfies Partial<SimulateFlags>;
    const full = run(busy);
    const thrifty = run({ ...busy, speculationThresholdPercent: "50" });
    expect(thrifty.settings).toMatchObject({ speculationThresholdPercent: 50 });
    expect(thrifty.ciRunsPerMerged).toBeLessThan((full.ciRunsPerMerged ?? 0) * 0.9);
    expect(thrifty.merged).toBe(full.merged); // the same PRs merge, later
    expect(thrifty.badMerged).toBe(0);
  });

  it("stops at the time cap and counts what is left as unfinished", () => {
    const report = run({ prs: "200", maxHours: "2" });
    expect(report.stopReason).toBe("time_cap");
    expect(report.virtualHours).toBe(2);
    expect(report.unfinished).toBeGreaterThan(0);
    expect(report.merged + report.failed + report.cancelled + report.unfinished).toBe(200);
  });
});

describe("mainline simulate", () => {
  const BASE = [
    "simulate",
    "--prs",
    "20",
    "--burst",
    "--ci-minutes",
    "30",
    "--failure-rate",
    "0.05",
    "--concurrency",
    "5",
  ];

  it("prints one deterministic JSON object, a table without --json, and exits 2 on bad flags", async () => {
    const [json, again, table, missing, unknown, invalid] = await Promise.all([
      runCli([...BASE, "--seed", "3", "--json"]),
      runCli([...BASE, "--seed", "3", "--json"]),
      runCli([...BASE, "--seed", "3"]),
      runCli(BASE),
      runCli([...BASE, "--seed", "3", "--bogus"]),
      runCli([...BASE, "--seed", "3", "--targets-fanout", "0.5x1"]),
    ]);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as { prs: number; wallSeconds?: unknown };
    expect(report.prs).toBe(20);
    expect(report.wallSeconds).toBeUndefined();
    expect(again.stdout).toBe(json.stdout);
    expect(json.stderr).toBe("");

    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^merged per hour +[\d.]+ /m);
    expect(table.stdout).toMatch(/^wall seconds +[\d.]+/m);

    for (const [result, message] of [
      [missing, /--seed is required/],
      [unknown, /unknown option '--bogus'/],
      [invalid, /--targets-fanout: the probabilities sum to 0.5, not 1/],
    ] as const) {
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(message);
    }
  });
});
