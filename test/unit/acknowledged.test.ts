/**
 * What a read shows of commands acknowledged and not yet applied (src/mergequeue/acknowledged.ts):
 * laid over the records, as the planner will record them.
 */
import { describe, expect, it } from "vitest";
import {
  ACKNOWLEDGED_SEQ_BASE,
  acknowledgedCommands,
  activeWithAcknowledged,
  pageWithAcknowledged,
  withAcknowledged,
  withKeptTargets,
} from "../../src/mergequeue/acknowledged.js";
import type { CommandRecord, EntryRecord } from "../../src/mergequeue/records.js";
import { entryRecord } from "../helpers/fake-engine.js";

const QUEUE = "q1";
const actor = { kind: "user", name: "api-token:t1" } as const;
/** A queue in parallel mode: its pull requests need impacted targets. */
const AT = { queueId: QUEUE, requiresImpactedTargets: true };

function command(id: number, payload: unknown, appliedAt: number | null = null): CommandRecord {
  return { id, queueId: QUEUE, payload, createdAt: 1_000 + id, appliedAt, result: null };
}

const submit = (prNumber: number, more: Record<string, unknown> = {}) => ({
  type: "submit",
  prNumber,
  priority: null,
  noBatch: false,
  actor,
  acknowledged: true,
  ...more,
});

const targets = (prNumber: number, headSha: string) => ({
  type: "set_impacted_targets",
  prNumber,
  headSha,
  targets: ["//app:lib"],
  acknowledged: true,
});

/** Recorded entry of #prNumber: pending, its head `sha-<n>`, its `seq` its number. */
const entry = (prNumber: number, more: Partial<EntryRecord> = {}): EntryRecord => ({
  ...entryRecord(QUEUE, { prNumber, prSha: `sha-${String(prNumber)}`, seq: prNumber }),
  id: `${QUEUE}:${String(prNumber)}`,
  ...more,
});

describe("acknowledgedCommands", () => {
  it("keeps the acknowledged submissions and targets, the latest per pull request", () => {
    const acknowledged = acknowledgedCommands(AT, [
      command(1, submit(7)),
      command(2, targets(7, "a")),
      command(3, submit(7, { priority: 10, noBatch: true })),
      command(4, targets(7, "b")),
      // Waited on by its caller (not acknowledged), applied, or not ours to show: left out.
      command(5, { ...submit(8), acknowledged: undefined }),
      command(6, submit(9), 2_000),
      command(7, { type: "cancel", prNumber: 7, actor }),
      command(8, { type: "ci_result", result: {} }),
      command(9, "not an object"),
    ]);
    expect([...acknowledged.submissions.values()]).toEqual([
      { commandId: 3, prNumber: 7, priority: 10, noBatch: true, actor, at: 1_003 },
    ]);
    expect([...acknowledged.targets]).toEqual([[7, { headSha: "b", targets: ["//app:lib"] }]]);
  });
});

describe("withAcknowledged", () => {
  const acknowledged = acknowledgedCommands(AT, [
    command(1, submit(7, { priority: 0 })),
    command(2, targets(7, "sha-7")),
    command(3, targets(5, "sha-5")),
    command(4, targets(6, "other")),
  ]);

  it("a submission not yet applied reads as the planner first records it", () => {
    const shown = withAcknowledged(undefined, 7, acknowledged);
    // What the driver reads from the git host is not known yet: empty.
    for (const field of ["id", "prTitle", "prSha", "prHeadBranch", "prBaseBranch", "prAuthor"]) {
      expect(shown?.[field as keyof EntryRecord], field).toBe("");
    }
    expect(shown).toMatchObject({
      queueId: QUEUE,
      prNumber: 7,
      state: "not_ready",
      stateChangedAt: 1_001,
      submittedAt: 1_001,
      concludedAt: null,
      priorityValue: 0,
      usedDefaultPriority: false,
      seq: ACKNOWLEDGED_SEQ_BASE + 1,
      lastReason: "submitted",
    });
    // Targets for its head: the head is not known yet, and the planner keeps them for it.
    expect(shown?.readiness).toEqual({
      mergeability: "unspecified",
      baseBranchMatches: true,
      requiresImpactedTargets: true,
      impactedTargets: ["//app:lib"],
    });
    expect(withAcknowledged(undefined, 8, acknowledged)).toBeUndefined();
  });

  it("a submission of a concluded pull request is a new one; of a queued one, a resubmission", () => {
    const concluded = entry(7, { state: "cancelled", concludedAt: 20 });
    expect(withAcknowledged(concluded, 7, acknowledged)).toMatchObject({
      id: "",
      state: "not_ready",
      concludedAt: null,
    });
    expect(withAcknowledged(entry(7), 7, acknowledged)).toEqual({
      ...entry(7),
      priorityValue: 0,
      usedDefaultPriority: false,
      readiness: { ...entry(7).readiness, impactedTargets: ["//app:lib"] },
    });
  });

  it("targets show on a queued pull request at their head only, never on a concluded one", () => {
    expect(withAcknowledged(entry(5), 5, acknowledged)?.readiness).toMatchObject({
      impactedTargets: ["//app:lib"],
    });
    expect(withAcknowledged(entry(6), 6, acknowledged)).toEqual(entry(6));
    const failed = entry(5, { state: "failed", concludedAt: 30 });
    expect(withAcknowledged(failed, 5, acknowledged)).toEqual(failed);
  });
});

