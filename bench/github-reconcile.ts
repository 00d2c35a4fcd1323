/**
 * GitHub reconcile and webhook benchmark (docs/benchmarks.md, "GitHub"), on SQLite and on
 * PostgreSQL. The fake GitHub runs in a process of its own (bench/support/fake-github-process.ts):
 * one repository with 1,000 open pull requests and the App installed on it.
 *
 * 1. Reconcile: Mainline's services in this process, the installation linked to an organization
 *    with a queue on the repository holding 20 of the pull requests. A first pass reads
 *    everything (and sets the ETags); then `BENCH_PASSES` passes while nothing changed: the
 *    requests made (by GitHub's status), the rate-limit points spent (GitHub's `GET /rate_limit`,
 *    free, before and after), wall time and this process's CPU per pass (the medians). Then one
 *    pass after a push to the queue's branch.
 * 2. Webhook answer time: a real `mainline serve` per database, configured with the App against
 *    the fake; `BENCH_DELIVERIES` distinct signed `pull_request` deliveries (a recorded
 *    `pull_request.opened` payload) at concurrency 10 on keep-alive connections, after 200 of
 *    warm-up; p50/p95/p99 of the answer as the sender sees it, and the server's CPU.
 *
 * Usage: npm run bench:github-reconcile   (BENCH_PULLS=<100..5000>, default 1000;
 *   BENCH_PASSES=<1..50>, default 10; BENCH_DELIVERIES=<100..20000>, default 2000;
 *   BENCH_PARTS=reconcile,webhooks (default both); BENCH_DATABASES=sqlite,postgresql (default
 *   both); BENCH_CPU_PROFILE=<dir>: the webhook servers write V8 CPU profiles there)
 */
import { fork } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createServices, openMigratedDatabase } from "../src/app.js";
import { loadGitHubConfig } from "../src/config.js";
import { MergeQueueStore } from "../src/db/stores/merge-queues.js";
import { initialConfiguration } from "../src/mergequeue/settings.js";
import { gitHubAppEnv } from "../test/helpers/fake-github/app-env.js";
import type { FakeRequest, FakeSetup } from "./support/fake-github-process.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import {
  ROOT,
  processStats,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
} from "./support/server.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "github-reconcile.json");
const PULLS = integerFromEnv("BENCH_PULLS", 1000, 100, 5000);
const PASSES = integerFromEnv("BENCH_PASSES", 10, 1, 50);
const DELIVERIES = integerFromEnv("BENCH_DELIVERIES", 2000, 100, 20_000);
const QUEUED = 20;
const CONCURRENCY = 10;
const WARM_UP = 200;
const TARGET_P99_MS = 50;
const PARTS = listFromEnv("BENCH_PARTS", "reconcile,webhooks");
const DATABASES = listFromEnv("BENCH_DATABASES", "sqlite,postgresql");
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE;

// ---- the fake GitHub, in its own process -------------------------------------------------------

