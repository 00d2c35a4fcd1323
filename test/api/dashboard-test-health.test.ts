import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle, testIdOf } from "../helpers/uploads.js";
import {
  expectLandmarks,
  expectNoExternalResources,
  expectPageHeaders,
  inject,
  signIn,
  type InjectedAnswer,
  type SignedIn,
} from "../helpers/dashboard.js";

/**
 * The test-health pages of the dashboard through `app.inject`: the repository page (figures,
 * trends, the tests table's filters, sort and pages), the uploads page, and the test page's
 * chart and forms; against data whose answers are known, on the database under test.
 */

const HOSTILE = `<img src=x onerror="alert(1)">`;
const HOSTILE_REPO = { host: "github.com", owner: "acme", name: HOSTILE };
const CODEOWNERS = "/src/pay/ @acme/payments\n/src/ui/ @acme/web\n";
const C1 = "c1".repeat(20);
const C2 = "c2".repeat(20);
const FILLERS = 60;

let server: TestServer;
let acme: SignedIn;

const pay = (name: string, status: "passed" | "failed") => ({
  name,
  status,
  file: `src/pay/${name.replace(/ /g, "-")}.test.ts`,
});
const ui = (name: string, status: "passed" | "failed") => ({
  name,
  status,
  file: `src/ui/${name.replace(/ /g, "-")}.test.ts`,
});
const fillers = Array.from({ length: FILLERS }, (_, i) =>
  ui(`filler ${String(i).padStart(2, "0")}`, "passed"),
);

beforeAll(async () => {
  server = await startTestServer();
  // checkout flakes: failed, passed (C1), failed (C2): 2 of 3, PRs 11 and 12.
  // cart flakes: failed, passed (C1), passed (C2): 1 of 3, PR 11.
  // always fails: failed on every run: 3 of 3, PRs 11 and 12... only on C1's PR and C2's PR.
  await ingest(
    server,
    await bundle({
      commit: C1,
      pr: 11,
      codeowners: CODEOWNERS,
      files: [
        junit([
          pay("checkout flakes", "failed"),
          ui("cart flakes", "failed"),
          pay("always fails", "failed"),
          ...fillers,
        ]),
      ],
    }),
  );
  await ingest(
    server,
    await bundle({
      commit: C1,
      pr: 11,
      codeowners: CODEOWNERS,
      files: [
        junit([
          pay("checkout flakes", "passed"),
          ui("cart flakes", "passed"),
          pay("always fails", "failed"),
        ]),
      ],
    }),
  );
  await ingest(
    server,
    await bundle({
      commit: C2,
      pr: 12,
      codeowners: CODEOWNERS,
      files: [
        junit([
          pay("checkout flakes", "failed"),
          ui("cart flakes", "passed"),
          pay("always fails", "failed"),
        ]),
      ],
    }),
  );
  await putBundle(
    server,
    await bundle({ repo: HOSTILE_REPO, files: [junit([{ name: HOSTILE, status: "failed" }])] }),
    HOSTILE_REPO,
  );
  await server.services.worker.idle();
  acme = await signIn(server.app, server.token);
});

afterAll(async () => {
  await server.close();
});

async function page(path: string, session: SignedIn = acme): Promise<InjectedAnswer> {
  return inject(server.app, { path, cookie: session.cookie });
}

/** The test names of the table's rows, in order. */
function tableNames(html: string): string[] {
  const table = /<table class="tests">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? "";
  return [...table.matchAll(/<th scope="row"><a href="[^"]*">([^<]*)<\/a>/g)].map(
    (m) => m[1] ?? "",
  );
}

function expectGoodPage(answer: InjectedAnswer): void {
  expect(answer.status, answer.body.slice(0, 500)).toBe(200);
  expectPageHeaders(answer);
  expectLandmarks(answer.body);
  expectNoExternalResources(answer.body);
  expect(Buffer.byteLength(answer.body)).toBeLessThan(150 * 1024);
}

