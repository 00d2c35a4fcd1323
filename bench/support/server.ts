/**
 * What every benchmark needs to run the real service: a `mainline serve` child process on a free
 * loopback port (SQLite in a data directory, or a PostgreSQL database), health checks, the tail
 * of its output, and throwaway PostgreSQL databases dropped afterwards whatever happens.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as delay } from "node:timers/promises";
import pg from "pg";
import { SERVE_NODE_ARGS } from "../../src/lib/node-support.js";
import { parseProcStat } from "./machine.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Loopback only: a benchmark must never load anything but the server it started. */
export const HOST = "127.0.0.1";
const POSTGRES_ADMIN_URL = `postgres://postgres@${HOST}:5432/test`;

const STARTUP_TIMEOUT_MS = 30_000;
/** Longer than the server's own 10 s shutdown grace, after which it exits by itself. */
const SHUTDOWN_TIMEOUT_MS = 15_000;
/** How much of the server's output (its tail) to keep; at LOG_LEVEL=warn it should stay quiet. */
const MAX_SERVER_OUTPUT_CHARS = 4000;

export interface RunningServer {
  baseUrl: string;
  /** The server's process id (the Node process itself: no shell in between). */
  pid: number;
  /** What the server printed since the last call (the tail of it); empty when it stayed quiet. */
  takeOutput(): string;
  stop(): Promise<number | null>;
}

