/**
 * Mixed-load benchmark (issue 13): 50 concurrent clients against a real `mainline serve` on
 * 127.0.0.1, each sending a mix of reads (getQueue, listPullRequests, the Flaky Tests lists, test
 * details), uploads (createBundleUpload, then the PUT of a small bundle) and submissions of new
 * pull requests (submitPullRequest) to a paused queue and to a running one. Target: every
 * operation's p99 within 150 ms, on SQLite and on PostgreSQL.
 *
 * Setup per database (not measured): a fresh data directory (SQLite; PostgreSQL 15 in a throwaway
 * database), two local repositories (`bench/paused`, `bench/running`) whose only check is `true`,
 * BENCH_PRS pull requests opened in each, a queue on each (one paused, one running with
 * concurrency 2 and no batching), and a few uploads processed so that the lists and the test
 * details have something to show. Then each client loops over the mix until BENCH_SECONDS pass or
 * BENCH_REQUESTS requests were sent; a client whose next submission would find no unsubmitted
 * pull request left sends the next read instead. Any answer but 200 counts as an error and fails
 * the run.
 *
 * Usage: npm run bench:mixed-load
 *   BENCH_DB (sqlite,postgres)   databases to measure
 *   BENCH_SECONDS (25)           measured seconds per database (5..120)
 *   BENCH_REQUESTS (40000)       at most this many requests per database
 *   BENCH_CONCURRENCY (50)       concurrent clients
 *   BENCH_PRS (400)              pull requests opened per queue (submissions are capped by it)
 *   BENCH_CPU_PROF (unset)       a directory: the server writes a V8 CPU profile there
 *   BENCH_SERVER_LOG (unset)     a path: the server logs at info level to <path>.<database>
 *   BENCH_COLD_START (unset)     1: the clients open their connections as the load starts
 *                                (by default they are opened, and timed, just before it)
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { git } from "../src/providers/local/git/git.js";
import { writeBundleBuffer } from "../src/testhealth/bundle/index.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { FastImportStream } from "./support/fast-import.js";
import {
  cpuByPart,
  cpuCalibrationMs,
  machineCpuSeconds,
  machineInfo,
  type CpuParts,
} from "./support/machine.js";
import {
  ROOT,
  processStats,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
  type RunningServer,
} from "./support/server.js";
import { formatTable } from "./support/table.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "mixed-load.json");
const SECONDS = integerFromEnv("BENCH_SECONDS", 25, 5, 120);
const MAX_REQUESTS = integerFromEnv("BENCH_REQUESTS", 40_000, 100, 1_000_000);
const CONCURRENCY = integerFromEnv("BENCH_CONCURRENCY", 50, 1, 500);
const PRS = integerFromEnv("BENCH_PRS", 400, 10, 20_000);
const COLD_START = process.env.BENCH_COLD_START === "1";
const DATABASES = listFromEnv("BENCH_DB", "sqlite,postgres").map((name) => {
  if (name !== "sqlite" && name !== "postgres") {
    throw new Error(`BENCH_DB takes sqlite and/or postgres (got "${name}").`);
  }
  return name;
});
const TARGET_P99_MS = 150;
/** Distinct bundles (different commits); uploads cycle over them. */
const BUNDLES = 300;
const TESTS_PER_BUNDLE = 40;

const ORG = "bench";
const PAUSED = { host: "local", owner: "bench", name: "paused" };
const RUNNING = { host: "local", owner: "bench", name: "running" };
const PAUSED_QUEUE = { repo: PAUSED, targetBranch: "main" };
const RUNNING_QUEUE = { repo: RUNNING, targetBranch: "main" };
const TESTS_REPO = { host: "github.com", owner: "bench", name: "tests" };
const CHECK_CONFIG = ["ci:", "  checks:", "    - name: check", '      run: "true"', ""].join("\n");

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

// ---------------------------------------------------------------------------------------------
// HTTP: one keep-alive agent, as a load generator would use

const newAgent = () => new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY + 10 });
let agent = newAgent();

interface Answer {
  status: number;
  text: string;
}

