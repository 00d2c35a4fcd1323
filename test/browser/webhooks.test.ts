/**
 * Webhooks in the dashboard, in Chromium, against a real receiver of the test's own: an endpoint
 * added through the form (its secret shown once, its URL's query never), a test event sent from
 * its page and delivered, resent with the same webhook-id; disable, enable, delete; a refused URL;
 * another organization's session sees the 404 page. Slack destinations: an incoming webhook and
 * a bot added through the form (each kind showing its own fields), listed with their kind, a test
 * message reaching the fake Slack. axe and no sideways scroll on every page.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import {
  checkAccessibility,
  checkPageWidths,
  launchBrowser,
  openPage,
  signInAt,
  statusNote,
  type Launched,
} from "../helpers/browser.js";
import { startFakeSlack, type FakeSlack } from "../helpers/fake-slack.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { startReceiver, type Receiver } from "../webhooks/receiver.js";

let launched: Launched;
let server: TestServer;
let receiver: Receiver;
let slack: FakeSlack;

beforeAll(async () => {
  launched = await launchBrowser();
  slack = await startFakeSlack();
  server = await startTestServer({
    webhooks: {
      allowPrivate: true,
      schedule: [0, 100, 100],
      timeoutMs: 2_000,
      pollMs: 50,
      slackApiUrl: slack.apiUrl,
    },
  });
  server.services.webhooks.dispatcher.start();
  receiver = await startReceiver();
}, 60_000);

afterAll(async () => {
  await launched.close();
  await receiver.close();
  await slack.close();
  await server.close();
});

function checkPage(page: Page, name: string): Promise<void> {
  return checkPageWidths(page, `webhooks-${name}`);
}

/** Reloads the endpoint page until its deliveries table says `states`, in order. */
async function deliveriesUntil(page: Page, states: readonly string[]): Promise<void> {
  const shown = () => page.locator("table.deliveries tbody tr td:nth-child(3)").allTextContents();
  await waitFor(
    async () => {
      await page.reload();
      return JSON.stringify(await shown()) === JSON.stringify(states);
    },
    `deliveries ${states.join(", ")}`,
    { timeoutMs: 15_000, intervalMs: 200 },
  );
}

