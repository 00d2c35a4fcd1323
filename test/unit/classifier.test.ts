import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  PASS_ON_RETRY,
  classify,
  lookbackMs,
  windowLookbackMs,
  type ClassifierRun,
  type MonitorStates,
} from "../../src/testhealth/classifier.js";
import {
  DEFAULT_MONITOR_SETTINGS,
  branchGlob,
  type MonitorSettings,
} from "../../src/testhealth/monitors.js";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 25, 12);
const settings: MonitorSettings = DEFAULT_MONITOR_SETTINGS;

let commitCounter = 0;
function run(overrides: Partial<ClassifierRun> = {}): ClassifierRun {
  return {
    at: NOW - HOUR,
    status: "passed",
    commit: `c${String(++commitCounter).padStart(7, "0")}abc`,
    branch: "main",
    prNumber: null,
    excluded: false,
    ...overrides,
  };
}
const times = (n: number, make: (i: number) => ClassifierRun): ClassifierRun[] =>
  Array.from({ length: n }, (_, i) => make(i));

/** Classifies a sequence of snapshots, carrying monitor states forward like the service does. */
function replay(steps: { runs: ClassifierRun[]; now: number }[]) {
  let states: MonitorStates = {};
  return steps.map(({ runs, now }) => {
    const result = classify(runs, settings, states, now);
    states = result.monitors;
    return result;
  });
}

describe("pass-on-retry", () => {
  it("a failed and a passed run of one commit make the test flaky, naming commit and branch", () => {
    const runs = [
      run({ commit: "1a2b3c4d5e", branch: "feature/login", status: "failed", at: NOW - 2 * HOUR }),
      run({ commit: "1a2b3c4d5e", branch: "feature/login", status: "passed", at: NOW - HOUR }),
    ];
    expect(classify(runs, settings, {}, NOW)).toMatchObject({
      status: "flaky",
      reason: "Failed and passed on the same commit 1a2b3c4 (branch feature/login)",
    });
  });

  it("names the pull request when there is one", () => {
    const runs = [
      run({ commit: "abcdef123", branch: "fix", prNumber: 42, status: "passed" }),
      run({ commit: "abcdef123", branch: "fix", prNumber: 42, status: "failed", at: NOW - 1000 }),
    ];
    expect(classify(runs, settings, {}, NOW).reason).toBe(
      "Failed and passed on the same commit abcdef1 (branch fix, PR #42)",
    );
  });

  it("failures and passes on different commits of a pull request are no signal", () => {
    const runs = [
      run({ branch: "pr-branch", prNumber: 7, status: "failed" }),
      run({ branch: "pr-branch", prNumber: 7, status: "passed" }),
    ];
    expect(classify(runs, settings, {}, NOW).status).toBe("healthy");
  });

  it("resolves seven days after the latest detection", () => {
    const runs = [
      run({ commit: "aaaaaaa", status: "failed", at: NOW - 2 * HOUR }),
      run({ commit: "aaaaaaa", status: "passed", at: NOW - HOUR }),
    ];
    const [detected, stillActive, resolved] = replay([
      { runs, now: NOW },
      { runs, now: NOW - HOUR + 7 * DAY - 1 },
      { runs, now: NOW - HOUR + 7 * DAY },
    ]);
    expect(detected?.status).toBe("flaky");
    expect(stillActive?.status).toBe("flaky");
    expect(resolved?.status).toBe("healthy");
    expect(resolved?.monitors[PASS_ON_RETRY]).toMatchObject({
      active: false,
      changedAt: NOW - HOUR + 7 * DAY,
    });
  });

  it("gives the same reason whatever the order of runs that tie in time", () => {
    const runs = [
      run({ commit: "eeeeeee", branch: "a", status: "failed", at: NOW - 2 * HOUR }),
      run({ commit: "eeeeeee", branch: "b", status: "passed", at: NOW - HOUR }),
      run({ commit: "eeeeeee", branch: "c", status: "passed", at: NOW - HOUR }),
    ];
    const forward = classify(runs, settings, {}, NOW).reason;
    expect(classify([...runs].reverse(), settings, {}, NOW).reason).toBe(forward);
  });

  it("ignores skipped runs and runs of uploads excluded as infrastructure failures", () => {
    const runs = [
      run({ commit: "bbbbbbb", status: "failed", excluded: true }),
      run({ commit: "bbbbbbb", status: "passed" }),
      run({ commit: "ccccccc", status: "skipped" }),
      run({ commit: "ccccccc", status: "passed" }),
    ];
    expect(classify(runs, settings, {}, NOW).status).toBe("healthy");
  });
});

