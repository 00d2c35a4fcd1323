import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHAT_DEFAULT_EVENT_TYPES } from "../../src/notifications/kinds.js";
import {
  expectLandmarks,
  expectPageHeaders,
  inject,
  signIn,
  type SignedIn,
} from "../helpers/dashboard.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import type { EndpointJson } from "../helpers/webhook-schemas.js";

/**
 * Webhooks' pages and forms through `app.inject`, on both databases (the worker does not run, so
 * deliveries stay pending): the add form and its refusals, escaping, forms without their
 * anti-forgery token, a script's read-only view, another organization's 404 with nothing changed.
 */

const HOSTILE = `<img src=x onerror="alert(1)">`;

let server: TestServer;
let acme: SignedIn;
let endpointId = "";

type Endpoint = EndpointJson;
const endpoints = async () =>
  (await server.call<{ endpoints: Endpoint[] }>("webhooks/listEndpoints", {})).body.endpoints;

beforeAll(async () => {
  server = await startTestServer({ startWorker: false, webhooks: { allowPrivate: true } });
  acme = await signIn(server.app, server.token);
}, 60_000);

afterAll(async () => {
  await server.close();
});

const post = (path: string, form: Record<string, string>, who: SignedIn = acme) =>
  inject(server.app, { method: "POST", path, cookie: who.cookie, form });

