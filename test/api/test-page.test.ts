import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, testIdOf } from "../helpers/uploads.js";

/**
 * The HTML page of a test (every test's `html_url`): private to the organization, reachable with
 * the `x-api-token` header or the cookie its sign-in form sets, and escaping everything it shows.
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

interface SignInForm {
  /** `mainline_csrf=…`, as the browser sends it back. */
  cookie: string;
  /** The form's hidden `csrf` field. */
  csrf: string;
}

function csrfCookieOf(headers: Headers): string | undefined {
  return headers
    .getSetCookie()
    .find((c) => c.startsWith("mainline_csrf="))
    ?.split(";")[0];
}

/** The sign-in form as a browser holds it after loading the page. */
async function openForm(path: string): Promise<SignInForm> {
  const page = await get(path);
  expect(page.status).toBe(401);
  const csrf = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(page.text)?.[1];
  const cookie = csrfCookieOf(page.headers);
  expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(cookie).toBe(`mainline_csrf=${csrf}`);
  return { cookie: cookie ?? "", csrf: csrf ?? "" };
}

/** Posts the form: by default one just opened; `null` posts without its token and cookie. */
async function signIn(
  path: string,
  token: string,
  headers: Record<string, string> = {},
  form?: SignInForm | null,
) {
  const held = form === undefined ? await openForm(path) : form;
  return server.request(path, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(held ? { cookie: held.cookie } : {}),
      ...headers,
    },
    body: new URLSearchParams({ token, ...(held ? { csrf: held.csrf } : {}) }).toString(),
    redirect: "manual",
  });
}