const child = fork(path.join(ROOT, "bench", "support", "fake-github-process.ts"), [], {
  execArgv: ["--import", "tsx"],
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
let nextId = 0;
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
child.on("message", (message: { id: number; result?: unknown; error?: string }) => {
  const waiting = pending.get(message.id);
  pending.delete(message.id);
  if (message.error !== undefined) waiting?.reject(new Error(message.error));
  else waiting?.resolve(message.result);
});
function fake<T>(request: FakeRequest): Promise<T> {
  const id = ++nextId;
  return new Promise<T>((resolve, reject) => {
    pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    child.send({ id, request });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const round1 = (n: number) => Math.round(n * 10) / 10;

// ---- 1. reconcile ------------------------------------------------------------------------------

interface RequestsSeen {
  byOperation: Record<string, number>;
  statuses: Record<string, number>;
}

async function benchReconcile(setup: FakeSetup, database: string, databaseUrl?: string) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-reconcile-"));
  const handle = await openMigratedDatabase(
    { url: databaseUrl ?? path.join(dataDir, "mainline.db"), dataDir },
    { info: () => undefined, error: (m: string) => process.stderr.write(`${m}\n`) },
  );
  const config = loadGitHubConfig(gitHubAppEnv(setup.url, setup.app));
  if (!config) throw new Error("no GitHub configuration");
  const services = createServices(handle, {
    dataDir,
    github: config,
    githubSyncIntervalMs: 0,
    githubReconcileIntervalMs: 0,
  });
  const github = services.github;
  if (!github) throw new Error("no GitHub provider");
  try {
    const { organization } = await services.organizations.createOrganizationWithToken("bench");
    await github.installations.syncAll(0);
    await github.installations.linkAsOperator(setup.installationId, "bench");
    const ref = { host: "github.com", ...setup.repo };
    const repository = await services.stores.repositories.ensure(organization.id, ref, Date.now());
    const queueId = `bench-${randomBytes(4).toString("hex")}`;
    const { db } = handle;
    await new MergeQueueStore(db, handle.dialect).insert({
      id: queueId,
      repositoryId: repository.id,
      targetBranch: "main",
      configuration: initialConfiguration({}),
      createdAt: Date.now(),
    });
    // The queue holds 20 of the pull requests, at their heads.
    const client = github.app.installation(setup.installationId);
    const { data: heads } = await client.request("GET /repos/{owner}/{repo}/pulls", {
      owner: setup.repo.owner,
      repo: setup.repo.name,
      state: "open",
      per_page: QUEUED,
    });
    for (const [i, pull] of (heads as { number: number; head: { sha: string } }[]).entries()) {
      await db
        .insertInto("mqEntries")
        .values({
          id: `${queueId}-${i}`,
          queueId,
          seq: i + 1,
          prNumber: pull.number,
          prTitle: `PR ${pull.number}`,
          prSha: pull.head.sha,
          prHeadBranch: `feature-${i}`,
          prBaseBranch: "main",
          prAuthor: "alice",
          state: "pending",
          stateChangedAt: Date.now(),
          submittedAt: Date.now(),
          concludedAt: null,
          priorityValue: 100,
          usedDefaultPriority: 1,
          noBatch: 0,
          readiness: "{}",
          lastReason: "submitted",
        })
        .execute();
    }
    const rateLimitUsed = async () => {
      const { data } = await client.request("GET /rate_limit");
      return (data as { resources: { core: { used: number } } }).resources.core.used;
    };

    // The first pass: everything read in full, the queue's pull requests re-read.
    const measure = async () => {
      const used = await rateLimitUsed();
      const mark = await fake<number>({ op: "mark" });
      const fakeCpu = await fake<{ cpuMs: number }>({ op: "cpu" });
      const cpu = process.cpuUsage();
      const started = performance.now();
      const report = await github.reconciler.pass();
      const wallMs = performance.now() - started;
      const { user, system } = process.cpuUsage(cpu);
      const fakeCpuAfter = await fake<{ cpuMs: number }>({ op: "cpu" });
      const seen = await fake<RequestsSeen>({ op: "requests", since: mark });
      delete seen.byOperation["rate-limit/get"];
      return {
        wallMs: round1(wallMs),
        cpuMs: round1((user + system) / 1000),
        fakeGitHubCpuMs: fakeCpuAfter.cpuMs - fakeCpu.cpuMs,
        requests: report.requests,
        notModified: report.notModified,
        statuses: seen.statuses,
        byOperation: seen.byOperation,
        rateLimitPoints: (await rateLimitUsed()) - used,
        changes: report.changes.length,
        failed: report.failed,
      };
    };
    const first = await measure();
    const quiet = [];
    for (let i = 0; i < PASSES; i++) quiet.push(await measure());
    await fake({ op: "push", branch: "main" });
    const afterPush = await measure();
    const failures = [first, ...quiet, afterPush].filter((m) => m.failed > 0).length;
    if (failures > 0) throw new Error(`${failures} passes could not read the repository`);
    return {
      database,
      first,
      nothingChanged: {
        passes: PASSES,
        wallMsMedian: median(quiet.map((q) => q.wallMs)),
        cpuMsMedian: median(quiet.map((q) => q.cpuMs)),
        fakeGitHubCpuMsMedian: median(quiet.map((q) => q.fakeGitHubCpuMs)),
        requests: quiet[0]?.requests ?? 0,
        notModified: quiet[0]?.notModified ?? 0,
        statuses: quiet[0]?.statuses ?? {},
        rateLimitPoints: quiet.reduce((sum, q) => sum + q.rateLimitPoints, 0),
        changes: quiet.reduce((sum, q) => sum + q.changes, 0),
      },
      afterPush,
    };
  } finally {
    await github.stop();
    await handle.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

// ---- 2. webhook answer time --------------------------------------------------------------------

/** A recorded `pull_request.opened` payload, without an installation (nothing to read back). */
async function payload(): Promise<string> {
  const require = createRequire(import.meta.url);
  const definitions = JSON.parse(
    await readFile(require.resolve("@octokit/webhooks-examples"), "utf8"),
  ) as { name: string; examples: Record<string, unknown>[] }[];
  const example = definitions
    .find((d) => d.name === "pull_request")
    ?.examples.find((e) => e.action === "opened");
  if (!example) throw new Error("no recorded pull_request.opened payload");
  return JSON.stringify({ ...example, installation: undefined });
}

async function fire(
  baseUrl: string,
  body: string,
  signature: string,
  count: number,
  prefix: string,
): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const url = new URL(`${baseUrl}/webhooks/github`);
  const latencies: number[] = [];
  let next = 0;
  const send = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const request = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "x-github-event": "pull_request",
            "x-github-delivery": `${prefix}-${n}`,
            "x-hub-signature-256": signature,
          },
        },
        (response) => {
          response.resume();
          response.on("end", () => {
            if (response.statusCode !== 202) {
              reject(new Error(`delivery ${n}: HTTP ${response.statusCode}`));
              return;
            }
            latencies.push(performance.now() - started);
            resolve();
          });
        },
      );
      request.on("error", reject);
      request.end(body);
    });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await send(next++);
    }),
  );
  agent.destroy();
  return latencies;
}

