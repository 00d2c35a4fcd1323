import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  TicketConnection,
  TicketDraft,
  TicketError,
  TicketResult,
} from "../../src/notifications/tickets/types.js";

/**
 * What the ticket clients' tests share: drafts, connections, reading results, and the servers
 * that stand for a tracker gone wrong (one that redirects, an address where nothing listens).
 */

/** Every error message the clients gave in a file, to check that none holds a credential. */
export class ErrorMessages {
  readonly messages: string[] = [];

  failure<T>(result: TicketResult<T>): TicketError {
    if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
    this.messages.push(result.error.message);
    return result.error;
  }

  /** The messages that show one of `secrets`. */
  leaking(secrets: readonly string[]): string[] {
    return this.messages.filter((m) => secrets.some((s) => m.includes(s)));
  }
}

export function valueOf<T>(result: TicketResult<T>): T {
  if (!result.ok) throw new Error(`${result.error.kind}: ${result.error.message}`);
  return result.value;
}

export function ticketConnection(
  base: Pick<TicketConnection, "kind" | "baseUrl" | "target" | "credential">,
  overrides: Partial<TicketConnection> = {},
): TicketConnection {
  return {
    id: "conn_1",
    issueType: null,
    email: null,
    timeoutMs: 5_000,
    allowPrivate: true,
    ...base,
    ...overrides,
  };
}

let drafts = 0;

/** A draft whose test id, marker and title differ from every other's. */
export function ticketDraft(overrides: Partial<TicketDraft> = {}): TicketDraft {
  drafts++;
  return {
    testId: `test_${String(drafts)}`,
    marker: `t${String(drafts)}:conn_1`,
    title: `Flaky test: checkout ${String(drafts)}`,
    blocks: [
      { kind: "heading", text: "Flaky test" },
      { kind: "paragraph", spans: [{ text: "Fails " }, { text: "12%", strong: true }] },
      { kind: "code", text: "Error: boom" },
    ],
    labels: ["flaky-test"],
    owners: [],
    ...overrides,
  };
}

/** A title that breaks whatever builds requests by pasting strings. */
export const NASTY_TEXT =
  'He said "hi" \\ """triple""" `tick` ``double`` <!-- not a comment --> ${x} }{';

/** An HTTP server on 127.0.0.1 that answers every request with a redirect. */
export async function startRedirector(
  status: number,
  location: string,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(status, { location }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** `http://127.0.0.1:<port>` where nothing listens (a port just freed). */
export async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  return `http://127.0.0.1:${String(port)}`;
}
