/**
 * The page GitLab sends an admin back to after approving Mainline's OAuth application, in
 * Chromium: GitLab's side (the fake's `/oauth/authorize` for a signed-in account) hands over the
 * callback address; the browser opens it on Mainline and finds the connection made, as whom, in a
 * page that passes axe at a phone's and a desktop's width with no console error (its CSP allows
 * only its own style). Opened again, the address is refused, saying why.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import {
  checkPageWidths,
  launchBrowser,
  openPage,
  statusNote,
  type Launched,
} from "../helpers/browser.js";
import {
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  approveOnGitLab,
  createMainlineOAuthApp,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

let launched: Launched;
let world: GitLabWorld;
let server: TestServer;
let callback = "";

beforeAll(async () => {
  launched = await launchBrowser();
  world = await startGitLabWorld();
  world.gl.createUser("mainline-bot");
  const app = createMainlineOAuthApp(world.gl);
  world.config = {
    ...world.config,
    oauth: { clientId: app.applicationId, clientSecret: app.secret },
  };
  server = await startGitLabServer(world);
  world.gl.setOAuthRedirectUri(app.applicationId, `${server.url}/gitlab/oauth/callback`);
  const started = await server.call<{ url: string }>("gitlab/authorize", {});
  expect(started.status, started.text).toBe(200);
  callback = await approveOnGitLab(world.gl, started.body.url);
}, 60_000);

afterAll(async () => {
  await launched.close();
  await server.close();
  await world.gl.close();
});

function checkPage(page: Page, name: string): Promise<void> {
  return checkPageWidths(page, `gitlab-oauth-${name}`);
}

describe("the GitLab OAuth callback page", () => {
  it("says the organization is connected, and as whom", async () => {
    const t = await openPage(launched, server.url);
    try {
      const answer = await t.page.goto(callback);
      expect(answer?.status()).toBe(200);
      await expect(t.page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
        "GitLab connected",
      );
      await expect(t.page.locator("main").textContent()).resolves.toMatch(/@mainline-bot/);
      // Styled by its own style only: the CSP let it in.
      const padding = await t.page.evaluate<string>(
        "getComputedStyle(document.querySelector('main')).paddingTop",
      );
      expect(padding).not.toBe("0px");
      await checkPage(t.page, "connected");
    } finally {
      await t.finish();
    }
  });

  it("refuses the same address again, saying why", async () => {
    const t = await openPage(launched, server.url);
    try {
      const answer = await t.page.goto(callback);
      expect(answer?.status()).toBe(400);
      await expect(t.page.locator("main").textContent()).resolves.toMatch(
        /unknown, was used already or has expired/,
      );
      await checkPage(t.page, "refused");
    } finally {
      await t.finish([statusNote(400)]);
    }
  });
});
