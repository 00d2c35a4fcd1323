import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkAccessibility,
  launchBrowser,
  openPage,
  screenshot,
  statusNote,
  type Launched,
} from "../helpers/browser.js";
import { startTestServer, REPO, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit, testIdOf } from "../helpers/uploads.js";

/**
 * A test's `html_url` in Chromium: opened without a session it leads to the sign-in form, which
 * comes back to the test once signed in (a session, never the token, in the cookie). A sign-in
 * posted from another site is refused. Off-host requests are blocked, console errors fail.
 */

let server: TestServer;
let launched: Launched;
let pageUrl: string;

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTestServer();
  await ingest(
    server,
    await bundle({ files: [junit([{ name: "signs in from a browser", status: "failed" }])] }),
  );
  await server.services.worker.idle();
  const details = await server.call<{ test: { html_url: string } }>(
    "flaky-tests/get-test-details",
    { repo: REPO, org_url_slug: "acme", test_id: testIdOf({ name: "signs in from a browser" }) },
  );
  expect(details.status, details.text).toBe(200);
  pageUrl = details.body.test.html_url;
  expect(new URL(pageUrl).origin).toBe(server.url);
});

afterAll(async () => {
  await launched.close();
  await server.close();
});

describe("the test page in Chromium", () => {
  it("signs in through the form and comes back to the test", async () => {
    const t = await openPage(launched, server.url);
    await t.page.goto(pageUrl);
    expect(new URL(t.page.url()).pathname).toBe("/sign-in");
    expect(await t.page.locator("h1").textContent()).toBe("Sign in to Mainline");

    await t.page.fill("#token", server.token);
    await Promise.all([t.page.waitForURL(pageUrl), t.page.click("button[type=submit]")]);
    await t.page.locator("h1", { hasText: "signs in from a browser" }).waitFor();
    expect(await t.page.content()).toContain("Runs");
    const cookies = await t.context.cookies(server.url);
    expect(cookies.find((c) => c.name === "mainline_session")?.httpOnly).toBe(true);
    expect(cookies.some((c) => c.name === "mainline_token")).toBe(false);
    expect(cookies.map((c) => c.value).join(" ")).not.toContain(server.token);
    const again = await t.page.reload();
    expect(again?.status()).toBe(200);
    await checkAccessibility(t.page);
    await screenshot(t.page, "test-sign-in");
    await t.finish();
  });

  it("refuses a sign-in posted from another site's page", async () => {
    const t = await openPage(launched, server.url);
    await t.page.goto(`${server.url}/sign-in`);
    // Another "site": a page of a different origin (localhost vs 127.0.0.1) posting the form.
    const forgedFrom = server.url.replace("127.0.0.1", "localhost");
    await t.context.route(`${forgedFrom}/forged`, (route) =>
      route.fulfill({
        status: 200,
        contentType: "text/html",
        body: `<!doctype html><form method="post" action="${server.url}/sign-in">
<input name="token" value="${server.token}"><input name="csrf" value="guessed">
<button type="submit">go</button></form>`,
      }),
    );
    await t.page.goto(`${forgedFrom}/forged`);
    const [answer] = await Promise.all([
      t.page.waitForResponse((r) => r.request().method() === "POST"),
      t.page.click("button[type=submit]"),
    ]);
    expect(answer.status()).toBe(403);
    await t.page.locator("h1", { hasText: "Sign-in refused" }).waitFor();
    const cookies = await t.context.cookies(server.url);
    expect(cookies.some((c) => c.name === "mainline_session")).toBe(false);
    await t.finish([statusNote(403)]);
  });
});
