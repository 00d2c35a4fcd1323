/**
 * Outbound webhook benchmark (docs/benchmarks.md, "Outbound webhooks", issue 36), per database
 * (BENCH_DATABASES, like bench:ingest): a real `mainline serve` (MAINLINE_WEBHOOKS_ALLOW_PRIVATE=1)
 * and 20 endpoints pointing at one local receiver that answers 204.
 * 1. Throughput: a burst of BENCH_EVENTS quarantine overrides through the API, each on its own
 *    test (own subject: nothing waits for ordering), every endpoint subscribed → deliveries/s
 *    from the first override to the last delivery; events/s = deliveries/s ÷ 20.
 * 2. Latency: BENCH_CHANGES overrides at BENCH_RATE a second; from the override's request to its
 *    first and to its 20th delivery, p50/p99.
 * 3. Ingestion cost (bench/support/outbox-ingest.ts): runs/s of a small generated workload with
 *    20 endpoints subscribed to the status events against none, alternated (A B A B), each phase
 *    a fresh server; the ratio of medians against the ≤ 5 % slower target.
 *
 * Usage: npm run bench:webhooks-outbox   (BENCH_DATABASES "sqlite,postgresql", BENCH_EVENTS 200,
 *   BENCH_CHANGES 240, BENCH_RATE 3, BENCH_INGEST_ROUNDS 2, BENCH_INGEST_UPLOADS 60,
 *   BENCH_INGEST_TESTS 500, BENCH_PARTS "delivery,ingest")
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { repoFullName } from "../src/organizations/repositories.js";
import { testId } from "../src/testhealth/identity.js";
import { writeBundleBuffer } from "../src/testhealth/bundle/index.js";
import { Api } from "./support/api.js";
import { integerFromEnv, listFromEnv } from "./support/env.js";
import { cpuCalibrationMs, machineInfo } from "./support/machine.js";
import { benchIngestCost, type IngestCost } from "./support/outbox-ingest.js";
import {
  ROOT,
  processStats,
  showServerOutput,
  startServer,
  withThrowawayPostgres,
} from "./support/server.js";
import { startBenchReceiver, type BenchReceiver } from "./support/webhook-receiver.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "webhooks-outbox.json");
type DatabaseName = "sqlite" | "postgresql";
const DATABASES = listFromEnv("BENCH_DATABASES", "sqlite,postgresql").map((name): DatabaseName => {
  if (name === "sqlite" || name === "postgresql") return name;
  throw new Error(`BENCH_DATABASES takes sqlite and/or postgresql (got "${name}").`);
});
const PARTS = listFromEnv("BENCH_PARTS", "delivery,ingest");
const ENDPOINTS = 20;
const EVENTS = integerFromEnv("BENCH_EVENTS", 200, 10, 10_000);
const CHANGES = integerFromEnv("BENCH_CHANGES", 240, 10, 10_000);
const RATE = integerFromEnv("BENCH_RATE", 3, 1, 1000);
const BURST_CLIENTS = 8;
const WARM_UP = 10;
const DELIVERY_TIMEOUT_MS = 180_000;
const OVERRIDE_EVENT = "test_case.quarantining_setting_changed";
const ORG = "bench";
const REPO = { host: "github.com", owner: "bench", name: "app" };
const SUITE = "bench";
const CLASSNAME = "bench.Outbox";
const FILE = "test/outbox.test.ts";

const say = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
const round = (value: number, digits = 1): number =>
  Math.round(value * 10 ** digits) / 10 ** digits;

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

const nameOf = (index: number): string => `override_${String(index)}`;

function idOf(index: number): string {
  return testId({
    org: ORG,
    repoFullName: repoFullName(REPO),
    file: FILE,
    classname: CLASSNAME,
    parent: SUITE,
    name: nameOf(index),
  });
}

/** One upload that creates `count` passing tests; waits until it is processed. */
async function createTests(api: Api, count: number): Promise<void> {
  const cases = Array.from(
    { length: count },
    (_, i) => `<testcase classname="${CLASSNAME}" name="${nameOf(i)}" file="${FILE}" time="0.01"/>`,
  );
  const junit = `<?xml version="1.0"?>\n<testsuites><testsuite name="${SUITE}" tests="${String(count)}">\n${cases.join("\n")}\n</testsuite></testsuites>\n`;
  const bundle = await writeBundleBuffer({
    meta: {
      orgSlug: ORG,
      repo: REPO,
      commitSha: randomBytes(20).toString("hex"),
      cliVersion: "0.7.8",
      uploadTimeEpochSeconds: Math.floor(Date.now() / 1000) - 60,
      branch: "main",
      envs: { JOB_NAME: "bench" },
    },
    junitFiles: [{ originalPath: "junit.xml", data: Buffer.from(junit) }],
  });
  const upload = await api.call<{ id: string; url: string }>("metrics/createBundleUpload", {
    repo: REPO,
    orgUrlSlug: ORG,
    clientVersion: "bench",
  });
  const put = await fetch(upload.url, { method: "PUT", body: bundle });
  if (put.status !== 200) throw new Error(`PUT answered ${String(put.status)}`);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const { upload: state } = await api.call<{ upload: { state: string } }>(
      "flaky-tests/get-upload",
      { repo: REPO, org_url_slug: ORG, upload_id: upload.id },
    );
    if (state.state === "processed") return;
    if (state.state === "failed") throw new Error("the setup upload failed");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("the setup upload was not processed within 60 s");
}

