import net from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { startTestServer } from "../helpers/server.js";

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

describe("graceful shutdown", () => {
  it("finishes the request in flight and answers later ones with a 503 envelope", async () => {
    const server = await startTestServer();
    const { port } = server.app.server.address() as AddressInfo;
    const body = JSON.stringify({});
    const socket = net.connect(port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", resolve));
    try {
      // Request A: headers and half of nothing yet: the body is still to come.
      socket.write(
        `POST /v1/whoami HTTP/1.1\r\nhost: x\r\nx-api-token: ${server.token}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closed = server.app.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      // The rest of A, then request B on the same connection.
      socket.write(body);
      socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
      const text = await readUntil(
        socket,
        (t) => (t.match(/HTTP\/1\.1/g) ?? []).length >= 2 && t.includes('"unavailable"'),
      );
      const [first, second] = text.split(/(?=HTTP\/1\.1 )/);
      expect(first).toMatch(/^HTTP\/1\.1 200/);
      expect(first).toContain('"slug":"acme"');
      expect(second).toMatch(/^HTTP\/1\.1 503/);
      expect(second).toMatch(/connection: close/i);
      expect(second).toContain(
        '{"error":{"code":"unavailable","message":"The server is shutting down; retry in a moment."}}',
      );
      socket.destroy();
      await closed;
    } finally {
      socket.destroy();
      await server.database.cleanup();
    }
  });
});
