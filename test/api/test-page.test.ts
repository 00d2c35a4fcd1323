import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, testIdOf } from "../helpers/uploads.js";
import { postSignIn, signIn } from "../helpers/dashboard.js";

/**
 * The HTML page of a test (every test's `html_url`): private to the organization, reachable with
 * a dashboard session or the `x-api-token` header, and escaping everything it shows. Sign-in
 * itself is the dashboard's (test/api/dashboard.test.ts).
 */

const HOSTILE = "<script>alert(1)</script>";
const COMMIT = "cc".repeat(20);
const GITLAB = { host: "gitlab.com", owner: "group/sub", name: "svc" };

let server: TestServer;
let pagePath: string;
let hostilePath: string;
let gitlabPath: string;

async function htmlUrl(repo: typeof REPO, testId: string): Promise<string> {
  const answer = await server.call<{ test: { html_url: string } }>("flaky-tests/get-test-details", {
    repo,
    org_url_slug: "acme",
    test_id: testId,
  });
  expect(answer.status, answer.text).toBe(200);
  const url = new URL(answer.body.test.html_url);
  expect(url.origin).toBe(server.url);
  return `${url.pathname}${url.search}`;
}

async function get(path: string, headers: Record<string, string> = {}) {
  return server.request(path, { headers, redirect: "manual" });
}

beforeAll(async () => {
  server = await startTestServer();
  for (const status of ["failed", "passed"] as const) {
    await ingest(
      server,
      await bundle({
        commit: COMMIT,
        branch: "feature/checkout",
        pr: 12,
        files: [
          junit(
            [
              { name: "checkout works", status, message: "Expected 200, got 502 <html>" },
              { name: HOSTILE, classname: `${HOSTILE}.Class`, status },
            ],
            `suite "${HOSTILE}"`,
          ),
        ],
      }),
    );
  }
  await putBundle(
    server,
    await bundle({ repo: GITLAB, files: [junit([{ name: "gitlab test" }])] }),
    GITLAB,
  );
  await server.services.worker.idle();
  pagePath = await htmlUrl(REPO, testIdOf({ name: "checkout works", suite: `suite "${HOSTILE}"` }));
  hostilePath = await htmlUrl(
    REPO,
    testIdOf({ name: HOSTILE, classname: `${HOSTILE}.Class`, suite: `suite "${HOSTILE}"` }),
  );
  gitlabPath = await htmlUrl(GITLAB, testIdOf({ name: "gitlab test", repo: GITLAB }));
});

afterAll(async () => {
  await server.close();
});

