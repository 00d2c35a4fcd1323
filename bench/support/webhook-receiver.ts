/**
 * A webhook receiver for benchmarks: one node:http server on loopback, answering 204 at once to
 * every POST under `/e/<endpoint>`, and keeping for each request when it arrived (this process's
 * `performance.now()`), which endpoint, and the body's `type` and override reason. No signature
 * check: the receiver's own cost stays out of the figures.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { HOST } from "./server.js";

export interface Arrival {
  at: number;
  endpoint: number;
  type: string;
  /** `quarantine_setting_changed.reason` of an override event; null otherwise. */
  reason: string | null;
}

export interface BenchReceiver {
  /** The URL of endpoint `index`. */
  urlOf(index: number): string;
  arrivals: Arrival[];
  /** Requests that were not a POST with a JSON body of an event. */
  malformed: number;
  /** Resolves once `count` arrivals satisfy `match`, or false after `timeoutMs`. */
  waitFor(match: (a: Arrival) => boolean, count: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
  const arrivals: Arrival[] = [];
  const state = { malformed: 0 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const at = performance.now();
      const endpoint = Number(/^\/e\/(\d+)$/.exec(req.url ?? "")?.[1] ?? Number.NaN);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          type?: string;
          quarantine_setting_changed?: { reason?: string | null };
        };
        if (req.method !== "POST" || !Number.isInteger(endpoint) || !body.type) throw new Error();
        arrivals.push({
          at,
          endpoint,
          type: body.type,
          reason: body.quarantine_setting_changed?.reason ?? null,
        });
      } catch {
        state.malformed += 1;
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    urlOf: (index) => `http://${HOST}:${String(port)}/e/${String(index)}`,
    arrivals,
    get malformed() {
      return state.malformed;
    },
    async waitFor(match, count, timeoutMs) {
      const deadline = performance.now() + timeoutMs;
      while (performance.now() < deadline) {
        if (arrivals.filter(match).length >= count) return true;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return arrivals.filter(match).length >= count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}