export interface ServerOptions {
  /** Bootstrap token of the organization `bench`. */
  token: string;
  dataDir: string;
  /** Undefined: SQLite in `dataDir`. */
  databaseUrl?: string | undefined;
  /** More environment for the child; overrides the defaults (LOG_LEVEL=warn, …). */
  env?: Readonly<Record<string, string>>;
  /** How much of the output to keep (default 4000 characters). */
  maxOutputChars?: number;
  /** Also append everything the server prints to this file (e.g. its logs at LOG_LEVEL=info). */
  outputFile?: string | undefined;
  /**
   * A built `cli/main.js` to run instead of the sources through tsx (whose loader alone adds
   * some 40 MiB to the server's memory).
   */
  builtEntry?: string | undefined;
  /** Options for the server's `node` (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
  nodeArgs?: readonly string[];
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, HOST, resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  if (address === null || typeof address === "string") throw new Error("No TCP port assigned.");
  return address.port;
}

/** The parent's environment minus anything that would point the server at another database. */
export function serverEnvironment(settings: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(
    ([key]) => key !== "DATABASE_URL" && !key.startsWith("MAINLINE_"),
  );
  return { ...Object.fromEntries(inherited), ...settings };
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export async function isHealthy(baseUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

export async function waitUntilHealthy(server: RunningServer, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (hasExited(child)) {
      throw new Error(`The server exited during startup:\n${server.takeOutput()}`);
    }
    if (await isHealthy(server.baseUrl)) return;
    await delay(100);
  }
  throw new Error(
    `The server was not healthy after ${STARTUP_TIMEOUT_MS} ms:\n${server.takeOutput()}`,
  );
}

/** Starts `mainline serve` (from source, through tsx, by default) and resolves once it answers /healthz. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { token, dataDir, databaseUrl, env = {} } = options;
  const maxOutputChars = options.maxOutputChars ?? MAX_SERVER_OUTPUT_CHARS;
  const port = await freePort();
  const entry =
    options.builtEntry === undefined
      ? ["--import", "tsx", "src/cli/main.ts"]
      : [path.resolve(ROOT, options.builtEntry)];
  const nodeArgs = [...SERVE_NODE_ARGS, ...(options.nodeArgs ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, ...entry, "serve"], {
    cwd: ROOT,
    env: serverEnvironment({
      PORT: String(port),
      HOST,
      LOG_LEVEL: "warn",
      MAINLINE_DATA_DIR: dataDir,
      MAINLINE_BOOTSTRAP_ORG: "bench",
      MAINLINE_BOOTSTRAP_TOKEN: token,
      ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => {
      resolve(code);
    });
  });
  const copy =
    options.outputFile === undefined ? null : createWriteStream(options.outputFile, { flags: "a" });
  if (copy !== null) {
    copy.on("error", () => undefined); // a copy for reading later: losing it must not stop a run
    child.once("close", () => copy.end());
  }
  let output = "";
  const keep = (chunk: Buffer) => {
    copy?.write(chunk);
    output += chunk.toString("utf8");
    if (output.length > maxOutputChars) {
      const tail = output.slice(-maxOutputChars);
      output = tail.slice(tail.indexOf("\n") + 1); // whole lines only
    }
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);

  const server: RunningServer = {
    baseUrl: `http://${HOST}:${port}`,
    pid: child.pid ?? -1,
    takeOutput: () => {
      const taken = output;
      output = "";
      return taken;
    },
    stop: async () => {
      if (!hasExited(child)) child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), SHUTDOWN_TIMEOUT_MS);
      try {
        return await exited;
      } finally {
        clearTimeout(force);
      }
    },
  };
  try {
    await waitUntilHealthy(server, child);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** At LOG_LEVEL=warn the server should stay quiet; anything it says is worth reading. */
export function showServerOutput(when: string, output: string): void {
  if (output) process.stdout.write(`  server output ${when}:\n${output}\n`);
}

export interface ProcessStats {
  /** Resident set now (`VmRSS`), bytes. */
  rssBytes: number;
  /** Peak resident set since the process started (`VmHWM`), bytes. */
  peakRssBytes: number;
  /** CPU time used so far, user and system, all threads, seconds. */
  cpuSeconds: number;
  /** The part of it spent in the kernel (system calls: sockets, files, processes), seconds. */
  systemCpuSeconds: number;
}

/** Memory and CPU time of a running process from /proc (Linux); null where it cannot be read. */
export async function processStats(pid: number): Promise<ProcessStats | null> {
  let status: string;
  let stat: string;
  try {
    [status, stat] = await Promise.all([
      readFile(`/proc/${pid}/status`, "utf8"),
      readFile(`/proc/${pid}/stat`, "utf8"),
    ]);
  } catch {
    return null;
  }
  const kilobytes = (field: string): number | null => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
    return match?.[1] === undefined ? null : Number(match[1]) * 1024;
  };
  const cpu = parseProcStat(stat);
  const rssBytes = kilobytes("VmRSS");
  const peakRssBytes = kilobytes("VmHWM");
  if (rssBytes === null || peakRssBytes === null || cpu === null) return null;
  return {
    rssBytes,
    peakRssBytes,
    cpuSeconds: cpu.userSeconds + cpu.systemSeconds,
    systemCpuSeconds: cpu.systemSeconds,
  };
}

/** Starts the local PostgreSQL cluster when it is down (scripts/ensure-postgres.sh). */
export function ensurePostgres(): void {
  const result = spawnSync("bash", ["scripts/ensure-postgres.sh"], { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) throw new Error("PostgreSQL is not available on 127.0.0.1:5432.");
}

export async function withAdminClient(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Runs `work` with the URL of a fresh PostgreSQL database (PostgreSQL started if needed), and
 * drops the database afterwards whatever happens.
 */
export async function withThrowawayPostgres<T>(
  work: (databaseUrl: string) => Promise<T>,
): Promise<T> {
  ensurePostgres();
  // Random hex only, so the name is safe to put into the statement as is.
  const name = `mainline_bench_${randomBytes(6).toString("hex")}`;
  await withAdminClient(`create database ${name}`);
  try {
    return await work(`postgres://postgres@${HOST}:5432/${name}`);
  } finally {
    // FORCE: a server killed by the timeout may have left connections behind.
    await withAdminClient(`drop database if exists ${name} with (force)`);
  }
}
