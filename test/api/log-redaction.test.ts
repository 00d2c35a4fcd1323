import { Writable } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import { describe, expect, it } from "vitest";
import { redactingLogger } from "../../src/api/plugins/logging.js";

/** A fastify app with the server's logger options, its log lines collected. */
function appWithLog(): { app: FastifyInstance; log: () => string } {
  let lines = "";
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines += chunk.toString("utf8");
      done();
    },
  });
  const options = redactingLogger({ level: "trace", stream });
  const app: FastifyInstance = Fastify({ logger: options });
  return { app, log: () => lines };
}

describe("the server's log serializers", () => {
  it("redact URLs, error messages and stacks, and credential headers", async () => {
    const token = "mlt_0123456789abcdefghijABCDEFGHIJ-_0123456789";
    const signature = "c2lnbmF0dXJlLW9mLXRoZS11cGxvYWQtdXJs";
    const { app, log } = appWithLog();
    app.get("/fails", (request) => {
      request.log.info({ headers: request.headers }, "headers as a handler might log them");
      throw new Error(`could not fetch /v1/uploads/u1?signature=${signature} with ${token}`);
    });
    await app.ready();
    const answer = await app.inject({
      method: "GET",
      url: `/fails?expires=1&signature=${signature}`,
      headers: { "x-api-token": token, authorization: `Bearer ${token}`, cookie: `s=${token}` },
    });
    expect(answer.statusCode).toBe(500);
    await app.close();

    const text = log();
    expect(text).toContain('"url":"/fails?expires=1&signature=[redacted]"');
    expect(text).toContain(
      "could not fetch /v1/uploads/u1?signature=[redacted] with mlt_[redacted]",
    );
    expect(text).toContain('"x-api-token":"[redacted]"');
    expect(text).not.toContain(signature);
    expect(text).not.toContain(token.slice(4));
  });
});