function request(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | Buffer,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

class Api {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  post(operation: string, body: unknown): Promise<Answer> {
    return request(
      `${this.baseUrl}/v1/${operation}`,
      "POST",
      { "content-type": "application/json", "x-api-token": this.token },
      JSON.stringify(body),
    );
  }

  async call<T>(operation: string, body: unknown): Promise<T> {
    const answer = await this.post(operation, body);
    if (answer.status !== 200) {
      throw new Error(`${operation}: ${String(answer.status)} ${answer.text}`);
    }
    return JSON.parse(answer.text) as T;
  }
}

// ---------------------------------------------------------------------------------------------
// setup

/** A bare repository: main with `.mainline.yml`, and branches `pr-k` each adding its own file. */
async function generateRepository(dir: string): Promise<void> {
  const stream = new FastImportStream(1);
  const commit = stream.commit.bind(stream);
  const modify = stream.modify.bind(stream);
  commit("refs/heads/main", 1, null, "Start");
  modify(".mainline.yml", CHECK_CONFIG);
  modify("README.md", "bench\n");
  for (let k = 1; k <= PRS; k++) {
    commit(`refs/heads/pr-${String(k)}`, 1 + k, 1, `Change ${String(k)}`);
    modify(`changes/${String(k)}.txt`, `pull request ${String(k)}\n`);
  }
  await git(["init", "--quiet", "--bare", "--initial-branch=main", dir]);
  await git(["fast-import", "--quiet", "--done"], { cwd: dir, input: stream.text() });
}

/** Runs `work` over `items`, `parallel` at a time. */
async function eachLimited<T>(
  items: readonly T[],
  parallel: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < items.length; i = next++) await work(items[i] as T);
    }),
  );
}

async function makeBundles(): Promise<Buffer[]> {
  const bundles: Buffer[] = [];
  const now = Math.floor(Date.now() / 1000);
  for (let b = 0; b < BUNDLES; b++) {
    const cases: string[] = [];
    for (let t = 0; t < TESTS_PER_BUNDLE; t++) {
      // A few tests fail now and then, so that the lists have rows.
      const fails = t < 4 && (b + t) % 3 === 0;
      cases.push(
        `<testcase classname="bench.Suite${String(t % 5)}" name="test ${String(t)}" file="src/t${String(t)}.ts" time="0.01">` +
          (fails ? `<failure message="boom">expected ${String(t)}</failure>` : "") +
          "</testcase>",
      );
    }
    const junit = `<?xml version="1.0"?><testsuites><testsuite name="bench" tests="${String(TESTS_PER_BUNDLE)}">${cases.join("")}</testsuite></testsuites>`;
    bundles.push(
      await writeBundleBuffer({
        meta: {
          orgSlug: ORG,
          repo: TESTS_REPO,
          commitSha: randomBytes(20).toString("hex"),
          cliVersion: "0.7.8",
          uploadTimeEpochSeconds: now,
          branch: b % 2 === 0 ? "main" : `feature-${String(b)}`,
          envs: b % 2 === 0 ? {} : { TRUNK_PR_NUMBER: String(b) },
        },
        junitFiles: [{ originalPath: "reports/junit.xml", data: junit }],
      }),
    );
  }
  return bundles;
}

async function upload(api: Api, bundle: Buffer): Promise<[Answer, Answer | null]> {
  const created = await api.post("metrics/createBundleUpload", {
    repo: TESTS_REPO,
    orgUrlSlug: ORG,
    clientVersion: "bench",
  });
  if (created.status !== 200) return [created, null];
  const { url } = JSON.parse(created.text) as { url: string };
  const put = await request(url, "PUT", { "content-type": "application/octet-stream" }, bundle);
  return [created, put];
}

interface Setup {
  api: Api;
  /** The pull requests opened in each repository, none submitted yet. */
  opened: { paused: number[]; running: number[] };
  bundles: Buffer[];
  testId: string;
  setupSeconds: number;
}

