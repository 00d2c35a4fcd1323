import { describe, expect, it } from "vitest";
import {
  METRICS_WINDOW_MS,
  measureQueue,
  renderQueueMetrics,
  type QueueMeasures,
} from "../../src/mergequeue/queue-metrics.js";
import type { TransitionRecord } from "../../src/mergequeue/records.js";
import { entryRecord, transition } from "../helpers/fake-engine.js";

const NOW = 100_000_000;
const WINDOW_START = NOW - METRICS_WINDOW_MS;
const min = (m: number) => NOW - m * 60_000;
const Q = "q1";

/** Five submissions whose hour is worked out by hand below. */
function scenario() {
  const a = entryRecord(Q, { prNumber: 1, state: "merged", concludedAt: min(19) });
  const b = entryRecord(Q, { prNumber: 2, state: "testing" });
  const c = entryRecord(Q, { prNumber: 3, state: "cancelled", concludedAt: min(5) });
  const d = entryRecord(Q, { prNumber: 4, state: "failed", concludedAt: min(1) });
  const e = entryRecord(Q, { prNumber: 5, state: "not_ready" });
  const f = entryRecord(Q, { prNumber: 6, state: "pending" });
  const histories: TransitionRecord[][] = [
    [
      // Ready after 10 min not_ready; waits 5 min; tests 15 min; merged a minute later.
      transition(a, min(50), null, "not_ready"),
      transition(a, min(40), "not_ready", "pending"),
      transition(a, min(35), "pending", "testing"),
      transition(a, min(20), "testing", "tests_passed"),
      transition(a, min(19), "tests_passed", "merged"),
    ],
    [
      // Started testing before the window (no wait observed); restarted inside it after an hour.
      transition(b, min(120), null, "pending"),
      transition(b, min(90), "pending", "testing"),
      transition(b, min(30), "testing", "pending", { reason: "restarted_by_user" }),
      transition(b, min(25), "pending", "testing"),
    ],
    [
      // Never ready: counts as a conclusion, not as time in queue.
      transition(c, min(10), null, "not_ready"),
      transition(c, min(5), "not_ready", "cancelled"),
    ],
    [
      transition(d, min(30), null, "pending"),
      transition(d, min(28), "pending", "testing"),
      transition(d, min(10), "testing", "pending_failure"),
      transition(d, min(1), "pending_failure", "failed"),
    ],
    [transition(e, min(3), null, "not_ready")],
    [transition(f, min(2), null, "pending")],
  ];
  return { active: [b, e, f], histories };
}

describe("measureQueue", () => {
  it("gauges from the active entries; the last hour from the histories", () => {
    const { active, histories } = scenario();
    const measures = measureQueue(active, histories, WINDOW_START, NOW);
    expect(measures).toEqual({
      depth: 2,
      awaitingMergeability: 1,
      testing: 1,
      conclusions: { merged: 1, failed: 1, cancelled: 1 },
      restarts: 1,
      waitSeconds: [300, 120],
      testSeconds: [900, 3600, 1080],
      timeInQueueSeconds: [1260, 1740],
      estimatedFailureRate: 0,
    } satisfies QueueMeasures);
  });

  it("gauges the failure rate the queue's verdicts estimate", () => {
    // 11 of 100 single-PR units failed, against a prior of 10 passed units: 0.1.
    const verdicts = { units: 100, prs: 100, failed: 11 };
    const measures = measureQueue([], [], WINDOW_START, NOW, verdicts);
    expect(measures.estimatedFailureRate).toBeCloseTo(0.1, 10);
    const l = 'repo="acme/app",branch="main",queue_type="main"';
    expect(renderQueueMetrics([{ repo: "acme/app", branch: "main", measures }])).toContain(
      `\nmq_estimated_failure_rate{${l}} 0.1\n`,
    );
  });

  it("does not depend on the order of transitions or histories", () => {
    const { active, histories } = scenario();
    const shuffled = [...histories].reverse().map((h) => [...h].reverse());
    const sorted = (m: QueueMeasures): QueueMeasures => {
      const byValue = (values: number[]) => [...values].sort((x, y) => x - y);
      return {
        ...m,
        waitSeconds: byValue(m.waitSeconds),
        testSeconds: byValue(m.testSeconds),
        timeInQueueSeconds: byValue(m.timeInQueueSeconds),
      };
    };
    expect(sorted(measureQueue(active, shuffled, WINDOW_START, NOW))).toEqual(
      sorted(measureQueue(active, histories, WINDOW_START, NOW)),
    );
  });

  it("the window includes its start; time before it still counts toward durations", () => {
    const entry = entryRecord(Q, { prNumber: 1, state: "merged" });
    const history = [
      transition(entry, WINDOW_START - 1000, null, "pending"),
      transition(entry, WINDOW_START, "pending", "merged"),
    ];
    const measures = measureQueue([], [history], WINDOW_START, NOW);
    expect(measures.conclusions.merged).toBe(1);
    expect(measures.timeInQueueSeconds).toEqual([1]);
    const later = measureQueue([], [history], WINDOW_START + 1, NOW + 1);
    expect(later.conclusions.merged).toBe(0);
    expect(later.timeInQueueSeconds).toEqual([]);
  });

  it("time not_ready in the middle of a stay is excluded from time in queue and wait", () => {
    const entry = entryRecord(Q, { prNumber: 1, state: "merged" });
    const history = [
      transition(entry, min(40), null, "pending"),
      transition(entry, min(35), "pending", "not_ready", { reason: "not_mergeable" }),
      transition(entry, min(15), "not_ready", "pending"),
      transition(entry, min(14), "pending", "testing"),
      transition(entry, min(4), "testing", "merged"),
    ];
    const measures = measureQueue([], [history], WINDOW_START, NOW);
    expect(measures.waitSeconds).toEqual([360]);
    expect(measures.testSeconds).toEqual([600]);
    expect(measures.timeInQueueSeconds).toEqual([960]);
  });
});