/** The page and the files it loads, in bytes before compression (the 150 KB budget). */
async function pageWeight(answer: InjectedAnswer): Promise<number> {
  let bytes = Buffer.byteLength(answer.body);
  for (const [, file] of answer.body.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) {
    const asset = await server.app.inject({ method: "GET", url: file ?? "" });
    expect(asset.statusCode, file).toBe(200);
    bytes += asset.rawPayload.length;
  }
  return bytes;
}

const REPO_PAGE = "/acme/flaky-tests/repo?repo=acme/app";

describe("the repository page", () => {
  it("shows the figures, the trends and the first page of tests", async () => {
    const answer = await page(REPO_PAGE);
    expectGoodPage(answer);
    const html = answer.body;
    expect(html).toContain("<h1>github.com/acme/app</h1>");
    expect(html).toMatch(/<li><strong>2<\/strong> <span class="muted">flaky<\/span><\/li>/);
    // PRs 11 and 12 had a failure of a flaky test.
    expect(html).toMatch(
      /<li><strong>2<\/strong> <span class="muted">PRs impacted by flaky tests, 7 days<\/span>/,
    );
    expect(html).toMatch(/<li><strong>63<\/strong> <span class="muted">tests<\/span>/);
    expect(html).toContain('<span class="title">Test failures per day</span>');
    // Server-drawn only: no script draws the charts again.
    expect(html).not.toContain("data-island");
    // Today's failures: 3 + 1 + 2 = 6 counted failed runs (the last bar).
    expect(html).toMatch(/<title>\d{4}-\d\d-\d\d: Failures 6<\/title><\/rect><\/svg>/);
    // Sorted by failure rate: 100%, 67%, 33%, then the rest by name.
    const names = tableNames(html);
    expect(names.slice(0, 4)).toEqual([
      "always fails",
      "checkout flakes",
      "cart flakes",
      "filler 00",
    ]);
    expect(names).toHaveLength(50);
    expect(html).toContain("Page 1 of 2 · 63 tests");
    expect(html).toContain('<a rel="next" href="/acme/flaky-tests/repo?repo=acme/app&amp;page=2">');
    // Each row links to its test page.
    const id = testIdOf({ name: "checkout flakes", file: "src/pay/checkout-flakes.test.ts" });
    expect(html).toContain(`href="/acme/flaky-tests/test/${id}?repo=acme/app"`);
    expect(html).toContain("@acme/payments");
    expect(await pageWeight(answer)).toBeLessThan(150 * 1024);
  });

  it("pages, sorts and filters as the address says", async () => {
    const second = await page(`${REPO_PAGE}&page=2`);
    expectGoodPage(second);
    expect(tableNames(second.body)).toHaveLength(13);
    expect(second.body).toContain("Page 2 of 2 · 63 tests");

    const byPrs = tableNames((await page(`${REPO_PAGE}&sort=prs_impacted`)).body);
    expect(byPrs.slice(0, 3)).toEqual(["always fails", "checkout flakes", "cart flakes"]);

    const flaky = tableNames((await page(`${REPO_PAGE}&status=flaky`)).body);
    expect(flaky).toEqual(["checkout flakes", "cart flakes"]);

    const payments = tableNames(
      (await page(`${REPO_PAGE}&owner=${encodeURIComponent("@acme/payments")}`)).body,
    );
    expect(payments).toEqual(["always fails", "checkout flakes"]);

    const text = tableNames((await page(`${REPO_PAGE}&q=CART`)).body);
    expect(text).toEqual(["cart flakes"]);

    const both = tableNames(
      (await page(`${REPO_PAGE}&status=flaky&owner=${encodeURIComponent("@acme/web")}`)).body,
    );
    expect(both).toEqual(["cart flakes"]);

    const none = await page(`${REPO_PAGE}&q=nothing-like-this`);
    expectGoodPage(none);
    expect(none.body).toContain("No test matches these filters.");

    // A page past the end shows the last one.
    expect((await page(`${REPO_PAGE}&page=9`)).body).toContain("Page 2 of 2");
  });

  it("answers 400 for a bad view, 404 for an unknown repository", async () => {
    for (const query of ["&sort=name", "&status=green", "&page=0", "&page=x"]) {
      const answer = await page(`${REPO_PAGE}${query}`);
      expect(answer.status, query).toBe(400);
      expectPageHeaders(answer);
    }
    expect((await page("/acme/flaky-tests/repo")).status).toBe(400);
    expect((await page("/acme/flaky-tests/repo?repo=acme/nothing")).status).toBe(404);
    expect((await page("/acme/flaky-tests/repo?repo=acme")).status).toBe(404);
  });

  it("escapes a hostile repository and test name", async () => {
    const answer = await page(
      `/acme/flaky-tests/repo?repo=acme/${encodeURIComponent(HOSTILE)}&sort=last_failure`,
    );
    expectGoodPage(answer);
    expect(answer.body).not.toContain("<img src=x");
    expect(answer.body).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(tableNames(answer.body)).toEqual(["&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"]);
  });
});

