/**
 * Tickets in Chromium: a flaky test's page, "Create ticket in Jira ENG" pressed, the linked ticket
 * shown with its key and state (the fake Jira holds the one issue); a Jira connection added
 * through the connections' page. axe and no sideways scroll on every page.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkPageWidths,
  launchBrowser,
  openPage,
  signInAt,
  type Launched,
} from "../helpers/browser.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import type { TestServer } from "../helpers/server.js";
import {
  addTest,
  JIRA_EMAIL,
  JIRA_TOKEN,
  jiraConnection,
  repository,
  startTicketServer,
  useConnection,
  type Repo,
} from "../tickets/support.js";

let launched: Launched;
let server: TestServer;
let jira: FakeJira;
let repo: Repo;

beforeAll(async () => {
  launched = await launchBrowser();
  server = await startTicketServer();
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
  repo = await repository(server, "browser-app");
  await useConnection(server, repo, await jiraConnection(server, jira, { name: "Jira ENG" }));
}, 60_000);

afterAll(async () => {
  await launched.close();
  await server.close();
  await jira.close();
});

function checkPage(page: Page, name: string): Promise<void> {
  return checkPageWidths(page, `tickets-${name}`);
}

describe("tickets in the dashboard", () => {
  it("creates a flaky test's ticket from its page and shows it linked, with its key and state", async () => {
    const testId = await addTest(server, repo);
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(
        t,
        `${server.url}/acme/flaky-tests/test/${testId}?repo=acme/browser-app`,
        server.token,
      );
      const ticketRow = page
        .locator("dt", { hasText: "Ticket" })
        .locator("xpath=following-sibling::dd[1]");
      expect(await ticketRow.textContent()).toBe("none linked");
      await checkPage(page, "test-before");

      await Promise.all([
        page.waitForURL((url) => url.searchParams.get("note") === "ticket-created"),
        page.getByRole("button", { name: "Create ticket in Jira ENG" }).click(),
      ]);
      expect(jira.issues).toHaveLength(1);
      const key = jira.issues[0]?.key ?? "";
      expect(await page.getByRole("status").textContent()).toBe(
        "Created the ticket and linked it to this test.",
      );
      expect(await ticketRow.textContent()).toBe(`${key} · To Do`);
      expect(await ticketRow.getByRole("link", { name: key }).getAttribute("href")).toBe(
        `${jira.url}/browse/${key}`,
      );
      expect(await page.getByRole("button", { name: "Create ticket in Jira ENG" }).count()).toBe(0);
      await checkPage(page, "test-after");
      await t.finish();
    } catch (error) {
      await t.context.close();
      throw error;
    }
  });

  it("adds a Jira connection through the connections' page", async () => {
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(t, `${server.url}/acme/tickets`, server.token);
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(
        "Ticket connections",
      );
      await page.getByLabel("Jira", { exact: true }).selectOption("jira_dc");
      await page.getByLabel("Name (optional)").fill("Jira DC");
      await page.getByLabel("Site URL").fill(jira.url);
      await page.getByLabel("Project key").fill("OPS");
      await page.getByLabel("API token").fill("dc-token-typed-in-the-browser");
      await Promise.all([
        page.waitForURL((url) => url.searchParams.get("note") === "added"),
        page.getByRole("button", { name: "Add connection" }).click(),
      ]);
      const table = page.locator("table.connections");
      expect(await table.textContent()).toContain("Jira DC");
      expect(await page.content()).not.toContain("dc-token-typed-in-the-browser");
      await checkPage(page, "connections");
      await t.finish();
    } catch (error) {
      await t.context.close();
      throw error;
    }
  });
});
