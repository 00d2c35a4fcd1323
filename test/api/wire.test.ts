import { beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app.js";
import { REPO } from "../helpers/server.js";

let server: TestApp;
beforeAll(async () => {
  server = await createTestApp();
  await server.call("createQueue", { repo: REPO, targetBranch: "main" });
  // Registered only once the server is up: a failed start leaves nothing to close.
  return () => server.close();
});

interface ErrorBody {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}

function expectError(
  response: { status: number; headers: Headers; body: unknown },
  status: number,
  code: string,
): ErrorBody["error"] {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = response.body as ErrorBody;
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(10);
  return body.error;
}

const getQueue = { repo: REPO, targetBranch: "main" };

describe("authentication", () => {
  it("answers 401 without a token", async () => {
    const error = expectError(
      await server.call("getQueue", getQueue, { token: null }),
      401,
      "unauthorized",
    );
    expect(error.message).toContain("x-api-token");
  });

  it("answers 401 for an unknown token", async () => {
    expectError(
      await server.call("getQueue", getQueue, { token: "mlt_not-a-real-token" }),
      401,
      "unauthorized",
    );
  });

  it("answers 401 for an empty token header", async () => {
    expectError(await server.call("getQueue", getQueue, { token: "" }), 401, "unauthorized");
  });

  it("answers 401 before looking at the body", async () => {
    const response = await server.request("/v1/getQueue", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expectError(response, 401, "unauthorized");
  });

  it("stops accepting a token once it is revoked", async () => {
    const issued = await server.services.organizations.issueToken("acme", "short-lived");
    expect((await server.call("getQueue", getQueue, { token: issued.token })).status).toBe(200);
    await server.services.organizations.revokeToken(issued.tokenId);
    expectError(
      await server.call("getQueue", getQueue, { token: issued.token }),
      401,
      "unauthorized",
    );
    expect((await server.call("getQueue", getQueue)).status).toBe(200);
  });

  it("tells the caller who it is", async () => {
    const response = await server.call("whoami", {});
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      organization: { slug: "acme" },
      tokenId: expect.stringMatching(/^tok_/) as unknown,
    });
  });
});