describe("failure rate", () => {
  it("five failures out of five on main in 24 h: broken, with the evidence", () => {
    const runs = times(5, (i) => run({ status: "failed", at: NOW - (i + 1) * HOUR }));
    expect(classify(runs, settings, {}, NOW)).toMatchObject({
      status: "broken",
      reason: "Failure rate 100% (5 of 5 runs) over the last 24 h on main",
    });
  });

  it("needs the minimum sample", () => {
    const runs = times(4, (i) => run({ status: "failed", at: NOW - (i + 1) * HOUR }));
    expect(classify(runs, settings, {}, NOW).status).toBe("healthy");
  });

  it("only counts runs inside the window and on the monitored branches", () => {
    const old = times(5, (i) => run({ status: "failed", at: NOW - 25 * HOUR - i }));
    const elsewhere = times(5, () => run({ status: "failed", branch: "feature/x" }));
    expect(classify([...old, ...elsewhere], settings, {}, NOW).status).toBe("healthy");
  });

  it("flaky on main between activation and resolution keeps its state (hysteresis)", () => {
    // 2 of 10 = 20%: activates. Later 3 of 20 = 15%: stays. Then 1 of 20 = 5%: resolves.
    // The failures are intermittent (passes between them).
    const first = times(10, (i) =>
      run({ status: i % 5 === 0 ? "failed" : "passed", at: NOW - i * 60_000 }),
    );
    const second = times(20, (i) =>
      run({
        status: i % 5 === 0 && i < 15 ? "failed" : "passed",
        at: NOW + HOUR * 25 - i * 60_000,
      }),
    );
    const third = times(20, (i) =>
      run({ status: i < 1 ? "failed" : "passed", at: NOW + HOUR * 50 - i * 60_000 }),
    );
    const [a, b, c] = replay([
      { runs: first, now: NOW },
      { runs: second, now: NOW + 25 * HOUR },
      { runs: third, now: NOW + 50 * HOUR },
    ]);
    expect(a).toMatchObject({
      status: "flaky",
      reason: "Failure rate 20% (2 of 10 runs) over the last 24 h on main",
    });
    expect(b?.status).toBe("flaky");
    expect(c?.status).toBe("healthy");
    // Without the earlier activation, 15% would not have made it flaky.
    expect(classify(second, settings, {}, NOW + 25 * HOUR).status).toBe("healthy");
  });

  it("an active monitor resolves when the test stops running for a whole window", () => {
    const runs = times(5, (i) => run({ status: "failed", at: NOW - (i + 1) * HOUR }));
    const [broken, stale] = replay([
      { runs, now: NOW },
      { runs, now: NOW + 24 * HOUR },
    ]);
    expect(broken?.status).toBe("broken");
    expect(stale?.status).toBe("healthy");
  });

  it("watches merge-queue branches with their own thresholds", () => {
    const runs = times(10, (i) =>
      run({
        branch: `trunk-merge/main/pr-${i}`,
        at: NOW - HOUR + i * 60_000,
        status: i === 0 || i === 5 ? "failed" : "passed",
      }),
    );
    expect(classify(runs, settings, {}, NOW)).toMatchObject({
      status: "flaky",
      reason: expect.stringContaining(
        "Failure rate 20% (2 of 10 runs) over the last 12 h",
      ) as unknown,
    });
  });

  it("failures in one unbroken streak are breakage, not flakiness (ADR 0016)", () => {
    // Broken by a commit, fixed by the next: 5 failures then 10 passes on main (33%), and the
    // same in the merge queue.
    const streak = (branch: (i: number) => string) =>
      times(15, (i) =>
        run({
          branch: branch(i),
          at: NOW - HOUR + i * 60_000,
          status: i < 5 ? "failed" : "passed",
        }),
      );
    expect(
      classify(
        streak(() => "main"),
        settings,
        {},
        NOW,
      ).status,
    ).toBe("healthy");
    expect(
      classify(
        streak((i) => `trunk-merge/main/pr-${i}`),
        settings,
        {},
        NOW,
      ).status,
    ).toBe("healthy");
    // The same failures with a pass between them are intermittent: flaky.
    const intermittent = streak(() => "main").map((r, i) =>
      i === 2 ? { ...r, status: "passed" as const } : r,
    );
    expect(classify(intermittent, settings, {}, NOW)).toMatchObject({
      status: "flaky",
      reason: "Failure rate 27% (4 of 15 runs) over the last 24 h on main",
    });
  });

  it("streaks follow the commits: a late re-run of an older commit is no pass between failures", () => {
    // Commits c0..c11 on main, one every 10 min; c4 breaks the test. c3's job is re-run and
    // passes (it predates the break) after c4 and c5 have failed.
    const commits = times(12, (i) =>
      run({
        commit: `c${String(i).padStart(6, "0")}`,
        at: NOW - 3 * HOUR + i * 10 * 60_000,
        status: i >= 4 ? "failed" : "passed",
      }),
    );
    const rerun = run({ commit: "c000003", at: NOW - 3 * HOUR + 55 * 60_000, status: "passed" });
    const result = classify([...commits, rerun], settings, {}, NOW);
    // 8 of 13 runs failed (62%): not yet broken (90%), and not flaky either.
    expect(result.monitors["flaky-on-stable"]?.active).toBe(false);
    expect(result.status).toBe("healthy");
  });

  it("a re-run of a commit whose first run left the window is ordered at that first run", () => {
    // c0 ran (and passed) just before the window; its job was re-run 20 min later, inside the
    // window, after c1 broke the test. c1..c10 fail: 10 of 11 runs, one streak.
    const start = NOW - 24 * HOUR;
    const runs = [
      run({ commit: "c0", at: start - 10 * 60_000 }),
      run({ commit: "c1", at: start + 5 * 60_000, status: "failed" }),
      run({ commit: "c0", at: start + 10 * 60_000 }),
      ...times(9, (i) =>
        run({ commit: `c${String(i + 2)}`, at: start + (i + 1) * HOUR, status: "failed" }),
      ),
    ];
    const result = classify(runs, settings, {}, NOW);
    expect(result.monitors["flaky-on-stable"]?.active).toBe(false);
  });

  it("a test broken on main then fixed goes back to healthy, never flaky (ADR 0016)", () => {
    const broken = times(6, (i) => run({ status: "failed", at: NOW - 6 * HOUR + i * HOUR }));
    const fixed = times(8, (i) => run({ at: NOW + (i + 1) * HOUR }));
    const steps = [...broken, ...fixed].map((_, i, all) => ({
      runs: all.slice(0, i + 1),
      now: all[i]?.at ?? NOW,
    }));
    const statuses = replay(steps).map((r) => r.status);
    expect(statuses).toContain("broken");
    expect(statuses).not.toContain("flaky");
    expect(statuses.at(-1)).toBe("healthy");
  });

  it("a regression whose last broken commit is re-run after the fix has one streak: not flaky", () => {
    // c0..c11 on main every 10 min; c4 breaks the test and c8 fixes it. c7's failed job is
    // re-run (and fails again, same code) after c8 and c9 passed: in run order that failure
    // comes after passes, in commit order it belongs to c7's streak.
    const commits = times(12, (i) =>
      run({
        commit: `r${String(i).padStart(6, "0")}`,
        at: NOW - 3 * HOUR + i * 10 * 60_000,
        status: i >= 4 && i < 8 ? "failed" : "passed",
      }),
    );
    const rerun = run({
      commit: "r000007",
      at: NOW - 3 * HOUR + 95 * 60_000,
      status: "failed",
    });
    const result = classify([...commits, rerun], settings, {}, NOW);
    // 5 of 13 runs failed (38%): above flaky-on-stable's activation, yet one streak.
    expect(result.monitors["flaky-on-stable"]?.active).toBe(false);
    expect(result.status).toBe("healthy");
    // In run order it would have been two streaks: the rule, not the rate, decides.
    const asIfNewCommit = { ...rerun, commit: "r999999" };
    expect(classify([...commits, asIfNewCommit], settings, {}, NOW).status).toBe("flaky");
  });

  it("a PR's breakage in another CI's queue runs (convicted, then stacked) is not flaky", () => {
    // GitHub's queue tested by an external CI: the classifier cannot leave these failures to
    // the queue. The convicted PR's run and the two runs stacked on it fail, the rest pass.
    const runs = times(16, (i) =>
      run({
        branch: `gh-readonly-queue/main/pr-${String(2000 + i)}-abc`,
        at: NOW - 10 * HOUR + i * 30 * 60_000,
        status: i >= 6 && i < 9 ? "failed" : "passed",
      }),
    );
    const result = classify(runs, settings, {}, NOW);
    // 3 of 16 (19%) over 12 h is above flaky-in-merge-queue's 15%, but one streak.
    expect(result.monitors["flaky-in-merge-queue"]?.active).toBe(false);
    expect(result.status).toBe("healthy");
  });

  it("a test broken on one variant only is broken there and healthy on the others", () => {
    // Variants are separate tests (docs/contract.md): each variant's runs are classified alone.
    const brokenAt = NOW - 22 * HOUR;
    const runsOn = (variantBroken: boolean) =>
      times(48, (i) => {
        const at = NOW - 47 * HOUR + i * HOUR;
        return run({ at, status: variantBroken && at >= brokenAt ? "failed" : "passed" });
      });
    const steps = (variantBroken: boolean) =>
      runsOn(variantBroken).map((_, i, all) => ({
        runs: all.slice(0, i + 1),
        now: all[i]?.at ?? NOW,
      }));
    const windows = replay(steps(true)).map((r) => r.status);
    expect(windows).not.toContain("flaky");
    expect(windows.at(-1)).toBe("broken");
    expect(replay(steps(false)).map((r) => r.status)).not.toContain("flaky");
  });

  it("failures the queue judges (its own runs) never make a test flaky by rate: breakage", () => {
    // A test pull requests broke fails in their queue runs and passes in all the others.
    const runs = times(10, (i) =>
      run({
        branch: `mainline-merge/main/run-${i}`,
        status: i % 4 === 0 ? "failed" : "passed",
        queueRun: true,
      }),
    );
    expect(classify(runs, settings, {}, NOW).status).toBe("healthy");
    // The same runs from another CI are counted as before.
    const elsewhere = runs.map((r) => ({ ...r, queueRun: false }));
    expect(classify(elsewhere, settings, {}, NOW).status).toBe("flaky");
  });

  it("a queue run's failure followed by a pass on the same tested tree is flakiness", () => {
    const commit = "7e57ed7ree";
    const runs = [
      run({ commit, branch: "mainline-merge/main/r1", status: "failed", queueRun: true }),
      run({ commit, branch: "mainline-merge/main/r2", status: "passed", queueRun: true }),
    ];
    expect(classify(runs, settings, {}, NOW)).toMatchObject({
      status: "flaky",
      reason: "Failed and passed on the same commit 7e57ed7 (branch mainline-merge/main/r2)",
    });
  });

  it("broken wins over flaky", () => {
    const runs = [
      ...times(6, (i) => run({ status: "failed", at: NOW - (i + 1) * HOUR })),
      run({ commit: "ddddddd", branch: "feature", status: "failed" }),
      run({ commit: "ddddddd", branch: "feature", status: "passed" }),
    ];
    const result = classify(runs, settings, {}, NOW);
    expect(result.status).toBe("broken");
    expect(result.monitors[PASS_ON_RETRY]?.active).toBe(true);
  });

  it("a disabled monitor never activates", () => {
    const off: MonitorSettings = {
      ...settings,
      failureRate: settings.failureRate.map((m) => ({ ...m, enabled: false })),
    };
    const runs = times(10, () => run({ status: "failed" }));
    expect(classify(runs, off, {}, NOW).status).toBe("healthy");
  });
});

