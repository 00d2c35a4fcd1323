/**
 * Issue 13, item 6: a small gzip bundle whose one `<failure>` body is 640 MiB of text (past V8's
 * longest string) is ingested by a real server process, which keeps the body's head and tail and
 * whose peak resident memory (the kernel's VmHWM, so no sample can miss the peak) stays below
 * 300 MB. The bundle is generated on the fly and streamed through gzip into a temporary file.
 */
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { pack as tarPack, type Pack } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trunkMetaJson } from "../../src/testhealth/bundle/index.js";
import { writableAgain } from "../../src/testhealth/bundle/tar.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startServer, stopAllProcesses, waitFor, type RunningServer } from "../helpers/process.js";
import { post } from "../cli/support.js";

const MiB = 1024 * 1024;
const TEXT_BYTES = 640 * MiB;
const PEAK_LIMIT_BYTES = 300 * 1000 * 1000;
const REPO = { host: "github.com", owner: "acme", name: "app" };
const TOKEN = `mlt_${randomBytes(32).toString("base64url")}`;
/** A progress bar's line of dots: compresses about 1,000 to 1, like the report in the issue. */
const LINE = `progress: ${".".repeat(4085)}\n`;
const BEFORE =
  '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="huge">' +
  '<testcase name="floods its output" classname="Flood" time="1.5">' +
  '<failure message="expected quiet" type="AssertionError">FIRST LINE OF THE FAILURE\n';
const AFTER = "LAST LINE OF THE FAILURE</failure></testcase></testsuite></testsuites>\n";

let database: TestDatabase;
let started: RunningServer | undefined;

function runningServer(): RunningServer {
  if (!started) throw new Error("the server did not start");
  return started;
}
let work: string;

beforeAll(async () => {
  database = await createTestDatabase();
  work = mkdtempSync(path.join(tmpdir(), "mainline-huge-"));
  started = await startServer(
    { ...database.env, MAINLINE_BOOTSTRAP_ORG: "acme", MAINLINE_BOOTSTRAP_TOKEN: TOKEN },
    { logLevel: "warn", timeoutMs: 60_000 },
  );
});

afterAll(async () => {
  await started?.stop();
  await stopAllProcesses();
  await database.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** Peak resident set size of a process, in bytes (Linux: /proc/<pid>/status). */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kilobytes = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kilobytes === undefined) throw new Error("no VmHWM in /proc/<pid>/status");
  return Number(kilobytes) * 1024;
}

function entry(
  pack: Pack,
  name: string,
  size: number,
): { sink: NodeJS.WritableStream; done: Promise<void> } {
  let sink: NodeJS.WritableStream | undefined;
  const done = new Promise<void>((resolve, reject) => {
    sink = pack.entry({ name, size, mode: 0o644, mtime: new Date(0) }, (error) => {
      if (error) reject(error);
      else resolve();
    });
  });
  if (!sink) throw new Error("tar-stream gave no entry stream");
  return { sink, done };
}

/** meta.json and one JUnit report of TEXT_BYTES of failure text, tar'd and gzipped to `file`. */
async function writeHugeBundle(file: string, commitSha: string): Promise<{ lines: number }> {
  const pack = tarPack();
  const written = pipeline(pack, createGzip({ level: 9 }), createWriteStream(file));
  const meta = Buffer.from(
    JSON.stringify(
      trunkMetaJson({
        meta: {
          orgSlug: "acme",
          repo: REPO,
          commitSha,
          cliVersion: "0.7.8",
          uploadTimeEpochSeconds: Math.floor(Date.now() / 1000),
          branch: "main",
        },
        junitFiles: [{ originalPath: "reports/huge.xml", data: "" }],
      }),
    ),
  );
  const metaEntry = entry(pack, "meta.json", meta.length);
  metaEntry.sink.end(meta);
  await metaEntry.done;

  const block = Buffer.from(LINE.repeat(Math.floor(MiB / LINE.length)));
  const blocks = Math.floor(TEXT_BYTES / block.length);
  const lines = (blocks * block.length) / LINE.length;
  const before = Buffer.from(BEFORE);
  const after = Buffer.from(AFTER);
  const report = entry(pack, "junit/0", before.length + blocks * block.length + after.length);
  report.sink.write(before);
  for (let i = 0; i < blocks; i += 1) {
    if (!report.sink.write(block)) await writableAgain(report.sink as never);
  }
  report.sink.end(after);
  await report.done;
  pack.finalize();
  await written;
  return { lines };
}

describe("a bundle with a 640 MiB failure body", () => {
  it("is ingested with its head and tail, the server's peak memory under 300 MB", async () => {
    const server = runningServer();
    const file = path.join(work, "huge.tar.gz");
    const commitSha = randomBytes(20).toString("hex");
    const { lines } = await writeHugeBundle(file, commitSha);
    // Small on the wire, like the report in the issue (327 KB for 320 MiB): the server reads a
    // bundle this small in one go and inflates it in one call, up to a cap.
    expect(statSync(file).size).toBeLessThan(MiB);

    const created = await post(
      server.url,
      "metrics/createBundleUpload",
      { repo: REPO, orgUrlSlug: "acme" },
      TOKEN,
    );
    expect(created.status).toBe(200);
    const { id, url } = created.body as { id: string; url: string };
    const put = await fetch(url, { method: "PUT", body: readFileSync(file) });
    expect(put.status).toBe(200);

    let upload: Record<string, unknown> = {};
    await waitFor(
      async () => {
        const answer = await post(
          server.url,
          "flaky-tests/get-upload",
          { repo: REPO, org_url_slug: "acme", upload_id: id },
          TOKEN,
        );
        upload = (answer.body as { upload: Record<string, unknown> }).upload;
        return upload.state === "processed" || upload.state === "failed";
      },
      "the upload processed",
      { timeoutMs: 240_000, intervalMs: 250 },
    );
    expect(upload).toMatchObject({ state: "processed", tests_failed: 1 });
    const peak = peakRss(server.process.pid ?? 0);

    const rows = await database.handle.db
      .selectFrom("testRuns")
      .select(["status", "failureText"])
      .execute();
    expect(rows).toHaveLength(1);
    const text = rows[0]?.failureText ?? "";
    expect(text.length).toBeLessThanOrEqual(8_000);
    const match = /\n\[… (\d+) characters cut …\]\n/.exec(text);
    expect(match).not.toBeNull();
    const head = text.slice(0, match?.index);
    const tail = text.slice((match?.index ?? 0) + (match?.[0].length ?? 0));
    expect(head).toMatch(/^expected quiet\nFIRST LINE OF THE FAILURE\nprogress: \.{3900}/);
    expect(tail).toMatch(/\.{3900}\nLAST LINE OF THE FAILURE$/);
    const bodyLength =
      "FIRST LINE OF THE FAILURE\n".length +
      lines * LINE.length +
      "LAST LINE OF THE FAILURE".length;
    // The message and the body, joined by a newline, less what the marker stands for.
    expect(head.length + Number(match?.[1]) + tail.length).toBe(
      "expected quiet\n".length + bodyLength,
    );

    expect(peak).toBeLessThan(PEAK_LIMIT_BYTES);
  }, 300_000);
});