describe("the test page", () => {
  it("redirects to the sign-in form without a session, and comes back after it", async () => {
    const page = await get(pagePath);
    expect(page.status).toBe(303);
    const location = page.headers.get("location") ?? "";
    expect(location).toMatch(/^\/sign-in\?next=/);
    expect(new URL(location, server.url).searchParams.get("next")).toBe(pagePath);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.text).not.toContain("checkout works");
    const back = await postSignIn(server.app, server.token, pagePath);
    expect(back.headers.location).toBe(pagePath);
  });

  it("shows the test with the x-api-token header: status, reason, quarantine, runs", async () => {
    const page = await get(pagePath, { "x-api-token": server.token });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(page.text).toContain("<h1>checkout works</h1>");
    expect(page.text).toContain("Failed and passed on the same commit ccccccc");
    expect(page.text).toContain("automatically, as a flaky test");
    expect(page.text).toContain("50%");
    expect(page.text).toContain('<h2>Runs <span class="muted">(2)</span></h2>');
    expect(page.text).toContain("feature/checkout");
    expect(page.text).toContain("#12");
    expect(page.text).toContain("Expected 200, got 502 &lt;html&gt;");
    expect(page.text).toContain("pass-on-retry");
    // Scripts read pages with a token: no session, so no sign-out form.
    expect(page.text).not.toContain("Sign out");
  });

  it("shows the test with a session, in the dashboard's navigation", async () => {
    const session = await signIn(server.app, server.token);
    const page = await get(pagePath, { cookie: `theme=dark; ${session.cookie}` });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>checkout works</h1>");
    expect(page.text).toContain('<a href="/acme/flaky-tests" aria-current="page">Tests</a>');
    expect(page.text).toContain(
      '<li><a href="/acme/flaky-tests/repo?repo=acme/app">github.com/acme/app</a></li>',
    );
    expect(page.text).toContain("Sign out");
  });

  it("ignores the old token cookie", async () => {
    const stale = await get(pagePath, { cookie: `mainline_token=${server.token}` });
    expect(stale.status).toBe(303);
    expect(stale.headers.get("set-cookie")).toMatch(
      /^mainline_token=; Path=\/acme\/flaky-tests; Max-Age=0/,
    );
  });

  it("answers 404 for another organization's page or token, as for a page that does not exist", async () => {
    const otherPath = pagePath.replace(/^\/acme\//, "/globex/");
    const other = await get(otherPath, { "x-api-token": server.token });
    expect(other.status).toBe(404);
    expect(other.text).toContain("Page not found");

    const globex = await server.services.organizations.createOrganizationWithToken("globex");
    const foreign = await get(pagePath, { "x-api-token": globex.token });
    expect(foreign.status).toBe(404);
    expect(foreign.text).not.toContain("checkout works");
    expect(foreign.text).toBe(other.text.replace(/acme/g, "globex"));
  });

  it("answers 404 for an unknown test or repository, 400 without a repository", async () => {
    const headers = { "x-api-token": server.token };
    const [path, query] = pagePath.split("?") as [string, string];
    const unknownTest = await get(`/acme/flaky-tests/test/${randomUUID()}?${query}`, headers);
    expect(unknownTest.status).toBe(404);
    expect(unknownTest.headers.get("content-type")).toMatch(/^text\/html/);
    expect((await get(`${path}?repo=acme/elsewhere`, headers)).status).toBe(404);
    expect((await get(`${path}?repo=acme/app&host=gitlab.com`, headers)).status).toBe(404);
    expect((await get(`${path}?repo=ACME/App&host=github.com`, headers)).status).toBe(200);
    const noRepo = await get(path, headers);
    expect(noRepo.status).toBe(400);
    expect(noRepo.text).toContain("?repo=owner/name");
  });

  it("finds a repository whose owner holds slashes (GitLab groups)", async () => {
    expect(gitlabPath).toContain("repo=group%2Fsub/svc");
    const page = await get(gitlabPath, { "x-api-token": server.token });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>gitlab test</h1>");
  });

  it("escapes a test named <script>", async () => {
    const page = await get(hostilePath, { "x-api-token": server.token });
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(HOSTILE);
    // The only scripts are the page's own files (src), never one the name opened.
    expect(page.text).not.toMatch(/<script(?![^>]*\ssrc="\/assets\/)/i);
    expect(page.text).toContain("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(page.text).toContain("suite &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;");
    expect(page.text).toContain(
      "<title>&lt;script&gt;alert(1)&lt;/script&gt; · github.com/acme/app",
    );
  });

  it("shows a pytest test's file inferred from its class name when the report names none", async () => {
    await ingest(
      server,
      await bundle({
        files: [
          junit([{ name: "test_total", classname: "shop.tests.test_cart.TestCart" }], "pytest"),
        ],
      }),
    );
    await server.services.worker.idle();
    const path = await htmlUrl(
      REPO,
      testIdOf({ name: "test_total", classname: "shop.tests.test_cart.TestCart", suite: "pytest" }),
    );
    const page = await get(path, { "x-api-token": server.token });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<dt>File</dt><dd><code>shop/tests/test_cart.py</code>");
    expect(page.text).toContain("the report names no file");
  });

  it("is not in the OpenAPI document", async () => {
    const document = (await server.request("/openapi.json")).body as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(document.paths).some((p) => p.includes("flaky-tests/test"))).toBe(false);
    expect(document.paths).toHaveProperty("/v1/flaky-tests/get-test-details");
  });
});
