/**
 * "Sign in with GitHub" in Chromium (ADR 0029): from the sign-in page, through the fake GitHub's
 * authorize page and back, to the organization's home page, signed in with a session cookie; and
 * for a user in two organizations, through the chooser. Only the server and the fake GitHub are
 * reachable; console errors fail.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGitHubConfig } from "../../src/config.js";
import { checkAccessibility, launchBrowser, openPage, type Launched } from "../helpers/browser.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";

let world: GitHubWorld;
let server: TestServer;
let launched: Launched;

beforeAll(async () => {
  launched = await launchBrowser();
  world = await startGitHubWorld();
  const { gh, app } = world;
  const config = loadGitHubConfig({
    ...world.env,
    MAINLINE_GITHUB_CLIENT_ID: app.clientId,
    MAINLINE_GITHUB_CLIENT_SECRET: app.clientSecret,
  });
  if (!config?.oauth) throw new Error("the OAuth credentials did not load");
  world.config = config;
  gh.createOrganization("acme-gh");
  gh.createOrganization("globex-gh");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.addOrgMember("acme-gh", "alice", "admin");
  gh.addOrgMember("acme-gh", "bob", "member");
  gh.addOrgMember("globex-gh", "bob", "member");
  server = await startGitHubServer(world);
  await server.services.organizations.createOrganizationWithToken("globex");
  const acme = gh.installApp(app.id, { account: "acme-gh" }).id;
  const globex = gh.installApp(app.id, { account: "globex-gh" }).id;
  await settle(world, server);
  const github = server.services.github;
  if (!github) throw new Error("no GitHub provider");
  await github.installations.linkAsOperator(acme, "acme");
  await github.installations.linkAsOperator(globex, "globex");
}, 60_000);

afterAll(async () => {
  await launched.close();
  await server.close();
  await world.gh.close();
});

/** A page on the server that may also go to the fake GitHub (its authorize page). */
async function openWithGitHub() {
  const t = await openPage(launched, server.url);
  await t.context.route(`${new URL(world.gh.url).origin}/**`, (route) => route.continue());
  return t;
}

describe("sign in with GitHub in Chromium", () => {
  it("lands on the organization's home page, signed in", async () => {
    world.gh.authorizeAs("alice");
    const t = await openWithGitHub();
    await t.page.goto(`${server.url}/sign-in`);
    await Promise.all([t.page.waitForURL(`${server.url}/acme`), t.page.click("#sign-in-github")]);
    // The home page, signed in: the session's organization in the header, a sign-out form.
    await t.page.locator("form[action='/sign-out']").first().waitFor();
    expect(await t.page.content()).toContain("acme");
    const cookies = await t.context.cookies(server.url);
    expect(cookies.find((c) => c.name === "mainline_session")?.httpOnly).toBe(true);
    await checkAccessibility(t.page);
    await t.finish();
  });

  it("offers a choice to a user of two organizations, and enters the one chosen", async () => {
    world.gh.authorizeAs("bob");
    const t = await openWithGitHub();
    await t.page.goto(`${server.url}/sign-in`);
    await Promise.all([
      t.page.waitForURL(/\/sign-in\/github\/callback/),
      t.page.click("#sign-in-github"),
    ]);
    await t.page.locator("h1", { hasText: "Choose an organization" }).waitFor();
    await checkAccessibility(t.page);
    await Promise.all([
      t.page.waitForURL(`${server.url}/globex`),
      t.page.click("button:has-text('globex')"),
    ]);
    await t.page.locator("form[action='/sign-out']").first().waitFor();
    expect(await t.page.content()).toContain("globex");
    await t.finish();
  });
});