async function setUp(server: RunningServer, token: string, template: string): Promise<Setup> {
  const started = performance.now();
  const api = new Api(server.baseUrl, token);
  for (const repo of [PAUSED, RUNNING]) {
    const { remoteUrl } = await api.call<{ remoteUrl: string }>("local/createRepository", {
      repo,
    });
    await git(["push", "--quiet", remoteUrl, "refs/heads/*:refs/heads/*"], { cwd: template });
    await api.call("createQueue", { repo, targetBranch: "main" });
  }
  await api.call("updateQueue", { ...PAUSED_QUEUE, state: "paused" });
  await api.call("updateQueue", { ...RUNNING_QUEUE, concurrency: 2, batch: false });
  const branches = Array.from({ length: PRS }, (_, i) => i + 1);
  const opened = { paused: [] as number[], running: [] as number[] };
  for (const [which, repo] of [
    ["paused", PAUSED],
    ["running", RUNNING],
  ] as const) {
    await eachLimited(branches, 8, async (k) => {
      const { number } = await api.call<{ number: number }>("local/openPullRequest", {
        repo,
        head: `pr-${String(k)}`,
        base: "main",
        title: `Change ${String(k)}`,
        author: "bench",
      });
      opened[which].push(number);
    });
  }
  const bundles = await makeBundles();
  for (const bundle of bundles.slice(0, 10)) {
    const [created, put] = await upload(api, bundle);
    if (put?.status !== 200) throw new Error(`seeding upload: ${created.text} ${put?.text ?? ""}`);
  }
  // Wait until the seeded uploads are processed (the failing list shows their failures).
  let testId: string | undefined;
  const end = new Date(Date.now() + 60_000).toISOString();
  const start = new Date(Date.now() - 3_600_000).toISOString();
  for (let attempt = 0; attempt < 300 && testId === undefined; attempt++) {
    const listed = await api.call<{ tests: { test_id?: string; id?: string }[] }>(
      "flaky-tests/list-failing-tests",
      failingBody(start, end),
    );
    const first = listed.tests[0];
    testId = first?.test_id ?? first?.id;
    if (testId === undefined) await delay(100);
  }
  if (testId === undefined) throw new Error("the seeded uploads were not processed in 30 s");
  return { api, opened, bundles, testId, setupSeconds: (performance.now() - started) / 1000 };
}

function failingBody(start: string, end: string): object {
  return {
    repo: TESTS_REPO,
    org_url_slug: ORG,
    start_time: start,
    end_time: end,
    page_query: { page_size: 50 },
  };
}

// ---------------------------------------------------------------------------------------------
// the load

/**
 * Opens one keep-alive connection per client before the clock starts (a `GET /healthz` on each,
 * all at once), as a load generator with persistent connections does. A server takes up one new
 * connection per turn of its event loop (libuv since 1.45 accepts one at a time), and a turn of
 * a busy server lasts as long as the synchronous work of every request ready in it: 42 clients
 * connecting at once to a server already serving 8 waited up to seconds for their first request,
 * which the latency of whatever operation came first then carried (BENCH_COLD_START=1 measures
 * it that way). Returns how long opening them took.
 */
async function openConnections(baseUrl: string): Promise<number> {
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: CONCURRENCY }, () => request(`${baseUrl}/healthz`, "GET", {}, "")),
  );
  const failed = answers.find((a) => a.status !== 200);
  if (failed) throw new Error(`opening connections: ${String(failed.status)} ${failed.text}`);
  return performance.now() - started;
}

const OPERATIONS = [
  "getQueue",
  "listPullRequests",
  "list-failing-tests",
  "list-unhealthy-tests",
  "get-test-details",
  "createBundleUpload",
  "PUT bundle",
  "submitPullRequest (paused)",
  "submitPullRequest (running)",
] as const;
type Operation = (typeof OPERATIONS)[number];

/** What a client sends in turn, round and round (an upload is createBundleUpload + PUT). */
const MIX: readonly ("read" | "upload" | "submit paused" | "submit running")[] = [
  "read",
  "submit paused",
  "read",
  "upload",
  "read",
  "submit running",
  "read",
  "upload",
  "read",
  "submit paused",
  "read",
  "submit running",
];
const READS: readonly Operation[] = [
  "getQueue",
  "listPullRequests",
  "list-failing-tests",
  "list-unhealthy-tests",
  "get-test-details",
];

/** One request: when it was sent (ms after the load began), what, and how long it took. */
interface TimedRequest {
  at: number;
  operation: Operation;
  ms: number;
}

interface Samples {
  latencies: Map<Operation, number[]>;
  /** Every request in the order answered: the timeline (where the slow ones fall). */
  timeline: TimedRequest[];
  errors: Map<Operation, { count: number; example: string }>;
  requests: number;
  submitted: { paused: number; running: number };
  seconds: number;
}

