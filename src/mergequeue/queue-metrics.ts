/**
 * The Prometheus metrics of merge queues (getMergeQueueMetrics): what one queue's entries and
 * transitions say about the last hour, and the exposition text. Pure: the service reads the
 * records, these functions measure and format them.
 */
import type { EntryRecord, TransitionRecord } from "./records.js";
import type { PrState } from "./model.js";
import { NO_VERDICTS, estimatedFailureRate, type VerdictRecord } from "./speculation.js";
import { HOUR_MS } from "../lib/time.js";

/** Rolling metrics cover the hour before the scrape. */
export const METRICS_WINDOW_MS = HOUR_MS;

/** Histogram bounds in seconds (Trunk's); `+Inf` is implied. */
export const DURATION_BUCKETS = [60, 300, 600, 900, 1800, 3600, 5400, 7200] as const;

export const CONCLUSIONS = ["merged", "failed", "cancelled"] as const;
export type Conclusion = (typeof CONCLUSIONS)[number];

export interface QueueMeasures {
  /** Entries in the queue that are ready (every state but not_ready). */
  depth: number;
  /** Entries waiting in not_ready (mergeability, base branch, impacted targets). */
  awaitingMergeability: number;
  /** Entries being tested right now. */
  testing: number;
  /** Entries that concluded in the window, by conclusion. */
  conclusions: Record<Conclusion, number>;
  /** testing → pending transitions in the window. */
  restarts: number;
  /** Seconds from ready to first testing, for entries that first started testing in the window. */
  waitSeconds: number[];
  /** Seconds of each testing stint that ended in the window. */
  testSeconds: number[];
  /** Seconds from ready to conclusion, not_ready time excluded, for entries concluded in the window. */
  timeInQueueSeconds: number[];
  /** The estimated chance that a pull request fails its queue run (recent verdicts). */
  estimatedFailureRate: number;
}

const isConclusion = (state: PrState): state is Conclusion =>
  (CONCLUSIONS as readonly string[]).includes(state);

/** Time counts toward queue metrics in every state but not_ready (and nothing after concluding). */
const countsAsQueued = (state: PrState): boolean => state !== "not_ready" && !isConclusion(state);

/**
 * Measures one queue.
 * @param active the queue's entries that have not concluded
 * @param verdicts the queue's recent verdicts (its snapshot's), for the failure-rate estimate
 * @param histories the complete transition history of every entry with a transition in the
 *   window (other entries may be included; they are ignored unless something of theirs falls
 *   in the window)
 */
