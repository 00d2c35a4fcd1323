/**
 * Dashboard benchmark (docs/benchmarks.md, "The dashboard"): at 20,000 tests with 700 runs each
 * and a queue of 200 pull requests, every page must render in under 100 ms (p95) and weigh under
 * 150 KB before compression, with the files it loads.
 *
 * Test health is seeded straight into the database (bench/support/test-health-seed.ts, the same
 * data as the lists' benchmark, spread over 28 days). The queue is real: a local repository whose
 * only check sleeps, 200 pull requests opened and submitted through the API to a running queue
 * (concurrency 4), so that four are being tested and the rest wait. Then a real `mainline serve`
 * child answers sequential page requests over loopback, signed by an `x-api-token` header as a
 * script reads pages (the page is the same as a session's, without its forms' tokens).
 *
 * Latency is measured by the client on loopback: the server's time plus the loopback round trip,
 * so an upper bound of the server time. Weight is the HTML plus every file the page loads
 * (scripts, styles, images of this server), before compression.
 *
 * Usage: npm run bench:dashboard   (BENCH_TESTS, default 20000; BENCH_PRS, default 200;
 *                                   BENCH_REQUESTS per page, default 60; BENCH_DB=sqlite|postgres)
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { openMigratedDatabase } from "../src/app.js";
import { git } from "../src/providers/local/git/git.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { FastImportStream } from "./support/fast-import.js";
import { machineInfo } from "./support/machine.js";
import {
  ROOT,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
  type RunningServer,
} from "./support/server.js";
import { formatTable } from "./support/table.js";
import { seedTestHealth } from "./support/test-health-seed.js";

const TESTS = integerFromEnv("BENCH_TESTS", 20_000, 100, 1_000_000);
const PRS = integerFromEnv("BENCH_PRS", 200, 10, 5_000);
const REQUESTS = integerFromEnv("BENCH_REQUESTS", 60, 10, 10_000);
const DATABASES = listFromEnv("BENCH_DB", "sqlite,postgres").map((name) => {
  if (name !== "sqlite" && name !== "postgres") {
    throw new Error(`BENCH_DB takes sqlite and/or postgres (got "${name}").`);
  }
  return name;
});
/** 28 days × 25 uploads: 700 runs of every test. */
const DAYS = 28;
const RUNS_PER_DAY = 25;
const TARGET_P95_MS = 100;
const TARGET_BYTES = 150 * 1024;
const ORG = "bench";
const TESTS_REPO = { host: "github.com", owner: "bench", name: "app" };
const QUEUE_REPO = { host: "local", owner: "bench", name: "service" };
const QUEUE_CONCURRENCY = 4;
const CHECK_CONFIG = ["ci:", "  checks:", "    - name: check", '      run: "sleep 3600"', ""].join(
  "\n",
);
const RESULTS_FILE = path.join(ROOT, "bench", "results", "dashboard.json");

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