describe("failure count (off by default)", () => {
  const counting: MonitorSettings = {
    ...settings,
    failureRate: [],
    failureCount: [
      {
        id: "three-in-an-hour",
        enabled: true,
        classification: "broken",
        scope: { globs: ["release/*"] },
        failures: 3,
        windowHours: 1,
        resolutionHours: 6,
      },
    ],
  };

  it("activates at N failures in the window and resolves after the quiet period", () => {
    const runs = times(3, (i) =>
      run({ branch: "release/2026/11", status: "failed", at: NOW - i * 60_000 }),
    );
    let states: MonitorStates = {};
    const active = classify(runs, counting, states, NOW);
    expect(active).toMatchObject({
      status: "broken",
      reason: "3 failures within 1 h on release/2026/11",
    });
    states = active.monitors;
    expect(classify(runs, counting, states, NOW + 5 * HOUR).status).toBe("broken");
    expect(classify(runs, counting, states, NOW + 6 * HOUR).status).toBe("healthy");
    expect(classify(runs.slice(1), counting, {}, NOW).status).toBe("healthy");
  });
});

describe("monitor reasons", () => {
  it("say there were no runs or failures instead of naming 'no branch'", () => {
    // A pull request's runs only: the stable-branch and count monitors see nothing in scope.
    const counting: MonitorSettings = {
      ...settings,
      failureCount: [
        {
          id: "two-on-release",
          enabled: true,
          classification: "broken",
          scope: { globs: ["release/*"] },
          failures: 2,
          windowHours: 1,
          resolutionHours: 6,
        },
      ],
    };
    const result = classify([run({ branch: "feature/x" })], counting, {}, NOW);
    expect(result.monitors["broken-on-stable"]?.reason).toBe("No runs in scope over the last 24 h");
    expect(result.monitors["two-on-release"]?.reason).toBe("No failures in scope within 1 h");
    for (const state of Object.values(result.monitors)) {
      expect(state.reason).not.toContain("no branch");
    }
  });

  it("leave out runs that name no branch", () => {
    const runs = times(5, () => run({ branch: "", status: "failed" }));
    const everywhere: MonitorSettings = {
      ...settings,
      failureRate: [
        {
          id: "everywhere",
          enabled: true,
          classification: "broken",
          scope: { globs: ["*"] },
          windowHours: 24,
          activation: 0.5,
          resolution: 0.2,
          minRuns: 3,
        },
      ],
    };
    expect(classify(runs, everywhere, {}, NOW).monitors.everywhere?.reason).toBe(
      "Failure rate 100% (5 of 5 runs) over the last 24 h",
    );
  });
});

