/**
 * `mainline webhooks` against a real `mainline serve`: add (the secret printed once), list, test,
 * deliveries with their attempts, resend, remove; a refused URL is a clear error. Slack and
 * Teams destinations: added by kind, a Slack bot with its token and channel, owners; listed with
 * their URL redacted; a test message reaches the fake Slack; no token in the server's log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../helpers/fake-slack.js";
import { startFakeTeams, type FakeTeams } from "../helpers/fake-teams.js";
import { runCliInProcess, waitFor, type RunningServer } from "../helpers/process.js";
import { failed, serveBootstrapped, succeeded, type BootstrappedServer } from "./support.js";

let running: BootstrappedServer;
let server: RunningServer;
let auth: string[];

beforeAll(async () => {
  running = await serveBootstrapped();
  server = running.server;
  auth = ["--url", server.url, "--token", running.token];
});
afterAll(() => running.close());

const cli = (...args: string[]) => runCliInProcess(["webhooks", ...args, ...auth]);

describe("mainline webhooks", () => {
  it("adds, lists, tests, shows deliveries, resends and removes an endpoint", async () => {
    // An address nobody answers at: the deliveries fail, and say so.
    const added = succeeded(
      await cli("add", "https://hooks.invalid/mainline", "--event", "pull_request.failed"),
    );
    const [endpointId, secretLine] = added.stdout.trim().split("\n");
    expect(endpointId).toMatch(/^we_/);
    expect(secretLine).toMatch(/^secret: whsec_/);

    const listed = succeeded(await cli("list"));
    expect(listed.stdout).toContain(endpointId);
    expect(listed.stdout).toContain("pull_request.failed");
    expect(listed.stdout).not.toContain("whsec_");

    const sent = succeeded(await cli("test", endpointId ?? ""));
    const [eventId] = sent.stdout.trim().split(" ");
    expect(eventId).toMatch(/^msg_/);

    let deliveries: { eventId: string; attempts: { error: string | null }[] }[] = [];
    for (let i = 0; i < 100 && !deliveries[0]?.attempts.length; i++) {
      const json = succeeded(await cli("deliveries", "--endpoint", endpointId ?? "", "--json"));
      deliveries = (JSON.parse(json.stdout) as { deliveries: typeof deliveries }).deliveries;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(deliveries[0]?.eventId).toBe(eventId);
    expect(deliveries[0]?.attempts[0]?.error).toBeTruthy();
    const table = succeeded(await cli("deliveries"));
    expect(table.stdout).toMatch(/mainline\.ping/);

    const resent = succeeded(await cli("resend", eventId ?? "", endpointId ?? ""));
    expect(resent.stdout.trim()).toMatch(/^dlv_/);
    const twice = succeeded(await cli("deliveries", "--event", eventId ?? "", "--json"));
    expect((JSON.parse(twice.stdout) as { deliveries: unknown[] }).deliveries).toHaveLength(2);

    succeeded(await cli("remove", endpointId ?? ""));
    const empty = succeeded(await cli("list"));
    expect(empty.stderr).toContain("No endpoints.");
    expect(failed(await cli("remove", endpointId ?? ""))).toMatch(/No webhook endpoint/);
  });

  it("refuses an internal address with the API's reason", async () => {
    const message = failed(await cli("add", "http://10.0.0.1/hook"));
    expect(message).toMatch(/loopback, private or link-local/);
  });
});

describe("mainline webhooks for Slack and Teams", () => {
  let chat: BootstrappedServer;
  let slack: FakeSlack;
  let teams: FakeTeams;
  let chatAuth: string[];
  const BOT = "xoxb-7777-8888-clitokensecret";
  beforeAll(async () => {
    slack = await startFakeSlack();
    teams = await startFakeTeams();
    chat = await serveBootstrapped({
      MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1",
      MAINLINE_SLACK_API_URL: slack.apiUrl,
      // Every line, to see that none shows a credential.
      LOG_LEVEL: "trace",
    });
    chatAuth = ["--url", chat.server.url, "--token", chat.token];
  });
  afterAll(async () => {
    await chat.close();
    await slack.close();
    await teams.close();
  });
  const run = (args: string[], env: Record<string, string> = {}) =>
    runCliInProcess(["webhooks", ...args, ...chatAuth], env);

  it("adds Slack, Slack bot and Teams endpoints, lists them redacted, sends a test message", async () => {
    const hook = slack.addWebhook("C0CLI");
    slack.addBot(BOT, ["C0BOT"]);
    const slackId = succeeded(
      await run(["add", hook, "--kind", "slack", "--owner", "@acme/payments", "--owner", "alice"]),
    ).stdout.trim();
    expect(slackId).toMatch(/^we_[^\s]+$/);
    const botId = succeeded(
      await run(["add-slack-bot", "--bot-token", BOT, "--channel", "C0BOT"]),
    ).stdout.trim();
    // The token may come from the environment instead of the command line.
    const envBot = succeeded(
      await run(["add", "--kind", "slack_bot", "--channel", "C0BOT"], {
        MAINLINE_SLACK_BOT_TOKEN: BOT,
      }),
    ).stdout.trim();
    expect(envBot).toMatch(/^we_/);
    succeeded(await run(["add", teams.addWorkflow(), "--kind", "teams"]));

    const listed = succeeded(await run(["list"])).stdout;
    const row = (id: string) => listed.split("\n").find((line) => line.startsWith(id)) ?? "";
    expect(row(slackId)).toMatch(/ slack +http:\/\/127\.0\.0\.1:\d+\/… +test_case\.status_changed/);
    expect(row(slackId)).toContain("@acme/payments @alice");
    expect(row(botId)).toMatch(/ slack_bot +C0BOT /);
    expect(listed).toMatch(/ teams +http:\/\/127\.0\.0\.1:\d+\/… /);
    expect(listed).not.toContain(new URL(hook).pathname);
    expect(listed).not.toContain(BOT);

    succeeded(await run(["test", botId]));
    succeeded(await run(["test", slackId]));
    await waitFor(() => slack.posts.length === 2, "the two test messages");
    expect(slack.posts.map((p) => [p.via, p.channel])).toEqual([
      ["api", "C0BOT"],
      ["webhook", "C0CLI"],
    ]);
    expect(slack.posts[0]?.text).toMatch(/^Mainline is connected/);
    expect(chat.server.stdout).toContain("webhooks/createEndpoint");
    expect(chat.server.stdout).not.toContain(BOT);
    expect(chat.server.stdout).not.toContain(new URL(hook).pathname);

    expect(
      failed(await run(["add-slack-bot", "--bot-token", "nope", "--channel", "C0BOT"])),
    ).toMatch(/xoxb-/);
    expect(failed(await run(["add", hook, "--kind", "discord"]))).toMatch(/discord/);
  });
});
