/**
 * API benchmark (docs/benchmarks.md, "API (issue: service foundation)"): throughput and latency of
 * getQueue and updateQueue next to a trivial authenticated route, on SQLite and on PostgreSQL.
 *
 * Each database gets a real `mainline serve` child process; autocannon, in this process, drives it
 * over loopback. Absolute figures depend on the machine; the ratios to the trivial route are what to
 * compare between runs. Routes are measured in interleaved rounds (every route once per round, back
 * to back), a ratio is taken within each round, and the median over the rounds is reported, so
 * that drift in the machine's speed during a run does not land on one route.
 *
 * Usage: npm run bench:api   (BENCH_SECONDS=<1..30>: seconds per route per round, default 3;
 *                             BENCH_ROUNDS=<1..30>: rounds, default 5)
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { ROOT, showServerOutput, startServer, withThrowawayPostgres } from "./support/server.js";

const RESULTS_FILE = path.join(ROOT, "bench", "results", "api.json");

const CONNECTIONS = 10;
const WARMUP_SECONDS = 1;
const MEASURED_SECONDS = secondsFromEnv(process.env.BENCH_SECONDS, 3);
const ROUNDS = secondsFromEnv(process.env.BENCH_ROUNDS, 5);

const TARGET = { route: "getQueue", database: "sqlite", minimumRatio: 0.6 } as const;

const REPO = { host: "github.com", owner: "bench", name: "app" };
const QUEUE = { repo: REPO, targetBranch: "main" };

/**
 * Each connection writes to a queue of its own: writers of one queue wait for each other's row
 * lock (ADR 0003), which would measure lock waits, not the cost of a write.
 */
function writeQueue(connection: number): typeof QUEUE {
  return { repo: REPO, targetBranch: `bench-writes-${connection}` };
}

const WRITE_QUEUES = Array.from({ length: CONNECTIONS }, (_, connection) => writeQueue(connection));

interface Route {
  name: string;
  path: string;
  /** The JSON bodies that connection number `connection` sends in turn, round and round. */
  bodies(connection: number): object[];
}

const TRIVIAL_ROUTE: Route = { name: "whoami", path: "/v1/whoami", bodies: () => [{}] };

const ROUTES: readonly Route[] = [
  TRIVIAL_ROUTE,
  { name: "getQueue", path: "/v1/getQueue", bodies: () => [QUEUE] },
  {
    name: "updateQueue",
    path: "/v1/updateQueue",
    // Successive writes to a queue store a different concurrency, so none is a no-op.
    bodies: (connection) =>
      [1, 2, 3, 4, 5, 6, 7, 8].map((concurrency) => ({ ...writeQueue(connection), concurrency })),
  },
];

interface RouteResult {
  route: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Median over the rounds of this route's requests/s divided by the trivial route's. */
  ratio: number;
  /** The same ratio in each round, to show the spread. */
  roundRatios: number[];
  requests: number;
}

interface DatabaseResult {
  database: "sqlite" | "postgresql";
  routes: RouteResult[];
}

function secondsFromEnv(value: string | undefined, fallback: number): number {
  if (value === undefined || value.trim() === "") return fallback;
  const seconds = Number(value);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 30) {
    throw new Error(
      `BENCH_SECONDS and BENCH_ROUNDS take whole numbers from 1 to 30 (got "${value}").`,
    );
  }
  return seconds;
}

function jsonHeaders(token: string): Record<string, string> {
  return { "x-api-token": token, "content-type": "application/json" };
}

async function createQueue(baseUrl: string, token: string, address: typeof QUEUE): Promise<void> {
  const response = await fetch(`${baseUrl}/v1/createQueue`, {
    method: "POST",
    headers: jsonHeaders(token),
    body: JSON.stringify(address),
  });
  const text = await response.text();
  // No GitHub App on the bench's server: the queue is created with a `host_not_connected` warning.
  const { warnings = [] } = JSON.parse(text) as { warnings?: { code: string }[] };
  if (response.status !== 200 || warnings.some((w) => w.code !== "host_not_connected")) {
    throw new Error(`createQueue ${address.targetBranch} answered ${response.status}: ${text}`);
  }
}

