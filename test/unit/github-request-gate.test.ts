/**
 * The gate of a GitHub installation (src/providers/github/request-gate.ts): writes in two lanes,
 * the queue's never behind the presentation's; GitHub's budget of content-creating requests
 * shared, the queue keeping a part; a rate limit holding every request until it ends, and a
 * request that would wait too long answered at once without being sent.
 */
import { describe, expect, it } from "vitest";
import { isUnsafeToRepeat, laneOf, RequestGate } from "../../src/providers/github/request-gate.js";

const REPO = "/repos/acme/widgets";

/** A `send` that records when it started and answers after `ms`. */
function recorder(started: string[], ms = 0, headers: Record<string, string> = {}, status = 200) {
  return (label: string) => async () => {
    started.push(label);
    await new Promise((resolve) => setTimeout(resolve, ms));
    return new Response("{}", { status, headers });
  };
}

describe("the lanes of a request", () => {
  it("are the queue's for refs, merges and pull requests, presentation for the rest", () => {
    expect(laneOf("PATCH", `${REPO}/git/refs/heads/trunk-temp/main/queue`)).toBe("queue");
    expect(laneOf("POST", `${REPO}/git/refs`)).toBe("queue");
    expect(laneOf("POST", `${REPO}/merges`)).toBe("queue");
    expect(laneOf("PUT", `${REPO}/pulls/12/merge`)).toBe("queue");
    expect(laneOf("POST", `${REPO}/pulls`)).toBe("queue");
    expect(laneOf("PATCH", `${REPO}/issues/comments/5`)).toBe("presentation");
    expect(laneOf("POST", `${REPO}/check-runs`)).toBe("presentation");
    expect(laneOf("POST", `${REPO}/issues/12/labels`)).toBe("presentation");
    expect(laneOf("GET", `${REPO}/pulls/12`)).toBeUndefined();
    expect(laneOf("POST", "/app/installations/7/access_tokens")).toBeUndefined();
  });

  it("never repeat blindly the writes GitHub may carry out and answer an error", () => {
    expect(isUnsafeToRepeat("POST", `${REPO}/merges`)).toBe(true);
    expect(isUnsafeToRepeat("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/merge")).toBe(true);
    expect(isUnsafeToRepeat("POST", `${REPO}/issues/3/comments`)).toBe(true);
    expect(isUnsafeToRepeat("POST", `${REPO}/check-runs`)).toBe(true);
    // Moving a ref to a commit, editing a comment: the same again is harmless.
    expect(isUnsafeToRepeat("PATCH", `${REPO}/git/refs/heads/x`)).toBe(false);
    expect(isUnsafeToRepeat("PATCH", `${REPO}/issues/comments/5`)).toBe(false);
    expect(isUnsafeToRepeat("GET", `${REPO}/merges`)).toBe(false);
  });
});