async function benchWebhooks(setup: FakeSetup, database: string, databaseUrl?: string) {
  const body = await payload();
  const signature = `sha256=${createHmac("sha256", setup.app.webhookSecret).update(body).digest("hex")}`;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-webhooks-"));
  try {
    const server = await startServer({
      token: randomBytes(32).toString("hex"),
      dataDir,
      databaseUrl,
      ...(CPU_PROFILE
        ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${path.resolve(CPU_PROFILE)}`] }
        : {}),
      env: gitHubAppEnv(setup.url, setup.app),
    });
    try {
      const prefix = `bench-${database}-${process.pid}`;
      await fire(server.baseUrl, body, signature, WARM_UP, `${prefix}-warm`);
      const before = await processStats(server.pid);
      const started = performance.now();
      const latencies = await fire(server.baseUrl, body, signature, DELIVERIES, prefix);
      const seconds = (performance.now() - started) / 1000;
      const after = await processStats(server.pid);
      const sorted = [...latencies].sort((a, b) => a - b);
      return {
        database,
        deliveries: DELIVERIES,
        perSecond: Math.round(DELIVERIES / seconds),
        p50Ms: round1(percentile(sorted, 50)),
        p95Ms: round1(percentile(sorted, 95)),
        p99Ms: round1(percentile(sorted, 99)),
        maxMs: round1(sorted.at(-1) ?? 0),
        serverCpuSeconds: before && after ? round1(after.cpuSeconds - before.cpuSeconds) : null,
      };
    } finally {
      showServerOutput("during the deliveries", server.takeOutput());
      await server.stop();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

// ---- run ---------------------------------------------------------------------------------------

const loadAverage = os.loadavg()[0] ?? 0;
try {
  process.stdout.write(`fake GitHub: ${PULLS} open pull requests…\n`);
  const setup = await fake<FakeSetup>({ op: "setup", pulls: PULLS });
  process.stdout.write(`  set up in ${setup.setupMs} ms\n`);
  const both = async <T>(run: (database: string, url?: string) => Promise<T>): Promise<T[]> => [
    ...(DATABASES.includes("sqlite") ? [await run("sqlite")] : []),
    ...(DATABASES.includes("postgresql")
      ? [await withThrowawayPostgres((url) => run("postgresql", url))]
      : []),
  ];
  const reconcile = PARTS.includes("reconcile")
    ? await both((database, url) => benchReconcile(setup, database, url))
    : [];
  for (const r of reconcile) {
    const q = r.nothingChanged;
    process.stdout.write(
      `reconcile ${r.database.padEnd(10)} first pass: ${r.first.requests} requests, ${r.first.rateLimitPoints} points, ${r.first.wallMs} ms, ${r.first.changes} changes | nothing changed: ${q.requests} requests (${JSON.stringify(q.statuses)}), ${q.rateLimitPoints} points over ${q.passes} passes, ${q.wallMsMedian} ms, CPU ${q.cpuMsMedian} ms (the fake's ${q.fakeGitHubCpuMsMedian} ms), ${q.changes} changes | after a push to main: ${r.afterPush.requests} requests, ${r.afterPush.rateLimitPoints} points, ${r.afterPush.changes} changes\n`,
    );
  }
  const webhooks = PARTS.includes("webhooks")
    ? await both((database, url) => benchWebhooks(setup, database, url))
    : [];
  for (const w of webhooks) {
    process.stdout.write(
      `webhooks  ${w.database.padEnd(10)} ${w.deliveries} deliveries at concurrency ${CONCURRENCY}: ${w.perSecond}/s, p50 ${w.p50Ms} ms, p95 ${w.p95Ms} ms, p99 ${w.p99Ms} ms (target ${TARGET_P99_MS} ms: ${w.p99Ms < TARGET_P99_MS ? "met" : "NOT met"}), max ${w.maxMs} ms, server CPU ${w.serverCpuSeconds} s (${w.serverCpuSeconds === null ? "?" : ((w.serverCpuSeconds * 1000) / w.deliveries).toFixed(2)} ms a delivery)\n`,
    );
  }
  const pass = webhooks.every((w) => w.p99Ms < TARGET_P99_MS);
  const free = reconcile.every((r) => r.nothingChanged.rateLimitPoints === 0);
  process.stdout.write(
    `nothing-changed reconcile spends no rate limit: ${free ? "yes" : "no"}; webhook p99 below ${TARGET_P99_MS} ms on both databases: ${pass ? "yes" : "no"} (load average before: ${loadAverage.toFixed(1)})\n`,
  );
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(
    RESULTS_FILE,
    `${JSON.stringify(
      {
        measuredAt: new Date().toISOString(),
        loadAverageBefore: round1(loadAverage),
        pulls: PULLS,
        queued: QUEUED,
        concurrency: CONCURRENCY,
        targetP99Ms: TARGET_P99_MS,
        reconcile,
        webhooks,
        pass: pass && free,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await fake({ op: "close" }).catch(() => undefined);
  child.disconnect();
}
