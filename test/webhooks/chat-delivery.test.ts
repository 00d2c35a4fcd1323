/**
 * Slack and Microsoft Teams destinations end to end on both databases: real uploads make tests
 * flaky (their CODEOWNERS in the bundle), the worker renders each change for a Slack incoming
 * webhook, a Slack bot (`chat.postMessage`) and a Teams Workflows trigger, all fakes of the
 * tests' own (test/helpers/fake-slack.ts, fake-teams.ts) that check what they get against
 * Slack's and Microsoft's published descriptions. Code owners route tests' events; each way Slack
 * and Teams answer is handled (Retry-After, ok:false shown, a refused token or 410 disables); no
 * credential reaches the server's log, the listings or the attempts; another organization sees
 * and changes nothing.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../helpers/fake-slack.js";
import { startFakeTeams, type FakeTeams } from "../helpers/fake-teams.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, ingest, junit } from "../helpers/uploads.js";
import type { EndpointJson } from "../helpers/webhook-schemas.js";

const CODEOWNERS = "/payments/ @acme/payments\n/search/ @alice\n";
const PAY = { name: "charges the card", classname: "PayTest", file: "payments/pay.test.ts" };
const FIND = { name: "finds <all> & more", classname: "FindTest", file: "search/find.test.ts" };
const TOKEN = "xoxb-1111-2222-chattokensecret";

let server: TestServer;
let slack: FakeSlack;
let teams: FakeTeams;
let log = "";

interface Attempt {
  at: string;
  statusCode: number | null;
  error: string | null;
  response: string | null;
}
interface Delivery {
  id: string;
  endpointId: string;
  eventType: string;
  state: string;
  attempts: Attempt[];
}
type Endpoint = EndpointJson;

beforeAll(async () => {
  slack = await startFakeSlack();
  teams = await startFakeTeams();
  server = await startTestServer({
    publicUrl: "https://mainline.example",
    webhooks: {
      allowPrivate: true,
      schedule: [0, 100, 100, 100, 100],
      timeoutMs: 2_000,
      pollMs: 50,
      slackApiUrl: slack.apiUrl,
    },
    log: new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString("utf8");
        done();
      },
    }),
  });
  server.services.webhooks.dispatcher.start();
}, 60_000);

afterAll(async () => {
  await server.close();
  await slack.close();
  await teams.close();
});

async function create(body: Record<string, unknown>): Promise<Endpoint> {
  const created = await server.call<{ endpoint: Endpoint; secret: string }>(
    "webhooks/createEndpoint",
    body,
  );
  expect(created.status, created.text).toBe(200);
  expect(created.body.secret).toBe("");
  return created.body.endpoint;
}

async function deliveries(endpointId: string): Promise<Delivery[]> {
  const answer = await server.call<{ deliveries: Delivery[] }>("webhooks/listDeliveries", {
    endpointId,
    page_query: { page_size: 50 },
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body.deliveries;
}

async function endpoint(id: string): Promise<Endpoint | undefined> {
  const { body } = await server.call<{ endpoints: Endpoint[] }>("webhooks/listEndpoints", {});
  return body.endpoints.find((e) => e.id === id);
}

const ping = (endpointId: string) => server.call("webhooks/sendTestEvent", { endpointId });

/** A test message sent to the endpoint, once its delivery is done (succeeded or failed). */
async function pingSettled(endpointId: string): Promise<Delivery> {
  const sent = await server.call<{ deliveryId: string }>("webhooks/sendTestEvent", { endpointId });
  expect(sent.status, sent.text).toBe(200);
  let found: Delivery | undefined;
  await waitFor(async () => {
    found = (await deliveries(endpointId)).find((d) => d.id === sent.body.deliveryId);
    return found !== undefined && found.state !== "pending";
  }, `the test message to ${endpointId}`);
  if (!found) throw new Error("no delivery");
  return found;
}