async function runLoad(setup: Setup): Promise<Samples> {
  const { api, opened, bundles, testId } = setup;
  const latencies = new Map<Operation, number[]>(OPERATIONS.map((op) => [op, []]));
  const errors = new Map<Operation, { count: number; example: string }>();
  const timeline: TimedRequest[] = [];
  let requests = 0;
  const submitted = { paused: 0, running: 0 };
  let nextBundle = 10;
  let nextRead = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const end = new Date(Date.now() + 3_600_000).toISOString();
  const start = new Date(Date.now() - 3_600_000).toISOString();

  const record = (op: Operation, begun: number, answer: Answer | null) => {
    const ms = performance.now() - begun;
    latencies.get(op)?.push(ms);
    timeline.push({ at: begun - started, operation: op, ms });
    requests += 1;
    if (answer !== null && answer.status !== 200) {
      const seen = errors.get(op) ?? { count: 0, example: "" };
      seen.count += 1;
      seen.example ||= `${String(answer.status)} ${answer.text.slice(0, 300)}`;
      errors.set(op, seen);
    }
  };

  const read = async () => {
    const op = READS[nextRead++ % READS.length] as Operation;
    const begun = performance.now();
    let answer: Answer;
    switch (op) {
      case "getQueue":
        answer = await api.post("getQueue", PAUSED_QUEUE);
        break;
      case "listPullRequests":
        answer = await api.post("listPullRequests", { ...PAUSED_QUEUE, take: 50 });
        break;
      case "list-failing-tests":
        answer = await api.post("flaky-tests/list-failing-tests", failingBody(start, end));
        break;
      case "list-unhealthy-tests":
        answer = await api.post("flaky-tests/list-unhealthy-tests", {
          repo: TESTS_REPO,
          org_url_slug: ORG,
          status: "FLAKY",
          page_query: { page_size: 50 },
        });
        break;
      default:
        answer = await api.post("flaky-tests/get-test-details", {
          repo: TESTS_REPO,
          org_url_slug: ORG,
          test_id: testId,
        });
    }
    record(op, begun, answer);
  };

  const client = async (index: number) => {
    for (let step = index; performance.now() < deadline && requests < MAX_REQUESTS; step++) {
      const kind = MIX[step % MIX.length];
      if (kind === "submit paused" || kind === "submit running") {
        const which = kind === "submit paused" ? "paused" : "running";
        const number = opened[which][submitted[which]];
        if (number === undefined) {
          await read();
          continue;
        }
        submitted[which] += 1;
        const op: Operation = `submitPullRequest (${which})`;
        const begun = performance.now();
        const answer = await api.post("submitPullRequest", {
          ...(which === "paused" ? PAUSED_QUEUE : RUNNING_QUEUE),
          pr: { number },
        });
        record(op, begun, answer);
      } else if (kind === "upload") {
        const bundle = bundles[nextBundle++ % bundles.length] as Buffer;
        let begun = performance.now();
        const created = await api.post("metrics/createBundleUpload", {
          repo: TESTS_REPO,
          orgUrlSlug: ORG,
          clientVersion: "bench",
        });
        record("createBundleUpload", begun, created);
        if (created.status !== 200) continue;
        const { url } = JSON.parse(created.text) as { url: string };
        begun = performance.now();
        const put = await request(
          url,
          "PUT",
          { "content-type": "application/octet-stream" },
          bundle,
        );
        record("PUT bundle", begun, put);
      } else {
        await read();
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => client(i)));
  return {
    latencies,
    timeline,
    errors,
    requests,
    submitted,
    seconds: (performance.now() - started) / 1000,
  };
}

// ---------------------------------------------------------------------------------------------
// figures

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

interface OperationResult {
  operation: Operation;
  requests: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  pass: boolean;
}

interface DatabaseResult {
  database: string;
  seconds: number;
  requests: number;
  requestsPerSecond: number;
  submitted: { paused: number; running: number };
  setupSeconds: number;
  operations: OperationResult[];
  errorExamples: Record<string, string>;
  pass: boolean;
  /** How long opening the clients' connections took, before the load (not with BENCH_COLD_START). */
  connectionsOpenedMs?: number;
  /** CPU time of the server process (all its threads) during the load, per request. */
  serverCpuMsPerRequest?: number;
  /** The part of it spent in the kernel (sockets to the clients and the database, files). */
  serverSystemCpuMsPerRequest?: number;
  /**
   * CPU time of the whole machine during the load, per request: the server, the database's
   * processes, git and the checks, the clients themselves, the kernel. With every core busy, the
   * rate is the cores' time over this.
   */
  machineCpuMsPerRequest?: number;
  /** The share of the machine's cores busy during the load. */
  machineBusyShare?: number;
  /**
   * `machineCpuMsPerRequest` by part: the server, what it started (git, the checks), the
   * database's processes, the clients, and the rest (the kernel's own work, other programs).
   */
  cpuMsPerRequestByPart?: CpuParts & { rest: number };
  /** Per second of the load (by when requests were sent): how many, their p50, p99 and max. */
  perSecond: { second: number; requests: number; p50Ms: number; p99Ms: number; maxMs: number }[];
  /** The slowest requests: which operation, when it was sent (ms into the load), how long. */
  slowest: TimedRequest[];
  /**
   * Seconds after the load until every submission the paused queue acknowledged was in it
   * (submissions are answered once stored; the driver applies them after).
   */
  pausedQueueSettledSeconds?: number;
  /**
   * Pull requests the running queue had merged when the load ended: background work that shares
   * the machine with the requests (more of it leaves less for them).
   */
  runningQueueMerged?: number;
}

/**
 * Waits until the paused queue holds every pull request it acknowledged (none lost), applied by
 * its driver (an entry id: reads show the others before, with none), and says how long after the
 * load that was; throws after a minute.
 */
async function settled(api: Api, acknowledged: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const queue = await api.call<{ enqueuedPullRequests: { id: string }[] }>(
      "getQueue",
      PAUSED_QUEUE,
    );
    const held = queue.enqueuedPullRequests.filter((pr) => pr.id !== "").length;
    if (held === acknowledged) return (performance.now() - started) / 1000;
    if (held > acknowledged || performance.now() - started > 60_000) {
      throw new Error(
        `the paused queue holds ${String(held)} of ${String(acknowledged)} acknowledged pull requests`,
      );
    }
    await delay(100);
  }
}

