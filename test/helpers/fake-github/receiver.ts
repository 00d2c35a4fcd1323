import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver for tests of the fake itself: records what arrives (headers and exact body)
 * and answers a configurable status, optionally after a pause (a slow receiver).
 */

export interface Received {
  headers: Record<string, string>;
  body: string;
  event: string;
  delivery: string;
  payload: Record<string, unknown>;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  status = 202;
  delayMs = 0;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let self: WebhookReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
        const receiver = self;
        if (receiver === null) return;
        receiver.received.push({
          headers,
          body,
          event: headers["x-github-event"] ?? "",
          delivery: headers["x-github-delivery"] ?? "",
          payload: JSON.parse(body) as Record<string, unknown>,
        });
        for (const wake of receiver.waiters.splice(0)) wake();
        setTimeout(() => {
          res.writeHead(receiver.status).end();
        }, receiver.delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    self = new WebhookReceiver(
      server,
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/github`,
    );
    return self;
  }

  /** Waits until `count` deliveries (in all) have arrived. */
  async waitFor(count: number, timeoutMs = 5_000): Promise<Received[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} deliveries, got ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }

  events(name?: string): Received[] {
    return this.received.filter((r) => name === undefined || r.event === name);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }
}
