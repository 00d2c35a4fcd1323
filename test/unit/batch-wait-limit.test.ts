/**
 * A server's bound on how long a batch waits to fill (MAINLINE_BATCH_WAIT_LIMIT_SECONDS): the
 * planner starts a batch that is still filling at the bound when it comes before the queue's own
 * `batchingMaxWaitTimeMinutes`, and the setting is read and validated as the others.
 */
import { describe, expect, it } from "vitest";
import { loadServiceConfig } from "../../src/config.js";
import { MINUTE, PlannerHarness, defined } from "../helpers/planner-harness.js";

const SETTINGS = { batch: true, batchingMinSize: 3, batchingMaxWaitTimeMinutes: 5 };

describe("the server's batch wait limit", () => {
  it("starts a filling batch at the limit, and says so to the pull requests that wait", () => {
    const h = new PlannerHarness(SETTINGS, { batchWaitMs: 2_000 });
    h.at(1).submit(1);
    expect(h.last?.wakeAt).toBe(MINUTE + 2_000);
    expect(h.snapshot.entries[defined(h.snapshot.prIndex["1"])]?.waiting).toEqual({
      kind: "batch_forming",
      have: 1,
      need: 3,
      startsBy: MINUTE + 2_000,
    });
    h.tick(1 + 1_999 / MINUTE);
    expect(h.runningUnits()).toEqual([]);
    h.tick(1 + 2_000 / MINUTE);
    expect(h.runningUnits()).toEqual([[1]]);
  });

  it("0: a lone one starts at once, those behind it still batch; never waits longer than the queue's setting", () => {
    const full = new PlannerHarness(SETTINGS, { batchWaitMs: 0 });
    full.at(0).submit(1);
    expect(full.runningUnits()).toEqual([[1]]);
    full.at(0.5).submit(2);
    full.submit(3);
    full.submit(4);
    full.pass(1);
    expect(full.runningUnits()).toEqual([[2, 3, 4]]);

    const longer = new PlannerHarness(SETTINGS, { batchWaitMs: 3_600_000 });
    longer.at(0).submit(1);
    expect(longer.last?.wakeAt).toBe(5 * MINUTE);
    longer.tick(5);
    expect(longer.runningUnits()).toEqual([[1]]);
  });

  it("is read in seconds, unset by default, and refused when not a whole number of seconds", () => {
    expect(loadServiceConfig({}).batchWaitLimitMs).toBeUndefined();
    expect(loadServiceConfig({ MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "0" }).batchWaitLimitMs).toBe(0);
    expect(loadServiceConfig({ MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "90" }).batchWaitLimitMs).toBe(
      90_000,
    );
    expect(() => loadServiceConfig({ MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "1.5" })).toThrow(
      'MAINLINE_BATCH_WAIT_LIMIT_SECONDS must be a whole number of seconds from 0 to 86400 (got "1.5").',
    );
    expect(() => loadServiceConfig({ MAINLINE_BATCH_WAIT_LIMIT_SECONDS: "86401" })).toThrow(
      /0 to 86400/,
    );
  });
});