export function measureQueue(
  active: readonly EntryRecord[],
  histories: Iterable<readonly TransitionRecord[]>,
  windowStart: number,
  now: number,
  verdicts: VerdictRecord = NO_VERDICTS,
): QueueMeasures {
  const measures: QueueMeasures = {
    depth: 0,
    awaitingMergeability: 0,
    testing: 0,
    conclusions: { merged: 0, failed: 0, cancelled: 0 },
    restarts: 0,
    waitSeconds: [],
    testSeconds: [],
    timeInQueueSeconds: [],
    estimatedFailureRate: estimatedFailureRate(verdicts),
  };
  for (const entry of active) {
    if (entry.state === "not_ready") measures.awaitingMergeability += 1;
    else if (!isConclusion(entry.state)) measures.depth += 1;
    if (entry.state === "testing") measures.testing += 1;
  }
  const inWindow = (at: number) => at >= windowStart && at <= now;
  for (const unsorted of histories) {
    // Stable: transitions at the same instant keep the store's order.
    const history = [...unsorted].sort((a, b) => a.at - b.at);
    let queuedMs = 0;
    let everReady = false;
    let testingSince: number | null = null;
    let testedBefore = false;
    for (let i = 0; i < history.length; i++) {
      const t = history[i] as TransitionRecord;
      const previous = i > 0 ? (history[i - 1] as TransitionRecord) : undefined;
      if (previous && countsAsQueued(previous.to)) queuedMs += t.at - previous.at;
      if (countsAsQueued(t.to)) everReady = true;

      if (t.from === "testing" && testingSince !== null) {
        if (inWindow(t.at)) measures.testSeconds.push((t.at - testingSince) / 1000);
        testingSince = null;
      }
      if (t.to === "testing") {
        testingSince = t.at;
        if (!testedBefore && inWindow(t.at)) measures.waitSeconds.push(queuedMs / 1000);
        testedBefore = true;
      }
      if (!inWindow(t.at)) continue;
      if (t.from === "testing" && t.to === "pending") measures.restarts += 1;
      if (isConclusion(t.to) && (t.from === null || !isConclusion(t.from))) {
        measures.conclusions[t.to] += 1;
        if (everReady) measures.timeInQueueSeconds.push(queuedMs / 1000);
      }
    }
  }
  return measures;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A number as Prometheus writes it (integers plain, others in shortest form). */
const sample = (value: number): string => String(value);

export interface QueueSeries {
  /** `owner/name` of the repository. */
  repo: string;
  branch: string;
  measures: QueueMeasures;
}

interface Family {
  name: string;
  type: "gauge" | "histogram";
  help: string;
  lines: (labels: string, m: QueueMeasures) => string[];
}

function histogram(name: string, values: readonly number[], labels: string): string[] {
  const lines: string[] = [];
  for (const bound of DURATION_BUCKETS) {
    const count = values.filter((v) => v <= bound).length;
    lines.push(`${name}_bucket{${labels},le="${bound}"} ${count}`);
  }
  lines.push(`${name}_bucket{${labels},le="+Inf"} ${values.length}`);
  const sum = values.reduce((total, v) => total + v, 0);
  lines.push(`${name}_sum{${labels}} ${sample(Math.round(sum * 1000) / 1000)}`);
  lines.push(`${name}_count{${labels}} ${values.length}`);
  return lines;
}

const FAMILIES: Family[] = [
  {
    name: "mq_depth_current",
    type: "gauge",
    help: "Pull requests in the queue that are ready (not_ready excluded).",
    lines: (labels, m) => [`mq_depth_current{${labels}} ${m.depth}`],
  },
  {
    name: "mq_awaiting_mergeability",
    type: "gauge",
    help: "Pull requests submitted but not ready (mergeability, base branch, impacted targets).",
    lines: (labels, m) => [`mq_awaiting_mergeability{${labels}} ${m.awaitingMergeability}`],
  },
  {
    name: "mq_testing_slots_active",
    type: "gauge",
    help: "Pull requests being tested.",
    lines: (labels, m) => [`mq_testing_slots_active{${labels}} ${m.testing}`],
  },
  {
    name: "mq_pr_conclusions_1h_total",
    type: "gauge",
    help: "Pull requests that concluded in the last hour, by conclusion.",
    lines: (labels, m) =>
      CONCLUSIONS.map(
        (c) => `mq_pr_conclusions_1h_total{${labels},conclusion="${c}"} ${m.conclusions[c]}`,
      ),
  },
  {
    name: "mq_pr_restarts_1h_total",
    type: "gauge",
    help: "Testing restarts (testing to pending) in the last hour.",
    lines: (labels, m) => [`mq_pr_restarts_1h_total{${labels}} ${m.restarts}`],
  },
  {
    name: "mq_pr_wait_duration_1h_seconds",
    type: "histogram",
    help: "Seconds from ready to first testing, for pull requests that started testing in the last hour.",
    lines: (labels, m) => histogram("mq_pr_wait_duration_1h_seconds", m.waitSeconds, labels),
  },
  {
    name: "mq_pr_test_duration_1h_seconds",
    type: "histogram",
    help: "Seconds of each testing cycle that ended in the last hour.",
    lines: (labels, m) => histogram("mq_pr_test_duration_1h_seconds", m.testSeconds, labels),
  },
  {
    name: "mq_pr_time_in_queue_1h_seconds",
    type: "histogram",
    help: "Seconds from ready to conclusion (not_ready time excluded), for pull requests that concluded in the last hour.",
    lines: (labels, m) => histogram("mq_pr_time_in_queue_1h_seconds", m.timeInQueueSeconds, labels),
  },
  {
    name: "mq_estimated_failure_rate",
    type: "gauge",
    help: "Mainline: the estimated chance that a pull request fails its queue run, from the queue's recent verdicts (what speculationThresholdPercent weighs).",
    lines: (labels, m) => [
      `mq_estimated_failure_rate{${labels}} ${sample(Math.round(m.estimatedFailureRate * 1e6) / 1e6)}`,
    ],
  },
];

/**
 * The exposition text (format 0.0.4): every family once, with its HELP and TYPE, then one series
 * per queue labelled `repo`, `branch` and `queue_type="main"`.
 */
export function renderQueueMetrics(queues: readonly QueueSeries[]): string {
  const lines: string[] = [];
  for (const family of FAMILIES) {
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
    for (const queue of queues) {
      const labels = `repo="${escapeLabel(queue.repo)}",branch="${escapeLabel(queue.branch)}",queue_type="main"`;
      lines.push(...family.lines(labels, queue.measures));
    }
  }
  return lines.join("\n") + "\n";
}
