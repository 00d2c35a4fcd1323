/**
 * The planner's persisted snapshot has a version, and a snapshot stored by an older server (no
 * `version`, no `verdicts`, no `landedThrough`) is upgraded when loaded, then plans as usual.
 */
import { describe, expect, it } from "vitest";
import { initialSnapshot, plan } from "../../src/mergequeue/planner/index.js";
import { SNAPSHOT_VERSION, upgradeSnapshot } from "../../src/mergequeue/snapshot.js";
import { NO_VERDICTS } from "../../src/mergequeue/speculation.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { PlannerHarness, pullRequest } from "../helpers/planner-harness.js";

function fresh() {
  return initialSnapshot({
    queueId: "q1",
    targetBranch: "main",
    configuration: initialConfiguration({}),
    headSha: "base",
  });
}

/** A snapshot as servers before the version stored it: round-tripped through JSON, fields absent. */
function oldShape(): Record<string, unknown> {
  const stored = JSON.parse(JSON.stringify(fresh())) as Record<string, unknown>;
  delete stored.version;
  delete stored.verdicts;
  delete stored.landedThrough;
  return stored;
}

describe("planner snapshot versions", () => {
  it("a new snapshot is of the current version", () => {
    expect(fresh().version).toBe(SNAPSHOT_VERSION);
    expect(SNAPSHOT_VERSION).toBe(3);
  });

  it("upgrades an unversioned snapshot: the missing fields get their defaults", () => {
    const upgraded = upgradeSnapshot(oldShape());
    expect(upgraded.version).toBe(SNAPSHOT_VERSION);
    expect(upgraded.verdicts).toEqual(NO_VERDICTS);
    expect(upgraded.landedThrough).toEqual({});
    // Everything else is kept as stored.
    expect(upgraded).toEqual(JSON.parse(JSON.stringify(fresh())));
  });

  it("keeps what an old snapshot had of the later fields", () => {
    const stored = { ...oldShape(), verdicts: { units: 3, prs: 4, failed: 1 } };
    expect(upgradeSnapshot(stored).verdicts).toEqual({ units: 3, prs: 4, failed: 1 });
  });

  it("an upgraded snapshot plans like a new one", () => {
    const event = {
      type: "submit" as const,
      pr: pullRequest(1),
      priority: null,
      noBatch: false,
      actor: { kind: "user" as const, name: "ada" },
    };
    const fromOld = plan(upgradeSnapshot(oldShape()), event, 1_000);
    const fromNew = plan(fresh(), event, 1_000);
    expect(fromOld.rejection).toBeNull();
    expect(fromOld.decisions.length).toBeGreaterThan(0);
    expect(fromOld.decisions).toEqual(fromNew.decisions);
    expect(fromOld.snapshot).toEqual(fromNew.snapshot);
  });

  it("a halving bisection stored by version 2 restarts as a localization of its undecided PRs", () => {
    const h = new PlannerHarness({ batch: true, batchingMinSize: 4, bisectionConcurrency: 4 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.fail([1, 2, 3, 4]);
    // As version 2 stored it: halves, one of them being tested by a run that is still going.
    const stored = JSON.parse(JSON.stringify(h.snapshot)) as Record<string, unknown>;
    const [id, group] = Object.entries(h.snapshot.bisections)[0] ?? [];
    if (!id || !group) throw new Error("no group");
    const oldRun = h.run(1).id;
    // The halves' other runs were done.
    const runs = stored.runs as Record<string, { kind: string; status: string }>;
    for (const [runId, run] of Object.entries(runs)) {
      if (run.kind === "bisection" && runId !== oldRun) run.status = "cancelled";
    }
    stored.version = 2;
    stored.bisections = {
      [id]: {
        id,
        runId: group.runId,
        segments: [
          { entries: group.entries.slice(0, 2), status: "testing", runId: oldRun, inferred: false },
          { entries: group.entries.slice(2), status: "untested", runId: null, inferred: false },
        ],
      },
    };
    h.snapshot = upgradeSnapshot(stored);
    const upgraded = h.snapshot.bisections[id];
    expect(upgraded?.entries).toEqual(group.entries);
    // None of them is known to fail yet: every prefix, the whole set included, is tested.
    expect(upgraded?.failsAt).toBe(5);
    expect(upgraded?.prefixes).toEqual([]);
    h.tick(1);
    // The old half's run still going holds no slot, and its result is ignored when it comes.
    expect(h.runningUnits()).toEqual([[1], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4]]);
    h.send({ type: "run_finished", runId: oldRun, outcome: "failed", failingChecks: ["test"] });
    expect(h.snapshot.bisections[id]?.failsAt).toBe(5);
    h.pass(1, 2);
    // #1 and #2 merged from it; the prefix of three (run on the head before them) fails.
    const three = Object.values(h.snapshot.runs).find(
      (r) => r.status === "running" && r.unit.length === 3,
    );
    h.send({
      type: "run_finished",
      runId: three?.id ?? "",
      outcome: "failed",
      failingChecks: ["test"],
    });
    expect(h.state(3)).toBe("failed");
    expect(h.merged).toEqual([1, 2]);
  });

  it("leaves a current snapshot as it is and refuses one from a newer server", () => {
    const current = fresh();
    expect(upgradeSnapshot(current)).toBe(current);
    expect(() => upgradeSnapshot({ ...oldShape(), version: SNAPSHOT_VERSION + 1 })).toThrow(
      /newer than this server's/,
    );
    expect(() => upgradeSnapshot({ ...oldShape(), version: "2" })).toThrow(/unknown version/);
    expect(() => upgradeSnapshot(null)).toThrow(/not an object/);
  });
});
