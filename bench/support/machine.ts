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
