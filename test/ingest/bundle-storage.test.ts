import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { BundleStorage, BundleTooLargeError } from "../../src/testhealth/ingest/bundle-storage.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function storage(): { bundles: BundleStorage; root: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "mainline-bundles-"));
  dirs.push(dir);
  return { bundles: new BundleStorage(dir), root: path.join(dir, "uploads") };
}

/** A body that arrives in chunks of `chunk` bytes. */
function body(data: Buffer, chunk = 64 * 1024): Readable {
  const parts: Buffer[] = [];
  for (let at = 0; at < data.length; at += chunk) parts.push(data.subarray(at, at + chunk));
  return Readable.from(parts);
}

function bytes(length: number, seed: number): Buffer {
  return Buffer.from(Array.from({ length }, (_, i) => (i * 31 + seed) % 251));
}

describe("BundleStorage", () => {
  it("stores many small bundles at once, each complete, and leaves no partial file", async () => {
    const { bundles, root } = storage();
    const data = Array.from({ length: 30 }, (_, i) => bytes(1000 + i * 97, i));
    const stored = await Promise.all(
      data.map((d, i) => bundles.store("org", `u${String(i)}`, body(d, 256), 1 << 20)),
    );
    stored.forEach((s, i) => {
      expect(s.bytes).toBe(data[i]?.length);
      expect(readFileSync(bundles.resolve(s.path)).equals(data[i] as Buffer)).toBe(true);
    });
    expect(readdirSync(path.join(root, "org")).filter((f) => f.endsWith(".part"))).toEqual([]);
  });

  it("streams a bundle larger than what it keeps in memory", async () => {
    const { bundles } = storage();
    const data = bytes(3 * 1024 * 1024 + 123, 7);
    const stored = await bundles.store("org", "big", body(data), 10 << 20);
    expect(stored.bytes).toBe(data.length);
    expect(readFileSync(bundles.resolve(stored.path)).equals(data)).toBe(true);
  });

  it("creates the organization's directory again when it was removed", async () => {
    const { bundles, root } = storage();
    await bundles.store("org", "a", body(bytes(10, 1)), 1 << 20);
    await bundles.store("org", "b", body(bytes(2 << 20, 2)), 10 << 20);
    rmSync(path.join(root, "org"), { recursive: true });
    const small = await bundles.store("org", "c", body(bytes(10, 3)), 1 << 20);
    expect(readFileSync(bundles.resolve(small.path)).equals(bytes(10, 3))).toBe(true);
    rmSync(path.join(root, "org"), { recursive: true });
    const large = await bundles.store("org", "d", body(bytes(2 << 20, 4)), 10 << 20);
    expect(readFileSync(bundles.resolve(large.path)).equals(bytes(2 << 20, 4))).toBe(true);
  });

  it("refuses a bundle over the limit and keeps nothing of it", async () => {
    const { bundles, root } = storage();
    await bundles.store("org", "first", body(bytes(10, 0)), 1 << 20);
    for (const size of [5000, 3 << 20]) {
      await expect(
        bundles.store("org", "x", body(bytes(size, 1)), size - 1),
      ).rejects.toBeInstanceOf(BundleTooLargeError);
    }
    expect(readdirSync(path.join(root, "org"))).toEqual(["first.bundle"]);
  });

  it("reports a failed write with its error code", async () => {
    const { bundles, root } = storage();
    await bundles.store("org", "first", body(bytes(10, 0)), 1 << 20);
    // The bundle's temporary name is taken by a directory: the writer's open fails.
    const blocker = path.join(root, "org", `second.bundle.${String(process.pid)}.part`);
    mkdirSync(blocker);
    await expect(bundles.store("org", "second", body(bytes(10, 0)), 1 << 20)).rejects.toMatchObject(
      { code: "EISDIR" },
    );
  });

  it("fails only the bundle whose write failed among bundles stored together", async () => {
    const { bundles, root } = storage();
    await bundles.store("org", "first", body(bytes(10, 0)), 1 << 20);
    mkdirSync(path.join(root, "org", `b3.bundle.${String(process.pid)}.part`));
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        bundles.store("org", `b${String(i)}`, body(bytes(500 + i, i)), 1 << 20),
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
    const left = readdirSync(path.join(root, "org")).filter((f) => f.endsWith(".part"));
    expect(left).toEqual([`b3.bundle.${String(process.pid)}.part`]);
  });
});
