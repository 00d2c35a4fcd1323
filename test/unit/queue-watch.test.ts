import { describe, expect, it } from "vitest";
import { QueueWatch } from "../../src/web/live.js";
import { waitFor } from "../helpers/process.js";

/**
 * The live stream's look at followed queues (ADR 0025): one look per queue however many streams
 * follow it, every stream told of a change, nothing looked at once nobody follows.
 */
describe("QueueWatch", () => {
  it("looks once per queue for all its followers, tells each of a change, stops when left", async () => {
    let version = "1.1";
    let looks = 0;
    const watch = new QueueWatch((id) => {
      looks += 1;
      return Promise.resolve(id === "q" ? version : undefined);
    }, 20);
    const seen: (string | undefined)[][] = [[], []];
    const leave = [0, 1].map((i) => watch.subscribe("q", "1.1", (v) => seen[i]?.push(v)));
    expect(watch.size).toBe(1);
    await waitFor(() => Promise.resolve(looks >= 3), "a few looks", {
      timeoutMs: 5000,
      intervalMs: 10,
    });
    expect(seen).toEqual([[], []]);
    version = "1.2";
    await waitFor(() => Promise.resolve(seen[1]?.length === 1), "the change", {
      timeoutMs: 5000,
      intervalMs: 10,
    });
    expect(seen).toEqual([["1.2"], ["1.2"]]);
    // A stream that opened on the old version is told at once.
    const late: (string | undefined)[] = [];
    const leaveLate = watch.subscribe("q", "1.1", (v) => late.push(v));
    expect(late).toEqual(["1.2"]);
    for (const stop of [...leave, leaveLate]) stop();
    expect(watch.size).toBe(0);
    const after = looks;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(looks).toBe(after);
  });

  it("tells the followers when the queue is gone, and keeps going when a look fails", async () => {
    let fail = true;
    let gone = false;
    const watch = new QueueWatch(() => {
      if (fail) return Promise.reject(new Error("database away"));
      return Promise.resolve(gone ? undefined : "1.1");
    }, 20);
    const seen: (string | undefined)[] = [];
    const leave = watch.subscribe("q", "1.1", (v) => seen.push(v));
    await new Promise((resolve) => setTimeout(resolve, 80));
    fail = false;
    gone = true;
    await waitFor(() => Promise.resolve(seen.length === 1), "gone", {
      timeoutMs: 5000,
      intervalMs: 10,
    });
    expect(seen).toEqual([undefined]);
    leave();
    watch.stop();
  });
});
