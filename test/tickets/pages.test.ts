/**
 * Tickets in the dashboard through `app.inject`, on both databases: the test page's "Create
 * ticket" button and what it shows after (the key and state), a provider's refusal shown on the
 * page in its words (never the token), another organization's session refused; the connections'
 * page: add (a refused form keeps what was typed but the token), list, delete.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectLandmarks,
  expectPageHeaders,
  inject,
  signIn,
  type SignedIn,
} from "../helpers/dashboard.js";
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
} from "./support.js";

let server: TestServer;
let jira: FakeJira;
let repo: Repo;
let acme: SignedIn;

beforeAll(async () => {
  server = await startTicketServer();
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
  repo = await repository(server, "paged-app");
  await useConnection(server, repo, await jiraConnection(server, jira, { name: "Jira ENG" }));
  acme = await signIn(server.app, server.token);
}, 60_000);

afterAll(async () => {
  await server.close();
  await jira.close();
});

const testPath = (testId: string, suffix = "") =>
  `/acme/flaky-tests/test/${testId}${suffix}?repo=${repo.ref.owner}/${repo.ref.name}`;
const page = (path: string, who: SignedIn = acme) =>
  inject(server.app, { path, cookie: who.cookie });
const post = (path: string, form: Record<string, string>, who: SignedIn = acme) =>
  inject(server.app, {
    method: "POST",
    path,
    cookie: who.cookie,
    form: { csrf: who.csrf, ...form },
  });

describe("the test page's ticket", () => {
  it("creates the ticket from the button, then shows its key and state instead", async () => {
    const testId = await addTest(server, repo);
    const before = await page(testPath(testId));
    expect(before.status).toBe(200);
    expect(before.body).toContain("Create ticket in Jira ENG");
    const pressed = await post(testPath(testId, "/create-ticket"), {});
    expect(pressed.status).toBe(303);
    expect(pressed.headers.location).toBe(`${testPath(testId)}&note=ticket-created`);
    const after = await page(String(pressed.headers.location));
    expectPageHeaders(after);
    expectLandmarks(after.body);
    const key = jira.issues.at(-1)?.key ?? "";
    expect(after.body).toContain("Created the ticket and linked it to this test.");
    expect(after.body).toContain(`>${key}</a> · <span class="ticket-state">To Do</span>`);
    expect(after.body).not.toContain("Create ticket in Jira ENG");
    expect(after.body).toContain(`Linked ticket ${key} (created in Jira)`);
  });

  it("shows Jira's refusal on the page, without the token; a second press is refused with the open ticket", async () => {
    const testId = await addTest(server, repo);
    jira.fault({ kind: 401 }, "create");
    const refused = await post(testPath(testId, "/create-ticket"), {});
    expect(refused.status).toBe(502);
    expect(refused.body).toMatch(
      /role="alert">No ticket created: Jira answered 401 to the create: the API token .*was refused/,
    );
    expect(refused.body).not.toContain(JIRA_TOKEN);
    // The connection's last error is shown beside the button too.
    expect((await page(testPath(testId))).body).toContain(
      "Its last call failed: Jira answered 401",
    );

    expect((await post(testPath(testId, "/create-ticket"), {})).status).toBe(303);
    const again = await post(testPath(testId, "/create-ticket"), {});
    expect(again.status).toBe(409);
    expect(again.body).toContain("No ticket created: The test already has a ticket");
  });

  it("refuses another organization's session with the 404 page, creating nothing", async () => {
    const testId = await addTest(server, repo);
    const { token } = await server.services.organizations.createOrganizationWithToken("globex");
    const globex = await signIn(server.app, token);
    const count = jira.issues.length;
    const answer = await inject(server.app, {
      method: "POST",
      path: `/globex/flaky-tests/test/${testId}/create-ticket?repo=${repo.ref.owner}/${repo.ref.name}`,
      cookie: globex.cookie,
      form: { csrf: globex.csrf },
    });
    expect(answer.status).toBe(404);
    expect(jira.issues.length).toBe(count);
  });
});

describe("the ticket connections' page", () => {
  it("adds a Jira connection, keeps a refused form but its token, lists and deletes", async () => {
    const empty = await page("/acme/tickets");
    expect(empty.status).toBe(200);
    expectLandmarks(empty.body);
    expect(empty.body).toContain("Jira ENG");
    expect(empty.body).not.toContain(JIRA_TOKEN);

    const refused = await post("/acme/tickets", {
      kind: "jira_cloud",
      name: "<b>Ops</b>",
      baseUrl: jira.url,
      target: "OPS",
      credential: "ATATT-typed-token-must-not-come-back",
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain("Not added: email is required for Jira Cloud");
    expect(refused.body).toContain('value="&lt;b&gt;Ops&lt;/b&gt;"');
    expect(refused.body).not.toContain("typed-token-must-not-come-back");

    const added = await post("/acme/tickets", {
      kind: "jira_dc",
      name: "Ops DC",
      baseUrl: jira.url,
      target: "OPS",
      credential: "dc-personal-access-token-value",
      labels: "flaky-test, ops",
    });
    expect(added.status).toBe(303);
    expect(added.headers.location).toBe("/acme/tickets?note=added");
    const listed = await server.call<{
      connections: { id: string; name: string; labels: string[] }[];
    }>("tickets/listConnections", {});
    const ops = listed.body.connections.find((c) => c.name === "Ops DC");
    expect(ops?.labels).toEqual(["flaky-test", "ops"]);
    const shown = await page("/acme/tickets");
    expect(shown.body).toContain("Ops DC");
    expect(shown.body).not.toContain("dc-personal-access-token-value");

    const deleted = await post(`/acme/tickets/${ops?.id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect((await page("/acme/tickets")).body).not.toContain("Ops DC");
  });
});
