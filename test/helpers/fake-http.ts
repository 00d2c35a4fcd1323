/**
 * The HTTP part of the tests' chat fakes (`fake-slack.ts`, `fake-teams.ts`): a real server on a
 * loopback port that reads each request whole, hands it to the fake, records it with the answer
 * given, and answers. Faults queued by a test are answered before the fake's own logic.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export interface FakeAnswer {
  status: number;
  /** JSON when an object, text/plain when a string. */
  body: string | object;
  headers?: Record<string, string>;
}

export interface Recorded extends FakeRequest {
  answer: FakeAnswer;
}

export interface FakeServer {
  url: string;
  /** Every request, in arrival order, with what it was answered. */
  requests: Recorded[];
  close(): Promise<void>;
}

export async function startFakeServer(
  handle: (request: FakeRequest) => FakeAnswer,
): Promise<FakeServer> {
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const request: FakeRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        text: Buffer.concat(chunks).toString("utf8"),
      };
      const answer = handle(request);
      requests.push({ ...request, answer });
      const json = typeof answer.body !== "string";
      res.writeHead(answer.status, {
        "content-type": json ? "application/json; charset=utf-8" : "text/plain; charset=utf-8",
        ...answer.headers,
      });
      res.end(json ? JSON.stringify(answer.body) : answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A JSON body parsed, or undefined when it is not a JSON object. */
export function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
