/**
 * The ingestion cost of outbound webhooks (bench:webhooks-outbox, part 3): runs/s of a small
 * generated workload (bench:ingest's generator: flaky and broken tests, re-runs) uploaded by 4
 * clients until the last upload is processed, on a fresh server per phase, alternating without
 * endpoints (A) and with 20 endpoints subscribed to the status events (B), A B A B….
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DEFAULT_WORKLOAD, generateWorkload, renderJunit } from "../../src/testhealth/workload.js";
import { Api } from "./api.js";
import { integerFromEnv } from "./env.js";
import { processStats, showServerOutput, startServer } from "./server.js";
import { startBenchReceiver } from "./webhook-receiver.js";
import { workloadBundle } from "./workload-bundle.js";

const ROUNDS = integerFromEnv("BENCH_INGEST_ROUNDS", 2, 1, 10);
const UPLOADS = integerFromEnv("BENCH_INGEST_UPLOADS", 60, 10, 10_000);
const TESTS = integerFromEnv("BENCH_INGEST_TESTS", 500, 10, 100_000);
const CLIENTS = 4;
const ENDPOINTS = 20;
const SEED = 36;
const ORG = "bench";
const REPO = { host: "github.com", owner: "bench", name: "app" };
const STATUS_EVENTS = ["test_case.status_changed", "v2.test_case.status_changed"];
/** Options of the servers' node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (a profile each). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);

interface Phase {
  endpoints: number;
  runs: number;
  seconds: number;
  runsPerSecond: number;
  serverCpuSeconds: number | null;
  /** Status-event deliveries the receiver had when the last upload was processed. */
  deliveries: number;
}

export interface IngestCost {
  database: string;
  uploads: number;
  tests: number;
  phases: Phase[];
  medianWithout: number;
  medianWith: number;
  /** medianWith / medianWithout: 1 is no cost, 0.95 the target's edge. */
  ratio: number;
}

let prepared: { bundles: Buffer[]; runs: number } | undefined;

async function workload(): Promise<{ bundles: Buffer[]; runs: number }> {
  if (prepared) return prepared;
  const startAt = Date.now() - (UPLOADS + 1) * DEFAULT_WORKLOAD.runSpacingMs - 5 * 60_000;
  const generated = generateWorkload({
    ...DEFAULT_WORKLOAD,
    seed: SEED,
    tests: TESTS,
    runs: UPLOADS,
    startAt,
  });
  const bundles: Buffer[] = [];
  let runs = 0;
  for (const upload of generated.uploads()) {
    if (bundles.length >= UPLOADS) break;
    const junit = Buffer.from(renderJunit(generated.tests, upload), "utf8");
    bundles.push(await workloadBundle(ORG, REPO, upload, junit));
    runs += upload.results.length;
  }
  prepared = { bundles, runs };
  return prepared;
}

async function uploadAll(api: Api, bundles: readonly Buffer[]): Promise<string[]> {
  const ids = new Array<string>(bundles.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < bundles.length; i = next++) {
        const { id, url } = await api.call<{ id: string; url: string }>(
          "metrics/createBundleUpload",
          { repo: REPO, orgUrlSlug: ORG, clientVersion: "bench" },
        );
        const bundle = bundles[i] ?? Buffer.alloc(0);
        const put = await fetch(url, { method: "PUT", body: bundle });
        await put.arrayBuffer();
        if (put.status !== 200) throw new Error(`PUT answered ${String(put.status)}`);
        ids[i] = id;
      }
    }),
  );
  return ids;
}

/** Waits for every upload, oldest first (the worker takes them in order); when the last was seen. */
async function waitProcessed(api: Api, ids: readonly string[]): Promise<number> {
  const deadline = Date.now() + 300_000;
  for (const id of ids) {
    for (;;) {
      const { upload } = await api.call<{ upload: { state: string } }>("flaky-tests/get-upload", {
        repo: REPO,
        org_url_slug: ORG,
        upload_id: id,
      });
      if (upload.state === "processed" || upload.state === "failed") break;
      if (Date.now() > deadline) throw new Error("ingestion did not finish within 300 s");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return performance.now();
}

async function phase(endpoints: number, databaseUrl: string | undefined): Promise<Phase> {
  const { bundles, runs } = await workload();
  const token = randomBytes(32).toString("hex");
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-outbox-ingest-"));
  const receiver = await startBenchReceiver();
  try {
    const server = await startServer({
      token,
      dataDir,
      databaseUrl,
      env: { MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1" },
      nodeArgs: SERVER_NODE_ARGS,
    });
    try {
      const api = new Api(server.baseUrl, token);
      for (let i = 0; i < endpoints; i++) {
        await api.call("webhooks/createEndpoint", {
          url: receiver.urlOf(i),
          eventTypes: STATUS_EVENTS,
        });
      }
      const before = await processStats(server.pid);
      const started = performance.now();
      const ids = await uploadAll(api, bundles);
      const finished = await waitProcessed(api, ids);
      const after = await processStats(server.pid);
      const seconds = (finished - started) / 1000;
      return {
        endpoints,
        runs,
        seconds: Math.round(seconds * 100) / 100,
        runsPerSecond: Math.round(runs / seconds),
        serverCpuSeconds:
          before && after ? Math.round((after.cpuSeconds - before.cpuSeconds) * 100) / 100 : null,
        deliveries: receiver.arrivals.length,
      };
    } finally {
      showServerOutput("during ingestion", server.takeOutput());
      await server.stop();
    }
  } finally {
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** A B A B… on `database`; `withDatabase` gives each phase its own (fresh) database. */
export async function benchIngestCost(
  database: string,
  withDatabase: <T>(work: (url?: string) => Promise<T>) => Promise<T>,
): Promise<IngestCost> {
  const phases: Phase[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const endpoints of [0, ENDPOINTS]) {
      const result = await withDatabase((url) => phase(endpoints, url));
      process.stdout.write(
        `${database}: ingestion, ${String(endpoints)} endpoints: ${String(result.runsPerSecond)} runs/s (${String(result.seconds)} s, ${String(result.deliveries)} status deliveries)\n`,
      );
      phases.push(result);
    }
  }
  const { bundles } = await workload();
  const medianWithout = median(phases.filter((p) => p.endpoints === 0).map((p) => p.runsPerSecond));
  const medianWith = median(phases.filter((p) => p.endpoints > 0).map((p) => p.runsPerSecond));
  return {
    database,
    uploads: bundles.length,
    tests: TESTS,
    phases,
    medianWithout,
    medianWith,
    ratio: Math.round((medianWith / medianWithout) * 1000) / 1000,
  };
}
