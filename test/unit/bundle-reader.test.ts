import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  BundleError,
  collect,
  readBundle,
  writeArchive,
  writeBundleBuffer,
  type ArchiveEntry,
  type BundleEntry,
  type BundleSource,
  type ReadBundleOptions,
  type WriteBundleOptions,
} from "../../src/testhealth/bundle/index.js";
import { parseJunit, type ParsedTestCase } from "../../src/testhealth/junit/index.js";

const FIXTURES = new URL("../fixtures/bundles/", import.meta.url);
const SHA = "89abcdef0123456789abcdef0123456789abcdef";

const junit = (suite: string, cases: string) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="${suite}">${cases}</testsuite></testsuites>\n`;

const bundleOptions: WriteBundleOptions = {
  meta: {
    orgSlug: "acme",
    repo: { host: "github.com", owner: "acme", name: "widgets" },
    commitSha: SHA,
    cliVersion: "mainline 0.1.0",
    uploadTimeEpochSeconds: 1_718_000_000,
    repoRoot: "/ci/widgets",
    branch: "main",
    variant: "linux",
    envs: { GITLAB_CI: "true", CI_MERGE_REQUEST_IID: "12", CI_JOB_NAME: "unit" },
  },
  junitFiles: [
    {
      originalPath: "/ci/widgets/reports/a.xml",
      data: junit("A", '<testcase name="a1" classname="A"/><testcase name="a2" classname="A"/>'),
    },
    {
      originalPath: "/ci/widgets/reports/b.xml",
      data: junit("B", '<testcase name="b1" classname="B"><failure message="no"/></testcase>'),
    },
  ],
  codeowners: { originalPath: "/ci/widgets/.github/CODEOWNERS", data: "* @acme/everyone\n" },
};

/** What a reader saw, with JUnit files already parsed. */
interface Seen {
  kind: BundleEntry["kind"];
  path: string;
  entry: BundleEntry;
  cases: ParsedTestCase[];
}

async function readAll(source: BundleSource, options: ReadBundleOptions = {}): Promise<Seen[]> {
  const seen: Seen[] = [];
  for await (const entry of readBundle(source, options)) {
    const cases: ParsedTestCase[] = [];
    if (entry.kind === "junit")
      for await (const testCase of parseJunit(entry.stream)) cases.push(testCase);
    seen.push({ kind: entry.kind, path: entry.path, entry, cases });
  }
  return seen;
}

async function rejection(source: BundleSource, options: ReadBundleOptions = {}): Promise<string> {
  try {
    await readAll(source, options);
  } catch (error) {
    if (error instanceof BundleError) return error.reason;
    throw error;
  }
  throw new Error("expected a BundleError");
}

/** Small uneven chunks, so that every stage sees data split at awkward places. */
function chunked(bytes: Uint8Array, size = 97): Readable {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) chunks.push(bytes.subarray(at, at + size));
  return Readable.from(chunks);
}

async function archive(entries: ArchiveEntry[], gzip = false): Promise<Buffer> {
  return collect(writeArchive(entries, { gzip }));
}

const validMeta = JSON.stringify({
  org: "acme",
  repo: { repo: { host: "github.com", owner: "acme", name: "widgets" }, repo_head_sha: SHA },
});

describe("readBundle: round trip with writeBundle (gzip)", () => {
  it("yields meta, both JUnit files and CODEOWNERS in Trunk's order", async () => {
    const bytes = await writeBundleBuffer(bundleOptions);
    expect([...bytes.subarray(0, 2)]).toEqual([0x1f, 0x8b]);
    const seen = await readAll(chunked(bytes));
    expect(seen.map((entry) => `${entry.kind}:${entry.path}`)).toEqual([
      "meta:meta.json",
      "junit:junit/0",
      "junit:junit/1",
      "codeowners:CODEOWNERS",
    ]);
    const [meta, first, second, codeowners] = seen.map((entry) => entry.entry);
    if (meta?.kind !== "meta" || codeowners?.kind !== "codeowners") throw new Error("bad order");
    expect(meta.meta).toMatchObject({
      orgSlug: "acme",
      commitSha: SHA,
      branch: "main",
      prNumber: 12,
      jobName: "unit",
      variant: "linux",
      uploadTimeMs: 1_718_000_000_000,
      codeownersPath: "/ci/widgets/.github/CODEOWNERS",
    });
    expect(meta.meta.fileSets[0]?.files).toEqual([
      {
        bundlePath: "junit/0",
        originalPath: "/ci/widgets/reports/a.xml",
        originalPathRelative: "reports/a.xml",
        owners: [],
      },
      {
        bundlePath: "junit/1",
        originalPath: "/ci/widgets/reports/b.xml",
        originalPathRelative: "reports/b.xml",
        owners: [],
      },
    ]);
    expect(codeowners.text).toBe("* @acme/everyone\n");
    expect(first?.kind === "junit" && first.size).toBeGreaterThan(0);
    expect(second?.kind).toBe("junit");
    const names = seen.flatMap((entry) => entry.cases.map((testCase) => testCase.name));
    expect(names).toEqual(["a1", "a2", "b1"]);
    const b1 = seen[2]?.cases[0];
    expect(b1?.attempts.at(-1)?.status).toBe("failed");
  });

  it("reads files from disk too", async () => {
    const directory = await mkdtemp(join(tmpdir(), "bundle-test-"));
    const path = join(directory, "report.xml");
    const xml = junit("Disk", '<testcase name="d"/>'.repeat(10_000));
    await writeFile(path, xml);
    const bytes = await writeBundleBuffer({
      ...bundleOptions,
      junitFiles: [{ originalPath: "/ci/x.xml", diskPath: path }],
    });
    const seen = await readAll(Readable.from([bytes]));
    await rm(directory, { recursive: true });
    const [, file] = seen.map((entry) => entry.entry);
    if (file?.kind !== "junit") throw new Error("no junit entry");
    expect(file.size).toBe(Buffer.byteLength(xml));
    expect(seen[1]?.cases).toHaveLength(10_000);
  });

  it("is deterministic for equal inputs", async () => {
    const [one, two] = await Promise.all([
      writeBundleBuffer(bundleOptions),
      writeBundleBuffer(bundleOptions),
    ]);
    expect(one.equals(two)).toBe(true);
  });
});

describe("readBundle: plain tar and zstd", () => {
  it("reads an uncompressed tar, in any entry order, and skips unknown entries", async () => {
    const bytes = await archive([
      { name: "./junit/0", content: { data: junit("S", '<testcase name="t"/>') } },
      { name: "internal.bin", content: { data: new Uint8Array([1, 2, 3]) } },
      { name: "bazel_bep.json", content: { data: "{}" } },
      { name: "reports/extra.xml", content: { data: junit("X", '<testcase name="x"/>') } },
      { name: "./meta.json", content: { data: validMeta } },
    ]);
    const seen = await readAll(chunked(bytes, 300));
    expect(seen.map((entry) => `${entry.kind}:${entry.path}`)).toEqual([
      "junit:junit/0",
      "report:internal.bin",
      "junit:reports/extra.xml",
      "meta:meta.json",
    ]);
    expect(seen.flatMap((entry) => entry.cases.map((testCase) => testCase.name))).toEqual([
      "t",
      "x",
    ]);
  });

  it("reads Trunk's zstd bundle (fixture made with the zstd CLI)", async () => {
    const bytes = await readFile(new URL("trunk-0.7.8.tar.zst", FIXTURES));
    const seen = await readAll(chunked(bytes, 50));
    expect(seen.map((entry) => `${entry.kind}:${entry.path}`)).toEqual([
      "meta:meta.json",
      "report:internal.bin",
      "junit:junit/0",
    ]);
    const meta = seen[0]?.entry;
    if (meta?.kind !== "meta") throw new Error("no meta");
    expect(meta.meta).toMatchObject({ prNumber: 77, variant: "linux-x64", cliVersion: "0.7.8" });
    expect(seen[2]?.cases.map((testCase) => testCase.name)).toEqual(["spins", "stops"]);
  });

  it("streams a multi-block zstd bundle", async () => {
    const bytes = await readFile(new URL("trunk-3000-cases.tar.zst", FIXTURES));
    const seen = await readAll(chunked(bytes, 1000));
    expect(seen[1]?.cases).toHaveLength(3000);
    expect(seen[1]?.cases[2999]?.name).toBe("case 2999");
  });

  it("drains a junit stream the consumer left unread", async () => {
    const bytes = await archive([
      { name: "meta.json", content: { data: validMeta } },
      { name: "junit/0", content: { data: junit("S", '<testcase name="t"/>'.repeat(2000)) } },
      { name: "CODEOWNERS", content: { data: "* @a\n" } },
    ]);
    const kinds: string[] = [];
    let skipped: AsyncIterable<Uint8Array> | null = null;
    for await (const entry of readBundle(Readable.from([bytes]))) {
      kinds.push(entry.kind);
      if (entry.kind === "junit") skipped = entry.stream;
    }
    expect(kinds).toEqual(["meta", "junit", "codeowners"]);
    if (skipped === null) throw new Error("no junit entry");
    await expect(collect(skipped)).rejects.toThrow(/after the reader moved on/);
  });

  it("stops cleanly when the consumer leaves early", async () => {
    const bytes = await readFile(new URL("trunk-3000-cases.tar.zst", FIXTURES));
    for await (const entry of readBundle(chunked(bytes, 100))) {
      expect(entry.kind).toBe("meta");
      break;
    }
  });
});

describe("readBundle: gzip of every size", () => {
  // Small bundles are inflated in one call, others streamed: both must give the same bytes.
  const cases = (suite: string, count: number) =>
    junit(suite, Array.from({ length: count }, (_, i) => `<testcase name="t${i}"/>`).join(""));

  it("streams a bundle whose compressed bytes pass the one-call size (1 MiB)", async () => {
    // Incompressible system-out keeps the gzip above 1 MiB.
    const noise = randomBytes(1_200_000).toString("base64");
    const xml = junit("Big", `<testcase name="noisy"><system-out>${noise}</system-out></testcase>`);
    const bytes = await archive(
      [
        { name: "meta.json", content: { data: validMeta } },
        { name: "junit/0", content: { data: xml } },
        { name: "junit/1", content: { data: cases("After", 300) } },
      ],
      true,
    );
    expect(bytes.length).toBeGreaterThan(1024 * 1024);
    const seen = await readAll(chunked(bytes, 64 * 1024));
    expect(seen.map((s) => s.cases.length)).toEqual([0, 1, 300]);
  });

  it("streams a small bundle that inflates beyond what one call may produce", async () => {
    const padding = Buffer.alloc(70 * 1024 * 1024, 0x20).toString("latin1");
    const bytes = await archive(
      [
        { name: "meta.json", content: { data: validMeta } },
        { name: "junit/0", content: { data: junit("Padded", `${padding}<testcase name="p"/>`) } },
      ],
      true,
    );
    expect(bytes.length).toBeLessThan(1024 * 1024);
    const seen = await readAll(Readable.from([bytes]));
    expect(seen.map((s) => s.cases.map((c) => c.name))).toEqual([[], ["p"]]);
    // The cap still applies on that path.
    const reason = await rejection(Readable.from([bytes]), {
      maxDecompressedBytes: 65 * 1024 * 1024,
    });
    expect(reason).toBe("the bundle is larger than 68157440 bytes once decompressed");
  });
});

describe("readBundle: bad bundles", () => {
  it("rejects an empty body", async () => {
    expect(await rejection(Readable.from([]))).toBe("the bundle is empty");
  });

  it("rejects bytes that are no archive", async () => {
    const noise = Buffer.from("this is certainly not a bundle; ".repeat(40));
    expect(await rejection(chunked(noise))).toBe("not a tar archive");
  });

  it("rejects gzip data that holds no tar", async () => {
    expect(await rejection(Readable.from([gzipSync("hello")]))).toBe("not a tar archive");
  });

  it("rejects truncated gzip", async () => {
    const bytes = await writeBundleBuffer(bundleOptions);
    const reason = await rejection(chunked(bytes.subarray(0, Math.floor(bytes.length / 2))));
    expect(reason).toMatch(/^bad gzip data: /);
  });

  it("rejects corrupt gzip", async () => {
    const bytes = Buffer.from(await writeBundleBuffer(bundleOptions));
    bytes.fill(0x55, 20, 60);
    expect(await rejection(Readable.from([bytes]))).toMatch(/^bad gzip data: /);
  });

  it("rejects truncated zstd", async () => {
    const bytes = await readFile(new URL("trunk-0.7.8.tar.zst", FIXTURES));
    for (const length of [10, 200, bytes.length - 3]) {
      expect(await rejection(chunked(bytes.subarray(0, length)))).toMatch(/^bad zstd data: /);
    }
  });

  it("rejects a truncated tar", async () => {
    const bytes = await archive([
      { name: "meta.json", content: { data: validMeta } },
      { name: "junit/0", content: { data: junit("S", '<testcase name="t"/>'.repeat(50)) } },
    ]);
    expect(await rejection(Readable.from([bytes.subarray(0, 1200)]))).toBe(
      "the tar archive is truncated",
    );
  });

  it("rejects a tar without meta.json", async () => {
    const bytes = await archive([
      { name: "junit/0", content: { data: junit("S", '<testcase name="t"/>') } },
    ]);
    expect(await rejection(Readable.from([bytes]))).toBe("meta.json missing");
  });

  it("rejects meta.json that is not JSON", async () => {
    const bytes = await archive([{ name: "meta.json", content: { data: "{ not json" } }], true);
    expect(await rejection(Readable.from([bytes]))).toMatch(/^meta\.json is not valid JSON/);
  });

  it("rejects meta.json without a commit", async () => {
    const meta = JSON.stringify({ repo: { repo: { host: "h", owner: "o", name: "n" } } });
    const bytes = await archive([{ name: "meta.json", content: { data: meta } }]);
    expect(await rejection(Readable.from([bytes]))).toMatch(/no commit SHA/);
  });

  it("rejects two meta.json entries", async () => {
    const bytes = await archive([
      { name: "meta.json", content: { data: validMeta } },
      { name: "meta.json", content: { data: validMeta } },
    ]);
    expect(await rejection(Readable.from([bytes]))).toBe("the bundle holds meta.json twice");
  });

  it("stops a gzip bomb at the decompressed size cap", async () => {
    const bomb = await archive(
      [
        { name: "meta.json", content: { data: validMeta } },
        { name: "junit/0", content: { data: Buffer.alloc(4 * 1024 * 1024, 0x20) } },
      ],
      true,
    );
    expect(bomb.length).toBeLessThan(64 * 1024);
    const reason = await rejection(Readable.from([bomb]), { maxDecompressedBytes: 1024 * 1024 });
    expect(reason).toBe("the bundle is larger than 1048576 bytes once decompressed");
  });

  it("stops a zstd bundle at the decompressed size cap", async () => {
    const bytes = await readFile(new URL("trunk-3000-cases.tar.zst", FIXTURES));
    const reason = await rejection(Readable.from([bytes]), { maxDecompressedBytes: 50_000 });
    expect(reason).toBe("the bundle is larger than 50000 bytes once decompressed");
  });

  it("caps the number of entries", async () => {
    const entries: ArchiveEntry[] = [{ name: "meta.json", content: { data: validMeta } }];
    for (let index = 0; index < 5; index += 1) {
      entries.push({ name: `other/${index}`, content: { data: "x" } });
    }
    const bytes = await archive(entries);
    expect(await rejection(Readable.from([bytes]), { maxEntries: 3 })).toBe(
      "the bundle has more than 3 entries",
    );
  });

  it("caps a binary test report, which is held in memory too", async () => {
    const report = await archive([
      { name: "meta.json", content: { data: validMeta } },
      { name: "internal/0", content: { data: new Uint8Array(200) } },
    ]);
    expect(await rejection(Readable.from([report]), { maxReportBytes: 100 })).toBe(
      "internal/0 is larger than 100 bytes",
    );
    const seen = await readAll(Readable.from([report]), { maxReportBytes: 200 });
    const entry = seen.find((e) => e.kind === "report")?.entry;
    expect(entry?.kind === "report" ? entry.bytes.length : -1).toBe(200);
  });

  it("caps meta.json and CODEOWNERS, which are held in memory", async () => {
    const big = await archive([{ name: "meta.json", content: { data: validMeta } }]);
    expect(await rejection(Readable.from([big]), { maxMetaBytes: 10 })).toBe(
      "meta.json is larger than 10 bytes",
    );
    const owners = await archive([
      { name: "meta.json", content: { data: validMeta } },
      { name: "CODEOWNERS", content: { data: "* @a\n".repeat(100) } },
    ]);
    expect(await rejection(Readable.from([owners]), { maxCodeownersBytes: 100 })).toBe(
      "CODEOWNERS is larger than 100 bytes",
    );
  });

  it("passes a failure of the source itself through unchanged", async () => {
    const bytes = await writeBundleBuffer(bundleOptions);
    const failure = new Error("client went away");
    async function* aborted(): AsyncGenerator<Uint8Array> {
      yield bytes.subarray(0, 100);
      await new Promise((resolve) => setImmediate(resolve));
      throw failure;
    }
    await expect(readAll(aborted())).rejects.toBe(failure);
  });

  it("reports a defect found while a JUnit stream is being read as a BundleError", async () => {
    const bytes = await archive(
      [
        { name: "meta.json", content: { data: validMeta } },
        { name: "junit/0", content: { data: junit("S", '<testcase name="t"/>'.repeat(5000)) } },
      ],
      true,
    );
    const truncated = bytes.subarray(0, Math.floor(bytes.length * 0.6));
    const error = await readAll(chunked(truncated, 512)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(BundleError);
    expect((error as BundleError).reason).toMatch(/^bad gzip data: /);
  });
});