describe("webhooks in the dashboard", () => {
  let endpointId = "";

  it("adds an endpoint, sends a test event, resends it, pauses and deletes it", async () => {
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(t, `${server.url}/acme`, server.token);
      // Reached from the navigation.
      await page
        .getByRole("navigation", { name: "Main" })
        .getByRole("link", { name: "Webhooks" })
        .click();
      await page.waitForURL((url) => url.pathname === "/acme/webhooks");
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Webhooks");
      expect(await page.locator("main").textContent()).toContain("No endpoint yet");
      await checkPage(page, "empty");

      // A refused URL: the page says why, keeps what was typed, and nothing is added.
      await page.getByLabel("URL").fill("ftp://hooks.example.com/x");
      await page.getByLabel("Description (optional)").fill("kept");
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page.waitForLoadState();
      expect(await page.getByRole("alert").textContent()).toMatch(/Not added: .*http/);
      expect(await page.getByLabel("Description (optional)").inputValue()).toBe("kept");
      const listed = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {});
      expect(listed.body.endpoints).toEqual([]);

      // Added with the keyboard: two event types ticked, the form sent with Enter.
      await page.getByLabel("URL").fill(`${receiver.url}?token=hidden-query`);
      await page.getByLabel("Description (optional)").fill("Our receiver");
      for (const type of ["pull_request.failed", "test_case.status_changed"]) {
        await page.getByRole("checkbox", { name: type, exact: true }).focus();
        await page.keyboard.press("Space");
      }
      await page.getByLabel("Description (optional)").focus();
      await page.keyboard.press("Enter");
      await page.waitForLoadState();
      const created = page.locator("section.created");
      expect(await created.getByRole("heading").textContent()).toBe("Endpoint added");
      const secret = (await created.locator("code.secret").textContent()) ?? "";
      expect(secret).toMatch(/^whsec_/);
      receiver.secret = secret;
      const row = page.locator("table.endpoints tbody tr");
      expect(await row.count()).toBe(1);
      const rowText = (await row.textContent()) ?? "";
      expect(rowText).toContain("pull_request.failed");
      expect(rowText).toContain("test_case.status_changed");
      expect(rowText).toContain("every repository");
      expect(rowText).toContain("enabled");
      expect(await page.content()).not.toContain("hidden-query");
      await checkPage(page, "added");

      // The secret is shown once: the list again has none.
      await page.goto(`${server.url}/acme/webhooks`);
      expect(await page.content()).not.toContain(secret);

      // Its page: send a test event; it is delivered.
      await page.locator("table.endpoints").getByRole("link").first().click();
      await page.waitForURL((url) => /^\/acme\/webhooks\/we_/.test(url.pathname));
      endpointId = page.url().split("/").pop() ?? "";
      expect(await page.locator("main").textContent()).toContain("No delivery yet");
      await page.getByRole("button", { name: "Send test event" }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "test-sent");
      expect(await page.getByRole("status").textContent()).toContain("test event");
      await deliveriesUntil(page, ["succeeded"]);
      const first = page.locator("table.deliveries tbody tr").first();
      expect(await first.textContent()).toContain("mainline.ping");
      expect(await first.locator("ol.attempts").textContent()).toMatch(/HTTP 204 in \d+/);
      await waitFor(() => receiver.accepted().length === 1, "the ping to arrive");

      // Resend: a second delivery of the same event, the same webhook-id.
      await first.getByRole("button", { name: /^Resend/ }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "resent");
      await deliveriesUntil(page, ["succeeded", "succeeded"]);
      await waitFor(() => receiver.accepted().length === 2, "the resent ping to arrive");
      const [a, b] = receiver.accepted();
      expect(a?.id).toMatch(/^msg_/);
      expect(b?.id).toBe(a?.id);
      expect(b?.body.type).toBe("mainline.ping");
      expect(receiver.requests.every((r) => r.verified)).toBe(true);
      await checkPage(page, "endpoint");

      // Disable (asks first), with why; enable again.
      page.once("dialog", (dialog) => void dialog.accept());
      await page.getByRole("button", { name: "Disable" }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "disabled");
      const state = () => page.locator("dl.endpoint").textContent();
      expect(await state()).toContain("disabled Disabled through the dashboard.");
      await page.getByRole("button", { name: "Enable" }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "enabled");
      expect(await state()).not.toContain("disabled");
    } finally {
      // The refused URL's page answers 400.
      await t.finish([
        "Failed to load resource: the server responded with a status of 400 (Bad Request)",
      ]);
    }
  }, 90_000);

  it("shows another organization's endpoint to nobody else: the 404 page, nothing resent", async () => {
    expect(endpointId).toMatch(/^we_/);
    const other = await server.services.organizations.createOrganizationWithToken("globex");
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(t, `${server.url}/globex/webhooks`, other.token);
      expect(await page.locator("main").textContent()).toContain("No endpoint yet");
      for (const path of [`/globex/webhooks/${endpointId}`, `/acme/webhooks/${endpointId}`]) {
        const answer = await page.goto(`${server.url}${path}`);
        expect(answer?.status(), path).toBe(404);
        expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Page not found");
      }
      // Its own session's form, aimed at acme's endpoint: 404, nothing sent.
      await page.goto(`${server.url}/globex/webhooks`);
      const csrf = await page.locator('input[name="csrf"]').first().inputValue();
      const before = receiver.requests.length;
      const eventId = receiver.requests[0]?.id ?? "";
      const forged = await page.request.post(`${server.url}/globex/webhooks/${endpointId}/resend`, {
        form: { csrf, eventId },
        maxRedirects: 0,
      });
      expect(forged.status()).toBe(404);
      const deleted = await page.request.post(
        `${server.url}/globex/webhooks/${endpointId}/delete`,
        { form: { csrf }, maxRedirects: 0 },
      );
      expect(deleted.status()).toBe(404);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.requests.length).toBe(before);
      const listed = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {});
      expect(listed.body.endpoints).toHaveLength(1);
      await checkAccessibility(page);
    } finally {
      await t.finish([statusNote(404), statusNote(404)]);
    }
  }, 60_000);

  it("deletes the endpoint from its page (asks first)", async () => {
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(t, `${server.url}/acme/webhooks/${endpointId}`, server.token);
      page.once("dialog", (dialog) => {
        expect(dialog.message()).toBe("Delete this endpoint and its deliveries?");
        void dialog.accept();
      });
      await page.getByRole("button", { name: "Delete" }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "deleted");
      expect(await page.getByRole("status").textContent()).toContain("deleted");
      expect(await page.locator("main").textContent()).toContain("No endpoint yet");
      const listed = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {});
      expect(listed.body.endpoints).toEqual([]);
    } finally {
      await t.finish();
    }
  }, 60_000);

  it("adds a Slack incoming webhook and a Slack bot through the form; a test message arrives", async () => {
    const t = await openPage(launched, server.url);
    try {
      const { page } = t;
      await signInAt(t, `${server.url}/acme/webhooks`, server.token);
      const hook = slack.addWebhook("C0WEB");
      const token = "xoxb-2468-1357-browsertokensecret";
      slack.addBot(token, ["C0BOT"]);

      // Each kind shows the fields it needs.
      expect(await page.getByLabel("URL").isVisible()).toBe(true);
      expect(await page.getByLabel("Slack bot token").isVisible()).toBe(false);
      await page.getByLabel("Kind").selectOption("slack");
      await page.getByLabel("URL").fill(hook);
      await page.getByLabel("Code owners (optional)").fill("@acme/payments");
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page.waitForLoadState();
      const created = page.locator("section.created");
      expect(await created.getByRole("heading").textContent()).toBe("Slack incoming webhook added");
      expect(await created.locator("code.secret").count()).toBe(0);
      const rows = page.locator("table.endpoints tbody tr");
      expect(await rows.count()).toBe(1);
      const row = (await rows.first().textContent()) ?? "";
      expect(row).toContain("Slack incoming webhook");
      expect(row).toMatch(/http:\/\/127\.0\.0\.1:\d+\/…/);
      expect(row).toContain("@acme/payments");
      expect(await page.content()).not.toContain(new URL(hook).pathname);
      await checkPage(page, "slack-added");

      await page.getByLabel("Kind").selectOption("slack_bot");
      expect(await page.getByLabel("URL").isVisible()).toBe(false);
      await page.getByLabel("Slack bot token").fill(token);
      await page.getByLabel("Slack channel").fill("C0BOT");
      await checkPage(page, "slack-bot-form");
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page.waitForLoadState();
      expect(await page.locator("section.created").getByRole("heading").textContent()).toBe(
        "Slack bot added",
      );
      expect(await rows.count()).toBe(2);
      expect(await rows.nth(1).textContent()).toContain("Slack channel C0BOT");
      expect(await page.content()).not.toContain(token);

      // Its page: a test message, delivered to the channel.
      await rows.nth(1).getByRole("link").click();
      await page.waitForURL((url) => /^\/acme\/webhooks\/we_/.test(url.pathname));
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Slack bot");
      await page.getByRole("button", { name: "Send test event" }).click();
      await page.waitForURL((url) => url.searchParams.get("note") === "test-sent");
      await deliveriesUntil(page, ["succeeded"]);
      await waitFor(() => slack.posts.length === 1, "the test message in Slack");
      expect(slack.posts[0]).toMatchObject({ via: "api", channel: "C0BOT" });
      expect(slack.posts[0]?.text).toMatch(/^Mainline is connected/);
      await checkPage(page, "slack-bot-endpoint");
    } finally {
      await t.finish();
    }
  }, 90_000);
});
