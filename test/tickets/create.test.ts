/**
 * Creating a test's ticket through the API, on both databases, against the fake Jira (Cloud and
 * Data Center): the ticket and its content, no duplicate while it is open, a new one once it is
 * closed, exactly one ticket after "created, then 502" or a 503, and each refusal of Jira
 * answered clearly (never a 500) and recorded on the connection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../helpers/server.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import {
  addTest,
  createTicket,
  details,
  JIRA_EMAIL,
  JIRA_PAT,
  JIRA_TOKEN,
  jiraConnection,
  repository,
  startTicketServer,
  useConnection,
  type Repo,
} from "./support.js";

let server: TestServer;
let cloud: FakeJira;
let dc: FakeJira;
let cloudRepo: Repo;
let dcRepo: Repo;
let cloudConnection: string;

beforeAll(async () => {
  server = await startTicketServer();
  cloud = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
  dc = await startFakeJira({ flavour: "dc", token: JIRA_PAT });
  cloudRepo = await repository(server, "cloud-app");
  dcRepo = await repository(server, "dc-app");
  cloudConnection = await jiraConnection(server, cloud, { name: "Jira ENG" });
  await useConnection(server, cloudRepo, cloudConnection);
  await useConnection(server, dcRepo, await jiraConnection(server, dc));
});

afterAll(async () => {
  await server.close();
  await cloud.close();
  await dc.close();
});

afterEach(() => {
  expect(cloud.violations).toEqual([]);
  expect(dc.violations).toEqual([]);
});

describe("creating a test's ticket", () => {
  it("creates it in Jira Cloud with the test's facts, links it, and says so in the history", async () => {
    const testId = await addTest(server, cloudRepo);
    const answer = await createTicket(server, cloudRepo, testId);
    expect(answer.status, answer.text).toBe(200);
    const issue = cloud.issues.at(-1);
    expect(answer.body).toEqual({
      test_id: testId,
      ticket: {
        html_url: `${cloud.url}/browse/${issue?.key}`,
        key: issue?.key,
        state: { name: "To Do", open: true },
      },
      created: true,
    });
    expect(issue?.summary).toMatch(/^Flaky test: CartSpec keeps the cart /);
    expect(issue?.labels).toEqual(["flaky-test", expect.stringMatching(/^mainline-/)]);
    const description = JSON.stringify(issue?.description);
    for (const fact of [
      "flaky",
      "failure rate 30% over 7 days",
      "@acme/payments",
      "Open the test in Mainline",
      `flaky-tests/test/${testId}`,
    ]) {
      expect(description).toContain(fact);
    }
    const shown = await details(server, cloudRepo, testId);
    expect(shown.test.ticket).toMatchObject({
      html_url: answer.body.ticket.html_url,
      key: issue?.key,
      state: { name: "To Do", open: true },
    });
    expect(shown.status_history[0]).toMatchObject({
      kind: "ticket",
      reason: `Linked ticket ${issue?.key} (created in Jira)`,
      actor: expect.stringMatching(/^token:/) as string,
    });
  });

  it("creates it in Jira Data Center, in wiki markup", async () => {
    const testId = await addTest(server, dcRepo, { status: "broken" });
    const answer = await createTicket(server, dcRepo, testId);
    expect(answer.status, answer.text).toBe(200);
    const issue = dc.issues.at(-1);
    expect(answer.body.ticket).toEqual({
      html_url: `${dc.url}/browse/${issue?.key}`,
      key: issue?.key,
      state: { name: "To Do", open: true },
    });
    expect(issue?.summary).toMatch(/^Broken test: /);
    expect(issue?.description).toEqual(expect.stringContaining("h3. Impact"));
    expect(issue?.description).toEqual(expect.stringContaining("{{@acme/payments}}"));
  });

  it("answers 409 with the open ticket, and makes a new one once it is closed", async () => {
    const testId = await addTest(server, cloudRepo);
    const first = await createTicket(server, cloudRepo, testId);
    expect(first.status, first.text).toBe(200);
    const count = cloud.issues.length;
    const again = await createTicket(server, cloudRepo, testId);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      error: {
        code: "conflict",
        message: expect.stringContaining(first.body.ticket.html_url) as string,
      },
      ticket: first.body.ticket,
    });
    expect(cloud.issues.length).toBe(count);

    cloud.setStatus(first.body.ticket.key ?? "", "Done");
    const replaced = await createTicket(server, cloudRepo, testId);
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.ticket.key).not.toBe(first.body.ticket.key);
    expect(cloud.issues.length).toBe(count + 1);
    const shown = await details(server, cloudRepo, testId);
    expect(shown.test.ticket?.key).toBe(replaced.body.ticket.key);
    expect(shown.status_history[0]?.reason).toBe(
      `Linked ticket ${replaced.body.ticket.key} (created in Jira, replacing ${first.body.ticket.html_url})`,
    );
  });

  it("keeps a ticket linked by hand: its state cannot be told (409)", async () => {
    const testId = await addTest(server, cloudRepo, { ticket: "https://tracker.example/T-1" });
    const answer = await createTicket(server, cloudRepo, testId);
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({
      ticket: { html_url: "https://tracker.example/T-1", key: null, state: null },
    });
  });

  it("after 'created, then 502', a retry links the one ticket instead of making another", async () => {
    const testId = await addTest(server, cloudRepo);
    const before = cloud.issues.length;
    cloud.fault({ kind: "created-then-502" }, "create");
    const lost = await createTicket(server, cloudRepo, testId);
    expect(lost.status).toBe(502);
    expect(lost.body.error).toEqual({
      code: "ticket_provider_error",
      message: expect.stringMatching(
        /^Jira answered 502 to the create.*may have been created.*\(ticket connection "Jira ENG"\)$/,
      ) as string,
    });
    expect(cloud.issues.length).toBe(before + 1);
    const retried = await createTicket(server, cloudRepo, testId);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body).toMatchObject({
      created: false,
      ticket: { key: cloud.issues.at(-1)?.key },
    });
    expect(cloud.issues.length).toBe(before + 1);
  });

  it("after a 503 on the create, a retry looks first, then creates exactly one", async () => {
    const testId = await addTest(server, cloudRepo);
    const before = cloud.issues.length;
    cloud.fault({ kind: 503 }, "create");
    const failed = await createTicket(server, cloudRepo, testId);
    expect(failed.status).toBe(502);
    expect(failed.body.error?.message).toContain("Jira answered 503");
    const searches = cloud.requests.filter((r) => r.call === "search").length;
    const retried = await createTicket(server, cloudRepo, testId);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.body.created).toBe(true);
    expect(cloud.requests.filter((r) => r.call === "search").length).toBe(searches + 1);
    expect(cloud.issues.length).toBe(before + 1);
  });

  it("answers Jira's refusals clearly, creates nothing, and records them on the connection", async () => {
    const testId = await addTest(server, cloudRepo);
    const before = cloud.issues.length;
    const cases = [
      {
        fault: { kind: 401 as const },
        status: 502,
        words:
          "Jira answered 401 to the create: the API token (with the account's e-mail address) was refused",
      },
      {
        fault: { kind: 404 as const },
        status: 502,
        words: "Jira answered 404 to the create: not found",
      },
      {
        fault: { kind: 429 as const, retryAfterSeconds: 7 },
        status: 503,
        words: "Jira answered 429 to the create: rate limited; retry after 7 s",
      },
    ];
    for (const { fault, status, words } of cases) {
      cloud.fault(fault, "create");
      const answer = await createTicket(server, cloudRepo, testId);
      expect(answer.status, answer.text).toBe(status);
      expect(answer.body.error?.message).toContain(words);
      expect(answer.text).not.toContain(JIRA_TOKEN);
      if (status === 503) expect(answer.headers.get("retry-after")).toBe("7");
      const listed = await server.call<{ connections: { id: string; lastError: string | null }[] }>(
        "tickets/listConnections",
        {},
      );
      expect(listed.body.connections.find((c) => c.id === cloudConnection)?.lastError).toContain(
        words,
      );
    }
    expect(cloud.issues.length).toBe(before);
    const shown = await details(server, cloudRepo, testId);
    expect(shown.test.ticket).toBeUndefined();
  });

  it("refuses a repository without a connection, and a settings' connection the organization has not", async () => {
    const bare = await repository(server, "no-connection");
    const testId = await addTest(server, bare);
    const answer = await createTicket(server, bare, testId);
    expect(answer.status).toBe(400);
    expect(answer.body.error?.message).toContain("has no ticket connection");
    const unknown = await server.call("flaky-tests/update-test-settings", {
      org_url_slug: "acme",
      repo: bare.ref,
      ticket_connection_id: "tc_unknown",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain("names no ticket connection of this organization");
    const notFound = await createTicket(server, bare, "00000000-0000-4000-8000-000000000000");
    expect(notFound.status).toBe(404);
  });
});
