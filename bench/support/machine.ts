import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import os from "node:os";

/**
 * The machine a benchmark ran on, for its results file. Other work on the machine stretches wall
 * times: the load average before and after the run says how much there was.
 */
export function machineInfo(loadAverage1mBefore: number): {
  cpus: number;
  cpuModel: string;
  loadAverage1mBefore: number;
  loadAverage1mAfter: number;
} {
  const twoDigits = (value: number) => Math.round(value * 100) / 100;
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    loadAverage1mBefore: twoDigits(loadAverage1mBefore),
    loadAverage1mAfter: twoDigits(os.loadavg()[0] ?? 0),
  };
}

/**
 * How fast this machine runs one thread of JavaScript now: the best of five runs of a fixed
 * workload (JSON and a SHA-256 over the same data), in ms. Lower is faster. The same machine kind
 * has been seen running the same benchmark at half its usual speed on some days; this figure,
 * taken beside a benchmark's own, says which kind of day it was.
 */
export function cpuCalibrationMs(): number {
  const record = {
    id: "0123456789abcdef",
    name: "a test with a name of some length",
    tags: ["one", "two", "three"],
    figures: { runs: 1234, failures: 5, durationMs: 12.5 },
  };
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 5; run++) {
    const started = performance.now();
    let digest = "";
    for (let i = 0; i < 20_000; i++) {
      const text = JSON.stringify({ ...record, i });
      digest = createHash("sha256").update(text).update(digest).digest("hex");
      JSON.parse(text);
    }
    if (digest.length !== 64) throw new Error("calibration: unexpected digest");
    best = Math.min(best, performance.now() - started);
  }
  return Math.round(best * 10) / 10;
}

/** Busy and total CPU time of the whole machine so far (all cores, /proc/stat), seconds. */
export async function machineCpuSeconds(): Promise<{ busy: number; total: number } | null> {
  let stat: string;
  try {
    stat = await readFile("/proc/stat", "utf8");
  } catch {
    return null;
  }
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice", in USER_HZ ticks.
  const fields = (stat.split("\n")[0] ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 8 || fields.some((f) => !Number.isFinite(f))) return null;
  const total = fields.reduce((sum, f) => sum + f, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: (total - idle) / 100, total: total / 100 };
}

/** CPU seconds so far of the parts of a benchmark's machine (see `cpuByPart`). */
export interface CpuParts {
  /** The server process itself, all its threads. */
  server: number;
  /**
   * Every process the server started, living or ended: the git helper, git, the checks (an
   * ended child's time counts once its parent has waited for it).
   */
  serverChildren: number;
  /** Every PostgreSQL process of the machine (the benchmark's database is the busy one). */
  database: number;
  /** This process: the benchmark's clients. */
  clients: number;
}

/** One line of `/proc/<pid>/stat`, in seconds of CPU. */
export interface ProcStat {
  ppid: number;
  command: string;
  /** utime: in the process's own code, all threads. */
  userSeconds: number;
  /** stime: in the kernel on its behalf. */
  systemSeconds: number;
  /** cutime + cstime: its children that ended and were waited for. */
  childrenSeconds: number;
}

/** USER_HZ: the unit of /proc's CPU times (100 on every Linux we run on). */
const TICKS_PER_SECOND = 100;

/** Parses `/proc/<pid>/stat`; null when it does not read as one. */
export function parseProcStat(text: string): ProcStat | null {
  // "pid (command) state ppid …": the command may hold spaces and parentheses; after it come
  // fields 3 onwards (ppid is field 4; utime, stime, cutime, cstime are fields 14 to 17).
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  const tick = (i: number) => Number(fields[i]) / TICKS_PER_SECOND;
  const stat = {
    ppid: Number(fields[1]),
    command: text.slice(text.indexOf("(") + 1, close),
    userSeconds: tick(11),
    systemSeconds: tick(12),
    childrenSeconds: tick(13) + tick(14),
  };
  const numbers = [stat.ppid, stat.userSeconds, stat.systemSeconds, stat.childrenSeconds];
  return close < 0 || !numbers.every(Number.isFinite) ? null : stat;
}

async function readProcStats(): Promise<(ProcStat & { pid: number })[]> {
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const stats = await Promise.all(
    pids.map(async (pid) => {
      let text: string;
      try {
        text = await readFile(`/proc/${pid}/stat`, "utf8");
      } catch {
        return null; // ended meanwhile
      }
      const stat = parseProcStat(text);
      return stat && { pid: Number(pid), ...stat };
    }),
  );
  return stats.filter((s) => s !== null);
}

/**
 * Where the machine's CPU time went so far, by part: the server, what it started, the database,
 * the clients. Taken before and after a load, the differences say which part a request's cost
 * lies in (the rest of the machine's busy time is the kernel's work for nobody in particular and
 * other programs). Null off Linux or when the server is gone.
 */
export async function cpuByPart(serverPid: number): Promise<CpuParts | null> {
  let stats: Awaited<ReturnType<typeof readProcStats>>;
  try {
    stats = await readProcStats();
  } catch {
    return null;
  }
  const server = stats.find((s) => s.pid === serverPid);
  if (!server) return null;
  // The server's living descendants, whichever generation.
  const descendants = new Set<number>([serverPid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats) {
      if (!descendants.has(s.pid) && descendants.has(s.ppid)) {
        descendants.add(s.pid);
        grew = true;
      }
    }
  }
  const all = (s: ProcStat) => s.userSeconds + s.systemSeconds + s.childrenSeconds;
  let serverChildren = server.childrenSeconds;
  for (const s of stats) {
    if (s.pid !== serverPid && descendants.has(s.pid)) serverChildren += all(s);
  }
  const database = stats
    .filter((s) => s.command === "postgres")
    .reduce((sum, s) => sum + all(s), 0);
  const usage = process.cpuUsage();
  return {
    server: server.userSeconds + server.systemSeconds,
    serverChildren,
    database,
    clients: (usage.user + usage.system) / 1e6,
  };
}