function override(api: Api, index: number, reason: string): Promise<unknown> {
  return api.call("flaky-tests/set-quarantine-override", {
    org_url_slug: ORG,
    repo: REPO,
    test_id: idOf(index),
    override: "ALWAYS_QUARANTINE",
    reason,
    actor: "bench@example.com",
  });
}

interface Throughput {
  events: number;
  deliveries: number;
  /** From the first override's request to the last override's answer. */
  storeSeconds: number;
  /** From the first override's request to the last delivery. */
  seconds: number;
  deliveriesPerSecond: number;
  eventsPerSecond: number;
  complete: boolean;
}

async function throughput(api: Api, receiver: BenchReceiver, first: number): Promise<Throughput> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: BURST_CLIENTS }, async () => {
      for (let i = next++; i < EVENTS; i = next++) await override(api, first + i, `burst-${i}`);
    }),
  );
  const stored = performance.now();
  const isBurst = (a: { reason: string | null }) => a.reason?.startsWith("burst-") === true;
  const complete = await receiver.waitFor(isBurst, EVENTS * ENDPOINTS, DELIVERY_TIMEOUT_MS);
  const burst = receiver.arrivals.filter(isBurst);
  const last = Math.max(...burst.map((a) => a.at));
  const seconds = (last - started) / 1000;
  const deliveriesPerSecond = burst.length / seconds;
  return {
    events: EVENTS,
    deliveries: burst.length,
    storeSeconds: round((stored - started) / 1000, 2),
    seconds: round(seconds, 2),
    deliveriesPerSecond: Math.round(deliveriesPerSecond),
    eventsPerSecond: round(deliveriesPerSecond / ENDPOINTS),
    complete,
  };
}

interface Latency {
  changes: number;
  ratePerSecond: number;
  firstDelivery: { p50Ms: number; p99Ms: number };
  allDeliveries: { p50Ms: number; p99Ms: number };
  complete: boolean;
}

async function latency(api: Api, receiver: BenchReceiver, first: number): Promise<Latency> {
  const sentAt = new Map<string, number>();
  const started = performance.now();
  const calls: Promise<unknown>[] = [];
  for (let i = 0; i < CHANGES; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const reason = `latency-${i}`;
    sentAt.set(reason, performance.now());
    calls.push(override(api, first + i, reason));
  }
  await Promise.all(calls);
  const isChange = (a: { reason: string | null }) => a.reason?.startsWith("latency-") === true;
  const complete = await receiver.waitFor(isChange, CHANGES * ENDPOINTS, DELIVERY_TIMEOUT_MS);
  const byChange = new Map<string, number[]>();
  for (const a of receiver.arrivals.filter(isChange)) {
    const list = byChange.get(a.reason ?? "") ?? [];
    list.push(a.at - (sentAt.get(a.reason ?? "") ?? a.at));
    byChange.set(a.reason ?? "", list);
  }
  const firsts = [...byChange.values()].map((times) => Math.min(...times));
  const lasts = [...byChange.values()]
    .filter((times) => times.length >= ENDPOINTS)
    .map((times) => Math.max(...times));
  const figures = (values: number[]) => ({
    p50Ms: round(quantile(values, 0.5)),
    p99Ms: round(quantile(values, 0.99)),
  });
  return {
    changes: CHANGES,
    ratePerSecond: RATE,
    firstDelivery: figures(firsts),
    allDeliveries: figures(lasts),
    complete,
  };
}