describe("branch globs", () => {
  it("* matches any text including slashes, ? one character, the rest literally", () => {
    expect(branchGlob("trunk-merge/*").test("trunk-merge/main/pr-1")).toBe(true);
    expect(branchGlob("gtmq_*").test("gtmq_123")).toBe(true);
    expect(branchGlob("release-?").test("release-1")).toBe(true);
    expect(branchGlob("release-?").test("release-10")).toBe(false);
    expect(branchGlob("v1.0").test("v1x0")).toBe(false);
    expect(branchGlob("main").test("main2")).toBe(false);
  });

  it("runs far enough back for every monitor are loaded", () => {
    expect(lookbackMs(settings)).toBe(7 * DAY);
  });
});

describe("properties", () => {
  const branch = fc.constantFrom(
    "main",
    "master",
    "feature/a",
    "trunk-merge/main/1",
    "mainline-merge/main/2",
    "gtmq_9",
    "release/1",
  );
  const anyRun = (status: fc.Arbitrary<ClassifierRun["status"]>) =>
    fc.record({
      // Few distinct times, so that ties are common.
      at: fc.oneof(
        fc.integer({ min: NOW - 10 * DAY, max: NOW }),
        fc.constantFrom(NOW - HOUR, NOW - 2 * HOUR, NOW - DAY),
      ),
      status,
      commit: fc.constantFrom("c1", "c2", "c3", "c4", "c5"),
      branch,
      prNumber: fc.option(fc.integer({ min: 1, max: 50 }), { nil: null }),
      excluded: fc.boolean(),
      queueRun: fc.boolean(),
    });

  it("a test that only ever passes (or skips) is never unhealthy", () => {
    fc.assert(
      fc.property(
        fc.array(anyRun(fc.constantFrom("passed", "skipped")), { maxLength: 60 }),
        (runs) => classify(runs, settings, {}, NOW).status === "healthy",
      ),
    );
  });

  it("a pass and a fail on the same new commit make a test flaky or worse", () => {
    fc.assert(
      fc.property(
        fc.array(anyRun(fc.constantFrom("passed", "failed", "skipped")), { maxLength: 60 }),
        branch,
        (runs, where) => {
          const added = [
            run({ commit: "fresh01", branch: where, status: "failed", at: NOW - 2000 }),
            run({ commit: "fresh01", branch: where, status: "passed", at: NOW - 1000 }),
          ];
          return classify([...runs, ...added], settings, {}, NOW).status !== "healthy";
        },
      ),
    );
  });

  it("the order of the runs does not matter", () => {
    fc.assert(
      fc.property(
        fc.array(anyRun(fc.constantFrom("passed", "failed")), { maxLength: 40 }),
        (runs) => {
          const forward = classify(runs, settings, {}, NOW);
          const backward = classify([...runs].reverse(), settings, {}, NOW);
          return forward.status === backward.status && forward.reason === backward.reason;
        },
      ),
    );
  });
});