let uploadAt = Date.now() - 60 * 60_000;
/** Two uploads: a failure on a pull request, then a pass after retries (flaky). */
async function makeFlaky(test: typeof PAY): Promise<void> {
  const upload = async (spec: Record<string, unknown>, extra: Record<string, unknown>) => {
    uploadAt += 60_000;
    await ingest(
      server,
      await bundle({
        files: [junit([{ ...test, ...spec }])],
        codeowners: CODEOWNERS,
        uploadedAt: uploadAt,
        commit: uploadAt.toString(16).padStart(40, "0"),
        ...extra,
      }),
    );
  };
  await upload(
    { status: "failed", message: "Expected 200 but got 502" },
    { pr: 7, branch: "feature/seven" },
  );
  await upload({ flakyFailures: 2, message: "Expected 200 but got 502" }, {});
}

describe("Slack and Teams destinations", () => {
  let slackHook = "";
  let slackEndpoint: Endpoint;
  let botEndpoint: Endpoint;
  let teamsEndpoint: Endpoint;

  it("tells Slack, a Slack bot and Teams that a test became flaky, each only its owners' tests", async () => {
    slackHook = slack.addWebhook("C0PAYMENTS");
    slack.addBot(TOKEN, ["C0ALICE"]);
    slackEndpoint = await create({ kind: "slack", url: slackHook, codeOwners: ["ACME/Payments"] });
    botEndpoint = await create({
      kind: "slack_bot",
      secret: TOKEN,
      channel: "C0ALICE",
      codeOwners: ["@Alice"],
    });
    teamsEndpoint = await create({ kind: "teams", url: teams.addWorkflow() });
    expect(slackEndpoint.codeOwners).toEqual(["@ACME/Payments"]);
    // Chat destinations default to the v1 status event only: one message per change.
    expect(teamsEndpoint.eventTypes).toEqual([
      "test_case.status_changed",
      "pull_request.failed",
      "pull_request.canceled",
      "mainline.queue.state_changed",
      "mainline.queue.blocked",
      "mainline.queue.unblocked",
    ]);

    await makeFlaky(PAY);
    await waitFor(() => slack.posts.length === 1 && teams.posts.length === 1, "the payments test");
    await makeFlaky(FIND);
    await waitFor(() => slack.posts.length === 2 && teams.posts.length === 2, "the search test");
    await server.services.webhooks.dispatcher.drain();

    // The payments owners' webhook got the payments test only; Alice's bot, the search test.
    const [toWebhook, toBot] = slack.posts;
    expect(toWebhook?.via).toBe("webhook");
    expect(toWebhook?.channel).toBe("C0PAYMENTS");
    expect(toWebhook?.shown).toContain("Test became flaky");
    expect(toWebhook?.shown).toContain("PayTest › charges the card");
    expect(toWebhook?.shown).toContain("*Owners*\n@acme/payments");
    // 3 failures (one run, two retries) in 4 runs; one pull request impacted.
    expect(toWebhook?.shown).toContain("*Failure rate (7 days)*\n75%");
    expect(toWebhook?.shown).toContain("*PRs impacted (7 days)*\n1");
    expect(toWebhook?.shown).toContain("Most common failure: Expected 200 but got 502");
    const buttons = JSON.stringify(toWebhook?.blocks.at(-1));
    expect(buttons).toContain("Open test");
    expect(buttons).toMatch(/"url":"https:\/\/mainline\.example\/acme\/flaky-tests\/test\/[^"]+"/);
    expect(toBot?.via).toBe("api");
    expect(toBot?.channel).toBe("C0ALICE");
    expect(toBot?.shown).toContain("FindTest › finds &lt;all&gt; &amp; more");
    expect(toBot?.shown).toContain("@alice");
    expect(slack.misrendered).toEqual([]);

    // Teams (no owners) got both, as valid Adaptive Cards 1.4.
    expect(teams.posts.map((p) => p.cards[0]?.version)).toEqual(["1.4", "1.4"]);
    const [first, second] = teams.posts.map((p) => p.shown);
    expect(first).toContain("Test became flaky");
    expect(first).toContain("Failure rate (7 days): 75%");
    expect(first).toContain("Owners: @acme/payments");
    expect(second).toContain("Test: FindTest › finds <all> & more");
    expect(JSON.stringify(teams.posts[0]?.cards[0]?.actions)).toContain("Open test");
    // Every request said who sent it; none carried a Standard Webhooks signature.
    const sent = [...slack.server.requests, ...teams.server.requests];
    expect(sent.every((r) => r.headers["user-agent"]?.startsWith("Mainline/"))).toBe(true);
    expect(sent.some((r) => r.headers["webhook-signature"] !== undefined)).toBe(false);
    const botRequest = slack.server.requests.find((r) => r.path === "/api/chat.postMessage");
    expect(botRequest?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  }, 60_000);

  it("sends a test message to each kind", async () => {
    const before = { slack: slack.posts.length, teams: teams.posts.length };
    for (const e of [slackEndpoint, botEndpoint, teamsEndpoint]) {
      expect((await ping(e.id)).status).toBe(200);
    }
    await waitFor(
      () => slack.posts.length === before.slack + 2 && teams.posts.length === before.teams + 1,
      "three test messages",
    );
    for (const post of [...slack.posts.slice(-2), teams.posts.at(-1)]) {
      expect(post?.shown).toContain("Mainline is connected");
      expect(post?.shown).toContain("https://mainline.example");
    }
  });

  it("retries after Slack's and Teams' 429 with Retry-After, and their 5xx", async () => {
    slack.failWebhook(slackHook, { status: 429, text: "rate_limited", retryAfter: 1 });
    slack.failApi(
      { status: 429, error: "ratelimited", retryAfter: 1 },
      { error: "internal_error" },
    );
    teams.fail({ status: 429, retryAfter: 1 }, { status: 502 });
    const done = await Promise.all(
      [slackEndpoint, botEndpoint, teamsEndpoint].map((e) => pingSettled(e.id)),
    );
    for (const [i, e] of [slackEndpoint, botEndpoint, teamsEndpoint].entries()) {
      const latest = done[i];
      expect(latest?.state, e.kind).toBe("succeeded");
      const statuses = latest?.attempts.map((a) => a.statusCode);
      expect(statuses, e.kind).toEqual(
        e.kind === "slack"
          ? [429, 200]
          : e.kind === "slack_bot"
            ? [429, 200, 200]
            : [429, 502, 202],
      );
      // The second attempt waited for Retry-After (1 s), not the schedule's 100 ms.
      const [a, b] = (latest?.attempts ?? []).map((x) => Date.parse(x.at));
      expect((b ?? 0) - (a ?? 0), e.kind).toBeGreaterThanOrEqual(1000);
      expect(latest?.attempts[0]?.error, e.kind).toMatch(/429|ratelimited/);
    }
    expect(done[1]?.attempts[1]?.error).toBe("Slack: internal_error");
  }, 30_000);

  it("fails a message Slack or Teams refuse, showing why, without retrying", async () => {
    slack.failWebhook(slackHook, { status: 400, text: "invalid_payload" });
    teams.fail({ status: 400 });
    const [hook, card] = await Promise.all([
      pingSettled(slackEndpoint.id),
      pingSettled(teamsEndpoint.id),
    ]);
    expect(hook.state).toBe("failed");
    expect(hook.attempts.map((a) => [a.statusCode, a.error])).toEqual([
      [400, "Slack answered 400 invalid_payload"],
    ]);
    expect(card.state).toBe("failed");
    expect(card.attempts).toHaveLength(1);
    expect(card.attempts[0]?.error).toMatch(/^Teams answered 400/);

    // A bot not in its channel: HTTP 200 with ok:false is a failure, and says so.
    slack.addChannel("C0GENERAL");
    const lonely = await create({ kind: "slack_bot", secret: TOKEN, channel: "C0GENERAL" });
    const refused = await pingSettled(lonely.id);
    expect(refused.state).toBe("failed");
    expect(refused.attempts[0]?.statusCode).toBe(200);
    expect(refused.attempts[0]?.error).toBe(
      "Slack: not_in_channel (invite the bot to the channel)",
    );
    expect(refused.attempts[0]?.response).toContain('"ok":false');
    expect((await endpoint(lonely.id))?.enabled).toBe(true);
  }, 30_000);

  it("disables a Slack bot whose token Slack refuses, and a webhook Slack says is gone", async () => {
    const revoked = "xoxb-3333-4444-revokedtoken";
    slack.addBot(revoked, ["C0ALICE"]);
    slack.revoke(revoked);
    const stale = await create({ kind: "slack_bot", secret: revoked, channel: "C0ALICE" });
    const unknown = await create({
      kind: "slack_bot",
      secret: "xoxb-9-9-unknown",
      channel: "C0ALICE",
    });
    const archivedHook = slack.addWebhook("C0OLD");
    const archived = await create({ kind: "slack", url: archivedHook });
    slack.failWebhook(archivedHook, { status: 410, text: "channel_is_archived" });
    for (const e of [stale, unknown, archived]) await ping(e.id);
    for (const [e, reason] of [
      [stale, /token_revoked/],
      [unknown, /invalid_auth/],
      [archived, /410 channel_is_archived/],
    ] as const) {
      await waitFor(async () => (await endpoint(e.id))?.enabled === false, `${e.id} disabled`);
      expect((await endpoint(e.id))?.disabledReason).toMatch(reason);
    }
    expect((await endpoint(stale.id))?.disabledReason).toContain("Slack refused the bot token");
    // A new token, enabled again: messages go out.
    slack.addBot("xoxb-5555-6666-freshtoken", ["C0ALICE"]);
    const updated = await server.call("webhooks/updateEndpoint", {
      endpointId: stale.id,
      secret: "xoxb-5555-6666-freshtoken",
      enabled: true,
    });
    expect(updated.status, updated.text).toBe(200);
    const before = slack.posts.length;
    await ping(stale.id);
    await waitFor(() => slack.posts.length === before + 1, "the ping with the new token");
  }, 30_000);

  it("keeps credentials out of listings, attempts and the server's log; reveals them on demand", async () => {
    const { body, text } = await server.call<{ endpoints: Endpoint[] }>(
      "webhooks/listEndpoints",
      {},
    );
    const hookUrl = new URL(slackHook);
    const teamsUrl = await reveal(teamsEndpoint.id);
    const secrets = [
      TOKEN,
      "freshtoken",
      hookUrl.pathname,
      new URL(teamsUrl).searchParams.get("sig") ?? "?",
    ];
    for (const secret of secrets) {
      expect(text, secret).not.toContain(secret);
      expect(log, secret).not.toContain(secret);
    }
    expect(log).toContain("webhooks/listEndpoints"); // the log was captured
    const shown = body.endpoints.find((e) => e.id === slackEndpoint.id);
    expect(shown?.url).toBe(`${hookUrl.protocol}//${hookUrl.host}/…`);
    expect(body.endpoints.find((e) => e.id === botEndpoint.id)).toMatchObject({
      kind: "slack_bot",
      url: "",
      channel: "C0ALICE",
      codeOwners: ["@Alice"],
    });
    for (const e of [slackEndpoint, botEndpoint, teamsEndpoint]) {
      const attempts = JSON.stringify(await deliveries(e.id));
      for (const secret of secrets) expect(attempts, secret).not.toContain(secret);
    }
    expect(await reveal(slackEndpoint.id)).toBe(slackHook);
    expect(await reveal(botEndpoint.id)).toBe(TOKEN);
    const rotate = await server.call("webhooks/rotateSecret", { endpointId: botEndpoint.id });
    expect(rotate.status).toBe(409);
  });

  it("shows another organization nothing of the endpoints, and lets it change nothing", async () => {
    const other = await server.services.organizations.createOrganizationWithToken("globex");
    const as = { token: other.token };
    const listed = await server.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {}, as);
    expect(listed.body.endpoints).toEqual([]);
    for (const [operation, body] of [
      ["webhooks/updateEndpoint", { endpointId: botEndpoint.id, channel: "C0EVIL" }],
      ["webhooks/updateEndpoint", { endpointId: slackEndpoint.id, codeOwners: [] }],
      ["webhooks/revealSecret", { endpointId: botEndpoint.id }],
      ["webhooks/revealSecret", { endpointId: teamsEndpoint.id }],
      ["webhooks/sendTestEvent", { endpointId: slackEndpoint.id }],
      ["webhooks/deleteEndpoint", { endpointId: teamsEndpoint.id }],
    ] as const) {
      const answer = await server.call(operation, body, as);
      expect(answer.status, operation).toBe(404);
      expect(answer.text).not.toContain(TOKEN);
    }
    expect(await endpoint(botEndpoint.id)).toMatchObject({ channel: "C0ALICE" });
    expect(await endpoint(slackEndpoint.id)).toMatchObject({ codeOwners: ["@ACME/Payments"] });
    expect(await endpoint(teamsEndpoint.id)).toBeDefined();
  });
});

