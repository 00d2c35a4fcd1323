import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, testIdOf } from "../helpers/uploads.js";
import {
  csrfField,
  expectLandmarks,
  expectNoExternalResources,
  expectPageHeaders,
  inject,
  postSignIn,
  signIn,
  type SignedIn,
} from "../helpers/dashboard.js";

/**
 * The dashboard through `app.inject` (no browser): the front door and sign-in, sessions and their
 * cookie, the organization's home with its counts and trends, escaping of hostile names, the
 * security headers, no off-host resources, and that one organization never sees another's pages.
 */

const HOSTILE = `<img src=x onerror="alert(1)">`;
const HOSTILE_REPO = { host: "github.com", owner: "acme", name: HOSTILE };
const COMMIT = "dd".repeat(20);

let server: TestServer;
let acme: SignedIn;

beforeAll(async () => {
  server = await startTestServer();
  // acme/app: one test flaky (failed and passed on one commit), one broken-looking, one fine.
  for (const status of ["failed", "passed"] as const) {
    await ingest(
      server,
      await bundle({
        commit: COMMIT,
        files: [
          junit([
            { name: "checkout flakes", status },
            { name: "adds", status: "passed" },
          ]),
        ],
      }),
    );
  }
  // A repository and a test named to break out of HTML.
  await putBundle(
    server,
    await bundle({ repo: HOSTILE_REPO, files: [junit([{ name: HOSTILE, status: "passed" }])] }),
    HOSTILE_REPO,
  );
  await server.services.worker.idle();
  const queue = await server.call("createQueue", { repo: REPO, targetBranch: "main" });
  expect(queue.status, queue.text).toBe(200);
  acme = await signIn(server.app, server.token);
});

afterAll(async () => {
  await server.close();
});

describe("the front door", () => {
  it("GET / without a session is the sign-in form, with its anti-forgery cookie", async () => {
    const page = await inject(server.app, { path: "/" });
    expect(page.status).toBe(200);
    expectPageHeaders(page);
    expectLandmarks(page.body);
    expectNoExternalResources(page.body);
    expect(page.body).toContain('<form class="stacked" method="post" action="/sign-in">');
    expect(page.body).toContain('name="token" type="password"');
    const cookie = page.setCookies.find((c) => c.startsWith("mainline_signin=")) ?? "";
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    expect(cookie).toContain("Path=/sign-in");
    expect(page.cookies.get("mainline_signin")).toBe(csrfField(page.body));
  });

  it("the JSON API keeps its 404 envelope under /v1", async () => {
    for (const path of ["/v1", "/v1/nowhere", "/v1/flaky-tests", "/v1/merge-queue"]) {
      const answer = await inject(server.app, { path, cookie: acme.cookie });
      expect(answer.status, path).toBe(404);
      expect(answer.headers["content-type"], path).toMatch(/^application\/json/);
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "not_found" } });
    }
  });

  it("pages without a session redirect to the sign-in form, which comes back to them", async () => {
    const path = "/acme/flaky-tests";
    const answer = await inject(server.app, { path });
    expect(answer.status).toBe(303);
    expect(answer.headers.location).toBe(
      `/sign-in?next=${encodeURIComponent(path).replace(/%2F/g, "/")}`,
    );
    const back = await postSignIn(server.app, server.token, path);
    expect(back.status).toBe(303);
    expect(back.headers.location).toBe(path);
  });

  it("never sends a browser elsewhere after signing in", async () => {
    for (const next of [
      "//evil.example/x",
      "https://evil.example/",
      "/\\evil.example",
      "javascript:alert(1)",
      "/sign-out",
    ]) {
      const answer = await postSignIn(server.app, server.token, next);
      expect(answer.status, next).toBe(303);
      expect(answer.headers.location, next).toBe("/acme");
    }
  });
});