describe("the gate", () => {
  it("sends a merge at once while comment edits wait in their own lane", async () => {
    const gate = new RequestGate({ writeIntervalMs: 100, maxWaitMs: 1_000 });
    const started: string[] = [];
    const send = recorder(started, 20);
    const edits = [1, 2, 3, 4].map((n) =>
      gate.send("PATCH", `${REPO}/issues/comments/${String(n)}`, send(`edit ${String(n)}`)),
    );
    const merge = gate.send("PUT", `${REPO}/pulls/1/merge`, send("merge"));
    await merge;
    // The merge went before the later edits, which are spaced 100 ms apart in their lane.
    expect(started.indexOf("merge")).toBeLessThanOrEqual(1);
    await Promise.all(edits);
    expect(started.filter((s) => s.startsWith("edit"))).toEqual([
      "edit 1",
      "edit 2",
      "edit 3",
      "edit 4",
    ]);
  });

  it("keeps one request in flight per lane, spaced as asked", async () => {
    let now = 0;
    const gate = new RequestGate({ writeIntervalMs: 50, maxWaitMs: 1_000 });
    const starts: number[] = [];
    let inFlight = 0;
    let most = 0;
    const send = () => async () => {
      starts.push((now = performance.now()));
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 10));
      inFlight--;
      return new Response("{}");
    };
    await Promise.all([1, 2, 3].map(() => gate.send("POST", `${REPO}/git/refs`, send())));
    expect(most).toBe(1);
    for (let i = 1; i < starts.length; i++) {
      expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBeGreaterThanOrEqual(45);
    }
    expect(now).toBeGreaterThan(0);
  });

  it("leaves the queue part of GitHub's content budget when comments use theirs up", async () => {
    let clock = 0;
    const gate = new RequestGate({
      writeIntervalMs: 1,
      maxWaitMs: 1_000,
      contentPerMinute: 4,
      presentationPerMinute: 2,
      now: () => clock,
    });
    const started: string[] = [];
    const send = recorder(started);
    await gate.send("PATCH", `${REPO}/issues/comments/1`, send("edit 1"));
    clock += 10;
    await gate.send("PATCH", `${REPO}/issues/comments/1`, send("edit 2"));
    clock += 10;
    // The presentation lane spent its two: the third edit waits for the minute to pass…
    const third = gate.send("PATCH", `${REPO}/issues/comments/1`, send("edit 3"));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(started).toEqual(["edit 1", "edit 2"]);
    // …while the queue's writes still go (four a minute in all).
    await gate.send("PUT", `${REPO}/pulls/1/merge`, send("merge 1"));
    clock += 10;
    await gate.send("PUT", `${REPO}/pulls/2/merge`, send("merge 2"));
    expect(started).toEqual(["edit 1", "edit 2", "merge 1", "merge 2"]);
    clock += 60_000;
    await third;
    expect(started.at(-1)).toBe("edit 3");
  });

  it("holds every request, reads included, for a secondary limit's retry-after", async () => {
    const paused: unknown[] = [];
    const gate = new RequestGate({
      writeIntervalMs: 0,
      maxWaitMs: 5_000,
      onPause: (pause) => paused.push(pause),
    });
    const started: string[] = [];
    const refuse = recorder(started, 0, { "retry-after": "1" }, 403);
    const ok = recorder(started);
    const refusedAt = performance.now();
    expect((await gate.send("POST", `${REPO}/merges`, refuse("merge"))).status).toBe(403);
    expect(gate.paused()).toMatchObject({ kind: "secondary" });
    expect(paused).toHaveLength(1);
    await gate.send("GET", `${REPO}/pulls/1`, ok("read"));
    expect(performance.now() - refusedAt).toBeGreaterThanOrEqual(950);
    expect(started).toEqual(["merge", "read"]);
    expect(gate.paused()).toBeUndefined();
  });

  it("holds until the primary limit resets when GitHub says none is left", async () => {
    const gate = new RequestGate({ writeIntervalMs: 0, maxWaitMs: 500 });
    const resetSec = Math.ceil(Date.now() / 1000) + 120;
    const started: string[] = [];
    const spent = recorder(started, 0, {
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(resetSec),
    });
    expect((await gate.send("GET", `${REPO}/pulls/1`, spent("last"))).status).toBe(200);
    expect(gate.paused()).toMatchObject({ kind: "primary", until: resetSec * 1000 + 1000 });
    // Two minutes is longer than the caller waits: answered at once as GitHub would, not sent.
    const held = await gate.send("GET", `${REPO}/pulls/2`, spent("never"));
    expect(held.status).toBe(403);
    expect(held.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(held.headers.get("x-ratelimit-reset")).toBe(String(resetSec + 1));
    expect(started).toEqual(["last"]);
  });

  it("takes a 403 that is not a rate limit for what it is", async () => {
    const gate = new RequestGate({ writeIntervalMs: 0, maxWaitMs: 500 });
    const started: string[] = [];
    await gate.send("POST", `${REPO}/merges`, recorder(started, 0, {}, 403)("forbidden"));
    expect(gate.paused()).toBeUndefined();
  });
});