describe("the webhooks pages", () => {
  it("adds an endpoint through the form, shows its secret once, escapes what it shows", async () => {
    const answer = await post("/acme/webhooks", {
      csrf: acme.csrf,
      url: "https://hooks.example.com/in?token=do-not-show",
      description: HOSTILE,
      "event:pull_request.failed": "on",
      "event:not.a.type": "on",
    });
    expect(answer.status).toBe(201);
    expectPageHeaders(answer);
    expectLandmarks(answer.body);
    const [created] = await endpoints();
    expect(created?.eventTypes).toEqual(["pull_request.failed"]);
    expect(created?.description).toBe(HOSTILE);
    endpointId = created?.id ?? "";
    const secret = /<code class="secret">(whsec_[^<]+)<\/code>/.exec(answer.body)?.[1] ?? "";
    const revealed = await server.call<{ secret: string }>("webhooks/revealSecret", {
      endpointId,
    });
    expect(secret).toBe(revealed.body.secret);
    expect(answer.body).not.toContain(HOSTILE);
    expect(answer.body).toContain("&lt;img src=x");
    expect(answer.body).not.toContain("do-not-show");
    expect(answer.body).toContain("https://hooks.example.com/in?…");

    const list = await inject(server.app, { path: "/acme/webhooks", cookie: acme.cookie });
    expect(list.status).toBe(200);
    expect(list.body).not.toContain(secret);
    expect(list.body).toContain(`href="/acme/webhooks/${endpointId}"`);
  });

  it("refuses a bad URL with why, keeping what was typed, and adds nothing", async () => {
    const answer = await post("/acme/webhooks", {
      csrf: acme.csrf,
      url: "ftp://hooks.example.com/x",
      description: "second",
      "event:pull_request.merged": "on",
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatch(/role="alert"[^>]*>Not added: /);
    expect(answer.body).toContain('value="ftp://hooks.example.com/x"');
    expect(answer.body).toMatch(/name="event:pull_request\.merged" value="on" checked/);
    expect(await endpoints()).toHaveLength(1);
  });

  it("refuses forms without the session's anti-forgery token: nothing changes", async () => {
    for (const form of [{}, { csrf: "guessed" }]) {
      const add = await post("/acme/webhooks", { ...form, url: "https://hooks.example.com/b" });
      expect(add.status).toBe(403);
      for (const action of ["disable", "delete", "test"]) {
        const refused = await post(`/acme/webhooks/${endpointId}/${action}`, form);
        expect(refused.status, action).toBe(403);
      }
    }
    const [endpoint, ...others] = await endpoints();
    expect(others).toEqual([]);
    expect(endpoint?.enabled).toBe(true);
    const deliveries = await server.call<{ deliveries: unknown[] }>("webhooks/listDeliveries", {
      endpointId,
      page_query: { page_size: 10 },
    });
    expect(deliveries.body.deliveries).toEqual([]);
    // Without a session a page sends the browser to sign in.
    const page = await inject(server.app, { path: `/acme/webhooks/${endpointId}` });
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe(`/sign-in?next=/acme/webhooks/${endpointId}`);
  });

  it("sends a test event; the delivery shows as pending; an unknown event is not resent", async () => {
    const sent = await post(`/acme/webhooks/${endpointId}/test`, { csrf: acme.csrf });
    expect(sent.status).toBe(303);
    expect(sent.headers.location).toBe(`/acme/webhooks/${endpointId}?note=test-sent`);
    const page = await inject(server.app, {
      path: `/acme/webhooks/${endpointId}?note=test-sent`,
      cookie: acme.cookie,
    });
    expect(page.status).toBe(200);
    expect(page.body).toContain("A test event (mainline.ping) is on its way");
    expect(page.body).toContain("mainline.ping");
    expect(page.body).toMatch(/class="badge testing">pending</);
    expect(page.body).toContain("next attempt");
    const unknown = await post(`/acme/webhooks/${endpointId}/resend`, {
      csrf: acme.csrf,
      eventId: "msg_nothere",
    });
    expect(unknown.status).toBe(404);
    // A script reading with its token sees the page, without any form.
    const script = await inject(server.app, {
      path: `/acme/webhooks/${endpointId}`,
      headers: { "x-api-token": server.token },
    });
    expect(script.status).toBe(200);
    expect(script.body).toContain("mainline.ping");
    expect(script.body).not.toContain("<form");
  });

  it("disables with the dashboard as the reason, and enables again", async () => {
    const off = await post(`/acme/webhooks/${endpointId}/disable`, { csrf: acme.csrf });
    expect(off.headers.location).toBe(`/acme/webhooks/${endpointId}?note=disabled`);
    const page = await inject(server.app, { path: "/acme/webhooks", cookie: acme.cookie });
    expect(page.body).toContain("Disabled through the dashboard.");
    expect((await endpoints())[0]?.enabled).toBe(false);
    await post(`/acme/webhooks/${endpointId}/enable`, { csrf: acme.csrf });
    expect((await endpoints())[0]?.enabled).toBe(true);
  });

  it("is the 404 page for another organization, whose forms change nothing", async () => {
    const other = await server.services.organizations.createOrganizationWithToken("globex");
    const globex = await signIn(server.app, other.token);
    for (const path of [`/globex/webhooks/${endpointId}`, `/acme/webhooks/${endpointId}`]) {
      const page = await inject(server.app, { path, cookie: globex.cookie });
      expect(page.status, path).toBe(404);
      expect(page.body).toContain("Page not found");
    }
    for (const action of ["disable", "delete", "test"]) {
      const refused = await post(
        `/globex/webhooks/${endpointId}/${action}`,
        { csrf: globex.csrf },
        globex,
      );
      expect(refused.status, action).toBe(404);
    }
    const list = await inject(server.app, { path: "/globex/webhooks", cookie: globex.cookie });
    expect(list.body).toContain("No endpoint yet");
    const [endpoint] = await endpoints();
    expect(endpoint?.enabled).toBe(true);
    const deliveries = await server.call<{ deliveries: unknown[] }>("webhooks/listDeliveries", {
      endpointId,
      page_query: { page_size: 10 },
    });
    expect(deliveries.body.deliveries).toHaveLength(1);
  });

  it("deletes the endpoint", async () => {
    const deleted = await post(`/acme/webhooks/${endpointId}/delete`, { csrf: acme.csrf });
    expect(deleted.headers.location).toBe("/acme/webhooks?note=deleted");
    expect(await endpoints()).toEqual([]);
    const gone = await inject(server.app, {
      path: `/acme/webhooks/${endpointId}`,
      cookie: acme.cookie,
    });
    expect(gone.status).toBe(404);
  });

  it("adds Slack and Slack bot destinations: the URL shown as its host, the token never shown", async () => {
    const hook = "https://hooks.slack.example/services/T0A/B0B/hooksecretpart";
    const slack = await post("/acme/webhooks", {
      csrf: acme.csrf,
      kind: "slack",
      url: hook,
      botToken: "",
      channel: "",
      owners: "@acme/payments, alice",
      description: "payments alerts",
    });
    expect(slack.status).toBe(201);
    expect(slack.body).toContain("Slack incoming webhook added");
    expect(slack.body).not.toContain("hooksecretpart");
    expect(slack.body).not.toContain("whsec_");
    const [added] = await endpoints();
    expect(added).toMatchObject({
      kind: "slack",
      url: "https://hooks.slack.example/…",
      codeOwners: ["@acme/payments", "@alice"],
      eventTypes: [...CHAT_DEFAULT_EVENT_TYPES],
    });
    const list = await inject(server.app, { path: "/acme/webhooks", cookie: acme.cookie });
    expect(list.body).toContain("<td>Slack incoming webhook</td>");
    expect(list.body).toContain("<code>@acme/payments</code>");
    expect(list.body).not.toContain("hooksecretpart");
    const page = await inject(server.app, {
      path: `/acme/webhooks/${added?.id ?? ""}`,
      cookie: acme.cookie,
    });
    expect(page.body).toContain("<h1>Slack incoming webhook</h1>");
    expect(page.body).toContain("https://hooks.slack.example/…");

    // A bot without its channel: refused, what was typed kept, but never the token.
    const token = "xoxb-1234-5678-formtokensecret";
    const refused = await post("/acme/webhooks", {
      csrf: acme.csrf,
      kind: "slack_bot",
      url: "https://left.over/from-another-kind",
      botToken: token,
      channel: "",
      owners: "",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/Not added: channel is required for a Slack bot/);
    expect(refused.body).toMatch(/<option value="slack_bot" selected>/);
    expect(refused.body).not.toContain(token);
    const bot = await post("/acme/webhooks", {
      csrf: acme.csrf,
      kind: "slack_bot",
      url: "https://left.over/from-another-kind",
      botToken: token,
      channel: "C0PAY",
      owners: "",
    });
    expect(bot.status).toBe(201);
    expect(bot.body).toContain("Slack channel C0PAY");
    expect(bot.body).not.toContain(token);
    expect((await endpoints()).map((e) => [e.kind, e.url, e.channel])).toEqual([
      ["slack", "https://hooks.slack.example/…", null],
      ["slack_bot", "", "C0PAY"],
    ]);
  });
});
