/**
 * The planner's persisted snapshot has a version, and a snapshot stored by an older server (no
 * `version`, no `verdicts`, no `landedThrough`) is upgraded when loaded, then plans as usual.
 */
import { describe, expect, it } from "vitest";
import { initialSnapshot, plan } from "../../src/mergequeue/planner/index.js";
import { SNAPSHOT_VERSION, upgradeSnapshot } from "../../src/mergequeue/snapshot.js";
import { NO_VERDICTS } from "../../src/mergequeue/speculation.js";
import { initialConfiguration } from "../../src/mergequeue/settings.js";
import { pullRequest } from "../helpers/planner-harness.js";

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
    expect(SNAPSHOT_VERSION).toBe(2);
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
