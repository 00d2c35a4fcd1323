/**
 * Ticket connections through the API, on both databases: what each kind needs (clear 400s), the
 * credential never shown, another organization's connection neither seen nor used, and what a
 * deleted connection leaves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../helpers/server.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import {
  addTest,
  createTicket,
  details,
  JIRA_EMAIL,
  JIRA_TOKEN,
  jiraConnection,
  repository,
  startTicketServer,
  useConnection,
} from "./support.js";

interface Listed {
  connections: { id: string; name: string; credentialSet: boolean; kind: string }[];
}

let server: TestServer;
let jira: FakeJira;
let otherToken: string;

beforeAll(async () => {
  server = await startTicketServer();
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
  otherToken = (await server.services.organizations.createOrganizationWithToken("other")).token;
});

afterAll(async () => {
  await server.close();
  await jira.close();
});

describe("ticket connections", () => {
  it("keeps the credential and never shows it back", async () => {
    const id = await jiraConnection(server, jira, {
      name: "Jira ENG",
      labels: ["flaky-test", "ci"],
    });
    const listed = await server.call<Listed>("tickets/listConnections", {});
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(JIRA_TOKEN);
    expect(listed.body.connections.find((c) => c.id === id)).toMatchObject({
      kind: "jira_cloud",
      name: "Jira ENG",
      baseUrl: jira.url,
      target: "ENG",
      email: JIRA_EMAIL,
      labels: ["flaky-test", "ci"],
      credentialSet: true,
      lastError: null,
    });
    const renamed = await server.call("tickets/updateConnection", {
      connectionId: id,
      name: "Jira (eng)",
      credential: "ATATT-a-new-token-0000000000",
      target: "eng",
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.text).not.toContain("a-new-token");
    expect(renamed.body).toMatchObject({
      connection: { name: "Jira (eng)", target: "ENG", credentialSet: true },
    });
    const kind = await server.call("tickets/updateConnection", {
      connectionId: id,
      kind: "jira_dc",
    });
    expect(kind.status).toBe(400);
  });

  it("says clearly what each kind needs", async () => {
    const refusals: [Record<string, unknown>, string][] = [
      [
        { kind: "jira_cloud", baseUrl: jira.url, target: "ENG", credential: "t" },
        "email is required for Jira Cloud",
      ],
      [
        { kind: "jira_cloud", baseUrl: jira.url, target: "ENG", email: JIRA_EMAIL },
        "credential is required",
      ],
      [
        { kind: "jira_cloud", target: "ENG", email: JIRA_EMAIL, credential: "t" },
        "baseUrl is required",
      ],
      [
        {
          kind: "jira_cloud",
          baseUrl: "ftp://jira.example",
          target: "ENG",
          email: JIRA_EMAIL,
          credential: "t",
        },
        "baseUrl must be an http(s) URL",
      ],
      [
        { kind: "jira_dc", baseUrl: jira.url, target: "9X", credential: "t" },
        "target must be the Jira project's key",
      ],
      [
        { kind: "jira_dc", baseUrl: jira.url, target: "ENG", credential: "t", email: JIRA_EMAIL },
        "email is for Jira Cloud only",
      ],
      [
        {
          kind: "jira_dc",
          baseUrl: jira.url,
          target: "ENG",
          credential: "t",
          labels: ["flaky test"],
        },
        "without spaces",
      ],
      [
        {
          kind: "linear",
          baseUrl: "https://api.linear.app/graphql",
          target: "team",
          credential: "k",
        },
        "baseUrl is not taken for Linear",
      ],
      [{ kind: "linear", credential: "k" }, "target must be the Linear team's id"],
      [{ kind: "github", target: "not a repo" }, "target must be owner/name"],
      [{ kind: "asana" }, "kind"],
    ];
    for (const [body, words] of refusals) {
      const answer = await server.call<{ error: { message: string } }>(
        "tickets/createConnection",
        body,
      );
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.message).toContain(words);
    }
    const github = await server.call("tickets/createConnection", { kind: "github" });
    expect(github.status, github.text).toBe(200);
    expect(github.body).toMatchObject({
      connection: { name: "GitHub", target: null, credentialSet: false },
    });
  });

  it("keeps another organization out: not listed, not changed, not named, not used", async () => {
    const id = await jiraConnection(server, jira, { name: "acme's" });
    const repo = await repository(server, "tenancy");
    await useConnection(server, repo, id);
    const testId = await addTest(server, repo);
    const theirs = await server.call<Listed>("tickets/listConnections", {}, { token: otherToken });
    expect(theirs.status).toBe(200);
    expect(theirs.body.connections.map((c) => c.id)).not.toContain(id);
    for (const [operation, body] of [
      ["tickets/updateConnection", { connectionId: id, name: "mine now" }],
      ["tickets/deleteConnection", { connectionId: id }],
    ] as const) {
      const answer = await server.call(operation, body, { token: otherToken });
      expect(answer.status, operation).toBe(404);
    }
    const create = await createTicket(server, repo, testId, otherToken);
    expect(create.status).toBe(403);
    await server.services.stores.repositories.ensure(
      (await server.services.organizations.authenticate(otherToken)).organizationId,
      { host: "github.com", owner: "other", name: "app" },
      Date.now(),
    );
    const named = await server.call(
      "flaky-tests/update-test-settings",
      {
        org_url_slug: "other",
        repo: { host: "github.com", owner: "other", name: "app" },
        ticket_connection_id: id,
      },
      { token: otherToken },
    );
    expect(named.status).toBe(400);
    expect(
      (await server.call<Listed>("tickets/listConnections", {})).body.connections.map((c) => c.id),
    ).toContain(id);
  });

  it("deleting a connection unsets it in repositories; its tickets stay linked", async () => {
    const id = await jiraConnection(server, jira, { name: "short-lived" });
    const repo = await repository(server, "deleted-connection");
    await useConnection(server, repo, id, { flaky: true });
    const testId = await addTest(server, repo);
    const created = await createTicket(server, repo, testId);
    expect(created.status, created.text).toBe(200);
    expect((await server.call("tickets/deleteConnection", { connectionId: id })).status).toBe(200);
    const settings = await server.call<{ ticket_connection_id: string | null }>(
      "flaky-tests/get-test-settings",
      { org_url_slug: "acme", repo: repo.ref },
    );
    expect(settings.body.ticket_connection_id).toBeNull();
    expect((await details(server, repo, testId)).test.ticket?.html_url).toBe(
      created.body.ticket.html_url,
    );
    const again = await createTicket(server, repo, await addTest(server, repo));
    expect(again.status).toBe(400);
  });
});