const oneDecimal = (value: number): number => Math.round(value * 10) / 10;

function summarize(database: string, setup: Setup, samples: Samples): DatabaseResult {
  const operations = OPERATIONS.map((operation): OperationResult => {
    const sorted = [...(samples.latencies.get(operation) ?? [])].sort((a, b) => a - b);
    const errors = samples.errors.get(operation)?.count ?? 0;
    const p99 = percentile(sorted, 99);
    return {
      operation,
      requests: sorted.length,
      errors,
      p50Ms: oneDecimal(percentile(sorted, 50)),
      p95Ms: oneDecimal(percentile(sorted, 95)),
      p99Ms: oneDecimal(p99),
      maxMs: oneDecimal(sorted[sorted.length - 1] ?? Number.NaN),
      pass: sorted.length > 0 && errors === 0 && p99 <= TARGET_P99_MS,
    };
  });
  return {
    database,
    seconds: oneDecimal(samples.seconds),
    requests: samples.requests,
    requestsPerSecond: Math.round(samples.requests / samples.seconds),
    submitted: samples.submitted,
    setupSeconds: oneDecimal(setup.setupSeconds),
    operations,
    errorExamples: Object.fromEntries(
      [...samples.errors].map(([op, seen]) => [op, `${String(seen.count)}× ${seen.example}`]),
    ),
    pass: operations.every((o) => o.pass),
    perSecond: perSecond(samples.timeline),
    slowest: [...samples.timeline]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SLOWEST)
      .map((r) => ({ at: Math.round(r.at), operation: r.operation, ms: oneDecimal(r.ms) })),
  };
}

const SLOWEST = 12;

function perSecond(timeline: readonly TimedRequest[]): DatabaseResult["perSecond"] {
  const seconds = Math.ceil(Math.max(0, ...timeline.map((r) => r.at + 1)) / 1000);
  const buckets = Array.from({ length: seconds }, (): number[] => []);
  for (const r of timeline) buckets[Math.floor(r.at / 1000)]?.push(r.ms);
  return buckets.map((bucket, second) => {
    const sorted = bucket.sort((a, b) => a - b);
    return {
      second,
      requests: sorted.length,
      p50Ms: oneDecimal(percentile(sorted, 50)),
      p99Ms: oneDecimal(percentile(sorted, 99)),
      maxMs: oneDecimal(sorted[sorted.length - 1] ?? Number.NaN),
    };
  });
}

