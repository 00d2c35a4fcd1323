/**
 * Ingestion benchmark (docs/benchmarks.md, "Ingestion"): test runs per second from the HTTP
 * upload to stored runs, aggregates and statuses, on SQLite and on PostgreSQL, next to the JUnit
 * parser alone on the same data; and the peak memory of the server while it ingests one very
 * large JUnit file.
 *
 * The workload is `generateWorkload` (background §test-health-1.14): thousands of tests, Bernoulli
 * flakes, broken tests, re-runs of failed jobs on the same commit, main, PR and merge-queue
 * branches. Every upload's JUnit report and bundle is built before any timing. Then, per
 * database, a fresh `mainline serve` child: a few concurrent clients upload every bundle
 * (createBundleUpload, then PUT), and the benchmark waits until every upload is processed. The
 * time runs from the first createBundleUpload until the last upload is seen processed.
 *
 * Usage: npm run bench:ingest
 *   BENCH_TESTS (2000)          tests in the generated repository
 *   BENCH_UPLOADS (500)         uploads (each holds one run of every test: 500 × 2000 = 1M runs)
 *   BENCH_CLIENTS (4)           concurrent uploading clients
 *   BENCH_DATABASES             "sqlite,postgresql" (default), one of them, or "none"
 *   BENCH_BIG (1)               0 skips the large-file part
 *   BENCH_BIG_MB (300)          size of the large JUnit file, MiB
 *   BENCH_BIG_DATABASES         where the large file is ingested (default "sqlite")
 *   BENCH_TIMEOUT_SECONDS (200) how long each end-to-end ingestion may take: then the runs
 *                               processed so far give the figure, marked "timed out" (a missed
 *                               target, not an error)
 *   BENCH_BIG_TIMEOUT_SECONDS (400) the same for the large file
 *   BENCH_SERVER_LOG_LEVEL      the server's LOG_LEVEL (default warn; "info" logs each upload's ms)
 *   BENCH_SERVER_LOG_DIR        keep each server's whole output in <dir>/<part>.log
 *   BENCH_SERVER_NODE_ARGS      options of the server's node, space-separated (e.g. "--cpu-prof
 *                               --cpu-prof-dir=/tmp/prof": a profile per server, written at exit)
 *   BENCH_SERVER_ENTRY          a built cli/main.js (e.g. dist/cli/main.js) to run instead of the
 *                               sources through tsx, whose loader adds ~40 MiB to the server's RSS
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { setTimeout as delay } from "node:timers/promises";
import { writeBundle } from "../src/testhealth/bundle/index.js";
import { parseJunit } from "../src/testhealth/junit/index.js";
import { DEFAULT_WORKLOAD, generateWorkload, renderJunit } from "../src/testhealth/workload.js";
import {
  ROOT,
  processStats,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
  type ProcessStats,
  type RunningServer,
} from "./support/server.js";
import { integerFromEnv } from "./support/env.js";
import { formatTable } from "./support/table.js";
import { workloadBundle } from "./support/workload-bundle.js";
import { seededRandom } from "../src/lib/seeded-random.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "ingest.json");

type DatabaseName = "sqlite" | "postgresql";
const DATABASE_NAMES: readonly DatabaseName[] = ["sqlite", "postgresql"];

const SEED = 20_261_125;
const TESTS = integerFromEnv("BENCH_TESTS", 2000, 10, 200_000);
const UPLOADS = integerFromEnv("BENCH_UPLOADS", 500, 1, 100_000);
const CLIENTS = integerFromEnv("BENCH_CLIENTS", 4, 1, 64);
const DATABASES = databasesFromEnv("BENCH_DATABASES", DATABASE_NAMES);
const BIG = (process.env.BENCH_BIG ?? "1").trim() !== "0";
const BIG_MB = integerFromEnv("BENCH_BIG_MB", 300, 1, 4096);
const BIG_DATABASES = databasesFromEnv("BENCH_BIG_DATABASES", ["sqlite"]);
const TIMEOUT_MS = integerFromEnv("BENCH_TIMEOUT_SECONDS", 200, 10, 3600) * 1000;
const BIG_TIMEOUT_MS = integerFromEnv("BENCH_BIG_TIMEOUT_SECONDS", 400, 10, 3600) * 1000;
const SERVER_LOG_LEVEL = process.env.BENCH_SERVER_LOG_LEVEL?.trim() || "warn";
const SERVER_LOG_DIR = process.env.BENCH_SERVER_LOG_DIR?.trim() || undefined;
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);
const SERVER_ENTRY = process.env.BENCH_SERVER_ENTRY?.trim() || undefined;

const MIB = 1024 * 1024;
const TARGETS = {
  runsPerSecond: { sqlite: 50_000, postgresql: 25_000 } satisfies Record<DatabaseName, number>,
  bigFilePeakRssBytes: 300 * MIB,
};

const ORG = "bench";
const REPO = { host: "github.com", owner: "bench", name: "app" };
/** How often to ask for the state of the upload the benchmark waits for. */
const POLL_MS = 200;
const PROGRESS_EVERY_MS = 15_000;