async function call<T>(server: RunningServer, token: string, operation: string, body: object) {
  const response = await fetch(`${server.baseUrl}/v1/${operation}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-token": token },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${operation}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

/** A bare repository: main with `.mainline.yml`, and branches `pr-k` each adding its own file. */
async function generateRepository(dir: string): Promise<void> {
  const stream = new FastImportStream(1);
  stream.commit("refs/heads/main", 1, null, "Start");
  stream.modify(".mainline.yml", CHECK_CONFIG);
  stream.modify("README.md", "bench\n");
  for (let k = 1; k <= PRS; k++) {
    stream.commit(`refs/heads/pr-${String(k)}`, 1 + k, 1, `Change ${String(k)}`);
    stream.modify(`changes/${String(k)}.txt`, `pull request ${String(k)}\n`);
  }
  await git(["init", "--quiet", "--bare", "--initial-branch=main", dir]);
  await git(["fast-import", "--quiet", "--done"], { cwd: dir, input: stream.text() });
}

/** The queue: a local repository, 200 pull requests submitted, four of them being tested. */
async function setUpQueue(server: RunningServer, token: string, template: string) {
  const { remoteUrl } = await call<{ remoteUrl: string }>(server, token, "local/createRepository", {
    repo: QUEUE_REPO,
  });
  await git(["push", "--quiet", remoteUrl, "refs/heads/*:refs/heads/*"], { cwd: template });
  const queue = { repo: QUEUE_REPO, targetBranch: "main" };
  await call(server, token, "createQueue", queue);
  await call(server, token, "updateQueue", {
    ...queue,
    concurrency: QUEUE_CONCURRENCY,
    batch: false,
  });
  const numbers: number[] = [];
  for (let k = 1; k <= PRS; k++) {
    const { number } = await call<{ number: number }>(server, token, "local/openPullRequest", {
      repo: QUEUE_REPO,
      head: `pr-${String(k)}`,
      base: "main",
      title: `Change ${String(k)}: a realistic title of some length`,
      author: `dev${String(k % 7)}`,
    });
    numbers.push(number);
  }
  for (const number of numbers) {
    await call(server, token, "submitPullRequest", {
      repo: QUEUE_REPO,
      targetBranch: "main",
      pr: { number },
    });
  }
  // Wait until the queue tests its first pull requests.
  for (let attempt = 0; attempt < 600; attempt++) {
    const queued = await call<{ enqueuedPullRequests?: { state?: string }[] }>(
      server,
      token,
      "getQueue",
      queue,
    );
    const testing = (queued.enqueuedPullRequests ?? []).filter(
      (pr) => (pr.state ?? "").toUpperCase() === "TESTING",
    ).length;
    if (testing >= QUEUE_CONCURRENCY) break;
    await delay(100);
  }
  return numbers;
}

interface PageResult {
  page: string;
  url: string;
  requests: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
  /** The page's first view (caches cold), not among the timed requests. */
  firstMs: number;
  htmlBytes: number;
  filesBytes: number;
  totalBytes: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function getPage(server: RunningServer, token: string, url: string): Promise<string> {
  const response = await fetch(`${server.baseUrl}${url}`, {
    headers: { "x-api-token": token, accept: "text/html" },
    redirect: "manual",
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${text.slice(0, 300)}`);
  return text;
}

/** The files a page loads from this server: scripts, stylesheets, images (each once). */
async function filesBytes(server: RunningServer, html: string): Promise<number> {
  const found = new Set<string>();
  for (const match of html.matchAll(/<(?:script|link|img)\b[^>]*?\b(?:src|href)="([^"]+)"/g)) {
    const tag = match[0];
    const url = match[1] ?? "";
    if (tag.startsWith("<link") && !/rel="(?:stylesheet|icon|modulepreload)"/.test(tag)) continue;
    if (url.startsWith("/")) found.add(url.replaceAll("&amp;", "&"));
  }
  let total = 0;
  for (const url of found) {
    const response = await fetch(`${server.baseUrl}${url}`);
    total += (await response.arrayBuffer()).byteLength;
  }
  return total;
}

async function measurePage(
  server: RunningServer,
  token: string,
  page: string,
  url: string,
): Promise<PageResult> {
  const first = performance.now();
  const html = await getPage(server, token, url);
  const firstMs = performance.now() - first;
  for (let i = 0; i < 5; i++) await getPage(server, token, url);
  const latencies: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const started = performance.now();
    await getPage(server, token, url);
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  const htmlBytes = Buffer.byteLength(html);
  const files = await filesBytes(server, html);
  return {
    page,
    url,
    requests: REQUESTS,
    p50Ms: round(percentile(latencies, 50)),
    p95Ms: round(percentile(latencies, 95)),
    maxMs: round(latencies.at(-1) ?? 0),
    firstMs: round(firstMs),
    htmlBytes,
    filesBytes: files,
    totalBytes: htmlBytes + files,
  };
}

interface DatabaseResult {
  database: string;
  runs: number;
  seedSeconds: number;
  pages: PageResult[];
}

