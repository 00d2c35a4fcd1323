import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver for tests of the fake GitLab: records each delivery (headers, exact body,
 * parsed payload) and answers a scripted status (the next of `statuses`, else `status`).
 */

export interface ReceivedHook {
  headers: Record<string, string>;
  body: string;
  event: string;
  payload: Record<string, unknown>;
}

export class HookReceiver {
  readonly received: ReceivedHook[] = [];
  status = 200;
  /** Statuses for the next deliveries, in order. */
  statuses: number[] = [];
  delayMs = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<HookReceiver> {
    let self: HookReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const receiver = self;
        if (receiver === null) return;
        const body = Buffer.concat(chunks).toString("utf8");
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
        receiver.received.push({
          headers,
          body,
          event: headers["x-gitlab-event"] ?? "",
          payload: JSON.parse(body) as Record<string, unknown>,
        });
        const status = receiver.statuses.shift() ?? receiver.status;
        setTimeout(() => {
          res.writeHead(status).end();
        }, receiver.delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    self = new HookReceiver(server, `http://127.0.0.1:${port}/webhooks/gitlab`);
    return self;
  }

  events(name?: string): ReceivedHook[] {
    return this.received.filter((r) => name === undefined || r.event === name);
  }

  clear(): void {
    this.received.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
  }
}
