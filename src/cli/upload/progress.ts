/** `read 120/400 files` on standard error: one line redrawn on a terminal, a line every N files otherwise. */
import type { Progress } from "../../testhealth/reports.js";

export interface ProgressSink {
  isTTY?: boolean;
  write(text: string): unknown;
}

const TTY_INTERVAL_MS = 100;
export const PLAIN_EVERY_FILES = 100;

export function fileProgress(
  sink: ProgressSink,
  options: { now?: () => number; every?: number } = {},
): Progress {
  const now = options.now ?? Date.now;
  const every = options.every ?? PLAIN_EVERY_FILES;
  let lastDraw = -Infinity;
  return (done, total) => {
    const line = `  read ${done}/${total} files`;
    if (sink.isTTY === true) {
      const last = done === total;
      if (!last && now() - lastDraw < TTY_INTERVAL_MS) return;
      lastDraw = now();
      sink.write(`\r${line}${last ? "\n" : ""}`);
      return;
    }
    // Small sets need no progress; large ones get a line every `every` files and at the end.
    if (total >= every && (done % every === 0 || done === total)) sink.write(`${line}\n`);
  };
}