async function benchDatabase(
  name: string,
  databaseUrl: string | undefined,
  template: string,
): Promise<DatabaseResult> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-dashboard-"));
  const token = randomBytes(24).toString("hex");
  const now = Date.now();
  try {
    say(`${name}: seeding ${TESTS} tests × ${DAYS * RUNS_PER_DAY} uploads…`);
    const t0 = performance.now();
    const database = await openMigratedDatabase({ url: databaseUrl, dataDir });
    let runs: number;
    let testId: string;
    try {
      runs = await seedTestHealth(database, token, now, {
        tests: TESTS,
        days: DAYS,
        runsPerDay: RUNS_PER_DAY,
        repo: TESTS_REPO,
        log: say,
      });
      const flaky = await database.db
        .selectFrom("testCases")
        .select("id")
        .where("status", "=", "flaky")
        .orderBy("id")
        .executeTakeFirstOrThrow();
      testId = flaky.id;
    } finally {
      await database.close();
    }
    const seedSeconds = Math.round((performance.now() - t0) / 1000);
    say(`  ${runs} runs stored in ${seedSeconds} s`);
    const server = await startServer({ token, dataDir, databaseUrl });
    try {
      const numbers = await setUpQueue(server, token, template);
      say(`  queue of ${numbers.length} pull requests submitted`);
      const repo = "repo=bench%2Fapp";
      const queue = "repo=bench%2Fservice&host=local&branch=main";
      const pages: [string, string][] = [
        ["home", `/${ORG}`],
        ["tests", `/${ORG}/flaky-tests`],
        ["repository", `/${ORG}/flaky-tests/repo?${repo}`],
        ["repository: flaky", `/${ORG}/flaky-tests/repo?${repo}&status=flaky`],
        ["repository: by PRs impacted", `/${ORG}/flaky-tests/repo?${repo}&sort=prs_impacted`],
        ["repository: text, page 3", `/${ORG}/flaky-tests/repo?${repo}&q=module1&page=3`],
        ["test", `/${ORG}/flaky-tests/test/${testId}?${repo}`],
        ["uploads", `/${ORG}/flaky-tests/uploads?${repo}`],
        ["merge queues", `/${ORG}/merge-queue`],
        ["queue", `/${ORG}/merge-queue/queue?${queue}`],
        ["pull request (testing)", `/${ORG}/merge-queue/pr/${String(numbers[0])}?${queue}`],
        ["pull request (waiting)", `/${ORG}/merge-queue/pr/${String(numbers.at(-1))}?${queue}`],
        ["queue health (30 days)", `/${ORG}/merge-queue/health?${queue}&range=30d`],
      ];
      const results: PageResult[] = [];
      for (const [page, url] of pages) {
        const result = await measurePage(server, token, page, url);
        say(
          `  ${page}: first ${result.firstMs} ms, p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms, ${Math.round(result.totalBytes / 1024)} KB`,
        );
        results.push(result);
      }
      showServerOutput("during the runs", server.takeOutput());
      // Stop the queue's sleeping checks before the server goes.
      await call(server, token, "updateQueue", {
        repo: QUEUE_REPO,
        targetBranch: "main",
        state: "paused",
      });
      return { database: name, runs, seedSeconds, pages: results };
    } finally {
      await server.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

function table(results: readonly DatabaseResult[]): string {
  const header = [
    "database",
    "page",
    "first ms",
    "p50 ms",
    "p95 ms",
    "max ms",
    "HTML KB",
    "total KB",
    "target",
  ];
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  const rows = results.flatMap((r) =>
    r.pages.map((p) => [
      r.database,
      p.page,
      String(p.firstMs),
      String(p.p50Ms),
      String(p.p95Ms),
      String(p.maxMs),
      kb(p.htmlBytes),
      kb(p.totalBytes),
      p.p95Ms < TARGET_P95_MS && p.totalBytes < TARGET_BYTES ? "PASS" : "FAIL",
    ]),
  );
  return formatTable(header, rows, [0, 1]);
}

async function main(): Promise<void> {
  const load = os.loadavg()[0] ?? 0;
  say(
    `Dashboard: ${TESTS} tests × ${DAYS * RUNS_PER_DAY} runs, a queue of ${PRS} pull requests, ${REQUESTS} sequential requests per page.`,
  );
  const work = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-dashboard-git-"));
  const results: DatabaseResult[] = [];
  try {
    const template = path.join(work, "template.git");
    await generateRepository(template);
    for (const name of DATABASES) {
      if (name === "sqlite") results.push(await benchDatabase("sqlite", undefined, template));
      else {
        results.push(
          await withThrowawayPostgres((url) => benchDatabase("postgresql", url, template)),
        );
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  say("");
  say(table(results));
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(
    RESULTS_FILE,
    `${JSON.stringify(
      {
        measuredAt: new Date().toISOString(),
        machine: { ...machineInfo(load), node: process.version },
        tests: TESTS,
        runsPerTest: DAYS * RUNS_PER_DAY,
        pullRequests: PRS,
        targetP95Ms: TARGET_P95_MS,
        targetBytes: TARGET_BYTES,
        results,
      },
      null,
      2,
    )}\n`,
  );
  const failed = results.some((r) =>
    r.pages.some((p) => p.p95Ms >= TARGET_P95_MS || p.totalBytes >= TARGET_BYTES),
  );
  if (failed) process.exitCode = 1;
}

await main();