const tokenCookieSet = (headers: Headers) =>
  headers.getSetCookie().some((c) => c.startsWith("mainline_token="));

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
  it("answers 401 with a sign-in form without a token", async () => {
    const page = await get(pagePath);
    expect(page.status).toBe(401);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
    expect(page.text).toMatch(/<form class="login" method="post" action="[^"]+">/);
    expect(page.text).toContain(`action="${pagePath.replace(/&/g, "&amp;")}"`);
    expect(page.text).toContain('name="token"');
    expect(page.text).not.toContain("checkout works");
  });

  it("shows the test with the x-api-token header: status, reason, quarantine, runs", async () => {
    const page = await get(pagePath, { "x-api-token": server.token });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.text).toContain("<h1>checkout works</h1>");
    expect(page.text).toContain("Failed and passed on the same commit ccccccc");
    expect(page.text).toContain("automatically, as a flaky test");
    expect(page.text).toContain("50%");
    expect(page.text).toContain('<h2>Runs <span class="muted">(2)</span></h2>');
    expect(page.text).toContain("feature/checkout");
    expect(page.text).toContain("#12");
    expect(page.text).toContain("Expected 200, got 502 &lt;html&gt;");
    expect(page.text).toContain("pass-on-retry");
  });

  it("signs in through the form: a cookie for the organization's pages, then a redirect", async () => {
    const answer = await signIn(pagePath, server.token);
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe(pagePath);
    const cookie = answer.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^mainline_token=[^;]+; /);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/acme/flaky-tests");
    const pair = cookie.split(";")[0] ?? "";
    const page = await get(pagePath, { cookie: `theme=dark; ${pair}` });
    expect(page.status).toBe(200);
    expect(page.text).toContain("<h1>checkout works</h1>");
  });

  it("sets the form's anti-forgery cookie with the sign-in form, and keeps a held one", async () => {
    const page = await get(pagePath);
    const cookie = page.headers.getSetCookie().find((c) => c.startsWith("mainline_csrf=")) ?? "";
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/acme/flaky-tests");
    const form = await openForm(pagePath);
    const again = await get(pagePath, { cookie: form.cookie });
    expect(csrfCookieOf(again.headers)).toBe(form.cookie);
    expect(again.text).toContain(`name="csrf" value="${form.csrf}"`);
  });

  it("accepts the form from its own page as browsers send it", async () => {
    const own = await signIn(pagePath, server.token, {
      origin: server.url,
      "sec-fetch-site": "same-origin",
    });
    expect(own.status).toBe(303);
    // Chromium under referrer-policy: no-referrer: Origin null, but Sec-Fetch-Site same-origin.
    const chromium = await signIn(pagePath, server.token, {
      origin: "null",
      "sec-fetch-site": "same-origin",
    });
    expect(chromium.status).toBe(303);
    expect(tokenCookieSet(chromium.headers)).toBe(true);
  });

  it("refuses the form from another site", async () => {
    for (const headers of [
      { origin: "https://evil.example" },
      { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
      { origin: "null", "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ]) {
      const foreign = await signIn(pagePath, server.token, headers);
      expect(foreign.status, JSON.stringify(headers)).toBe(403);
      expect(foreign.text).toContain("Sign-in refused");
      expect(foreign.headers.get("set-cookie")).toBeNull();
    }
  });

  it("refuses the form without its anti-forgery token, or with another one", async () => {
    const bare = await signIn(pagePath, server.token, { origin: "null" }, null);
    expect(bare.status).toBe(403);
    expect(tokenCookieSet(bare.headers)).toBe(false);
    expect(bare.text).toContain("had expired or did not come from this page");
    expect(bare.text).toContain('name="csrf"');
    const curl = await signIn(pagePath, server.token, {}, null);
    expect(curl.status).toBe(403);

    const mine = await openForm(pagePath);
    const theirs = await openForm(pagePath);
    expect(mine.csrf).not.toBe(theirs.csrf);
    const mixed = await signIn(
      pagePath,
      server.token,
      {},
      { cookie: mine.cookie, csrf: theirs.csrf },
    );
    expect(mixed.status).toBe(403);
    expect(tokenCookieSet(mixed.headers)).toBe(false);
    const fieldOnly = await signIn(pagePath, server.token, {}, { cookie: "", csrf: mine.csrf });
    expect(fieldOnly.status).toBe(403);
  });

  it("answers the form's other problems as pages", async () => {
    const plain = await server.request(pagePath, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "token=x",
    });
    expect(plain.status).toBe(415);
    expect(plain.headers.get("content-type")).toMatch(/^text\/html/);
    const huge = await signIn(pagePath, "x".repeat(20_000));
    expect(huge.status).toBe(413);
    expect(huge.headers.get("content-type")).toMatch(/^text\/html/);
  });

  it("refuses a wrong token in the form and clears a stale cookie", async () => {
    const wrong = await signIn(pagePath, "not-a-token");
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain("not valid");
    expect(tokenCookieSet(wrong.headers)).toBe(false);
    const empty = await signIn(pagePath, "");
    expect(empty.status).toBe(401);
    expect(empty.text).toContain("Enter an API token");

    const stale = await get(pagePath, { cookie: "mainline_token=revoked-or-wrong" });
    expect(stale.status).toBe(401);
    expect(stale.headers.get("set-cookie")).toMatch(/^mainline_token=; .*Max-Age=0/);
  });

  it("answers 403 for another organization's page or token", async () => {
    const otherPath = pagePath.replace(/^\/acme\//, "/globex/");
    const other = await get(otherPath, { "x-api-token": server.token });
    expect(other.status).toBe(403);
    expect(other.text).toContain("another organization");
    expect(other.text).toContain('name="token"');

    const globex = await server.services.organizations.createOrganizationWithToken("globex");
    const foreign = await get(pagePath, { "x-api-token": globex.token });
    expect(foreign.status).toBe(403);
    expect(foreign.text).not.toContain("checkout works");
    const form = await signIn(pagePath, globex.token);
    expect(form.status).toBe(403);
    expect(tokenCookieSet(form.headers)).toBe(false);
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
    expect(page.text).not.toMatch(/<script/i);
    expect(page.text).toContain("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>");
    expect(page.text).toContain("suite &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;");
    expect(page.text).toContain("<title>&lt;script&gt;alert(1)&lt;/script&gt; · acme/app");
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