function databasesFromEnv(name: string, fallback: readonly DatabaseName[]): DatabaseName[] {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") return [...fallback];
  if (value.trim().toLowerCase() === "none") return [];
  const names = value.split(",").map((part) => part.trim().toLowerCase());
  const known = names.filter((part): part is DatabaseName =>
    (DATABASE_NAMES as readonly string[]).includes(part),
  );
  if (known.length !== names.length || known.length === 0) {
    throw new Error(`${name} takes "sqlite", "postgresql", both (comma-separated) or "none".`);
  }
  return known;
}

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

const seconds = (ms: number): number => Math.round(ms) / 1000;
const perSecond = (count: number, ms: number): number =>
  ms > 0 ? Math.round((count * 1000) / ms) : 0;
function mib(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "?";
  const value = bytes / MIB;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} MiB`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// The workload

interface PreparedUpload {
  /** Test runs the server stores for it: one per testcase (the reports hold no retries). */
  runs: number;
  junit: Buffer;
  bundle: Buffer;
}

interface WorkloadSummary {
  seed: number;
  tests: number;
  flakyTests: number;
  brokenTests: number;
  ciRuns: number;
  uploads: number;
  reruns: number;
  outages: number;
  branches: number;
  pullRequests: number;
  byKind: { main: number; pullRequest: number; mergeQueue: number };
  runs: number;
  failedRuns: number;
  firstUploadAt: string;
  lastUploadAt: string;
  junitBytes: number;
  bundleBytes: number;
  prepareSeconds: number;
}

/**
 * How many simulated CI runs make `uploads` uploads: failed jobs are re-run, so most CI runs
 * upload more than once. A first pass of the (cheap, deterministic) generator counts them.
 */
function ciRunsFor(uploads: number): number {
  const probe = generateWorkload({
    ...DEFAULT_WORKLOAD,
    seed: SEED,
    tests: TESTS,
    runs: uploads,
    startAt: 0,
  });
  let count = 0;
  let ciRuns = 0;
  for (const upload of probe.uploads()) {
    if (upload.attempt === 1) ciRuns += 1;
    if (++count >= uploads) break;
  }
  return ciRuns;
}

async function prepareWorkload(): Promise<{
  uploads: PreparedUpload[];
  summary: WorkloadSummary;
}> {
  const started = performance.now();
  const ciRuns = ciRunsFor(UPLOADS);
  const spacing = DEFAULT_WORKLOAD.runSpacingMs;
  // The last CI run (and its re-runs, a minute apart) ends a minute before now.
  const startAt = Date.now() - (ciRuns - 1) * spacing - (DEFAULT_WORKLOAD.maxReruns + 1) * 60_000;
  const workload = generateWorkload({
    ...DEFAULT_WORKLOAD,
    seed: SEED,
    tests: TESTS,
    runs: ciRuns,
    startAt,
  });
  const prepared: PreparedUpload[] = [];
  const branches = new Set<string>();
  const pullRequests = new Set<number>();
  const byKind = { main: 0, pullRequest: 0, mergeQueue: 0 };
  let reruns = 0;
  let outages = 0;
  let failedRuns = 0;
  let firstAt = Number.POSITIVE_INFINITY;
  let lastAt = 0;
  for (const upload of workload.uploads()) {
    if (prepared.length >= UPLOADS) break;
    const junit = Buffer.from(renderJunit(workload.tests, upload), "utf8");
    const bundle = await workloadBundle(ORG, REPO, upload, junit);
    prepared.push({ runs: upload.results.length, junit, bundle });
    branches.add(upload.branch);
    if (upload.prNumber !== null) pullRequests.add(upload.prNumber);
    if (upload.branch === "main") byKind.main += 1;
    else if (upload.prNumber !== null) byKind.pullRequest += 1;
    else byKind.mergeQueue += 1;
    if (upload.attempt > 1) reruns += 1;
    if (upload.outage) outages += 1;
    failedRuns += upload.results.filter((r) => r.status === "failed").length;
    firstAt = Math.min(firstAt, upload.at);
    lastAt = Math.max(lastAt, upload.at);
  }
  const truths = workload.tests.map((t) => t.truth.kind);
  return {
    uploads: prepared,
    summary: {
      seed: SEED,
      tests: TESTS,
      flakyTests: truths.filter((kind) => kind === "flaky").length,
      brokenTests: truths.filter((kind) => kind === "broken").length,
      ciRuns: prepared.length - reruns,
      uploads: prepared.length,
      reruns,
      outages,
      branches: branches.size,
      pullRequests: pullRequests.size,
      byKind,
      runs: prepared.reduce((sum, u) => sum + u.runs, 0),
      failedRuns,
      firstUploadAt: new Date(firstAt).toISOString(),
      lastUploadAt: new Date(lastAt).toISOString(),
      junitBytes: prepared.reduce((sum, u) => sum + u.junit.length, 0),
      bundleBytes: prepared.reduce((sum, u) => sum + u.bundle.length, 0),
      prepareSeconds: seconds(performance.now() - started),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The parser alone

interface ParserResult {
  runs: number;
  seconds: number;
  runsPerSecond: number;
}

/** The report's bytes in slices, as the server's parser gets them from the bundle stream. */
function* slices(bytes: Buffer, size = 64 * 1024): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function countRuns(junit: Buffer): Promise<number> {
  let runs = 0;
  for await (const testCase of parseJunit(slices(junit))) runs += testCase.attempts.length;
  return runs;
}

async function benchParser(uploads: readonly PreparedUpload[]): Promise<ParserResult> {
  for (const upload of uploads.slice(0, 10)) await countRuns(upload.junit); // warm-up
  const started = performance.now();
  let runs = 0;
  for (const upload of uploads) runs += await countRuns(upload.junit);
  const ms = performance.now() - started;
  const expected = uploads.reduce((sum, u) => sum + u.runs, 0);
  if (runs !== expected) {
    throw new Error(`The parser read ${runs} runs where the workload has ${expected}.`);
  }
  return { runs, seconds: seconds(ms), runsPerSecond: perSecond(runs, ms) };
}

// ---------------------------------------------------------------------------------------------
// Talking to the server

interface UploadState {
  id: string;
  state: "pending" | "processing" | "processed" | "failed";
  reason: string | null;
  processed_at: string | null;
  files_failed: number;
  tests_passed: number;
  tests_failed: number;
  tests_skipped: number;
  duplicate_of: string | null;
}

const isFinal = (upload: UploadState): boolean =>
  upload.state === "processed" || upload.state === "failed";

class Client {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  private async call<T>(route: string, body: object): Promise<T> {
    const response = await fetch(`${this.baseUrl}/v1/${route}`, {
      method: "POST",
      headers: { "x-api-token": this.token, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`${route} answered ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async createUpload(): Promise<{ id: string; url: string }> {
    return this.call("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: ORG,
      clientVersion: "bench",
    });
  }

  /** PUT of the bundle; `body` is the bytes, or a stream of them for large files. */
  async put(
    url: string,
    body: Uint8Array | AsyncIterable<Uint8Array>,
    bytes: number,
  ): Promise<void> {
    const response = await fetch(url, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream", "content-length": String(bytes) },
      body,
      ...(body instanceof Uint8Array ? {} : { duplex: "half" as const }),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`PUT answered ${response.status}: ${text}`);
  }

  async upload(bundle: Uint8Array): Promise<string> {
    const { id, url } = await this.createUpload();
    await this.put(url, bundle, bundle.length);
    return id;
  }

  async getUpload(id: string): Promise<UploadState> {
    const answer = await this.call<{ upload: UploadState }>("flaky-tests/get-upload", {
      repo: REPO,
      org_url_slug: ORG,
      upload_id: id,
    });
    return answer.upload;
  }

  /** Every upload's state, a few requests at a time. */
  async getUploads(ids: readonly string[]): Promise<UploadState[]> {
    const states = new Array<UploadState | undefined>(ids.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let index = next++; index < ids.length; index = next++) {
          states[index] = await this.getUpload(ids[index] ?? "");
        }
      }),
    );
    return states.filter((s): s is UploadState => s !== undefined);
  }

  /**
   * Waits until every upload is processed or failed, or the deadline passes. The worker takes
   * uploads in the order they were stored, so it asks about the oldest unfinished one only, and
   * checks them all at the end. `finishedAt`: when the last one was seen finished (within
   * POLL_MS). Not `processed_at`, which the server stamps when the upload's final transaction
   * starts, before its aggregation, classification and commit.
   */
  async waitUntilFinal(
    ids: readonly string[],
    deadline: number,
    progress: (finished: number) => void,
  ): Promise<{ uploads: UploadState[]; timedOut: boolean; finishedAt: number }> {
    let waiting = [...ids];
    let lastProgress = Date.now();
    let finishedAt = Date.now();
    for (;;) {
      while (waiting.length > 0 && Date.now() < deadline) {
        const state = await this.getUpload(waiting[0] ?? "");
        if (isFinal(state)) {
          finishedAt = Date.now();
          waiting.shift();
          continue;
        }
        if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
          lastProgress = Date.now();
          progress(ids.length - waiting.length);
        }
        await delay(POLL_MS);
      }
      const uploads = await this.getUploads(ids);
      waiting = uploads.filter((u) => !isFinal(u)).map((u) => u.id);
      if (waiting.length === 0 || Date.now() >= deadline) {
        return { uploads, timedOut: waiting.length > 0, finishedAt };
      }
    }
  }
}

