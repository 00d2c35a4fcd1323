import { describe, expect, it } from "vitest";
import type { QueueSnapshot } from "../../src/mergequeue/model.js";
import { describeWaiting, toWaitingFor, waitsOf } from "../../src/mergequeue/waiting.js";

/** The parts of a snapshot `waitsOf` reads: its entries and the list of those that wait. */
const partial = (parts: object) => ({ bisections: {}, runs: {}, ...parts }) as QueueSnapshot;

const STARTS_BY = Date.UTC(2026, 0, 1, 15, 19);

describe("what a pending pull request waits for", () => {
  it("words a forming batch with its deadline, and a localization ahead with its suspects", () => {
    expect(toWaitingFor({ kind: "batch_forming", have: 1, need: 3, startsBy: STARTS_BY })).toEqual({
      reason: "batch_forming",
      message: "batch forming: 1 of 3, starts by 2026-01-01T15:19:00.000Z at the latest",
      until: STARTS_BY,
      batch: { have: 1, need: 3 },
    });
    expect(toWaitingFor({ kind: "bisection_ahead", prNumbers: [7, 9] })).toEqual({
      reason: "bisection_ahead",
      message: "waiting for the localization of the failed batch ahead (suspects #7, #9)",
      prNumbers: [7, 9],
    });
    expect(describeWaiting({ reason: "bisection_ahead", prNumbers: [] })).toBe(
      "waiting for the localization of the failed batch ahead",
    );
  });

  it("reads the waits of a stored snapshot: listed, pending entries only", () => {
    const waiting = { kind: "batch_forming", have: 2, need: 4, startsBy: STARTS_BY };
    const snapshot = {
      waiting: ["a", "b", "gone"],
      entries: {
        a: { state: "pending", waiting },
        b: { state: "testing", waiting },
        c: { state: "pending", waiting },
      },
    };
    const waits = waitsOf(partial(snapshot));
    expect([...waits.keys()]).toEqual(["a"]);
    expect(waits.get("a")?.batch).toEqual({ have: 2, need: 4 });
    expect(waitsOf(undefined).size).toBe(0);
    expect(waitsOf(partial({ entries: { a: { state: "pending", waiting } } })).size).toBe(0);
  });
});