describe("sessions", () => {
  it("the cookie holds a random session id, never the token", async () => {
    const answer = await postSignIn(server.app, server.token);
    expect(answer.status).toBe(303);
    const cookie = answer.setCookies.find((c) => c.startsWith("mainline_session=")) ?? "";
    expect(cookie).toMatch(
      /^mainline_session=mls_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax$/,
    );
    expect(cookie).not.toContain(server.token);
    expect(answer.setCookies.join("\n")).not.toContain(server.token);
    // The form's anti-forgery cookie is spent.
    expect(
      answer.setCookies.some((c) => /^mainline_signin=; Path=\/sign-in; Max-Age=0/.test(c)),
    ).toBe(true);
  });

  it("is Secure, with the __Host- prefix, behind HTTPS", async () => {
    const secure = await startTestServer({
      publicUrl: "https://mainline.example.com",
      org: "initech",
    });
    try {
      const answer = await postSignIn(secure.app, secure.token);
      expect(answer.status).toBe(303);
      const cookie = answer.setCookies.find((c) => c.startsWith("__Host-mainline_session=")) ?? "";
      expect(cookie).toContain("; Secure");
      expect(cookie).toContain("Path=/");
      const sessionId = answer.cookies.get("__Host-mainline_session") ?? "";
      const home = await inject(secure.app, {
        path: "/",
        cookie: `__Host-mainline_session=${sessionId}`,
      });
      expect(home.body).toContain("<h1>Overview</h1>");
      // The plain name is not accepted over HTTPS: only the prefixed cookie counts.
      const plain = await inject(secure.app, {
        path: "/initech",
        cookie: `mainline_session=${sessionId}`,
      });
      expect(plain.status).toBe(303);
    } finally {
      await secure.close();
    }
  });

  it("a wrong, empty or revoked token does not sign in", async () => {
    for (const [token, words] of [
      ["mlt_wrong", "not valid"],
      ["", "Enter an API token"],
    ] as const) {
      const answer = await postSignIn(server.app, token);
      expect(answer.status).toBe(401);
      expect(answer.body).toContain(words);
      expect(answer.cookies.has("mainline_session")).toBe(false);
    }
  });

  it("refuses the sign-in form from another site, or without its anti-forgery token", async () => {
    const foreign = await postSignIn(server.app, server.token, undefined, undefined, {
      origin: "https://evil.example",
      "sec-fetch-site": "cross-site",
    });
    expect(foreign.status).toBe(403);
    expect(foreign.cookies.has("mainline_session")).toBe(false);
    const bare = await postSignIn(server.app, server.token, undefined, null);
    expect(bare.status).toBe(403);
    expect(bare.cookies.has("mainline_session")).toBe(false);
    const mixed = await postSignIn(server.app, server.token, undefined, {
      cookie: "mainline_signin=" + "a".repeat(43),
      csrf: "b".repeat(43),
    });
    expect(mixed.status).toBe(403);
    expect(mixed.cookies.has("mainline_session")).toBe(false);
  });

  it("sign-out needs the session's anti-forgery token and a form from this site", async () => {
    const mine = await signIn(server.app, server.token);
    for (const [form, headers] of [
      [{}, {}],
      [{ csrf: "x".repeat(43) }, {}],
      [{ csrf: acme.csrf }, {}], // another session's token
      [{ csrf: mine.csrf }, { origin: "https://evil.example" }],
      [{ csrf: mine.csrf }, { "sec-fetch-site": "cross-site" }],
    ] as const) {
      const refused = await inject(server.app, {
        method: "POST",
        path: "/sign-out",
        cookie: mine.cookie,
        form,
        headers,
      });
      expect(refused.status, JSON.stringify({ form, headers })).toBe(403);
      expect((await inject(server.app, { path: "/acme", cookie: mine.cookie })).status).toBe(200);
    }
    const out = await inject(server.app, {
      method: "POST",
      path: "/sign-out",
      cookie: mine.cookie,
      form: { csrf: mine.csrf },
    });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe("/sign-in");
    expect(out.setCookies.some((c) => /^mainline_session=; Path=\/; Max-Age=0/.test(c))).toBe(true);
    const after = await inject(server.app, { path: "/acme", cookie: mine.cookie });
    expect(after.status).toBe(303);
    // A form from the ended session changes nothing and says so.
    const again = await inject(server.app, {
      method: "POST",
      path: "/sign-out",
      cookie: mine.cookie,
      form: { csrf: mine.csrf },
    });
    expect(again.status).toBe(401);
  });

  it("revoking the token ends its sessions at once; an operator can revoke one session", async () => {
    const issued = await server.services.organizations.issueToken("acme", "laptop");
    const viaToken = await signIn(server.app, issued.token);
    const other = await signIn(server.app, issued.token);
    expect((await inject(server.app, { path: "/acme", cookie: viaToken.cookie })).status).toBe(200);
    const listed = await server.services.sessions.list("acme");
    const otherRow = listed.find((s) => s.tokenId === issued.tokenId && s.state === "active");
    expect(otherRow).toBeDefined();
    await server.services.sessions.revoke("acme", otherRow?.id ?? "");
    const states = (await server.services.sessions.list("acme")).filter(
      (s) => s.tokenId === issued.tokenId,
    );
    expect(states.map((s) => s.state).sort()).toEqual(["active", "revoked"]);
    const answers = await Promise.all(
      [viaToken, other].map((s) => inject(server.app, { path: "/acme", cookie: s.cookie })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 303]);
    await server.services.organizations.revokeToken(issued.tokenId);
    for (const s of [viaToken, other]) {
      expect((await inject(server.app, { path: "/acme", cookie: s.cookie })).status).toBe(303);
    }
    expect(
      (await server.services.sessions.list("acme"))
        .filter((s) => s.tokenId === issued.tokenId)
        .map((s) => s.state)
        .sort(),
    ).toEqual(["revoked", "token_revoked"]);
  });

  it("ignores and clears the test page's old token cookie", async () => {
    const testPath = `/acme/flaky-tests/test/${testIdOf({ name: "adds" })}?repo=acme/app`;
    const answer = await inject(server.app, {
      path: testPath,
      cookie: `mainline_token=${server.token}`,
    });
    expect(answer.status).toBe(303);
    expect(answer.setCookies).toContain(
      "mainline_token=; Path=/acme/flaky-tests; Max-Age=0; HttpOnly; SameSite=Strict",
    );
  });
});

