import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ maxBundleBytes: 64 * 1024 });
});
afterAll(async () => {
  await server.close();
});

interface RawExchange {
  /** Everything the server sent before it closed the connection. */
  received: string;
  status: number;
  headers: Map<string, string>;
  body: string;
}

/**
 * A client that writes its whole request (head and body) before it reads anything, as simple
 * HTTP clients do, and then waits for the server to end the connection. It resolves only when
 * the server closes the socket, so a connection kept open after the answer makes the test fail
 * by timing out.
 */
function rawRequest(head: string, body: Buffer): Promise<RawExchange> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    // The server may stop reading and close while the body is still being written.
    socket.on("error", () => undefined);
    socket.on("close", () => {
      const received = Buffer.concat(chunks).toString("latin1");
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) {
        reject(new Error(`no answer before the connection closed: ${JSON.stringify(received)}`));
        return;
      }
      const [statusLine = "", ...lines] = received.slice(0, end).split("\r\n");
      const headers = new Map<string, string>();
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      resolve({
        received,
        status: Number(statusLine.split(" ")[1]),
        headers,
        body: received.slice(end + 4),
      });
    });
    socket.on("connect", () => {
      socket.write(head);
      // No half-close: like a client waiting for the answer on a kept-alive connection.
      socket.write(body);
    });
  });
}

function errorOf(exchange: RawExchange): { code: string; message: string } {
  // Small answers come whole; the body is JSON (possibly chunked, which these never are).
  return (JSON.parse(exchange.body) as { error: { code: string; message: string } }).error;
}

describe("a 413 closes the connection", () => {
  it("for a JSON body over 20 MiB sent whole before reading", async () => {
    const body = Buffer.alloc(21 * 1024 * 1024, 0x20);
    const exchange = await rawRequest(
      `POST /v1/getQueue HTTP/1.1\r\nHost: localhost\r\nx-api-token: ${server.token}\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      body,
    );
    expect(exchange.status).toBe(413);
    expect(exchange.headers.get("connection")).toBe("close");
    expect(errorOf(exchange).code).toBe("payload_too_large");
  });

  it("for a bundle over the limit sent whole before reading", async () => {
    const created = await server.call<{ url: string }>("metrics/createBundleUpload", {
      repo: REPO,
      orgUrlSlug: "acme",
    });
    expect(created.status).toBe(200);
    const url = new URL(created.body.url);
    const body = Buffer.alloc(4 * 1024 * 1024, 0x61);
    const exchange = await rawRequest(
      `PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: localhost\r\n` +
        `content-type: application/octet-stream\r\ncontent-length: ${body.length}\r\n\r\n`,
      body,
    );
    expect(exchange.status).toBe(413);
    expect(exchange.headers.get("connection")).toBe("close");
    expect(errorOf(exchange).code).toBe("payload_too_large");
  });
});

describe("the router's own errors use the error envelope", () => {
  it("answers a malformed percent-encoding in the path with 400", async () => {
    const response = await server.request("/v1/uploads/%zz", { method: "PUT", body: "x" });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const error = (response.body as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("invalid_request");
    expect(error.message).toMatch(/path/i);
    expect(response.headers.get("x-request-id")).toBeTruthy();
  });

  it("answers an over-long path parameter with 414", async () => {
    const response = await server.request(`/v1/uploads/${"a".repeat(500)}`, {
      method: "PUT",
      body: "x",
    });
    expect(response.status).toBe(414);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const error = (response.body as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("uri_too_long");
    expect(error.message.length).toBeGreaterThan(10);
  });

  it("answers an address over the HTTP parser's limit with 431 and the envelope", async () => {
    const response = await server.request(`/v1/uploads/abc?signature=${"a".repeat(20_000)}`, {
      method: "PUT",
      body: "x",
    });
    expect(response.status).toBe(431);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    const error = (response.body as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("headers_too_large");
    expect(error.message).toMatch(/16 KiB/);
  });
});
