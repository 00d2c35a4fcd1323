import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collapseSlashes } from "../../src/api/server.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, uploadState } from "../helpers/uploads.js";

// Trunk's uploader joins its base URL and "/v1/..." as text: a base URL ending in "/" asks for
// "//v1/metrics/createBundleUpload". Every route answers such paths.

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const json = (body: unknown, token?: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...(token ? { "x-api-token": token } : {}) },
  body: JSON.stringify(body),
});

describe("a base URL with a trailing slash", () => {
  it("creates an upload, takes the bundle and processes it through //v1/...", async () => {
    const created = await server.request(
      "//v1/metrics/createBundleUpload",
      json({ repo: REPO, orgUrlSlug: "acme", clientVersion: "test", remoteUrls: [] }, server.token),
    );
    expect(created.status, created.text).toBe(200);
    const { id, url } = created.body as { id: string; url: string };

    // The signed URL, asked for with a doubled slash as well.
    const signed = new URL(url);
    const put = await server.request(`/${signed.pathname}${signed.search}`, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: await bundle({ files: [junit([{ name: "slashes", status: "failed" }])] }),
    });
    expect(put.status, put.text).toBe(200);
    await server.services.worker.idle();
    expect(await uploadState(server, id)).toMatchObject({ state: "processed", tests_failed: 1 });

    const quarantine = await server.request(
      "//v1/metrics/getQuarantineConfig",
      json({ repo: REPO, orgUrlSlug: "acme", testIdentifiers: [] }, server.token),
    );
    expect(quarantine.status, quarantine.text).toBe(200);
  });

  it("collapses doubled slashes anywhere in the path, for every route", async () => {
    const whoami = await server.request("///v1//whoami", json({}, server.token));
    expect(whoami.status, whoami.text).toBe(200);
    expect(whoami.body).toMatchObject({ organization: { slug: "acme" } });
    expect((await server.request("//healthz")).status).toBe(200);
  });

  it("still authenticates and still answers unknown paths with the envelope", async () => {
    const anonymous = await server.request("//v1/whoami", json({}));
    expect(anonymous.status).toBe(401);
    const missing = await server.request("//v1/no-such-operation", json({}, server.token));
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { code: "not_found" } });
    expect((missing.body as { error: { message: string } }).error.message).toContain(
      "POST /v1/no-such-operation",
    );
    const wrongMethod = await server.request("//v1/whoami", { method: "GET" });
    expect(wrongMethod.status).toBe(405);
  });
});

describe("collapseSlashes", () => {
  it("collapses runs of slashes in the path and leaves the query alone", () => {
    expect(collapseSlashes("//v1/metrics/createBundleUpload")).toBe(
      "/v1/metrics/createBundleUpload",
    );
    expect(collapseSlashes("/v1//uploads///x?sig=a//b")).toBe("/v1/uploads/x?sig=a//b");
    expect(collapseSlashes("/v1/status")).toBe("/v1/status");
    expect(collapseSlashes("/?next=//x")).toBe("/?next=//x");
  });
});