describe("the organization's home", () => {
  it("shows each repository with its counts, trend and queues, in the layout", async () => {
    for (const path of ["/", "/acme"]) {
      const page = await inject(server.app, { path, cookie: acme.cookie });
      expect(page.status, path).toBe(200);
      expectPageHeaders(page);
      expectLandmarks(page.body);
      expectNoExternalResources(page.body);
      expect(page.body).toContain("<h1>Overview</h1>");
      expect(page.body).toContain('<nav class="site-nav" aria-label="Main">');
      expect(page.body).toContain('<nav class="breadcrumbs" aria-label="Breadcrumb">');
      expect(page.body).toContain("Organization <strong>acme</strong>");
      expect(page.body).toContain('<button type="submit">Sign out</button>');
      expect(page.body).toContain(`name="csrf" value="${acme.csrf}"`);
      // github.com/acme/app: 1 flaky (quarantined automatically), 0 broken, 2 tests; its queue.
      const row =
        /<tr>\n<th scope="row"><a href="\/acme\/flaky-tests\/repo\?repo=acme\/app">github\.com\/acme\/app<\/a><\/th>([\s\S]*?)<\/tr>/.exec(
          page.body,
        )?.[1] ?? "";
      expect(row).toContain('<td class="num"><span class="badge flaky">1</span></td>');
      expect(row).toContain('<td class="num"><span class="muted">0</span></td>');
      expect(row).toContain('<td class="num"><span class="badge quarantined">1</span></td>');
      expect(row).toContain('<td class="num">2</td>');
      // Its sparkline begins with its first upload, today.
      expect(row).toContain("Flaky tests of acme/app per day, 1 day to today");
      expect(row).toContain("lowest 1, highest 1, latest 1");
      expect(row).toContain(
        '<a href="/acme/merge-queue/queue?repo=acme/app&amp;branch=main">main</a> <span class="badge running">running</span>',
      );
      expect(page.body).toContain('<span class="title">Flaky and broken tests</span>');
    }
  });

  it("escapes a repository and test named to break out of HTML", async () => {
    const page = await inject(server.app, { path: "/acme", cookie: acme.cookie });
    expect(page.body).not.toContain(HOSTILE);
    expect(page.body).not.toMatch(/<img/i);
    expect(page.body).toContain("acme/&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    const testPage = await inject(server.app, {
      path: `/acme/flaky-tests/test/${testIdOf({ name: HOSTILE, repo: HOSTILE_REPO })}?repo=${encodeURIComponent(`acme/${HOSTILE}`)}`,
      cookie: acme.cookie,
    });
    expect(testPage.status).toBe(200);
    expectLandmarks(testPage.body);
    expectNoExternalResources(testPage.body);
    expect(testPage.body).not.toMatch(/<img/i);
    expect(testPage.body).toContain("<h1>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</h1>");
  });

  it("an organization with nothing yet says how to start", async () => {
    const empty = await server.services.organizations.createOrganizationWithToken("globex");
    const globex = await signIn(server.app, empty.token);
    const page = await inject(server.app, { path: "/globex", cookie: globex.cookie });
    expect(page.status).toBe(200);
    expectLandmarks(page.body);
    expect(page.body).toContain("Get started");
    expect(page.body).toContain("mainline upload --junit");
    expect(page.body).toContain("mainline queue create");
    expect(page.body).not.toContain("acme/app");
    expect(page.body).not.toContain("uPlot");
  });
});