describe("request errors", () => {
  const post = (body: string | Uint8Array, contentType?: string) =>
    server.request("/v1/getQueue", {
      method: "POST",
      headers: {
        "x-api-token": server.token,
        ...(contentType ? { "content-type": contentType } : {}),
      },
      body,
    });

  it("answers 400 to malformed JSON", async () => {
    const error = expectError(await post('{"repo": ', "application/json"), 400, "invalid_request");
    expect(error.message).toMatch(/JSON/);
  });

  it("answers 400 to an empty JSON body", async () => {
    const error = expectError(await post("", "application/json"), 400, "invalid_request");
    expect(error.message).toMatch(/empty/);
  });

  it("answers 400 to a JSON body that is not an object", async () => {
    for (const body of ["[]", "42", '"text"', "null"]) {
      const error = expectError(await post(body, "application/json"), 400, "invalid_request");
      expect(error.details?.[0]).toMatchObject({ path: "body" });
    }
  });

  it("answers 415 to another content type", async () => {
    const error = expectError(
      await post("repo=acme", "application/x-www-form-urlencoded"),
      415,
      "unsupported_media_type",
    );
    expect(error.message).toContain("application/json");
    expectError(await post("{}", "text/plain"), 415, "unsupported_media_type");
  });

  it("accepts application/json with a charset", async () => {
    const response = await post(JSON.stringify(getQueue), "application/json; charset=utf-8");
    expect(response.status).toBe(200);
  });

  it("answers 413 to a body over 20 MiB, and accepts one just under", async () => {
    const padding = (size: number) => JSON.stringify({ ...getQueue, padding: "x".repeat(size) });
    const over = padding(20 * 1024 * 1024);
    expectError(await post(over, "application/json"), 413, "payload_too_large");
    const under = padding(20 * 1024 * 1024 - 200);
    expect((await post(under, "application/json")).status).toBe(200);
  });

  it("answers 404 with the route to an unknown path", async () => {
    const response = await server.call("noSuchOperation", {});
    const error = expectError(response, 404, "not_found");
    expect(error.message).toContain("/v1/noSuchOperation");
  });

  it("answers 405 with an Allow header to a known path with the wrong method", async () => {
    const response = await server.request("/v1/getQueue", {
      method: "GET",
      headers: { "x-api-token": server.token },
    });
    expectError(response, 405, "method_not_allowed");
    expect(response.headers.get("allow")).toBe("POST");
    const wrongOnGet = await server.request("/healthz", { method: "DELETE" });
    expectError(wrongOnGet, 405, "method_not_allowed");
    expect(wrongOnGet.headers.get("allow")).toContain("GET");
  });

  it("keeps a sane x-request-id and makes one otherwise", async () => {
    const given = await server.request("/healthz", { headers: { "x-request-id": "trace-123" } });
    expect(given.headers.get("x-request-id")).toBe("trace-123");
    const weird = await server.request("/healthz", { headers: { "x-request-id": "a b;<script>" } });
    expect(weird.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const none = await server.request("/healthz");
    expect(none.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("service endpoints", () => {
  it("reports health with a database check", async () => {
    const response = await server.request("/healthz");
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: "ok", database: "ok" });
  });

  it("answers /v1/status in Trunk's shape without a token", async () => {
    const response = await server.request("/v1/status");
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      overallStatus: {
        type: "up",
        color: "green",
        overallStatusDescription: "All systems operational",
      },
      statuses: [
        { name: "API", color: "green", statusDescription: "Operational" },
        { name: "Database", color: "green", statusDescription: "Operational" },
      ],
    });
  });

  it("counts requests by route template and status in /metrics", async () => {
    await server.call("getQueue", { repo: REPO, targetBranch: "nothing-here" });
    await server.call("definitelyMissing", {});
    const metrics = await server.request("/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(metrics.text).toMatch(
      /mainline_http_requests_total\{method="POST",route="\/v1\/getQueue",status="404"\} [1-9]/,
    );
    expect(metrics.text).toMatch(/route="unmatched",status="404"/);
    expect(metrics.text).not.toContain("definitelyMissing");
    expect(metrics.text).toMatch(
      /mainline_http_request_duration_seconds_count\{method="POST",route="\/v1\/getQueue",status="200"\} [1-9]/,
    );
  });

  it("serves a readable API reference at /docs", async () => {
    const response = await server.request("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    for (const operation of ["createQueue", "getQueue", "updateQueue", "deleteQueue", "whoami"]) {
      expect(response.text).toContain(`POST /v1/${operation}`);
    }
    expect(response.text).toContain("deleteRequiredStatuses");
    expect(response.text).toContain("curl");
  });
});

describe("server faults", () => {
  it("answers 500 with a request id and no internals, and 503 from health, when the database is gone", async () => {
    // No ingestion worker: closing the pool under a connection request still waiting (pg-pool
    // never answers those after end()) would hang its loop; a real outage makes queries fail.
    const broken = await createTestApp();
    try {
      await broken.database.handle.close();
      const response = await broken.call("getQueue", getQueue);
      const error = expectError(response, 500, "internal");
      const requestId = response.headers.get("x-request-id") ?? "";
      expect(error.message).toContain(requestId);
      expect(response.text).not.toMatch(/at .*\.(ts|js):\d+|select|kysely|driver|stack/i);
      expectError(await broken.request("/healthz"), 503, "unavailable");
      const status = await broken.request("/v1/status");
      expect(status.status).toBe(200);
      expect(status.body).toMatchObject({ overallStatus: { type: "impacted", color: "red" } });
    } finally {
      await broken.close();
    }
  });
});
