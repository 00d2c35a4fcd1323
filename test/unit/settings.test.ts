import { describe, expect, it } from "vitest";
import {
  DEFAULT_QUEUE_SETTINGS,
  applySettingsUpdate,
  finishModeSwitch,
  initialConfiguration,
  type QueueConfiguration,
} from "../../src/mergequeue/settings.js";

const base = (): QueueConfiguration => initialConfiguration({});

function applied(
  current: QueueConfiguration,
  ...args: Parameters<typeof applySettingsUpdate> extends [unknown, ...infer R] ? R : never
) {
  const outcome = applySettingsUpdate(current, ...args);
  if (!outcome.ok) throw new Error(`update refused: ${outcome.reason}`);
  return outcome.configuration;
}

describe("queue settings", () => {
  it("starts from the defaults of docs/contract.md §5, running in the requested mode", () => {
    const config = initialConfiguration({ mode: "parallel", concurrency: 3 });
    expect(config).toEqual({
      ...DEFAULT_QUEUE_SETTINGS,
      mode: "parallel",
      concurrency: 3,
      state: "running",
      pendingMode: null,
    });
    expect(DEFAULT_QUEUE_SETTINGS).toMatchObject({
      testingTimeoutMinutes: 60,
      pendingFailureDepth: 0,
      batchingMaxWaitTimeMinutes: 5,
      batchingMinSize: 4,
      mergeMethod: "squash",
      statusCheckEnabled: true,
      requiredStatuses: null,
      enqueueingLabel: "merge-queue-submit",
      notReadyTimeoutHours: 24,
      // Mainline's extension: 0 fills `concurrency` as Trunk does.
      speculationThresholdPercent: 0,
    });
  });

  it("takes speculationThresholdPercent like any other setting, and keeps it when absent", () => {
    const set = applied(base(), { speculationThresholdPercent: 30 }, false);
    expect(set).toEqual({ ...base(), speculationThresholdPercent: 30 });
    expect(applied(set, { concurrency: 2 }, true)).toMatchObject({
      concurrency: 2,
      speculationThresholdPercent: 30,
    });
    expect(applied(set, { speculationThresholdPercent: 0 }, false)).toEqual(base());
  });

  it("changes only the fields present in the patch", () => {
    const next = applied(base(), { concurrency: 7, batch: true }, false);
    expect(next).toEqual({ ...base(), concurrency: 7, batch: true });
  });

  it("treats an empty patch as a no-op", () => {
    expect(applied(base(), {}, false)).toEqual(base());
  });

  it("sets, clears and resets the required statuses override", () => {
    const set = applied(base(), { requiredStatuses: ["build", "test"] }, false);
    expect(set.requiredStatuses).toEqual(["build", "test"]);
    const empty = applied(set, { requiredStatuses: [] }, false);
    expect(empty.requiredStatuses).toEqual([]);
    expect(applied(empty, { deleteRequiredStatuses: true }, false).requiredStatuses).toBeNull();
    expect(applied(set, { requiredStatuses: null }, false).requiredStatuses).toBeNull();
    expect(applied(set, { deleteRequiredStatuses: false }, false).requiredStatuses).toEqual([
      "build",
      "test",
    ]);
  });

  it("refuses a requiredStatuses list together with deleteRequiredStatuses: true", () => {
    expect(
      applySettingsUpdate(base(), { requiredStatuses: ["x"], deleteRequiredStatuses: true }, false),
    ).toEqual({ ok: false, reason: "conflicting_required_statuses" });
  });

  it("does not share the caller's array", () => {
    const statuses = ["a"];
    const next = applied(base(), { requiredStatuses: statuses }, false);
    statuses.push("b");
    expect(next.requiredStatuses).toEqual(["a"]);
  });

  it("writes the requested state", () => {
    expect(applied(base(), { state: "paused" }, false).state).toBe("paused");
    expect(applied(base(), { state: "draining" }, true).state).toBe("draining");
  });

  it("changes the mode at once when no pull request is in flight", () => {
    const next = applied(base(), { mode: "parallel" }, false);
    expect(next).toMatchObject({ mode: "parallel", state: "running", pendingMode: null });
  });

  it("switches modes through switching_modes when pull requests are in flight", () => {
    const switching = applied(base(), { mode: "parallel", concurrency: 2 }, true);
    expect(switching).toMatchObject({
      mode: "single",
      pendingMode: "parallel",
      state: "switching_modes",
      concurrency: 2,
    });
    expect(applySettingsUpdate(switching, { concurrency: 3 }, true)).toEqual({
      ok: false,
      reason: "switching_modes",
    });
    expect(applySettingsUpdate(switching, { state: "running" }, false)).toEqual({
      ok: false,
      reason: "switching_modes",
    });
    expect(finishModeSwitch(switching)).toMatchObject({
      mode: "parallel",
      pendingMode: null,
      state: "running",
    });
  });

  it("does not enter switching_modes when the mode is unchanged", () => {
    expect(applied(base(), { mode: "single" }, true).state).toBe("running");
  });

  it("leaves a queue that is not switching modes alone when asked to finish a switch", () => {
    const config = base();
    expect(finishModeSwitch(config)).toBe(config);
  });
});