describe("the uploads page", () => {
  it("lists a repository's uploads, newest first, with their counts", async () => {
    const answer = await page("/acme/flaky-tests/uploads?repo=acme/app");
    expectGoodPage(answer);
    const html = answer.body;
    expect(html).toContain("3 uploads");
    const rows = [...html.matchAll(/<code title="([0-9a-f]{40})">/g)].map((m) => m[1]);
    expect(rows).toEqual([C2, C1, C1]);
    expect(html).toContain("processed");
    expect(html).toContain("PR #12");
    // The first upload: 63 passed or failed tests, 3 of them failed.
    expect(html).toMatch(
      /<td class="num">60<\/td>\n<td class="num"><span class="badge failed">3<\/span>/,
    );
  });

  it("shows a failed upload's commit and branch, and each of its errors once", async () => {
    const broken = { host: "github.com", owner: "acme", name: "broken" };
    const commit = "b0".repeat(20);
    const send = async (files: string[]) => {
      await putBundle(
        server,
        await bundle({ repo: broken, commit, branch: "fix/x", files }),
        broken,
      );
      await server.services.worker.idle();
    };
    await send(["not JUnit at all"]);
    await send(["<html></html>", "<testsuites>"]);
    const answer = await page("/acme/flaky-tests/uploads?repo=acme/broken");
    expectGoodPage(answer);
    const html = answer.body;
    const count = (text: string) => html.split(text).length - 1;
    expect(
      count(`<code title="${commit}">b0b0b0b</code> <span class="muted">on</span> fix/x`),
    ).toBe(2);
    const errors = [
      "reports/junit-0.xml: not XML: the file does not start with &#39;&lt;&#39;",
      "reports/junit-0.xml: root element &lt;html&gt; is not &lt;testsuites&gt; or &lt;testsuite&gt;",
      "reports/junit-1.xml: ",
    ];
    for (const error of errors) expect(count(error), error).toBe(1);
    // The errors column: one item per error, nothing else.
    const items = [...html.matchAll(/<ul class="plain">([\s\S]*?)<\/ul>/g)].map(
      (m) => (m[1] ?? "").split("<li>").length - 1,
    );
    expect(items).toEqual([2, 1]);
  });

  it("lists the repositories without one, and escapes hostile names", async () => {
    const index = await page("/acme/flaky-tests/uploads");
    expectGoodPage(index);
    expect(index.body).toContain('href="/acme/flaky-tests/uploads?repo=acme/app"');
    expect(index.body).not.toContain("<img src=x");
    const hostile = await page(
      `/acme/flaky-tests/uploads?repo=acme/${encodeURIComponent(HOSTILE)}`,
    );
    expectGoodPage(hostile);
    expect(hostile.body).not.toContain("<img src=x");
    expect(hostile.body).toContain("1 upload");
    expect((await page("/acme/flaky-tests/uploads?repo=acme/app&page=0")).status).toBe(400);
  });
});

