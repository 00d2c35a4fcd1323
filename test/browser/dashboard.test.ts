import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY_MS } from "../../src/lib/time.js";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  statusNote,
  type Launched,
  type TestPage,
} from "../helpers/browser.js";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, putBundle } from "../helpers/uploads.js";

/**
 * The dashboard's journeys in Chromium: sign in with a token, land on the organization's home,
 * see the repositories with their counts, follow a repository's link; sign out and see nothing;
 * a second organization sees none of the first's data; forged forms are refused and change
 * nothing; expiry and revocation sign a browser out. axe checks every page on the way, and the
 * home page's screenshot goes to docs/screenshots/.
 */

const WEB = { host: "github.com", owner: "acme", name: "web" };

let launched: Launched;
let server: TestServer;
/** The server's clock runs this far ahead (expiry without waiting). */
let clockOffset = 0;

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer({ clock: { now: () => Date.now() + clockOffset } });
  // acme/app: a flaky test (failed and passed on one commit), a broken one (fails every run on
  // main), healthy ones; acme/web: healthy.
  for (let run = 0; run < 6; run++) {
    await ingest(
      server,
      await bundle({
        commit: `${run}`.repeat(40).slice(0, 40),
        files: [
          junit([
            { name: "checkout retries the payment", status: run === 0 ? "failed" : "passed" },
            { name: "renders the invoice", status: "failed", message: "expected 3 lines, got 2" },
            { name: "adds to cart", status: "passed" },
            { name: "applies a coupon", status: "passed" },
          ]),
        ],
      }),
    );
  }
  await ingest(
    server,
    await bundle({
      commit: "0".repeat(40),
      files: [junit([{ name: "checkout retries the payment", status: "passed" }])],
    }),
  );
  await putBundle(
    server,
    await bundle({ repo: WEB, files: [junit([{ name: "renders home", status: "passed" }])] }),
    WEB,
  );
  await server.services.worker.idle();
  for (const targetBranch of ["main", "release"]) {
    const created = await server.call("createQueue", { repo: REPO, targetBranch });
    expect(created.status, created.text).toBe(200);
  }
  const paused = await server.call("updateQueue", {
    repo: REPO,
    targetBranch: "release",
    state: "paused",
  });
  expect(paused.status, paused.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await launched.close();
  await server.close();
});

