import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
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
