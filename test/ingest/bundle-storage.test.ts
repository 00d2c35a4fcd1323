import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { BundleStorage, BundleTooLargeError } from "../../src/testhealth/ingest/bundle-storage.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Storage in a fresh directory; `suffix` fixes the random part of its names. */
function storage(suffix?: () => string): { bundles: BundleStorage; root: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mainline-bundles-"));
  dirs.push(dir);
  return { bundles: new BundleStorage(dir, suffix), root: path.join(dir, "uploads") };
}

/** A body that arrives in chunks of `chunk` bytes. */
function body(data: Buffer, chunk = 64 * 1024): Readable {
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += chunk) parts.push(data.subarray(at, at + chunk));
  return Readable.from(parts);
}

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await delay(10);
  expect(condition()).toBe(true);
}

function bytes(length: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length }, (_, i) => (i * 31 + seed) % 251));
}

describe("BundleStorage", () => {
  it("stores many small bundles at once, each complete, and leaves no partial file", async () => {
    const { bundles, root } = storage();
    const data = Array.from({ length: 30 }, (_, i) => bytes(1000 + i * 97, i));
    const stored = await Promise.all(
      data.map((d, i) => bundles.store(`u${String(i)}`, body(d, 256), 1 << 20)),
    );
    stored.forEach((s, i) => {
      expect(s.bytes).toBe(data[i]?.length);
      expect(readFileSync(bundles.resolve(s.path)).equals(data[i] as Buffer)).toBe(true);
    });
    expect(readdirSync(root).filter((f) => f.endsWith(".part"))).toEqual([]);
  });

  it("streams a bundle larger than what it keeps in memory", async () => {
    const { bundles } = storage();
    const data = bytes(3 * 1024 * 1024 + 123, 7);
    const stored = await bundles.store("big", body(data), 10 << 20);
    expect(stored.bytes).toBe(data.length);
    expect(readFileSync(bundles.resolve(stored.path)).equals(data)).toBe(true);
  });

  it("creates its directory again when it was removed", async () => {
    const { bundles, root } = storage();
    await bundles.store("a", body(bytes(10, 1)), 1 << 20);
    await bundles.store("b", body(bytes(2 << 20, 2)), 10 << 20);
    rmSync(root, { recursive: true });
    const small = await bundles.store("c", body(bytes(10, 3)), 1 << 20);
    expect(readFileSync(bundles.resolve(small.path)).equals(bytes(10, 3))).toBe(true);
    rmSync(root, { recursive: true });
    const large = await bundles.store("d", body(bytes(2 << 20, 4)), 10 << 20);
    expect(readFileSync(bundles.resolve(large.path)).equals(bytes(2 << 20, 4))).toBe(true);
  });

  it("refuses a bundle over the limit and keeps nothing of it", async () => {
    const { bundles, root } = storage();
    const first = await bundles.store("first", body(bytes(10, 0)), 1 << 20);
    for (const size of [5000, 3 << 20]) {
      await expect(bundles.store("x", body(bytes(size, 1)), size - 1)).rejects.toBeInstanceOf(
        BundleTooLargeError,
      );
    }
    expect(readdirSync(root)).toEqual([first.path]);
  });

  it("reports a failed write with its error code", async () => {
    const { bundles, root } = storage(() => "s");
    await bundles.store("first", body(bytes(10, 0)), 1 << 20);
    // The bundle's temporary name is taken by a directory: the writer's open fails.
    const blocker = path.join(root, `second.s.bundle.${String(process.pid)}.part`);
    mkdirSync(blocker);
    await expect(bundles.store("second", body(bytes(10, 0)), 1 << 20)).rejects.toMatchObject({
      code: "EISDIR",
    });
  });

  it("fails only the bundle whose write failed among bundles stored together", async () => {
    const { bundles, root } = storage(() => "s");
    await bundles.store("first", body(bytes(10, 0)), 1 << 20);
    mkdirSync(path.join(root, `b3.s.bundle.${String(process.pid)}.part`));
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        bundles.store(`b${String(i)}`, body(bytes(500 + i, i)), 1 << 20),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([
      ...Array<string>(3).fill("fulfilled"),
      "rejected",
      ...Array<string>(4).fill("fulfilled"),
    ]);
    results.forEach((r, i) => {
      if (r.status === "fulfilled") {
        expect(readFileSync(bundles.resolve(r.value.path)).equals(bytes(500 + i, i))).toBe(true);
      }
    });
    const left = readdirSync(root).filter((f) => f.endsWith(".part"));
    expect(left).toEqual([`b3.s.bundle.${String(process.pid)}.part`]);
  });

  it("never stores two bundles of one upload under one name", async () => {
    const { bundles } = storage();
    const first = await bundles.store("u", body(bytes(10, 1)), 1 << 20);
    const second = await bundles.store("u", body(bytes(3 << 20, 2)), 10 << 20);
    const third = await bundles.store("u", body(bytes(20, 3)), 1 << 20);
    expect(new Set([first.path, second.path, third.path]).size).toBe(3);
    expect(readFileSync(bundles.resolve(first.path)).equals(bytes(10, 1))).toBe(true);
    expect(readFileSync(bundles.resolve(second.path)).equals(bytes(3 << 20, 2))).toBe(true);
  });

  it("stops when told to, small or streamed, and keeps nothing of what it was storing", async () => {
    const { bundles, root } = storage();
    for (const size of [100, 3 << 20]) {
      const stop = new AbortController();
      const chunks = [bytes(size, 1), bytes(size, 2)];
      // The second chunk arrives after the stop; a streamed bundle's file exists by then.
      const slow = Readable.from(
        (async function* () {
          yield chunks[0] as Buffer;
          if (size > 1 << 20) {
            await waitFor(() => existsSync(root) && readdirSync(root).length > 0);
          }
          stop.abort();
          yield chunks[1] as Buffer;
        })(),
      );
      await expect(bundles.store("u", slow, 100 << 20, stop.signal)).rejects.toMatchObject({
        name: "AbortError",
      });
    }
    expect(readdirSync(root)).toEqual([]);
  });

  it("refuses an upload id that is not a plain name", async () => {
    const { bundles } = storage();
    for (const id of ["../escape", "a/b", ""]) {
      await expect(bundles.store(id, body(bytes(10, 1)), 1 << 20)).rejects.toThrow(/upload id/);
    }
  });
});