function print(result: DatabaseResult): void {
  say(
    `\n${result.database}: ${String(result.requests)} requests in ${String(result.seconds)} s ` +
      `(${String(result.requestsPerSecond)}/s, ${String(CONCURRENCY)} clients); submitted ` +
      `${String(result.submitted.paused)} to the paused queue, ${String(result.submitted.running)} to the running one`,
  );
  say(
    formatTable(
      ["operation", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms", "p99 ≤ 150"],
      result.operations.map((o) => [
        o.operation,
        String(o.requests),
        String(o.errors),
        o.p50Ms.toFixed(1),
        o.p95Ms.toFixed(1),
        o.p99Ms.toFixed(1),
        o.maxMs.toFixed(1),
        o.pass ? "PASS" : "FAIL",
      ]),
      [0, 7],
    ),
  );
  if (result.connectionsOpenedMs !== undefined) {
    say(
      `  the clients' ${String(CONCURRENCY)} connections were opened before the load, in ${String(result.connectionsOpenedMs)} ms`,
    );
  }
  if (result.serverCpuMsPerRequest !== undefined) {
    const system = result.serverSystemCpuMsPerRequest;
    say(
      `  server CPU per request: ${result.serverCpuMsPerRequest.toFixed(2)} ms` +
        (system === undefined ? "" : ` (${system.toFixed(2)} ms of it in the kernel)`),
    );
  }
  if (result.machineCpuMsPerRequest !== undefined && result.machineBusyShare !== undefined) {
    say(
      `  machine CPU per request (server, database, git, clients, kernel): ${result.machineCpuMsPerRequest.toFixed(2)} ms; cores busy ${String(Math.round(result.machineBusyShare * 100))} %`,
    );
  }
  const parts = result.cpuMsPerRequestByPart;
  if (parts !== undefined) {
    say(
      `    of which: server ${parts.server.toFixed(2)}, git and checks ${parts.serverChildren.toFixed(2)}, database processes ${parts.database.toFixed(2)}, clients ${parts.clients.toFixed(2)}, rest ${parts.rest.toFixed(2)}`,
    );
  }
  if (result.runningQueueMerged !== undefined) {
    say(
      `  the running queue had merged ${String(result.runningQueueMerged)} pull requests when the load ended`,
    );
  }
  if (result.pausedQueueSettledSeconds !== undefined) {
    say(
      `  every acknowledged submission was in the paused queue ${result.pausedQueueSettledSeconds.toFixed(1)} s after the load`,
    );
  }
  for (const [op, example] of Object.entries(result.errorExamples))
    say(`  errors, ${op}: ${example}`);
  say("  per second of the load (requests sent in it): requests, p50 / p99 / max ms");
  say(
    result.perSecond
      .map(
        (b) =>
          `    ${String(b.second).padStart(3)} s ${String(b.requests).padStart(6)}  ${b.p50Ms.toFixed(0)} / ${b.p99Ms.toFixed(0)} / ${b.maxMs.toFixed(0)}`,
      )
      .join("\n"),
  );
  say(
    `  slowest: ${result.slowest.map((r) => `${r.operation} sent at ${(r.at / 1000).toFixed(2)} s took ${r.ms.toFixed(0)} ms`).join("; ")}`,
  );
}

// ---------------------------------------------------------------------------------------------

async function benchDatabase(
  database: string,
  databaseUrl: string | undefined,
  template: string,
): Promise<DatabaseResult> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-mixed-"));
  const token = randomBytes(24).toString("hex");
  let server: RunningServer | undefined;
  try {
    const profileDir = process.env.BENCH_CPU_PROF;
    const serverLog = process.env.BENCH_SERVER_LOG;
    server = await startServer({
      token,
      dataDir,
      databaseUrl,
      // Every request's log line (when it arrived, how long the server took): the server's side
      // of the timeline.
      ...(serverLog
        ? { env: { LOG_LEVEL: "info" }, outputFile: path.resolve(`${serverLog}.${database}`) }
        : {}),
      ...(profileDir
        ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${path.resolve(profileDir)}`] }
        : {}),
    });
    say(`${database}: setting up (${String(PRS)} pull requests per queue)…`);
    const setup = await setUp(server, token, template);
    say(
      `${database}: set up in ${setup.setupSeconds.toFixed(1)} s; loading for ${String(SECONDS)} s…`,
    );
    const connectionsMs = COLD_START ? undefined : await openConnections(server.baseUrl);
    const cpuBefore = await processStats(server.pid);
    const partsBefore = await cpuByPart(server.pid);
    const machineBefore = await machineCpuSeconds();
    const samples = await runLoad(setup);
    const machineAfter = await machineCpuSeconds();
    const partsAfter = await cpuByPart(server.pid);
    const cpuAfter = await processStats(server.pid);
    const merged = await setup.api.call<{ pullRequests: unknown[] }>("local/listPullRequests", {
      repo: RUNNING,
      state: "merged",
    });
    const result = summarize(database, setup, samples);
    result.runningQueueMerged = merged.pullRequests.length;
    if (connectionsMs !== undefined) result.connectionsOpenedMs = Math.round(connectionsMs);
    if (cpuBefore && cpuAfter) {
      // The server's own CPU time per request: much less sensitive to a shared machine's load
      // than latencies (the database's processes and git are not counted).
      const perRequest = (seconds: number) =>
        Math.round((seconds * 1000 * 100) / samples.requests) / 100;
      result.serverCpuMsPerRequest = perRequest(cpuAfter.cpuSeconds - cpuBefore.cpuSeconds);
      result.serverSystemCpuMsPerRequest = perRequest(
        cpuAfter.systemCpuSeconds - cpuBefore.systemCpuSeconds,
      );
    }
    if (machineBefore && machineAfter) {
      const busy = machineAfter.busy - machineBefore.busy;
      result.machineCpuMsPerRequest = Math.round((busy * 1000 * 100) / samples.requests) / 100;
      result.machineBusyShare =
        Math.round((busy / (machineAfter.total - machineBefore.total)) * 100) / 100;
      if (partsBefore && partsAfter) {
        const ms = (seconds: number) => Math.round((seconds * 1000 * 100) / samples.requests) / 100;
        const part = (key: keyof CpuParts) => ms(partsAfter[key] - partsBefore[key]);
        const byPart = {
          server: part("server"),
          serverChildren: part("serverChildren"),
          database: part("database"),
          clients: part("clients"),
        };
        const counted = byPart.server + byPart.serverChildren + byPart.database + byPart.clients;
        result.cpuMsPerRequestByPart = {
          ...byPart,
          rest: Math.round((result.machineCpuMsPerRequest - counted) * 100) / 100,
        };
      }
    }
    result.pausedQueueSettledSeconds = await settled(setup.api, samples.submitted.paused);
    print(result);
    showServerOutput(`(${database})`, server.takeOutput());
    return result;
  } finally {
    agent.destroy();
    agent = newAgent();
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0] ?? 0;
  const calibrationMs = cpuCalibrationMs();
  say(
    `Machine speed: ${String(calibrationMs)} ms for the fixed one-thread workload (lower is faster)`,
  );
  const work = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-mixed-repo-"));
  const results: DatabaseResult[] = [];
  try {
    const template = path.join(work, "template.git");
    await generateRepository(template);
    for (const database of DATABASES) {
      results.push(
        database === "sqlite"
          ? await benchDatabase("SQLite", undefined, template)
          : await withThrowawayPostgres((url) => benchDatabase("PostgreSQL", url, template)),
      );
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const pass = results.every((r) => r.pass);
  say(
    `\nTarget: every operation's p99 within ${String(TARGET_P99_MS)} ms on ${results.map((r) => r.database).join(" and ")}: ${pass ? "PASS" : "FAIL"}`,
  );
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(
    RESULTS_FILE,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        node: process.version,
        machine: { ...machineInfo(loadBefore), cpuCalibrationMs: calibrationMs },
        load: { concurrency: CONCURRENCY, seconds: SECONDS, maxRequests: MAX_REQUESTS, prs: PRS },
        targetP99Ms: TARGET_P99_MS,
        databases: results,
        pass,
      },
      null,
      2,
    )}\n`,
  );
  say(`Wrote ${path.relative(ROOT, RESULTS_FILE)}`);
  if (!pass) process.exitCode = 1;
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `bench:mixed-load failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
}
