import net from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createHttpServer, createServices, stopService } from "../../src/app.js";
import { openDatabase } from "../../src/db/connection.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";
import { systemClock } from "../../src/lib/clock.js";
import { MergeQueueService, type QueueContents } from "../../src/mergequeue/queue-service.js";
import { createTestDatabase } from "../helpers/database.js";
import { signIn } from "../helpers/dashboard.js";
import { REPO, startTestServer } from "../helpers/server.js";

/** Reads from a socket until `done(text)` holds, or fails after a bounded wait. */
function readUntil(socket: net.Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => {
      reject(new Error(`timed out; got: ${text}`));
    }, 10_000);
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (done(text)) {
        clearTimeout(timer);
        socket.off("data", onData);
        resolve(text);
      }
    };
    socket.on("data", onData);
  });
}

/** A connected socket to the server, and when the server closed it. */
async function connectTo(port: number): Promise<{ socket: net.Socket; ended: Promise<void> }> {
  const socket = net.connect(port, "127.0.0.1");
  const ended = new Promise<void>((resolve) => {
    socket.once("end", resolve);
    socket.once("close", () => {
      resolve();
    });
  });
  socket.on("error", () => undefined);
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  return { socket, ended };
}

describe("graceful shutdown", () => {
  it("finishes requests in flight, refuses later ones with a 503, and closes every connection", async () => {
    const server = await startTestServer();
    const { port } = server.app.server.address() as AddressInfo;
    const body = JSON.stringify({});
    const a = await connectTo(port);
    const b = await connectTo(port);
    // A connection that never sends a byte (a browser's preconnected socket): Node's close
    // waits for it for as long as the client keeps it.
    const silent = await connectTo(port);
    try {
      // Request A: its headers, its body still to come. Request B: half of its headers.
      a.socket.write(
        `POST /v1/whoami HTTP/1.1\r\nhost: x\r\nx-api-token: ${server.token}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      );
      b.socket.write("GET /healthz HTTP/1.1\r\nho");
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closed = server.app.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      a.socket.write(body);
      b.socket.write("st: x\r\n\r\n");
      const first = await readUntil(a.socket, (t) => t.includes('"slug":"acme"'));
      const second = await readUntil(b.socket, (t) => t.includes('"unavailable"'));
      expect(first).toMatch(/^HTTP\/1\.1 200/);
      expect(second).toMatch(/^HTTP\/1\.1 503/);
      expect(second).toContain(
        '{"error":{"code":"unavailable","message":"The server is shutting down; retry in a moment."}}',
      );
      // Both answers end their keep-alive connection: the close waits for no idle socket (it
      // would otherwise wait for the keep-alive timeout, 72 s).
      for (const answer of [first, second]) expect(answer).toMatch(/connection: close/i);
      await Promise.all([a.ended, b.ended, silent.ended, closed]);
    } finally {
      a.socket.destroy();
      b.socket.destroy();
      silent.socket.destroy();
      await server.database.cleanup();
    }
  });
});

describe("a dashboard's live stream at shutdown", () => {
  it("ends the stream and its connection, and the close waits for neither", async () => {
    const server = await startTestServer();
    const created = await server.call("createQueue", { repo: REPO, targetBranch: "main" });
    expect(created.status, created.text).toBe(200);
    const session = await signIn(server.app, server.token);
    const { port } = server.app.server.address() as AddressInfo;
    const stream = await connectTo(port);
    try {
      stream.socket.write(
        `GET /acme/merge-queue/events?repo=${REPO.owner}/${REPO.name}&branch=main HTTP/1.1\r\nhost: x\r\ncookie: ${session.cookie}\r\n\r\n`,
      );
      await readUntil(stream.socket, (t) => t.includes("event: ready"));
      await Promise.all([server.app.close(), stream.ended]);
    } finally {
      stream.socket.destroy();
      await server.database.cleanup();
    }
  });
});

describe("stopping with work in flight", () => {
  it("a handler whose client hung up finishes its write before the database closes", async () => {
    const database = await createTestDatabase();
    const { db, dialect } = database.handle;
    let arrived = (): void => undefined;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The in-flight check of updateQueue waits on the gate: the request is mid-handler.
    const contents: QueueContents = {
      enqueued: async () => {
        arrived();
        await gate;
        return [];
      },
      activity: () =>
        Promise.resolve({ enqueued: [], batchSize: null, localizations: [], hostTrouble: null }),
    };
    const services = {
      ...createServices(database.handle),
      queues: new MergeQueueService({
        repositories: new RepositoryStore(db),
        queues: new MergeQueueStore(db, dialect),
        contents,
        clock: systemClock,
      }),
    };
    const { token, organization } =
      await services.organizations.createOrganizationWithToken("acme");
    const logs: string[] = [];
    const app = await createHttpServer(services, {
      level: "warn",
      stream: { write: (line: string) => logs.push(line) },
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
    const headers = { "content-type": "application/json", "x-api-token": token };
    const address = { repo: REPO, targetBranch: "main" };
    try {
      await fetch(`${url}/createQueue`, { method: "POST", headers, body: JSON.stringify(address) });
      const client = new AbortController();
      const pending = fetch(`${url}/updateQueue`, {
        method: "POST",
        headers,
        body: JSON.stringify({ ...address, concurrency: 9 }),
        signal: client.signal,
      }).catch(() => undefined);
      await reached;
      client.abort();
      await pending;
      const stopping = stopService(app, database.handle);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(app.inFlight.size).toBe(1);
      release();
      await stopping;

      expect(logs.filter((line) => /"level":(50|60)/.test(line))).toEqual([]);
      const reopened = openDatabase({ url: database.env.DATABASE_URL, dataDir: database.dataDir });
      try {
        const stored = await new MergeQueueStore(reopened.db, reopened.dialect).find(
          organization.id,
          REPO,
          "main",
        );
        expect(stored?.configuration.concurrency).toBe(9);
      } finally {
        await reopened.close();
      }
    } finally {
      release();
      await database.cleanup();
    }
  });
});
