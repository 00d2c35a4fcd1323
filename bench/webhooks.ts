/**
 * Webhook benchmark (docs/benchmarks.md, "GitHub webhooks"): how fast `POST /webhooks/github`
 * answers GitHub while deliveries pour in, next to a trivial authenticated route, on SQLite and on
 * PostgreSQL. Each answer waits for the delivery's durable insert (ADR 0021), and the server's
 * inbox worker handles the deliveries meanwhile, so the figure is the acknowledgement under load.
 *
 * A real `mainline serve` child process per database, with the GitHub App configured against the
 * fake GitHub (in this process); autocannon drives it over loopback with 10 connections, every
 * request a distinct delivery (a recorded `pull_request` payload, signed as GitHub signs): as fast
 * as the server answers (saturated), and at a steady 50 deliveries a second (a busy
 * organization's pace, with room to spare). Rounds alternate the routes; medians over the rounds
 * are reported, each webhook p99 against the issue's 50 ms target. First, the disk's own flush
 * time at the steady pace: the floor under an answer that waits for the disk.
 *
 * Usage: npm run bench:webhooks   (BENCH_SECONDS=<1..30>: seconds per route per round, default 3;
 *                                  BENCH_ROUNDS=<1..30>: rounds, default 3)
 */
import { createHmac, randomBytes } from "node:crypto";
import { appendFileSync, closeSync, fdatasyncSync, openSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { FakeGitHub } from "../test/helpers/fake-github/index.js";
import { gitHubAppEnv } from "../test/helpers/fake-github/app-env.js";
import { ROOT, showServerOutput, startServer, withThrowawayPostgres } from "./support/server.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "webhooks.json");
const CONNECTIONS = 10;
const MEASURED_SECONDS = fromEnv(process.env.BENCH_SECONDS, 3);
const ROUNDS = fromEnv(process.env.BENCH_ROUNDS, 3);
/** The issue's bar for the answer to GitHub (at the steady pace). */
const TARGET_P99_MS = 50;
const STEADY_PER_SECOND = 50;

function fromEnv(value: string | undefined, fallback: number): number {
  const parsed = Number(value);
  return Number.isInteger(parsed) && parsed >= 1 && parsed <= 30 ? parsed : fallback;
}

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

interface Measured {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
}

async function load(options: autocannon.Options): Promise<Measured> {
  const result = await autocannon({
    connections: CONNECTIONS,
    duration: MEASURED_SECONDS,
    ...options,
  });
  if (result.non2xx !== 0 || result.errors !== 0) {
    throw new Error(
      `${options.url}: ${result.non2xx} non-2xx (${JSON.stringify(result.statusCodeStats)}), ${result.errors} errors`,
    );
  }
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests: result.requests.total,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function summary(runs: Measured[]): Measured {
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
  };
}

async function benchDatabase(database: "sqlite" | "postgresql", databaseUrl?: string) {
  process.stdout.write(`${database}:\n`);
  const gh = await FakeGitHub.start({ seed: 1 });
  const app = gh.createApp({ slug: "mainline-bench" });
  const body = await payload();
  const signature = `sha256=${createHmac("sha256", app.webhookSecret).update(body).digest("hex")}`;
  const token = randomBytes(32).toString("hex");
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-"));
  try {
    const server = await startServer({
      token,
      dataDir,
      databaseUrl,
      env: gitHubAppEnv(gh.url, app),
    });
    let sequence = 0;
    const webhook: autocannon.Options = {
      url: `${server.baseUrl}/webhooks/github`,
      method: "POST",
      requests: [
        {
          body,
          setupRequest: (request) => ({
            ...request,
            headers: {
              ...request.headers,
              "content-type": "application/json",
              "x-github-event": "pull_request",
              "x-github-delivery": `bench-${process.pid}-${sequence++}`,
              "x-hub-signature-256": signature,
            },
          }),
        },
      ],
    };
    const whoami: autocannon.Options = {
      url: `${server.baseUrl}/v1/whoami`,
      method: "POST",
      headers: { "content-type": "application/json", "x-api-token": token },
      body: "{}",
    };
    try {
      // Warm-up of both routes.
      await load({ ...webhook, duration: 1 });
      await load({ ...whoami, duration: 1 });
      const saturated: Measured[] = [];
      const steady: Measured[] = [];
      const trivial: Measured[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        process.stdout.write(`  round ${round}/${ROUNDS}…\n`);
        saturated.push(await load(webhook));
        steady.push(await load({ ...webhook, overallRate: STEADY_PER_SECOND }));
        trivial.push(await load(whoami));
      }
      return {
        database,
        webhook: summary(saturated),
        steadyWebhook: summary(steady),
        whoami: summary(trivial),
      };
    } finally {
      showServerOutput("during the runs", server.takeOutput());
      await server.stop();
    }
  } finally {
    await gh.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * What the disk gives an answer that waits for it: 20 KB appended and flushed (`fdatasync`, as a
 * commit does) 250 times at the steady pace, in the temporary directory the servers use. With
 * other work on the same disk, this is the floor under the webhook's p99 at a steady pace.
 */
async function diskFlushes(): Promise<{ p50Ms: number; p99Ms: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-disk-"));
  const fd = openSync(path.join(dir, "wal"), "a");
  const block = Buffer.alloc(20 * 1024, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < 250; i++) {
      const started = performance.now();
      appendFileSync(fd, block);
      fdatasyncSync(fd);
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 1000 / STEADY_PER_SECOND));
    }
  } finally {
    closeSync(fd);
    await rm(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round((times[Math.floor(q * (times.length - 1))] ?? 0) * 10) / 10;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

const loadAverage = os.loadavg()[0] ?? 0;
const disk = await diskFlushes();
process.stdout.write(
  `the disk: a 20 KB append + fdatasync at ${STEADY_PER_SECOND}/s, p50 ${disk.p50Ms} ms, p99 ${disk.p99Ms} ms\n`,
);
const results = [
  await benchDatabase("sqlite"),
  await withThrowawayPostgres((url) => benchDatabase("postgresql", url)),
];
const row = (name: string, m: Measured) =>
  `${name} ${String(m.requestsPerSecond).padStart(5)} req/s  p50 ${String(m.p50Ms).padStart(3)} ms  p99 ${String(m.p99Ms).padStart(3)} ms`;
for (const r of results) {
  process.stdout.write(
    `${r.database.padEnd(10)}  ${row("webhook, saturated", r.webhook)}  |  ${row(`webhook at ${STEADY_PER_SECOND}/s`, r.steadyWebhook)}  |  ${row("whoami", r.whoami)}\n`,
  );
}
const verdict = (m: Measured) =>
  `${String(m.p99Ms).padStart(4)} ms ${m.p99Ms < TARGET_P99_MS ? "met    " : "NOT met"}`;
process.stdout.write(`webhook answer p99 against the ${TARGET_P99_MS} ms target:\n`);
for (const r of results) {
  process.stdout.write(
    `  ${r.database.padEnd(10)}  saturated (${CONNECTIONS} connections): ${verdict(r.webhook)}  |  steady ${STEADY_PER_SECOND}/s: ${verdict(r.steadyWebhook)}\n`,
  );
}
const pass = results.every((r) => r.steadyWebhook.p99Ms < TARGET_P99_MS);
const passSaturated = results.every((r) => r.webhook.p99Ms < TARGET_P99_MS);
process.stdout.write(
  `target met on both databases: at ${STEADY_PER_SECOND}/s ${pass ? "yes" : "no"}, saturated ${passSaturated ? "yes" : "no"} (load average before: ${loadAverage.toFixed(1)})\n`,
);
await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
await writeFile(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      connections: CONNECTIONS,
      secondsPerRound: MEASURED_SECONDS,
      rounds: ROUNDS,
      loadAverageBefore: Math.round(loadAverage * 10) / 10,
      diskFlush: disk,
      targetP99Ms: TARGET_P99_MS,
      pass,
      passSaturated,
      results,
    },
    null,
    2,
  )}\n`,
);