describe("renderQueueMetrics", () => {
  it("writes every family once, with its series per queue and cumulative buckets", () => {
    const { active, histories } = scenario();
    const measures = measureQueue(active, histories, WINDOW_START, NOW);
    const l = 'repo="acme/app",branch="main",queue_type="main"';
    expect(renderQueueMetrics([{ repo: "acme/app", branch: "main", measures }])).toBe(
      [
        "# HELP mq_depth_current Pull requests in the queue that are ready (not_ready excluded).",
        "# TYPE mq_depth_current gauge",
        `mq_depth_current{${l}} 2`,
        "# HELP mq_awaiting_mergeability Pull requests submitted but not ready (mergeability, base branch, impacted targets).",
        "# TYPE mq_awaiting_mergeability gauge",
        `mq_awaiting_mergeability{${l}} 1`,
        "# HELP mq_testing_slots_active Pull requests being tested.",
        "# TYPE mq_testing_slots_active gauge",
        `mq_testing_slots_active{${l}} 1`,
        "# HELP mq_pr_conclusions_1h_total Pull requests that concluded in the last hour, by conclusion.",
        "# TYPE mq_pr_conclusions_1h_total gauge",
        `mq_pr_conclusions_1h_total{${l},conclusion="merged"} 1`,
        `mq_pr_conclusions_1h_total{${l},conclusion="failed"} 1`,
        `mq_pr_conclusions_1h_total{${l},conclusion="cancelled"} 1`,
        "# HELP mq_pr_restarts_1h_total Testing restarts (testing to pending) in the last hour.",
        "# TYPE mq_pr_restarts_1h_total gauge",
        `mq_pr_restarts_1h_total{${l}} 1`,
        "# HELP mq_pr_wait_duration_1h_seconds Seconds from ready to first testing, for pull requests that started testing in the last hour.",
        "# TYPE mq_pr_wait_duration_1h_seconds histogram",
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="60"} 0`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="300"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="600"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="900"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="1800"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="3600"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="5400"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="7200"} 2`,
        `mq_pr_wait_duration_1h_seconds_bucket{${l},le="+Inf"} 2`,
        `mq_pr_wait_duration_1h_seconds_sum{${l}} 420`,
        `mq_pr_wait_duration_1h_seconds_count{${l}} 2`,
        "# HELP mq_pr_test_duration_1h_seconds Seconds of each testing cycle that ended in the last hour.",
        "# TYPE mq_pr_test_duration_1h_seconds histogram",
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="60"} 0`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="300"} 0`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="600"} 0`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="900"} 1`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="1800"} 2`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="3600"} 3`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="5400"} 3`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="7200"} 3`,
        `mq_pr_test_duration_1h_seconds_bucket{${l},le="+Inf"} 3`,
        `mq_pr_test_duration_1h_seconds_sum{${l}} 5580`,
        `mq_pr_test_duration_1h_seconds_count{${l}} 3`,
        "# HELP mq_pr_time_in_queue_1h_seconds Seconds from ready to conclusion (not_ready time excluded), for pull requests that concluded in the last hour.",
        "# TYPE mq_pr_time_in_queue_1h_seconds histogram",
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="60"} 0`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="300"} 0`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="600"} 0`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="900"} 0`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="1800"} 2`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="3600"} 2`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="5400"} 2`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="7200"} 2`,
        `mq_pr_time_in_queue_1h_seconds_bucket{${l},le="+Inf"} 2`,
        `mq_pr_time_in_queue_1h_seconds_sum{${l}} 3000`,
        `mq_pr_time_in_queue_1h_seconds_count{${l}} 2`,
        "# HELP mq_estimated_failure_rate Mainline: the estimated chance that a pull request fails its queue run, from the queue's recent verdicts (what speculationThresholdPercent weighs).",
        "# TYPE mq_estimated_failure_rate gauge",
        `mq_estimated_failure_rate{${l}} 0`,
        "",
      ].join("\n"),
    );
  });

  it("groups series of several queues under one HELP/TYPE and escapes label values", () => {
    const empty = measureQueue([], [], WINDOW_START, NOW);
    const text = renderQueueMetrics([
      { repo: "acme/app", branch: "main", measures: empty },
      { repo: 'we"ird\\repo', branch: "line\nbreak", measures: empty },
    ]);
    expect(text.match(/^# TYPE mq_depth_current gauge$/gm)).toHaveLength(1);
    const depth = text.split("\n").filter((line) => line.startsWith("mq_depth_current{"));
    expect(depth).toEqual([
      'mq_depth_current{repo="acme/app",branch="main",queue_type="main"} 0',
      'mq_depth_current{repo="we\\"ird\\\\repo",branch="line\\nbreak",queue_type="main"} 0',
    ]);
    // Every sample line is `name{labels} number`; every family has HELP and TYPE first.
    for (const line of text.trimEnd().split("\n")) {
      expect(line).toMatch(/^(# (HELP|TYPE) mq_\w+ .+|mq_\w+\{.*\} \d+(\.\d+)?)$/);
    }
  });

  it("with no queues: only HELP and TYPE lines", () => {
    const text = renderQueueMetrics([]);
    expect(
      text
        .trimEnd()
        .split("\n")
        .every((line) => line.startsWith("# ")),
    ).toBe(true);
    expect(text.match(/^# TYPE /gm)).toHaveLength(9);
  });
});
