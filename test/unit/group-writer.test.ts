import { describe, expect, it } from "vitest";
import { GroupWriter } from "../../src/lib/group-writer.js";

describe("GroupWriter", () => {
  it("writes the items of one turn together, in batches the policy sizes", async () => {
    const batches: number[][] = [];
    const writer = new GroupWriter<number, number>({
      write: (items) => {
        batches.push([...items]);
        return Promise.resolve(items.map((n) => n * 10));
      },
      take: (waiting) => Math.min(waiting.length, 2),
    });
    const results = await Promise.all([1, 2, 3].map((n) => writer.write(n)));
    expect(results).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2], [3]]);
    expect(await writer.write(4)).toBe(40);
    expect(batches.at(-1)).toEqual([4]);
  });

  it("fails only the bad item when asked to write each alone after a failure", async () => {
    const writer = new GroupWriter<number, void>({
      write: (items) =>
        items.includes(2)
          ? Promise.reject(new Error("bad 2"))
          : Promise.resolve(items.map(() => undefined)),
      take: (waiting) => waiting.length,
      aloneOnFailure: true,
    });
    const settled = await Promise.allSettled([1, 2, 3].map((n) => writer.write(n)));
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  });

  it("fails the whole batch otherwise", async () => {
    const writer = new GroupWriter<number, void>({
      write: () => Promise.reject(new Error("down")),
      take: (waiting) => waiting.length,
    });
    const settled = await Promise.allSettled([1, 2].map((n) => writer.write(n)));
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
  });

  it("is idle once every item handed in has been written, including those that came meanwhile", async () => {
    const written: number[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writer = new GroupWriter<number, void>({
      write: async (items) => {
        if (items.includes(1)) await held;
        written.push(...items);
        return items.map(() => undefined);
      },
      take: () => 1,
    });
    await writer.idle();
    const first = writer.write(1);
    let idle = false;
    const waited = writer.idle().then(() => {
      idle = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    // Handed in while the first write is under way: idle waits for it too.
    const second = writer.write(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idle).toBe(false);
    release();
    await waited;
    expect(written).toEqual([1, 2]);
    await Promise.all([first, second]);
  });
});
