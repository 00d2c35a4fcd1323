/**
 * Merge-queue events in chat, end to end on both databases: a queue on the local git host with
 * the built-in CI; a pull request that breaks the tests is posted to Slack (an incoming webhook
 * limited to some code owners: queue events are not owner-scoped) and Teams as "#N failed in the
 * main queue" with why, and a link to it; the one that merges is not posted (chat destinations
 * take failures and cancellations by default).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeSlack, type FakeSlack } from "../helpers/fake-slack.js";
import { startFakeTeams, type FakeTeams } from "../helpers/fake-teams.js";
import {
  createRepositoryAndQueue,
  ok,
  oneMergedOneFailed,
  type Call,
} from "../helpers/local-queue.js";
import { waitFor } from "../helpers/process.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let slack: FakeSlack;
let teams: FakeTeams;
let call: Call;

beforeAll(async () => {
  slack = await startFakeSlack();
  teams = await startFakeTeams();
  server = await startTestServer({
    startWorker: false,
    publicUrl: "https://mainline.example",
    engine: { pollMs: 100 },
    webhooks: { allowPrivate: true, schedule: [0, 100, 100], timeoutMs: 2000, pollMs: 50 },
  });
  server.services.webhooks.dispatcher.start();
  call = (operation, body) => server.call(operation, body);
});

afterAll(async () => {
  await server.close();
  await slack.close();
  await teams.close();
});

describe("merge-queue events in chat", () => {
  it("posts a failed pull request with why and a link, and not the merged one", async () => {
    const project = await createRepositoryAndQueue(call, {
      testingTimeoutMinutes: 0,
      concurrency: 1,
      batch: false,
    });
    await ok(call, "webhooks/createEndpoint", {
      kind: "slack",
      url: slack.addWebhook("C0QUEUE"),
      codeOwners: ["@acme/payments"],
    });
    await ok(call, "webhooks/createEndpoint", { kind: "teams", url: teams.addWorkflow() });
    const { good, bad } = await oneMergedOneFailed(call, project);
    await waitFor(() => slack.posts.length >= 1 && teams.posts.length >= 1, "the failure posted");
    await server.services.webhooks.dispatcher.drain();

    expect(slack.posts).toHaveLength(1);
    expect(teams.posts).toHaveLength(1);
    const [post] = slack.posts;
    expect(post?.text).toMatch(
      new RegExp(`^#${String(bad)} failed in the main queue: A required check failed\\.`),
    );
    expect(post?.shown).toContain(`#${String(bad)} failed in the main queue`);
    expect(post?.shown).toContain("A required check failed.");
    expect(post?.shown).toContain("*Repository*\nacme/shop");
    expect(post?.shown).toContain("*Author*\ndev");
    const buttons = JSON.stringify(post?.blocks.at(-1));
    expect(buttons).toContain("Open pull request");
    expect(buttons).toContain(
      `"url":"https://mainline.example/acme/merge-queue/pr/${String(bad)}?repo=acme/shop&host=local&branch=main"`,
    );
    expect(slack.misrendered).toEqual([]);
    expect(teams.posts[0]?.shown).toContain(`#${String(bad)} failed in the main queue`);
    expect(teams.posts[0]?.shown).toContain("Repository: acme/shop");
    const all = [...slack.posts.map((p) => p.shown), ...teams.posts.map((p) => p.shown)];
    expect(all.some((text) => text.includes(`#${String(good)}`))).toBe(false);
  }, 90_000);
});