async function benchDelivery(database: DatabaseName, databaseUrl?: string) {
  say(`${database}: delivery`);
  const token = randomBytes(32).toString("hex");
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-outbox-"));
  const receiver = await startBenchReceiver();
  try {
    const server = await startServer({
      token,
      dataDir,
      databaseUrl,
      env: { MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1" },
    });
    try {
      const api = new Api(server.baseUrl, token);
      await createTests(api, WARM_UP + EVENTS + CHANGES);
      await api.call("flaky-tests/get-test-details", {
        org_url_slug: ORG,
        repo: REPO,
        test_id: idOf(0),
      }); // the ids computed here are the server's (404 otherwise)
      for (let i = 0; i < ENDPOINTS; i++) {
        await api.call("webhooks/createEndpoint", {
          url: receiver.urlOf(i),
          eventTypes: [OVERRIDE_EVENT],
        });
      }
      await Promise.all(Array.from({ length: WARM_UP }, (_, i) => override(api, i, `warm-${i}`)));
      await receiver.waitFor(
        (a) => a.reason?.startsWith("warm-") === true,
        WARM_UP * ENDPOINTS,
        60_000,
      );
      const before = await processStats(server.pid);
      const burst = await throughput(api, receiver, WARM_UP);
      const after = await processStats(server.pid);
      say(
        `  burst of ${burst.events} events × ${ENDPOINTS} endpoints: ${burst.deliveriesPerSecond} deliveries/s, ${burst.eventsPerSecond} events/s (stored in ${burst.storeSeconds} s, delivered in ${burst.seconds} s)`,
      );
      const changes = await latency(api, receiver, WARM_UP + EVENTS);
      say(
        `  ${changes.changes} changes at ${RATE}/s: first delivery p50 ${changes.firstDelivery.p50Ms} ms, p99 ${changes.firstDelivery.p99Ms} ms; all ${ENDPOINTS}: p50 ${changes.allDeliveries.p50Ms} ms, p99 ${changes.allDeliveries.p99Ms} ms`,
      );
      const cpu =
        before && after
          ? round(((after.cpuSeconds - before.cpuSeconds) * 1000) / burst.deliveries, 2)
          : null;
      return {
        database,
        throughput: { ...burst, serverCpuMsPerDelivery: cpu },
        latency: changes,
        malformedRequests: receiver.malformed,
      };
    } finally {
      showServerOutput("during the delivery runs", server.takeOutput());
      await server.stop();
    }
  } finally {
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const loadAverageBefore = os.loadavg()[0] ?? 0;
const calibrationMs = cpuCalibrationMs();
say(
  `machine speed ${calibrationMs} ms (lower is faster), load average ${round(loadAverageBefore, 2)}`,
);
const delivery = [];
const ingest: IngestCost[] = [];
for (const database of DATABASES) {
  const withDatabase = <T>(work: (url?: string) => Promise<T>) =>
    database === "sqlite" ? work() : withThrowawayPostgres(work);
  if (PARTS.includes("delivery"))
    delivery.push(await withDatabase((url) => benchDelivery(database, url)));
  if (PARTS.includes("ingest")) ingest.push(await benchIngestCost(database, withDatabase));
}
const target = { maximumSlowdown: 0.05 };
for (const cost of ingest) {
  say(
    `${cost.database}: ingestion with ${ENDPOINTS} endpoints ${cost.ratio.toFixed(3)}× of without (${cost.medianWith} against ${cost.medianWithout} runs/s): ${1 - cost.ratio <= target.maximumSlowdown ? "met" : "NOT met"}`,
  );
}
await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
await writeFile(
  RESULTS_FILE,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: { ...machineInfo(loadAverageBefore), speedMs: calibrationMs },
      node: process.version,
      settings: { endpoints: ENDPOINTS, events: EVENTS, changes: CHANGES, ratePerSecond: RATE },
      delivery,
      ingest: ingest.map((cost) => ({
        ...cost,
        pass: 1 - cost.ratio <= target.maximumSlowdown,
      })),
      target,
    },
    null,
    2,
  )}\n`,
);
say(`wrote ${path.relative(ROOT, RESULTS_FILE)}`);