describe("incremental classification (what ingestion loads)", () => {
  /**
   * Ingestion classifies a test with only the runs of the rate windows and of the upload's
   * commit, carrying pass-on-retry's last detection in the state, and skips tests with no active
   * monitor whose last failure is older than the windows and than the commit's first upload (the
   * sweep re-classifies tests with an active monitor). At every step that must agree with
   * classifying every run so far.
   */
  const upload = fc.record({
    gapMinutes: fc.integer({ min: 0, max: 36 * 60 }),
    commit: fc.constantFrom("c1", "c2", "c3", "c4"),
    branch: fc.constantFrom("main", "feature/a", "trunk-merge/main/1"),
    prNumber: fc.option(fc.integer({ min: 1, max: 5 }), { nil: null }),
    statuses: fc.array(fc.constantFrom<ClassifierRun["status"][]>("passed", "failed", "skipped"), {
      minLength: 1,
      maxLength: 3,
    }),
    excluded: fc.boolean(),
  });

  it("agrees with classifying every run", () => {
    const window = windowLookbackMs(settings);
    fc.assert(
      fc.property(fc.array(upload, { minLength: 1, maxLength: 40 }), (uploads) => {
        const all: ClassifierRun[] = [];
        const firstUploadOf = new Map<string, number>();
        let fullStates: MonitorStates = {};
        let partialStates: MonitorStates = {};
        let lastFailure: number | undefined;
        let at = NOW - 30 * DAY;
        for (const u of uploads) {
          at += u.gapMinutes * 60_000 + 1;
          if (!firstUploadOf.has(u.commit)) firstUploadOf.set(u.commit, at);
          const runs = u.statuses.map((status) => ({
            at,
            status,
            commit: u.commit,
            branch: u.branch,
            prNumber: u.prNumber,
            excluded: u.excluded,
          }));
          all.push(...runs);
          if (runs.some((r) => r.status === "failed")) lastFailure = at;
          const full = classify(all, settings, fullStates, at);
          fullStates = full.monitors;
          const active = Object.values(partialStates).some((s) => s.active);
          const failedSince = Math.min(at - window, (firstUploadOf.get(u.commit) ?? at) - DAY);
          const candidate =
            !u.excluded && (active || (lastFailure !== undefined && lastFailure >= failedSince));
          if (candidate) {
            const loaded = all.filter((r) => r.at >= at - window || r.commit === u.commit);
            partialStates = classify(loaded, settings, partialStates, at).monitors;
          } else if (active) {
            // The worker's sweep: tests with an active monitor, window runs only.
            const loaded = all.filter((r) => r.at >= at - window);
            partialStates = classify(loaded, settings, partialStates, at).monitors;
          }
          const partialStatus = Object.entries(partialStates).some(([, s]) => s.active);
          const fullStatus = full.status !== "healthy";
          if (partialStatus !== fullStatus) return false;
          // Same monitors active, with the same reasons.
          for (const [id, state] of Object.entries(full.monitors)) {
            const other = partialStates[id];
            if (state.active !== (other?.active ?? false)) return false;
            if (state.active && state.reason !== other?.reason) return false;
          }
        }
        return true;
      }),
      { numRuns: 1000 },
    );
  });
});