describe("the test page", () => {
  const id = testIdOf({ name: "cart flakes", file: "src/ui/cart-flakes.test.ts" });
  const path = `/acme/flaky-tests/test/${id}?repo=acme/app`;

  it("has the breadcrumbs, the daily chart, the timeline and the forms", async () => {
    const answer = await page(path);
    expectGoodPage(answer);
    expect(answer.body).toContain(
      '<li><a href="/acme/flaky-tests/repo?repo=acme/app">github.com/acme/app</a></li>',
    );
    expect(answer.body).toContain('<span class="title">Passed and failed runs per day</span>');
    expect(answer.body).toContain("<h2>Timeline");
    expect(answer.body).toContain(`action="/acme/flaky-tests/test/${id}/quarantine?repo=acme/app"`);
    expect(answer.body).toContain(`action="/acme/flaky-tests/test/${id}/ticket?repo=acme/app"`);
  });

  it("quarantines with the form (POST, anti-forgery token), and the repository lists it", async () => {
    const action = `/acme/flaky-tests/test/${id}/quarantine?repo=acme/app`;
    const forged = await inject(server.app, {
      method: "POST",
      path: action,
      cookie: acme.cookie,
      form: { override: "NEVER_QUARANTINE", csrf: "x".repeat(43) },
    });
    expect(forged.status).toBe(403);
    const saved = await inject(server.app, {
      method: "POST",
      path: action,
      cookie: acme.cookie,
      form: { override: "ALWAYS_QUARANTINE", reason: "blocks releases", csrf: acme.csrf },
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.location).toBe(`${path}&note=quarantine-always`);
    const after = await page(String(saved.headers.location));
    expect(after.body).toContain(
      '<p class="notice" role="status">Saved: this test is always quarantined.</p>',
    );
    expect(after.body).toContain("blocks releases");
    const quarantined = tableNames((await page(`${REPO_PAGE}&status=quarantined`)).body);
    expect(quarantined).toContain("cart flakes");
    // A note that is not one of the page's words shows nothing.
    for (const note of ["<b>hi</b>", "constructor", "__proto__", "toString"]) {
      const odd = await page(`${path}&note=${encodeURIComponent(note)}`);
      expect(odd.status, note).toBe(200);
      expect(odd.body, note).not.toContain('role="status"');
    }
  });

  it("links a ticket with the form, and refuses a bad one with a page", async () => {
    const action = `/acme/flaky-tests/test/${id}/ticket?repo=acme/app`;
    const linked = await inject(server.app, {
      method: "POST",
      path: action,
      cookie: acme.cookie,
      form: { ticket: "https://tickets.example.com/T-42", csrf: acme.csrf },
    });
    expect(linked.status).toBe(303);
    const after = await page(String(linked.headers.location));
    expect(after.body).toContain('href="https://tickets.example.com/T-42"');
    const bad = await inject(server.app, {
      method: "POST",
      path: action,
      cookie: acme.cookie,
      form: { ticket: "T-42", csrf: acme.csrf },
    });
    expect(bad.status).toBe(400);
    expectPageHeaders(bad);
  });
});

describe("another organization", () => {
  it("gets 404 for these pages and cannot post the forms", async () => {
    const other = await server.services.organizations.createOrganizationWithToken("hooli");
    const hooli = await signIn(server.app, other.token);
    const id = testIdOf({ name: "cart flakes", file: "src/ui/cart-flakes.test.ts" });
    for (const path of [
      REPO_PAGE,
      "/acme/flaky-tests/uploads?repo=acme/app",
      `/acme/flaky-tests/test/${id}?repo=acme/app`,
      "/hooli/flaky-tests/repo?repo=acme/app",
      "/hooli/flaky-tests/uploads?repo=acme/app",
    ]) {
      const answer = await page(path, hooli);
      expect(answer.status, path).toBe(404);
      expect(answer.body, path).not.toContain("cart flakes");
    }
    const posted = await inject(server.app, {
      method: "POST",
      path: `/hooli/flaky-tests/test/${id}/quarantine?repo=acme/app`,
      cookie: hooli.cookie,
      form: { override: "NEVER_QUARANTINE", csrf: hooli.csrf },
    });
    expect(posted.status).toBe(404);
  });
});
