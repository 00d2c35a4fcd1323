/**
 * Runs one check's command and makes sure nothing it started outlives it: its own process group,
 * signalled on timeout or cancel and killed when the shell exits (only `setsid` escapes, as in any
 * CI). Output goes straight to the log file, not through a pipe a grandchild could hold open.
 */
import { spawn } from "node:child_process";
import { appendFile, mkdir, open } from "node:fs/promises";
import path from "node:path";

export type CommandConclusion = "success" | "failure" | "timed_out" | "cancelled";

export interface CommandOptions {
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** Created (with its directory) or truncated; stdout and stderr both go there. */
  logPath: string;
  signal?: AbortSignal;
  /** Between SIGTERM and SIGKILL when stopping the group. */
  graceMs?: number;
}

export interface CommandOutcome {
  conclusion: CommandConclusion;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  durationMs: number;
}

/** `setTimeout` fires at once beyond this (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Signals a whole process group; a group that is already gone is fine. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** The last line of the log: how the command ended. */
function endLine(outcome: CommandOutcome, timeoutMs: number, spawnError?: Error): string {
  const after = `after ${seconds(outcome.durationMs)}`;
  if (spawnError !== undefined) return `could not start: ${spawnError.message}`;
  if (outcome.conclusion === "timed_out") {
    return `timed out ${after} (limit ${seconds(timeoutMs)}); process group killed`;
  }
  if (outcome.conclusion === "cancelled") return `cancelled ${after}; process group killed`;
  if (outcome.exitCode !== null) return `exited with code ${outcome.exitCode} ${after}`;
  return `killed by ${String(outcome.signal)} ${after}`;
}

export async function runCommand(options: CommandOptions): Promise<CommandOutcome> {
  const { command, cwd, env, timeoutMs, logPath, signal, graceMs = 2000 } = options;
  await mkdir(path.dirname(logPath), { recursive: true });
  const log = await open(logPath, "w");
  const started = performance.now();
  let stopReason: "timed_out" | "cancelled" | undefined;
  let spawnError: Error | undefined;
  const ended = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve) => {
      if (signal?.aborted === true) {
        stopReason = "cancelled";
        resolve({ code: null, signal: null });
        return;
      }
      const child = spawn("/bin/sh", ["-c", command], {
        cwd,
        env,
        detached: true,
        stdio: ["ignore", log.fd, log.fd],
      });
      let killTimer: NodeJS.Timeout | undefined;
      const stop = (reason: "timed_out" | "cancelled"): void => {
        if (stopReason !== undefined || child.pid === undefined) return;
        stopReason = reason;
        signalGroup(child.pid, "SIGTERM");
        const pid = child.pid;
        killTimer = setTimeout(() => {
          signalGroup(pid, "SIGKILL");
        }, graceMs);
      };
      const timer = setTimeout(
        () => {
          stop("timed_out");
        },
        Math.min(timeoutMs, MAX_TIMER_MS),
      );
      const onAbort = (): void => {
        stop("cancelled");
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const finish = (code: number | null, exitSignal: NodeJS.Signals | null): void => {
        clearTimeout(timer);
        clearTimeout(killTimer);
        signal?.removeEventListener("abort", onAbort);
        // Whatever the command left running in its group goes with it.
        if (child.pid !== undefined) signalGroup(child.pid, "SIGKILL");
        resolve({ code, signal: exitSignal });
      };
      child.once("error", (error) => {
        spawnError = error;
        finish(null, null);
      });
      child.once("exit", finish);
    },
  );
  await log.close();
  const durationMs = performance.now() - started;
  const conclusion: CommandConclusion =
    stopReason ?? (ended.code === 0 && spawnError === undefined ? "success" : "failure");
  const outcome = { conclusion, exitCode: ended.code, signal: ended.signal, durationMs };
  await appendFile(logPath, `\n[mainline] ${endLine(outcome, timeoutMs, spawnError)}\n`);
  return outcome;
}