async function load(
  baseUrl: string,
  token: string,
  route: Route,
  seconds: number,
): Promise<autocannon.Result> {
  let connectionsSetUp = 0;
  const result = await autocannon({
    // The full URL: autocannon takes the request path from it (a top-level `path` is ignored).
    url: `${baseUrl}${route.path}`,
    method: "POST",
    headers: jsonHeaders(token),
    connections: CONNECTIONS,
    duration: seconds,
    setupClient: (client) => {
      const bodies = route.bodies(connectionsSetUp++);
      client.setRequests(bodies.map((body) => ({ body: JSON.stringify(body) })));
    },
  });
  if (result.non2xx !== 0 || result.errors !== 0) {
    throw new Error(
      `${route.name}: ${result.non2xx} non-2xx responses (by status: ${JSON.stringify(result.statusCodeStats)}) and ${result.errors} errors (${result.timeouts} timeouts) in ${result.requests.sent} requests.`,
    );
  }
  return result;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/**
 * A warm-up of every route (JIT, caches, connection pool), then ROUNDS rounds that each measure
 * every route once. Per route: the median requests/s and latencies over the rounds, and the median
 * of its per-round ratio to the trivial route.
 */
async function measureRoutes(baseUrl: string, token: string): Promise<RouteResult[]> {
  for (const route of ROUTES) await load(baseUrl, token, route, WARMUP_SECONDS);
  const rounds: Map<Route, autocannon.Result>[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    process.stdout.write(`  round ${round}/${ROUNDS}…\n`);
    const results = new Map<Route, autocannon.Result>();
    for (const route of ROUTES)
      results.set(route, await load(baseUrl, token, route, MEASURED_SECONDS));
    rounds.push(results);
  }
  const of = (results: Map<Route, autocannon.Result>, route: Route): autocannon.Result => {
    const result = results.get(route);
    if (!result) throw new Error(`${route.name} was not measured.`);
    return result;
  };
  return ROUTES.map((route) => ({
    route: route.name,
    requestsPerSecond: Math.round(median(rounds.map((r) => of(r, route).requests.average))),
    p50Ms: median(rounds.map((r) => of(r, route).latency.p50)),
    p99Ms: median(rounds.map((r) => of(r, route).latency.p99)),
    ratio: round(
      median(
        rounds.map((r) => of(r, route).requests.average / of(r, TRIVIAL_ROUTE).requests.average),
      ),
      3,
    ),
    roundRatios: rounds.map((r) =>
      round(of(r, route).requests.average / of(r, TRIVIAL_ROUTE).requests.average, 3),
    ),
    requests: rounds.reduce((sum, r) => sum + of(r, route).requests.total, 0),
  }));
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** One fresh server (and data directory) on one database: create the queues, load each route. */
async function benchDatabase(
  database: DatabaseResult["database"],
  token: string,
  databaseUrl?: string,
): Promise<DatabaseResult> {
  process.stdout.write(`${database}:\n`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "mainline-bench-"));
  try {
    const server = await startServer({ token, dataDir, databaseUrl });
    try {
      for (const address of [QUEUE, ...WRITE_QUEUES]) {
        await createQueue(server.baseUrl, token, address);
      }
      return { database, routes: await measureRoutes(server.baseUrl, token) };
    } finally {
      showServerOutput("during the runs", server.takeOutput());
      const code = await server.stop();
      showServerOutput("at shutdown", server.takeOutput());
      if (code !== 0) process.stdout.write(`  the server exited with ${code ?? "a signal"}\n`);
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Runs the benchmark on a throwaway PostgreSQL database, dropped afterwards whatever happens. */
function benchPostgres(token: string): Promise<DatabaseResult> {
  return withThrowawayPostgres((databaseUrl) => benchDatabase("postgresql", token, databaseUrl));
}

function targetOutcome(results: readonly DatabaseResult[]) {
  const ratio = results
    .find(({ database }) => database === TARGET.database)
    ?.routes.find(({ route }) => route === TARGET.route)?.ratio;
  if (ratio === undefined) throw new Error("The target route was not measured.");
  return { ...TARGET, ratio, pass: ratio >= TARGET.minimumRatio };
}

function formatTable(results: readonly DatabaseResult[]): string {
  const header = [
    "database",
    "route",
    "req/s",
    "p50 ms",
    "p99 ms",
    `vs ${TRIVIAL_ROUTE.name}`,
    "per round",
  ];
  const rows = results.flatMap(({ database, routes }) =>
    routes.map((r) => [
      database,
      r.route,
      String(r.requestsPerSecond),
      String(r.p50Ms),
      String(r.p99Ms),
      `${Math.round(r.ratio * 100)}%`,
      r.roundRatios.map((ratio) => `${Math.round(ratio * 100)}`).join(" "),
    ]),
  );
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  // Names left-aligned, figures right-aligned.
  const line = (cells: string[]) =>
    cells
      .map((cell, column) =>
        column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

function report(results: readonly DatabaseResult[], loadAverageBefore: number): object {
  const target = targetOutcome(results);
  process.stdout.write(`\n${formatTable(results)}\n\n`);
  process.stdout.write(
    `Target: ${target.route} >= ${target.minimumRatio * 100}% of ${TRIVIAL_ROUTE.name} req/s on ${target.database}: ${Math.round(target.ratio * 100)}% ${target.pass ? "PASS" : "FAIL"}\n`,
  );
  return {
    date: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      // Other work on the machine before the run (the server and load generator share it too).
      loadAverage1mBefore: round(loadAverageBefore, 2),
    },
    node: process.version,
    load: {
      connections: CONNECTIONS,
      warmupSeconds: WARMUP_SECONDS,
      secondsPerRoutePerRound: MEASURED_SECONDS,
      rounds: ROUNDS,
    },
    databases: results,
    target,
  };
}

async function main(): Promise<void> {
  const loadAverageBefore = os.loadavg()[0] ?? 0;
  const token = randomBytes(32).toString("hex");
  const results = [await benchDatabase("sqlite", token), await benchPostgres(token)];
  const json = report(results, loadAverageBefore);
  await mkdir(path.dirname(RESULTS_FILE), { recursive: true });
  await writeFile(RESULTS_FILE, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`\nWrote ${path.relative(ROOT, RESULTS_FILE)}\n`);
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `bench:api failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
