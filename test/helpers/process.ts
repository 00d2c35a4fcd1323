import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inject } from "vitest";
import { SERVE_NODE_ARGS } from "../../src/lib/node-support.js";

/** The repository root: every child process runs there, so `--import tsx` resolves. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** `mainline` as a child process: the built one when it is up to date (global-setup.ts). */
const CLI =
  inject("cliEntry") === "dist" ? ["dist/cli/main.js"] : ["--import", "tsx", "src/cli/main.ts"];

/**
 * `mainline` as node's arguments that work from any directory (a CI job's checkout): absolute
 * paths, the loader of tsx included.
 */
export const CLI_ANYWHERE =
  inject("cliEntry") === "dist"
    ? [path.join(REPO_ROOT, "dist/cli/main.js")]
    : [
        "--import",
        pathToFileURL(path.join(REPO_ROOT, "node_modules/tsx/dist/loader.mjs")).href,
        path.join(REPO_ROOT, "src/cli/main.ts"),
      ];

/** Variables of the test runner's environment that must never leak into a child process. */
const HERMETIC = /^(MAINLINE_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$|NODE_OPTIONS$)/;

export type ChildEnv = Record<string, string | undefined>;

function childEnv(extra: ChildEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!HERMETIC.test(key)) env[key] = value;
  }
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) Reflect.deleteProperty(env, key);
    else env[key] = value;
  }
  return env;
}

/** Every child process started here and not yet exited: the safety net for `stopAllProcesses`. */
const live = new Set<ChildProcess>();

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Settles once the process has exited and its output streams are closed. */
  closed: Promise<Exit>;
}

function spawnCli(args: string[], env: ChildEnv): Spawned {
  // As bin/mainline.js and `npm start` run it: Node 20's young generation (ADR 0033).
  const child = spawn(process.execPath, [...SERVE_NODE_ARGS, ...CLI, ...args], {
    cwd: REPO_ROOT,
    env: childEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const closed = new Promise<Exit>((resolve, reject) => {
    child.once("error", (error) => {
      live.delete(child);
      reject(error);
    });
    child.once("close", (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, stdout: () => stdout, stderr: () => stderr, closed };
}

/** Resolves with the exit, or undefined when the process is still running after `timeoutMs`. */
async function exitWithin(closed: Promise<Exit>, timeoutMs: number): Promise<Exit | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, timeoutMs);
  });
  try {
    return await Promise.race([closed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function terminate(spawned: Spawned, signal: NodeJS.Signals, graceMs: number): Promise<Exit> {
  if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return spawned.closed;
  spawned.child.kill(signal);
  const exit = await exitWithin(spawned.closed, graceMs);
  if (exit) return exit;
  spawned.child.kill("SIGKILL");
  return spawned.closed;
}

export interface CliResult extends Exit {
  stdout: string;
  stderr: string;
  /** True when the command did not finish in time and was killed. */
  timedOut: boolean;
}

/** Runs `mainline <args>` to completion (killed after `timeoutMs`). */
export async function runCli(
  args: string[],
  env: ChildEnv = {},
  options: { timeoutMs?: number } = {},
): Promise<CliResult> {
  const spawned = spawnCli(args, env);
  let exit = await exitWithin(spawned.closed, options.timeoutMs ?? 20_000);
  const timedOut = exit === undefined;
  exit ??= await terminate(spawned, "SIGKILL", 5_000);
  return { ...exit, stdout: spawned.stdout(), stderr: spawned.stderr(), timedOut };
}

/**
 * Runs `mainline <args>` in this process (src/cli/program.ts's runCli), with the environment a
 * child process would get (`runCli`'s, unless `replaceEnv` gives the whole environment) and its
 * output collected. Same result as `runCli`, without the cost of a node process and its loader;
 * `serve`, signals and crashes need the real process (`runCli`, `startServer`).
 */
export async function runCliInProcess(
  args: string[],
  env: ChildEnv = {},
  options: { timeoutMs?: number; cwd?: string; replaceEnv?: boolean } = {},
): Promise<CliResult> {
  const { runCli: run } = await import("../../src/cli/program.js");
  let stdout = "";
  let stderr = "";
  const outcome = run({
    argv: args,
    env: options.replaceEnv === true ? { ...env } : childEnv(env),
    cwd: options.cwd ?? REPO_ROOT,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    ownsProcess: false,
    exitCode: undefined,
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      resolve(undefined);
    }, options.timeoutMs ?? 20_000);
  });
  try {
    const ended = await Promise.race([outcome, timeout]);
    return {
      code: ended === undefined ? null : ended.code,
      signal: null,
      stdout,
      stderr,
      timedOut: ended === undefined,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A port that was free a moment ago: listen on port 0, note the port, close. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("no port was assigned"));
        return;
      }
      server.close(() => {
        resolve(address.port);
      });
    });
  });
}

