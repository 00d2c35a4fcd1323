/**
 * A webhook receiver of the tests' own: a real HTTP server that verifies every request with the
 * `standardwebhooks` library (what receivers use) and answers what the test tells it to.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  id: string;
  timestamp: string;
  body: Record<string, unknown>;
  userAgent: string | undefined;
  verified: boolean;
}

/**
 * What to answer a request: a status, `hang` (never answer), or `{ holdMs }` (204 after that
 * long: a delivery held open).
 */
export type Answer = number | "hang" | { holdMs: number };

export interface Receiver {
  url: string;
  /** Every request, in arrival order (also those answered with an error). */
  requests: Received[];
  /** Requests answered 2xx. */
  accepted(): Received[];
  /** The next answers, in order; then 204. */
  answers: Answer[];
  /** Headers of the next error answers (e.g. retry-after). */
  headers: Record<string, string>;
  secret: string;
  /** Requests being held open (`{ holdMs }`) right now. */
  holding: number;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const state: Receiver = {
    url: "",
    requests: [],
    accepted: () => [],
    answers: [],
    headers: {},
    secret: "",
    holding: 0,
    close: () => Promise.resolve(),
  };
  const accepted: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const headers = {
        "webhook-id": String(req.headers["webhook-id"]),
        "webhook-timestamp": String(req.headers["webhook-timestamp"]),
        "webhook-signature": String(req.headers["webhook-signature"]),
      };
      let verified: boolean;
      try {
        new Webhook(state.secret).verify(text, headers);
        verified = true;
      } catch {
        verified = false;
      }
      const received: Received = {
        id: headers["webhook-id"],
        timestamp: headers["webhook-timestamp"],
        body: JSON.parse(text) as Record<string, unknown>,
        userAgent: req.headers["user-agent"],
        verified,
      };
      state.requests.push(received);
      const answer = state.answers.shift() ?? 204;
      if (answer === "hang") return;
      if (typeof answer === "object") {
        state.holding += 1;
        setTimeout(() => {
          state.holding -= 1;
          if (res.destroyed) return;
          accepted.push(received);
          res.writeHead(204).end();
        }, answer.holdMs);
        return;
      }
      if (answer >= 200 && answer < 300) accepted.push(received);
      res.writeHead(answer, answer >= 300 ? state.headers : {});
      res.end(answer >= 300 ? "nope" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/hook`;
  state.accepted = () => [...accepted];
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => {
        resolve();
      });
    });
  return state;
}
