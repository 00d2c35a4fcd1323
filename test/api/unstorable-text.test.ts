import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, testIdOf, uploadState } from "../helpers/uploads.js";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

interface ErrorBody {
  error: { code: string; message: string; details?: { path: string; message: string }[] };
}

function expectInvalid(response: { status: number; body: unknown }, path: string): void {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  const { error } = response.body as ErrorBody;
  expect(error.code).toBe("invalid_request");
  expect(error.message).toContain(path);
  expect(error.details?.[0]?.path).toBe(path);
}

const NUL = "a\u0000b";
const LONE_SURROGATE = "a\uD800b";

describe("strings PostgreSQL cannot store are a 400 naming the field, on every database", () => {
  it("in a merge-queue body", async () => {
    const nul = await server.call("createQueue", {
      repo: { ...REPO, owner: NUL },
      targetBranch: "main",
    });
    expectInvalid(nul, "repo.owner");
    expect((nul.body as unknown as ErrorBody).error.message).toMatch(/NUL/);
    const surrogate = await server.call("createQueue", {
      repo: REPO,
      targetBranch: LONE_SURROGATE,
    });
    expectInvalid(surrogate, "targetBranch");
    expect((surrogate.body as unknown as ErrorBody).error.message).toMatch(/surrogate/);
  });

  it("in nested and unknown fields, and in field names", async () => {
    expectInvalid(
      await server.call("metrics/createBundleUpload", {
        repo: REPO,
        orgUrlSlug: "acme",
        remoteUrls: ["ok", NUL],
      }),
      "remoteUrls[1]",
    );
    expectInvalid(await server.call("whoami", { extra: { deeper: [NUL] } }), "extra.deeper[0]");
    expectInvalid(await server.call("whoami", { [NUL]: 1 }), "body");
  });

  it("in flaky-tests bodies", async () => {
    expectInvalid(
      await server.call("flaky-tests/list-unhealthy-tests", {
        repo: REPO,
        org_url_slug: NUL,
        page_query: { page_size: 10 },
      }),
      "org_url_slug",
    );
    expectInvalid(
      await server.call("flaky-tests/get-upload", {
        repo: REPO,
        org_url_slug: "acme",
        upload_id: NUL,
      }),
      "upload_id",
    );
  });

  it("in path parameters and the query of the signed upload URL", async () => {
    const put = await server.request("/v1/uploads/a%00b?expires=1&signature=x", {
      method: "PUT",
      body: "bundle",
    });
    expectInvalid(put, "id");
    const query = await server.request("/v1/uploads/abc?expires=1%00&signature=x", {
      method: "PUT",
      body: "bundle",
    });
    expectInvalid(query, "expires");
  });

  it("in the HTML test page's address, as a page", async () => {
    const response = await server.request(`/acme/flaky-tests/test/a%00b?repo=acme/app`, {
      headers: { "x-api-token": server.token },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
  });
});

describe("bundles with text PostgreSQL cannot store", () => {
  it("fail at once with a reason naming the meta.json field", async () => {
    const id = await putBundle(
      server,
      await bundle({ files: [junit([{ name: "t" }])], branch: NUL }),
    );
    await server.services.worker.idle();
    const upload = await uploadState(server, id);
    expect(upload.state).toBe("failed");
    expect(upload.reason).toMatch(/meta\.json's repo\.repo_head_branch must not contain NUL/);
    const record = await server.services.stores.uploads.find(id);
    expect(record?.attempts).toBe(1);
  });

  it("keep JUnit results, without the NUL characters, in names, messages and output", async () => {
    const report = junit([
      { name: "nul\u0000name", status: "failed", message: "bad\u0000message" },
    ]).replace(
      "</testsuite>",
      '<testcase name="reference" classname="pkg.Class"><failure message="x&#0;y">out&#0;put</failure></testcase></testsuite>',
    );
    const id = await ingest(server, await bundle({ files: [report] }));
    const upload = await uploadState(server, id);
    expect(upload).toMatchObject({ state: "processed", reason: null, tests_failed: 2 });
    const details = await server.call<{ test: { name: string } }>("flaky-tests/get-test-details", {
      repo: REPO,
      org_url_slug: "acme",
      test_id: testIdOf({ name: "nulname" }),
    });
    expect(details.status, details.text).toBe(200);
    expect(details.body.test.name).toBe("nulname");
  });
});