/** A fresh server on a fresh data directory (and the given database); stopped and removed after. */
async function withServer<T>(
  part: string,
  token: string,
  databaseUrl: string | undefined,
  work: (server: RunningServer) => Promise<T>,
): Promise<T> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-ingest-"));
  try {
    if (SERVER_LOG_DIR !== undefined) await mkdir(SERVER_LOG_DIR, { recursive: true });
    const server = await startServer({
      token,
      dataDir,
      databaseUrl,
      env: { LOG_LEVEL: SERVER_LOG_LEVEL },
      nodeArgs: SERVER_NODE_ARGS,
      builtEntry: SERVER_ENTRY,
      outputFile:
        SERVER_LOG_DIR === undefined ? undefined : path.join(SERVER_LOG_DIR, `${part}.log`),
    });
    try {
      return await work(server);
    } finally {
      if (SERVER_LOG_LEVEL === "warn") showServerOutput("during the run", server.takeOutput());
      const code = await server.stop();
      if (SERVER_LOG_LEVEL === "warn") showServerOutput("at shutdown", server.takeOutput());
      if (code !== 0) say(`  the server exited with ${code ?? "a signal"}`);
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

function withDatabase<T>(
  database: DatabaseName,
  work: (databaseUrl: string | undefined) => Promise<T>,
): Promise<T> {
  return database === "sqlite" ? work(undefined) : withThrowawayPostgres(work);
}

/** What went wrong with an upload the server answered for, or null when it counted in full. */
function problemOf(upload: UploadState, expectedRuns: number | undefined): string | null {
  if (upload.state !== "processed") {
    return `${upload.id}: ${upload.state}${upload.reason === null ? "" : ` (${upload.reason})`}`;
  }
  if (upload.files_failed > 0) return `${upload.id}: ${upload.files_failed} file(s) failed`;
  if (upload.duplicate_of !== null) return `${upload.id}: taken as a duplicate`;
  const counted = upload.tests_passed + upload.tests_failed + upload.tests_skipped;
  if (expectedRuns !== undefined && counted !== expectedRuns) {
    return `${upload.id}: ${counted} tests counted, ${expectedRuns} sent`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// End to end

interface EndToEndResult {
  database: DatabaseName;
  uploads: number;
  /** Processed or failed before the timeout (all of them unless `timedOut`). */
  processedUploads: number;
  runs: number;
  /** From the first createBundleUpload to the last PUT answered. */
  uploadSeconds: number;
  /** From the first createBundleUpload until the last upload was seen processed. */
  seconds: number;
  runsPerSecond: number;
  ratioToParser: number;
  /** Uploads refused, failed, partly failed or counted wrong; must be 0. */
  uploadFailures: number;
  failureSamples: string[];
  timedOut: boolean;
  serverRssAfterStartBytes: number | null;
  serverPeakRssBytes: number | null;
  serverCpuSeconds: number | null;
  target: { minimumRunsPerSecond: number; pass: boolean };
}

async function benchEndToEnd(
  database: DatabaseName,
  token: string,
  prepared: readonly PreparedUpload[],
  parser: ParserResult,
): Promise<EndToEndResult> {
  say(`${database}: end to end, ${prepared.length} uploads, ${CLIENTS} clients`);
  return withDatabase(database, (databaseUrl) =>
    withServer(`e2e-${database}`, token, databaseUrl, async (server) => {
      const before = await processStats(server.pid);
      const client = new Client(server.baseUrl, token);
      const ids = new Array<string | undefined>(prepared.length);
      const failureSamples: string[] = [];
      let uploadFailures = 0;
      const fail = (problem: string) => {
        uploadFailures += 1;
        if (failureSamples.length < 5) failureSamples.push(problem);
      };

      const startedAt = Date.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          for (let index = next++; index < prepared.length; index = next++) {
            try {
              ids[index] = await client.upload(prepared[index]?.bundle ?? Buffer.alloc(0));
            } catch (error) {
              fail(`upload ${index}: ${messageOf(error)}`);
            }
          }
        }),
      );
      const uploadedAt = Date.now();
      say(`  uploaded in ${seconds(uploadedAt - startedAt)} s; waiting for processing`);

      const sent = ids.filter((id): id is string => id !== undefined);
      const expectedRuns = new Map<string, number>();
      ids.forEach((id, index) => {
        if (id !== undefined) expectedRuns.set(id, prepared[index]?.runs ?? 0);
      });
      const { uploads, timedOut, finishedAt } = await client.waitUntilFinal(
        sent,
        startedAt + TIMEOUT_MS,
        (finished) => {
          say(`  ${finished}/${sent.length} processed after ${seconds(Date.now() - startedAt)} s`);
        },
      );
      const after = await processStats(server.pid);

      let runs = 0;
      let processedUploads = 0;
      for (const upload of uploads) {
        if (!isFinal(upload)) continue;
        processedUploads += 1;
        const problem = problemOf(upload, expectedRuns.get(upload.id));
        if (problem !== null) fail(problem);
        else runs += expectedRuns.get(upload.id) ?? 0;
      }
      if (timedOut) {
        const unfinished = uploads.length - processedUploads;
        say(`  TIMED OUT after ${TIMEOUT_MS / 1000} s with ${unfinished} uploads unfinished`);
      }
      const ms = (timedOut ? Date.now() : finishedAt) - startedAt;
      const runsPerSecond = perSecond(runs, ms);
      const minimumRunsPerSecond = TARGETS.runsPerSecond[database];
      say(`  ${runs} runs in ${seconds(ms)} s: ${runsPerSecond} runs/s`);
      return {
        database,
        uploads: sent.length,
        processedUploads,
        runs,
        uploadSeconds: seconds(uploadedAt - startedAt),
        seconds: seconds(ms),
        runsPerSecond,
        ratioToParser: round(runsPerSecond / parser.runsPerSecond, 3),
        uploadFailures,
        failureSamples,
        timedOut,
        serverRssAfterStartBytes: before?.rssBytes ?? null,
        serverPeakRssBytes: after?.peakRssBytes ?? null,
        serverCpuSeconds: cpuBetween(before, after),
        target: { minimumRunsPerSecond, pass: !timedOut && runsPerSecond >= minimumRunsPerSecond },
      };
    }),
  );
}

function cpuBetween(before: ProcessStats | null, after: ProcessStats | null): number | null {
  return before === null || after === null ? null : round(after.cpuSeconds - before.cpuSeconds, 2);
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

// ---------------------------------------------------------------------------------------------
// One very large JUnit file

interface BigFile {
  junitPath: string;
  bundlePath: string;
  junitBytes: number;
  bundleBytes: number;
  testcases: number;
  failures: number;
  prepareSeconds: number;
}

const MODULES = ["billing", "accounts", "search", "checkout", "inventory", "shipping", "auth"];
const NOUNS = ["Invoice", "Ledger", "Session", "Cart", "Order", "Token", "Address", "Report"];
const ROLES = ["Calculator", "Repository", "Service", "Controller", "Validator", "Mapper"];
const VERBS = ["computes", "rejects", "accepts", "persists", "loads", "retries", "renders"];
const WHENS = ["when_empty", "with_discount", "after_timeout", "for_new_user", "on_conflict"];
const SUITE_SIZE = 400;

const escapeXml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function pick<T>(items: readonly T[], next: () => number): T {
  const item = items[Math.floor(next() * items.length)];
  if (item === undefined) throw new Error("nothing to pick from");
  return item;
}

/** A JUnit 5 style failure: the message, then a stack trace of a dozen lines. */
function failureElement(classname: string, name: string, next: () => number): string {
  const expected = Math.floor(next() * 500);
  const messages = [
    `expected: <${expected}> but was: <${expected + 1}>`,
    `Timed out after ${1000 + Math.floor(next() * 9000)} ms waiting for ${name}`,
    `Connection refused: localhost/127.0.0.1:${5000 + Math.floor(next() * 1000)}`,
  ];
  const message = pick(messages, next);
  const simpleName = classname.slice(classname.lastIndexOf(".") + 1);
  const trace = [
    `org.opentest4j.AssertionFailedError: ${message}`,
    "\tat org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)",
    "\tat org.junit.jupiter.api.AssertionFailureBuilder.buildAndThrow(AssertionFailureBuilder.java:132)",
    "\tat org.junit.jupiter.api.AssertEquals.failNotEqual(AssertEquals.java:197)",
    "\tat org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:182)",
    "\tat org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:1141)",
    `\tat ${classname}.${name}(${simpleName}.java:${20 + Math.floor(next() * 400)})`,
    "\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)",
    "\tat org.junit.platform.commons.util.ReflectionUtils.invokeMethod(ReflectionUtils.java:728)",
    "\tat org.junit.jupiter.engine.execution.MethodInvocation.proceed(MethodInvocation.java:60)",
    "\tat java.base/java.util.ArrayList.forEach(ArrayList.java:1596)",
  ].join("\n");
  return `<failure message="${escapeXml(message)}" type="org.opentest4j.AssertionFailedError">${escapeXml(trace)}</failure>`;
}

/**
 * Streams a JUnit report of about `targetBytes` to disk: suites of SUITE_SIZE test cases with
 * Java-style names (every test distinct), ~1% failures with multi-line stack traces, ~2% skipped,
 * and some captured output.
 */
async function writeBigJunit(
  file: string,
  targetBytes: number,
): Promise<{ bytes: number; testcases: number; failures: number }> {
  const out = createWriteStream(file);
  const next = seededRandom(SEED);
  let bytes = 0;
  let testcases = 0;
  let failures = 0;
  const write = async (text: string) => {
    bytes += Buffer.byteLength(text);
    if (!out.write(text)) await once(out, "drain");
  };
  const timestamp = new Date(Date.now() - 30 * 60_000).toISOString().slice(0, 19);
  await write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="monorepo">\n');
  for (let suite = 0; bytes < targetBytes; suite++) {
    const module = MODULES[suite % MODULES.length] ?? "core";
    const service = `service${Math.floor(suite / MODULES.length) % 100}`;
    const lines: string[] = [];
    let suiteFailures = 0;
    let suiteSkipped = 0;
    let className = "";
    let file = "";
    for (let i = 0; i < SUITE_SIZE; i++) {
      if (i % 20 === 0) {
        const simpleName = `${pick(NOUNS, next)}${pick(ROLES, next)}${suite}x${i}Test`;
        className = `com.acme.${service}.${module}.${simpleName}`;
        file = `src/test/java/com/acme/${service}/${module}/${simpleName}.java`;
      }
      const name = `${pick(VERBS, next)}_${pick(NOUNS, next).toLowerCase()}_${pick(WHENS, next)}_${testcases}`;
      const attributes = `name="${name}" classname="${className}" file="${file}" time="${(next() * 2).toFixed(3)}"`;
      const draw = next();
      testcases += 1;
      if (draw < 0.01) {
        failures += 1;
        suiteFailures += 1;
        lines.push(
          `  <testcase ${attributes}>${failureElement(className, name, next)}<system-out>${escapeXml(`[main] INFO ${className} - starting ${name}\n[main] WARN ${className} - retrying request 1/3`)}</system-out></testcase>`,
        );
      } else if (draw < 0.03) {
        suiteSkipped += 1;
        lines.push(`  <testcase ${attributes}><skipped message="@Disabled"/></testcase>`);
      } else {
        lines.push(`  <testcase ${attributes}/>`);
      }
    }
    await write(
      `<testsuite name="com.acme.${service}.${module}" tests="${SUITE_SIZE}" failures="${suiteFailures}" skipped="${suiteSkipped}" errors="0" timestamp="${timestamp}">\n${lines.join("\n")}\n</testsuite>\n`,
    );
  }
  await write("</testsuites>\n");
  out.end();
  await once(out, "finish");
  return { bytes, testcases, failures };
}

async function prepareBigFile(directory: string): Promise<BigFile> {
  const started = performance.now();
  const junitPath = path.join(directory, "junit-big.xml");
  const bundlePath = path.join(directory, "bundle-big.tar.gz");
  const { bytes, testcases, failures } = await writeBigJunit(junitPath, BIG_MB * MIB);
  await pipeline(
    writeBundle({
      meta: {
        orgSlug: ORG,
        repo: REPO,
        commitSha: randomBytes(20).toString("hex"),
        cliVersion: "0.7.8",
        uploadTimeEpochSeconds: Math.floor(Date.now() / 1000) - 60,
        branch: "main",
        envs: { JOB_NAME: "ci/test (big)" },
      },
      junitFiles: [{ originalPath: "build/test-results/junit-big.xml", diskPath: junitPath }],
    }),
    createWriteStream(bundlePath),
  );
  return {
    junitPath,
    bundlePath,
    junitBytes: bytes,
    bundleBytes: (await stat(bundlePath)).size,
    testcases,
    failures,
    prepareSeconds: seconds(performance.now() - started),
  };
}

interface BigFileResult {
  database: DatabaseName;
  junitBytes: number;
  bundleBytes: number;
  runs: number;
  /** The PUT: from its start to the 200 (the bundle stored durably). */
  putSeconds: number;
  /** From createBundleUpload until the upload was seen processed. */
  seconds: number;
  runsPerSecond: number;
  state: string;
  uploadFailures: number;
  failureSamples: string[];
  timedOut: boolean;
  serverRssAfterStartBytes: number | null;
  /** Peak RSS when the PUT was answered (before processing took hold). */
  serverPeakRssAfterPutBytes: number | null;
  serverPeakRssBytes: number | null;
  serverCpuSeconds: number | null;
  target: { maximumPeakRssBytes: number; pass: boolean };
}

async function benchBigFile(
  database: DatabaseName,
  token: string,
  big: BigFile,
): Promise<BigFileResult> {
  say(`${database}: one ${mib(big.junitBytes)} JUnit file (${big.testcases} test cases)`);
  return withDatabase(database, (databaseUrl) =>
    withServer(`big-${database}`, token, databaseUrl, async (server) => {
      const before = await processStats(server.pid);
      const client = new Client(server.baseUrl, token);
      const failureSamples: string[] = [];
      const startedAt = Date.now();
      const { id, url } = await client.createUpload();
      const putStarted = Date.now();
      let state: UploadState | null = null;
      let putMs = 0;
      let afterPut: ProcessStats | null = null;
      let timedOut = false;
      let finishedAt: number | null = null;
      try {
        await client.put(url, createReadStream(big.bundlePath), big.bundleBytes);
        putMs = Date.now() - putStarted;
        afterPut = await processStats(server.pid);
        say(`  stored in ${seconds(putMs)} s; waiting for processing`);
        const waited = await client.waitUntilFinal([id], startedAt + BIG_TIMEOUT_MS, () => {
          say(`  still processing after ${seconds(Date.now() - startedAt)} s`);
        });
        state = waited.uploads[0] ?? null;
        timedOut = waited.timedOut;
        if (!timedOut) finishedAt = waited.finishedAt;
      } catch (error) {
        failureSamples.push(messageOf(error));
      }
      const after = await processStats(server.pid);
      const problem = state === null ? null : timedOut ? null : problemOf(state, big.testcases);
      if (problem !== null) failureSamples.push(problem);
      const ms = (finishedAt ?? Date.now()) - startedAt;
      const ok = failureSamples.length === 0 && !timedOut;
      const peak = after?.peakRssBytes ?? null;
      say(
        `  ${ok ? "processed" : (state?.state ?? "not stored")} in ${seconds(ms)} s; server peak RSS ${mib(peak)}`,
      );
      return {
        database,
        junitBytes: big.junitBytes,
        bundleBytes: big.bundleBytes,
        runs: big.testcases,
        putSeconds: seconds(putMs),
        seconds: seconds(ms),
        runsPerSecond: ok ? perSecond(big.testcases, ms) : 0,
        state: timedOut ? "timed out" : (state?.state ?? "not stored"),
        uploadFailures: failureSamples.length,
        failureSamples,
        timedOut,
        serverRssAfterStartBytes: before?.rssBytes ?? null,
        serverPeakRssAfterPutBytes: afterPut?.peakRssBytes ?? null,
        serverPeakRssBytes: peak,
        serverCpuSeconds: cpuBetween(before, after),
        target: {
          maximumPeakRssBytes: TARGETS.bigFilePeakRssBytes,
          pass: ok && peak !== null && peak < TARGETS.bigFilePeakRssBytes,
        },
      };
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Report

function report(
  parser: ParserResult,
  endToEnd: readonly EndToEndResult[],
  big: readonly BigFileResult[],
): string {
  const rows = [
    [
      "parser alone",
      "-",
      String(parser.runs),
      String(parser.seconds),
      String(parser.runsPerSecond),
      "100%",
      "-",
      "-",
      "0",
      "same process, same data",
    ],
    ...endToEnd.map((r) => [
      "end to end",
      r.database,
      String(r.runs),
      String(r.seconds),
      String(r.runsPerSecond),
      `${round(r.ratioToParser * 100, 1)}%`,
      mib(r.serverPeakRssBytes),
      r.serverCpuSeconds === null ? "?" : String(r.serverCpuSeconds),
      String(r.uploadFailures),
      r.timedOut
        ? `timed out: ${r.processedUploads}/${r.uploads} uploads processed`
        : `${r.uploads} uploads`,
    ]),
    ...big.map((r) => [
      `big file (${mib(r.junitBytes)})`,
      r.database,
      String(r.runs),
      String(r.seconds),
      String(r.runsPerSecond),
      `${round((r.runsPerSecond / parser.runsPerSecond) * 100, 1)}%`,
      mib(r.serverPeakRssBytes),
      r.serverCpuSeconds === null ? "?" : String(r.serverCpuSeconds),
      String(r.uploadFailures),
      r.timedOut ? "timed out" : `PUT ${r.putSeconds} s, bundle ${mib(r.bundleBytes)}`,
    ]),
  ];
  const table = formatTable(
    [
      "what",
      "database",
      "runs",
      "seconds",
      "runs/s",
      "vs parser",
      "peak RSS",
      "server CPU s",
      "failed",
      "note",
    ],
    rows,
    [0, 1, 9],
  );
  const targets = [
    ...endToEnd.map(
      (r) =>
        `Target: end to end on ${r.database} >= ${r.target.minimumRunsPerSecond} runs/s: ${r.runsPerSecond} ${r.target.pass ? "PASS" : "FAIL"}`,
    ),
    ...big.map(
      (r) =>
        `Target: ${mib(r.junitBytes)} JUnit file on ${r.database} with server peak RSS < ${mib(r.target.maximumPeakRssBytes)}: ${mib(r.serverPeakRssBytes)} ${r.target.pass ? "PASS" : "FAIL"}`,
    ),
  ];
  return `${table}\n\n${targets.join("\n")}\n`;
}

async function main(): Promise<number> {
  const loadAverageBefore = os.loadavg()[0] ?? 0;
  const token = randomBytes(32).toString("hex");
  say(`preparing ${UPLOADS} uploads of ${TESTS} tests…`);
  const { uploads, summary } = await prepareWorkload();
  say(
    `  ${summary.uploads} uploads (${summary.reruns} re-runs, ${summary.branches} branches, ${summary.pullRequests} PRs), ${summary.runs} runs, JUnit ${mib(summary.junitBytes)}, bundles ${mib(summary.bundleBytes)}, in ${summary.prepareSeconds} s`,
  );
  const parser = await benchParser(uploads);
  say(`parser alone: ${parser.runs} runs in ${parser.seconds} s: ${parser.runsPerSecond} runs/s`);

  const endToEnd: EndToEndResult[] = [];
  for (const database of DATABASES) {
    endToEnd.push(await benchEndToEnd(database, token, uploads, parser));
  }

  const big: BigFileResult[] = [];
  let bigFile: Omit<BigFile, "junitPath" | "bundlePath"> | null = null;
  if (BIG) {
    const directory = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-big-"));
    try {
      say(`writing a ${BIG_MB} MiB JUnit file and its bundle…`);
      const prepared = await prepareBigFile(directory);
      bigFile = {
        junitBytes: prepared.junitBytes,
        bundleBytes: prepared.bundleBytes,
        testcases: prepared.testcases,
        failures: prepared.failures,
        prepareSeconds: prepared.prepareSeconds,
      };
      say(
        `  ${prepared.testcases} test cases, ${prepared.failures} failures, bundle ${mib(prepared.bundleBytes)}, in ${prepared.prepareSeconds} s`,
      );
      for (const database of BIG_DATABASES) big.push(await benchBigFile(database, token, prepared));
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }

  process.stdout.write(`\n${report(parser, endToEnd, big)}`);
  const json = {
    date: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      // Other work on the machine before the run (the server, clients and PostgreSQL share it).
      loadAverage1mBefore: round(loadAverageBefore, 2),
    },
    node: process.version,
    settings: {
      clients: CLIENTS,
      serverLogLevel: SERVER_LOG_LEVEL,
      serverNodeArgs: SERVER_NODE_ARGS,
      serverEntry: SERVER_ENTRY ?? "src/cli/main.ts (tsx)",
      timeoutSeconds: TIMEOUT_MS / 1000,
      bigTimeoutSeconds: BIG_TIMEOUT_MS / 1000,
    },
    workload: summary,
    parser,
    endToEnd,
    bigFile: bigFile === null ? null : { ...bigFile, results: big },
    targets: [
      ...endToEnd.map((r) => ({
        name: `end to end on ${r.database}`,
        minimumRunsPerSecond: r.target.minimumRunsPerSecond,
        runsPerSecond: r.runsPerSecond,
        pass: r.target.pass,
      })),
      ...big.map((r) => ({
        name: `big file on ${r.database}`,
        maximumPeakRssBytes: r.target.maximumPeakRssBytes,
        peakRssBytes: r.serverPeakRssBytes,
        pass: r.target.pass,
      })),
    ],
  };
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(json, null, 2)}\n`);
  say(`\nWrote ${path.relative(ROOT, RESULTS_FILE)}`);

  const failed =
    endToEnd.reduce((sum, r) => sum + r.uploadFailures, 0) +
    big.reduce((sum, r) => sum + r.uploadFailures, 0);
  if (failed > 0) {
    process.stderr.write(`bench:ingest: ${failed} upload(s) failed (see above).\n`);
    return 1;
  }
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  process.stderr.write(`bench:ingest failed: ${messageOf(error)}\n`);
  process.exitCode = 1;
}