/** Polls `condition` until it holds, failing with `description` after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  description: string,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${description}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface RunningServer {
  url: string;
  port: number;
  process: ChildProcess;
  /** Everything written to standard output so far (pino's JSON log lines). */
  readonly stdout: string;
  /** Everything written to standard error so far (the first-start banner). */
  readonly stderr: string;
  /** Settles once the process has exited and its output is complete. */
  readonly exited: Promise<Exit>;
  /** Sends `signal` (SIGTERM by default), waits up to `graceMs`, then kills. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
}

async function healthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * Starts `mainline serve` on a free loopback port with `env` (the database, bootstrap settings…)
 * and resolves once `GET /healthz` answers 200. Fails, with the server's output, if the process
 * exits first or is not healthy within `timeoutMs`.
 */
export async function startServer(
  env: ChildEnv,
  options: { logLevel?: string; timeoutMs?: number } = {},
): Promise<RunningServer> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const spawned = spawnCli(["serve"], {
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: options.logLevel ?? "warn",
    ...env,
  });
  let exited: Exit | undefined;
  void spawned.closed.then(
    (exit) => (exited = exit),
    () => undefined,
  );
  try {
    await waitFor(async () => exited !== undefined || (await healthy(url)), `${url}/healthz`, {
      timeoutMs: options.timeoutMs ?? 20_000,
      intervalMs: 100,
    });
  } catch (error) {
    await terminate(spawned, "SIGKILL", 5_000);
    throw new Error(`${(error as Error).message}\nstderr:\n${spawned.stderr()}`, { cause: error });
  }
  if (exited) {
    throw new Error(
      `mainline serve exited (code ${String(exited.code)}) before answering:\n${spawned.stderr()}`,
    );
  }
  return {
    url,
    port,
    process: spawned.child,
    get stdout() {
      return spawned.stdout();
    },
    get stderr() {
      return spawned.stderr();
    },
    exited: spawned.closed,
    stop: (signal = "SIGTERM", graceMs = 10_000) => terminate(spawned, signal, graceMs),
  };
}

/**
 * `env` with the organization `acme` and a new API token of it, which `mainline serve` makes sure
 * exist at start (`MAINLINE_BOOTSTRAP_ORG`, `MAINLINE_BOOTSTRAP_TOKEN`).
 */
export function withBootstrapToken(env: Record<string, string>): {
  env: Record<string, string>;
  token: string;
} {
  const token = randomBytes(32).toString("hex");
  return {
    env: { ...env, MAINLINE_BOOTSTRAP_ORG: "acme", MAINLINE_BOOTSTRAP_TOKEN: token },
    token,
  };
}

/** Kills every child process still running (for afterAll/afterEach: no process outlives a test file). */
export async function stopAllProcesses(): Promise<void> {
  const children = [...live];
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) {
            resolve();
            return;
          }
          child.once("close", () => {
            resolve();
          });
          child.kill("SIGKILL");
        }),
    ),
  );
}