describe("activeWithAcknowledged", () => {
  it("resubmissions change the queued entries; new submissions follow them in order", () => {
    const acknowledged = acknowledgedCommands(AT, [
      command(11, submit(9)),
      command(12, submit(1, { noBatch: true })),
      command(13, submit(8, { priority: 200 })),
    ]);
    const shown = activeWithAcknowledged([entry(1), entry(2)], acknowledged);
    expect(shown.map((e) => [e.prNumber, e.state, e.priorityValue, e.noBatch, e.seq])).toEqual([
      [1, "pending", 100, true, 1],
      [2, "pending", 100, false, 2],
      [9, "not_ready", 100, false, ACKNOWLEDGED_SEQ_BASE + 11],
      [8, "not_ready", 200, false, ACKNOWLEDGED_SEQ_BASE + 13],
    ]);
    expect(activeWithAcknowledged([entry(1)], acknowledgedCommands(AT, []))).toEqual([entry(1)]);
  });
});

describe("pageWithAcknowledged", () => {
  const acknowledged = acknowledgedCommands(AT, [
    command(21, submit(3)),
    command(22, submit(1, { priority: 10 })),
    command(23, submit(2)),
  ]);
  // #1 is queued, #2 was cancelled (its submission is a new one), #3 was never submitted.
  const recorded = [entry(1), entry(2, { state: "cancelled", concludedAt: 40 })];
  const active = new Set([1]);
  const listed = (rows: readonly EntryRecord[]) => rows.map((e) => [e.prNumber, e.state, e.seq]);

  it("new submissions follow the recorded ones, in the order they were stored", () => {
    const page = pageWithAcknowledged(recorded, acknowledged, active, { take: 51 });
    expect(listed(page)).toEqual([
      [1, "pending", 1],
      [2, "cancelled", 2],
      [3, "not_ready", ACKNOWLEDGED_SEQ_BASE + 21],
      [2, "not_ready", ACKNOWLEDGED_SEQ_BASE + 23],
    ]);
    expect(page[0]?.priorityValue).toBe(10);
    expect(page[1]).toEqual(recorded[1]);
  });

  it("listing each pull request once, a new submission replaces its concluded one", () => {
    const page = pageWithAcknowledged(recorded, acknowledged, active, {
      take: 51,
      latestOnly: true,
    });
    expect(listed(page)).toEqual([
      [1, "pending", 1],
      [3, "not_ready", ACKNOWLEDGED_SEQ_BASE + 21],
      [2, "not_ready", ACKNOWLEDGED_SEQ_BASE + 23],
    ]);
    const cancelled = { take: 51, latestOnly: true, state: "cancelled" as const };
    const cancelledRows = recorded.filter((e) => e.state === "cancelled");
    expect(pageWithAcknowledged(cancelledRows, acknowledged, active, cancelled)).toEqual([]);
  });

  it("only where the query lists them: not_ready, not concluded, after the cursor", () => {
    const after = { take: 51, afterSeq: ACKNOWLEDGED_SEQ_BASE + 21 };
    expect(listed(pageWithAcknowledged([], acknowledged, active, after))).toEqual([
      [2, "not_ready", ACKNOWLEDGED_SEQ_BASE + 23],
    ]);
    const notReady = { take: 51, state: "not_ready" as const };
    expect(pageWithAcknowledged([], acknowledged, active, notReady)).toHaveLength(2);
    // Applied between the read of the queue's pull requests and the page's: shown once.
    const applied = entry(3, { state: "not_ready", seq: 3 });
    expect(listed(pageWithAcknowledged([applied], acknowledged, active, notReady))).toEqual([
      [3, "not_ready", 3],
      [2, "not_ready", ACKNOWLEDGED_SEQ_BASE + 23],
    ]);
    for (const query of [
      { take: 51, state: "pending" as const },
      { take: 51, concludedSince: 0 },
    ]) {
      expect(listed(pageWithAcknowledged(recorded, acknowledged, active, query))).toEqual(
        listed(recorded),
      );
    }
  });
});

describe("withKeptTargets", () => {
  it("targets kept for a pull request not yet submitted go to its acknowledged submission", () => {
    const acknowledged = acknowledgedCommands(AT, [
      command(31, submit(4)),
      command(32, submit(5)),
      command(33, targets(5, "newer")),
    ]);
    const kept = {
      "4": { headSha: "h4", targets: "ALL" as const, at: 1 },
      "5": { headSha: "h5", targets: ["//old"], at: 1 },
      "6": { headSha: "h6", targets: ["//six"], at: 1 },
    };
    const withKept = withKeptTargets(acknowledged, kept);
    expect([...withKept.targets].sort()).toEqual([
      [4, { headSha: "h4", targets: "ALL", at: 1 }],
      [5, { headSha: "newer", targets: ["//app:lib"] }],
    ]);
    expect(withAcknowledged(undefined, 4, withKept)?.readiness.impactedTargets).toBe("ALL");
    expect(withAcknowledged(undefined, 4, acknowledged)?.readiness.impactedTargets).toBeNull();
    expect(withKeptTargets(acknowledged, undefined).targets).toEqual(acknowledged.targets);
  });
});