async function reveal(endpointId: string): Promise<string> {
  const answer = await server.call<{ secret: string }>("webhooks/revealSecret", { endpointId });
  expect(answer.status, answer.text).toBe(200);
  return answer.body.secret;
}

describe("what a chat endpoint needs", () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ webhooks: { allowPrivate: false } });
  });
  afterAll(async () => {
    await strict.close();
  });

  it("refuses what a kind cannot use with a clear 400, and creates nothing", async () => {
    for (const [body, field] of [
      [{ kind: "slack", url: "http://hooks.slack.example/services/T/B/x" }, /url.*https/],
      [{ kind: "teams", url: "http://flows.example/workflows/1" }, /url.*https/],
      [{ kind: "slack", url: "https://hooks.slack.example/x", secret: "s" }, /secret/],
      [{ kind: "slack", url: "https://hooks.slack.example/x", channel: "C1" }, /channel/],
      [{ kind: "slack_bot", secret: "xoxb-1-2-abcdefgh" }, /channel.*required/],
      [{ kind: "slack_bot", channel: "C0ABC" }, /secret.*required/],
      [{ kind: "slack_bot", secret: "ghp_notaslacktoken", channel: "C0ABC" }, /xoxb-/],
      [{ kind: "slack_bot", secret: "xoxb-1-2-abcdefgh", channel: "general" }, /channel/],
      [
        {
          kind: "slack_bot",
          secret: "xoxb-1-2-abcdefgh",
          channel: "C0ABC",
          url: "https://x.example",
        },
        /url/,
      ],
      [
        { kind: "slack", url: "https://hooks.slack.example/x", codeOwners: ["@a b"] },
        /codeOwners\[0\]/,
      ],
      [{ kind: "discord", url: "https://hooks.example/x" }, /kind/],
    ] as const) {
      const refused = await strict.call<{ message?: string }>("webhooks/createEndpoint", body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.text, JSON.stringify(body)).toMatch(field);
    }
    const listed = await strict.call<{ endpoints: unknown[] }>("webhooks/listEndpoints", {});
    expect(listed.body.endpoints).toEqual([]);
    const good = await strict.call<{ endpoint: Endpoint }>("webhooks/createEndpoint", {
      kind: "slack",
      url: "https://hooks.slack.example/services/T0/B0/secretpart",
    });
    expect(good.status, good.text).toBe(200);
    expect(good.body.endpoint.url).toBe("https://hooks.slack.example/…");
    const endpointId = good.body.endpoint.id;
    for (const change of [
      { channel: "C0ABC" },
      { kind: "teams" },
      { url: "http://hooks.slack.example/services/T0/B0/other" },
      { secret: "xoxb-1-2-abcdefgh" },
    ]) {
      const refused = await strict.call("webhooks/updateEndpoint", { endpointId, ...change });
      expect(refused.status, JSON.stringify(change)).toBe(400);
    }
    const moved = await strict.call<{ endpoint: Endpoint }>("webhooks/updateEndpoint", {
      endpointId,
      url: "https://hooks.slack.example/services/T0/B1/newsecretpart",
      codeOwners: ["@acme/search"],
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.endpoint).toMatchObject({
      url: "https://hooks.slack.example/…",
      codeOwners: ["@acme/search"],
    });
    expect(moved.text).not.toContain("newsecretpart");
  });
});