/** Signs in through the form on `/` as a person would, landing on the home page. */
async function signInThroughForm(t: TestPage, token: string): Promise<void> {
  await t.page.goto(`${server.url}/`);
  await t.page.getByLabel("API token").fill(token);
  await Promise.all([
    t.page.waitForURL(/\/[a-z0-9-]+$/),
    t.page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

describe("the dashboard in Chromium", () => {
  it("signs in with a token, shows the home page, follows a repository's link", async () => {
    const t = await openPage(launched, server.url);
    await t.page.goto(`${server.url}/`);
    expect(await t.page.title()).toBe("Sign in · Mainline");
    await checkAccessibility(t.page);
    await screenshot(t.page, "sign-in");

    await signInThroughForm(t, server.token);
    expect(new URL(t.page.url()).pathname).toBe("/acme");
    await expect.poll(() => t.page.locator("h1").textContent()).toBe("Overview");
    const cookies = await t.context.cookies(server.url);
    const session = cookies.find((c) => c.name === "mainline_session");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Lax");
    expect(session?.value).toMatch(/^mls_/);
    expect(cookies.map((c) => c.value).join(" ")).not.toContain(server.token);

    const repositories = t.page.getByRole("table", { name: "Repositories and their tests" });
    const row = repositories.getByRole("row", { name: /acme\/app/ });
    const cells = await row.getByRole("cell").allTextContents();
    // Flaky, broken, quarantined, tests.
    expect(cells.slice(0, 4)).toEqual(["1", "1", "1", "4"]);
    await expect.poll(() => row.getByRole("link", { name: "release" }).count()).toBe(1);
    expect(await row.textContent()).toContain("paused");
    expect(
      await t.page
        .getByRole("row", { name: /acme\/web/ })
        .getByRole("cell")
        .first()
        .textContent(),
    ).toBe("0");
    // The trend: a panel per status, its numbers in a table one click away.
    const trend = t.page.getByRole("figure", { name: /Flaky and broken tests/ });
    expect(await trend.locator(".key").count()).toBe(2);
    await trend.getByText("Numbers by day").click();
    expect(await trend.getByRole("table", { name: "Flaky and broken tests" }).isVisible()).toBe(
      true,
    );
    await checkAccessibility(t.page);
    await screenshot(t.page, "home");

    await Promise.all([
      t.page.waitForURL(/flaky-tests\/repo/),
      row.getByRole("link", { name: "acme/app" }).click(),
    ]);
    expect(new URL(t.page.url()).search).toBe("?repo=acme/app");
    expect(await t.page.locator("h1").textContent()).toBe("github.com/acme/app");
    await checkAccessibility(t.page);

    await t.page
      .getByRole("navigation", { name: "Main" })
      .getByRole("link", { name: "Tests" })
      .click();
    await t.page.waitForURL(`${server.url}/acme/flaky-tests`);
    await checkAccessibility(t.page);
    await t.page.getByRole("link", { name: "Merge queues" }).click();
    await t.page.waitForURL(`${server.url}/acme/merge-queue`);
    expect(await t.page.getByRole("row", { name: /release/ }).textContent()).toContain("paused");
    await checkAccessibility(t.page);
    await t.finish();
  });

  it("signs out: the session ends and the pages are out of reach", async () => {
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, server.token);
    const held = (await t.context.cookies(server.url)).find((c) => c.name === "mainline_session");
    await Promise.all([
      t.page.waitForURL(/\/sign-in$/),
      t.page.getByRole("button", { name: "Sign out" }).click(),
    ]);
    expect(await t.page.locator("h1").textContent()).toBe("Sign in to Mainline");
    expect((await t.context.cookies(server.url)).some((c) => c.name === "mainline_session")).toBe(
      false,
    );
    await t.page.goto(`${server.url}/acme/flaky-tests`);
    expect(new URL(t.page.url()).pathname).toBe("/sign-in");
    expect(await t.page.content()).not.toContain("acme/app");
    // The old cookie, put back, opens nothing: the session ended on the server.
    if (held) await t.context.addCookies([held]);
    await t.page.goto(`${server.url}/acme`);
    expect(new URL(t.page.url()).pathname).toBe("/sign-in");
    await t.finish();
  });

  it("a second organization's session sees none of the first's data", async () => {
    const globex = await server.services.organizations.createOrganizationWithToken("globex");
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, globex.token);
    expect(new URL(t.page.url()).pathname).toBe("/globex");
    const home = await t.page.content();
    expect(home).not.toContain("acme/app");
    expect(home).not.toContain("acme/web");
    expect(await t.page.locator("h2", { hasText: "Get started" }).count()).toBe(1);
    await checkAccessibility(t.page);
    for (const path of [
      "/acme",
      "/acme/flaky-tests",
      "/acme/merge-queue/queue?repo=acme/app&branch=main",
    ]) {
      const answer = await t.page.goto(`${server.url}${path}`);
      expect(answer?.status(), path).toBe(404);
      expect(await t.page.locator("h1").textContent()).toBe("Page not found");
      expect(await t.page.content()).not.toContain("acme/app");
    }
    await checkAccessibility(t.page);
    await t.finish([statusNote(404), statusNote(404), statusNote(404)]);
  });

  it("refuses forms without the session's token or from another site, and changes nothing", async () => {
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, server.token);
    const signOutWith = async (fields: string) => {
      // A form of this site, but not one the server rendered: its token is missing or wrong.
      await t.page.evaluate(`(() => {
        const form = document.createElement("form");
        form.method = "post";
        form.action = "/sign-out";
        form.innerHTML = ${JSON.stringify(fields)};
        document.body.append(form);
        form.submit();
      })()`);
      await t.page.waitForLoadState();
    };
    for (const fields of ["", '<input name="csrf" value="guessed">']) {
      const answer = t.page.waitForResponse((r) => r.request().method() === "POST");
      await signOutWith(fields);
      expect((await answer).status()).toBe(403);
      await t.page.locator("h1", { hasText: "Refused" }).waitFor();
    }
    // Another site (localhost is another origin than 127.0.0.1) posting to the server.
    const forgedFrom = server.url.replace("127.0.0.1", "localhost");
    await t.context.route(`${forgedFrom}/forged`, (route) =>
      route.fulfill({
        status: 200,
        contentType: "text/html",
        body: `<!doctype html><title>x</title><form method="post" action="${server.url}/sign-out"><input name="csrf" value="guessed"><button type="submit">go</button></form>`,
      }),
    );
    await t.page.goto(`${forgedFrom}/forged`);
    const forged = t.page.waitForResponse((r) => r.request().method() === "POST");
    await t.page.click("button[type=submit]");
    expect((await forged).status()).toBe(403);
    await t.page.locator("h1", { hasText: "Refused" }).waitFor();
    // Still signed in: nothing changed.
    const home = await t.page.goto(`${server.url}/acme`);
    expect(home?.status()).toBe(200);
    expect(await t.page.locator("h1").textContent()).toBe("Overview");
    await t.finish([statusNote(403), statusNote(403), statusNote(403)]);
  });

  it("asks before a form with data-confirm is sent (the confirm island, on every page)", async () => {
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, server.token);
    // A sign-out form like the header's, but one that asks first.
    await t.page.evaluate(`(() => {
      const csrf = document.querySelector('input[name="csrf"]').value;
      const form = document.createElement("form");
      form.method = "post";
      form.action = "/sign-out";
      form.dataset.confirm = "Sign out now?";
      form.innerHTML = '<input type="hidden" name="csrf"><button type="submit">Sign out, asking</button>';
      form.querySelector("input").value = csrf;
      document.querySelector("main").append(form);
    })()`);
    const asked: string[] = [];
    let answer = false;
    t.page.on("dialog", (dialog) => {
      asked.push(dialog.message());
      void (answer ? dialog.accept() : dialog.dismiss());
    });
    const posts: string[] = [];
    t.page.on("request", (r) => {
      if (r.method() === "POST") posts.push(r.url());
    });
    await t.page.getByRole("button", { name: "Sign out, asking" }).click();
    await expect.poll(() => asked).toEqual(["Sign out now?"]);
    expect(posts).toEqual([]);
    expect(new URL(t.page.url()).pathname).toBe("/acme");
    answer = true;
    await Promise.all([
      t.page.waitForURL(/\/sign-in$/),
      t.page.getByRole("button", { name: "Sign out, asking" }).click(),
    ]);
    expect(asked).toEqual(["Sign out now?", "Sign out now?"]);
    expect(posts).toEqual([`${server.url}/sign-out`]);
    await t.finish();
  });

  it("expiry and revocation sign a browser out", async () => {
    const t = await openPage(launched, server.url);
    await signInThroughForm(t, server.token);
    // An operator revokes the session.
    const [newest] = await server.services.sessions.list("acme");
    await server.services.sessions.revoke("acme", newest?.id ?? "");
    await t.page.goto(`${server.url}/acme`);
    expect(new URL(t.page.url()).pathname).toBe("/sign-in");

    // A day and more without use: idle expiry.
    await signInThroughForm(t, server.token);
    expect(new URL(t.page.url()).pathname).toBe("/acme");
    clockOffset = DAY_MS + 1000;
    try {
      await t.page.reload();
      expect(new URL(t.page.url()).pathname).toBe("/sign-in");
      expect(new URL(t.page.url()).searchParams.get("next")).toBe("/acme");
    } finally {
      clockOffset = 0;
    }
    await t.finish();
  });
});