describe("tenancy", () => {
  it("another organization's pages are 404, the same as pages that do not exist", async () => {
    const other = await server.services.organizations.createOrganizationWithToken("hooli");
    const hooli = await signIn(server.app, other.token);
    const home = await inject(server.app, { path: "/", cookie: hooli.cookie });
    expect(home.body).not.toContain("acme/app");
    expect(home.body).toContain("Organization <strong>hooli</strong>");
    const testId = testIdOf({ name: "checkout flakes" });
    const paths = [
      "/acme",
      "/acme/flaky-tests",
      "/acme/merge-queue",
      "/acme/flaky-tests/repo?repo=acme/app",
      `/acme/flaky-tests/test/${testId}?repo=acme/app`,
    ];
    const nowhere = await inject(server.app, {
      path: "/no-such-org/flaky-tests",
      cookie: hooli.cookie,
    });
    expect(nowhere.status).toBe(404);
    for (const path of paths) {
      const answer = await inject(server.app, { path, cookie: hooli.cookie });
      expect(answer.status, path).toBe(404);
      expectPageHeaders(answer);
      expect(answer.body, path).toBe(nowhere.body);
      // Its own test page at its own organization's URL does not find acme's test either.
      const own = await inject(server.app, {
        path: path.replace("/acme", "/hooli"),
        cookie: hooli.cookie,
      });
      expect(own.body, path).not.toContain("checkout flakes");
    }
    const withToken = await inject(server.app, {
      path: "/acme",
      headers: { "x-api-token": other.token },
    });
    expect(withToken.status).toBe(404);
  });
});

describe("pages and assets", () => {
  it("the indexes, the test page and the repository page render in the layout", async () => {
    const testId = testIdOf({ name: "checkout flakes" });
    for (const [path, h1] of [
      ["/acme/flaky-tests", "<h1>Tests</h1>"],
      ["/acme/merge-queue", "<h1>Merge queues</h1>"],
      [`/acme/flaky-tests/test/${testId}?repo=acme/app`, "<h1>checkout flakes</h1>"],
      ["/acme/flaky-tests/repo?repo=acme/app", "<h1>github.com/acme/app</h1>"],
    ] as const) {
      const page = await inject(server.app, { path, cookie: acme.cookie });
      expect(page.status, path).toBe(200);
      expectPageHeaders(page);
      expectLandmarks(page.body);
      expectNoExternalResources(page.body);
      expect(page.body, path).toContain(h1);
    }
  });

  it("serves the page's files under /assets/, cached for good, and 404s others", async () => {
    const page = await inject(server.app, { path: "/acme", cookie: acme.cookie });
    const files = [...page.body.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map(
      (m) => m[1] ?? "",
    );
    // The stylesheet and the confirm island: the charts are drawn on the server.
    expect(files.length).toBeGreaterThanOrEqual(2);
    let bytes = Buffer.byteLength(page.body);
    for (const file of files) {
      const asset = await server.app.inject({ method: "GET", url: file });
      expect(asset.statusCode, file).toBe(200);
      expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(asset.headers["content-type"]).toMatch(
        file.endsWith(".css") ? /^text\/css/ : /^text\/javascript/,
      );
      expect(asset.headers["x-content-type-options"]).toBe("nosniff");
      bytes += asset.rawPayload.length;
      const again = await server.app.inject({
        method: "GET",
        url: file,
        headers: { "if-none-match": String(asset.headers.etag) },
      });
      expect(again.statusCode).toBe(304);
    }
    // The issue's budget: under 150 KB per page before compression, its files included.
    expect(bytes).toBeLessThan(150 * 1024);
    const missing = await server.app.inject({ method: "GET", url: "/assets/nothing.123.js" });
    expect(missing.statusCode).toBe(404);
  });
});
