import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  BackgroundLoop,
  keepLease,
  type BackgroundLoopOptions,
} from "../../src/lib/background-loop.js";

/** Lets every promise that can settle do so (setImmediate is not faked). */
const settle = () =>
  new Promise<void>((resolve) => {
    setImmediate(resolve);
  });

/**
 * A loop whose passes each wait until the test ends them (`end()` ends the one running),
 * recording how many started and how many ran at once at most.
 */
function harness(options: Partial<BackgroundLoopOptions> = {}) {
  const seen = { passes: 0, active: 0, mostAtOnce: 0, errors: [] as unknown[] };
  let ending: ((failure?: Error) => void) | null = null;
  const loop = new BackgroundLoop({
    intervalMs: 1_000,
    pass: async () => {
      seen.passes += 1;
      seen.active += 1;
      seen.mostAtOnce = Math.max(seen.mostAtOnce, seen.active);
      try {
        await new Promise<void>((resolve, reject) => {
          ending = (failure) => {
            if (failure) reject(failure);
            else resolve();
          };
        });
      } finally {
        seen.active -= 1;
        ending = null;
      }
    },
    onError: (error) => seen.errors.push(error),
    ...options,
  });
  const end = async (failure?: Error) => {
    expect(ending, "a pass is running").not.toBeNull();
    ending?.(failure);
    await settle();
  };
  // The test's end: the pass left running ends, so that `stop` returns.
  passesLeft.push(() => ending?.());
  return { loop, seen, end };
}

let loops: BackgroundLoop[] = [];
let passesLeft: (() => void)[] = [];

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
  loops = [];
  passesLeft = [];
});

afterEach(async () => {
  vi.useRealTimers();
  const stopped = Promise.all(loops.map((loop) => loop.stop()));
  for (const end of passesLeft) end();
  await stopped;
});

function started(options: Partial<BackgroundLoopOptions> = {}) {
  const made = harness(options);
  loops.push(made.loop);
  made.loop.start();
  return made;
}

describe("BackgroundLoop", () => {
  it("runs a pass at start, and the next an interval after the last one ended", async () => {
    const { seen, end } = started();
    expect(seen.passes).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(seen.passes).toBe(1); // no timer while a pass runs
    await end();
    await vi.advanceTimersByTimeAsync(999);
    expect(seen.passes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen.passes).toBe(2);
  });

  it("can run its first pass an interval after start instead", async () => {
    const { seen } = started({ firstPassAfterInterval: true });
    expect(seen.passes).toBe(0);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(seen.passes).toBe(1);
  });

  it("a wake while asleep runs a pass at once; wakes during a pass run one more pass after it", async () => {
    const { loop, seen, end } = started();
    await end();
    loop.wake();
    await settle();
    expect(seen.passes).toBe(2);
    loop.wake();
    loop.wake();
    loop.wake();
    await end();
    expect(seen.passes).toBe(3);
    await end();
    await settle();
    expect(seen.passes).toBe(3);
    expect(seen.mostAtOnce).toBe(1);
  });

  it("never runs two passes at once, whoever asks for them", async () => {
    const { loop, seen, end } = started();
    const asked = [loop.runNow(), loop.runNow()];
    loop.wake();
    loop.start();
    let answered = 0;
    for (const one of asked) void one.then(() => (answered += 1));
    await end();
    // Asked for during the first pass: answered by the one after it.
    expect(answered).toBe(0);
    expect(seen.passes).toBe(2);
    await end();
    expect(answered).toBe(2);
    expect(seen.mostAtOnce).toBe(1);
  });

  it("stop waits for the pass in progress, and no pass starts after it", async () => {
    const { loop, seen, end } = started();
    loop.wake();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    await end();
    await stopping;
    expect(seen.passes).toBe(1); // the wake before the stop runs nothing
    loop.wake();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(seen.passes).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("reports a failed pass and backs off, doubling up to a bound; a success ends the backoff", async () => {
    let failing = true;
    const errors: unknown[] = [];
    let passes = 0;
    const loop = new BackgroundLoop({
      intervalMs: 100,
      maxBackoffMs: 500,
      pass: () => {
        passes += 1;
        return failing ? Promise.reject(new Error("database unavailable")) : Promise.resolve();
      },
      onError: (error) => errors.push(error),
    });
    loops.push(loop);
    loop.start();
    await settle();
    expect(passes).toBe(1);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe("database unavailable");
    // 200, 400, then 500 (the bound) instead of 800.
    for (const wait of [200, 400, 500, 500]) {
      const before = passes;
      await vi.advanceTimersByTimeAsync(wait - 1);
      expect(passes).toBe(before);
      await vi.advanceTimersByTimeAsync(1);
      expect(passes).toBe(before + 1);
    }
    expect(errors).toHaveLength(5);
    failing = false;
    await vi.advanceTimersByTimeAsync(500);
    expect(passes).toBe(6);
    expect(errors).toHaveLength(5);
    await vi.advanceTimersByTimeAsync(100);
    expect(passes).toBe(7);
  });

  it("a wake cuts a backoff short (new work came)", async () => {
    const { loop, seen, end } = started({ intervalMs: 100 });
    await end(new Error("down"));
    expect(seen.errors).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(199);
    expect(seen.passes).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen.passes).toBe(2);
    await end(new Error("down"));
    // Now 400 ms away; a wake runs the pass at once.
    loop.wake();
    await settle();
    expect(seen.passes).toBe(3);
    expect(seen.errors).toHaveLength(2);
  });

  it("runNow answers after a pass that started after the call, also when the loop is not started", async () => {
    const { loop, seen, end } = harness();
    let done = false;
    const asked = loop.runNow().then(() => (done = true));
    expect(seen.passes).toBe(1);
    await settle();
    expect(done).toBe(false);
    await end();
    await asked;
    expect(vi.getTimerCount()).toBe(0); // not started: nothing more planned
    await vi.advanceTimersByTimeAsync(5_000);
    expect(seen.passes).toBe(1);
  });

  it("a started loop has planned its next pass by the time a runNow caller resumes", async () => {
    const { loop, seen, end } = started({ firstPassAfterInterval: true });
    const asked = loop.runNow();
    await settle();
    expect(seen.passes).toBe(1);
    expect(vi.getTimerCount()).toBe(0); // no wait planned while a pass runs
    await end();
    await asked;
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(seen.passes).toBe(2);
  });

  it("idle waits for a pass that ends with nothing in hand and no wake since it started", async () => {
    let quiet = false;
    const { loop, end } = started({ isIdle: () => quiet });
    let idle = false;
    void loop.idle().then(() => (idle = true));
    await end();
    expect(idle).toBe(false); // something still in hand
    quiet = true;
    loop.wake();
    await settle();
    loop.wake(); // during the pass: not idle yet
    await end();
    expect(idle).toBe(false);
    await end();
    expect(idle).toBe(true);
    // Nothing running or asked for: at once.
    await loop.idle();
  });

  it("stop waits for what the passes left running (drain), then answers idle", async () => {
    let release!: () => void;
    const leftRunning = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { loop, end } = started({ drain: () => leftRunning, isIdle: () => false });
    const idle = loop.idle();
    await end();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    release();
    await stopping;
    await idle;
  });
});

describe("keepLease", () => {
  it("renews every third of the lease until released, through failed renewals", async () => {
    let renewals = 0;
    const release = keepLease(300, () => {
      renewals += 1;
      return renewals === 2 ? Promise.reject(new Error("lost connection")) : Promise.resolve();
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(renewals).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(renewals).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(renewals).toBe(3);
    release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(renewals).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
  });
});
