/**
 * The tickets' loop on both databases, a pass at a time (`runNow`), against the fake Jira: the
 * automatic rule creates one ticket per test flaky long enough with an owner, and none for the
 * others; a rate limit pauses the connection; linked tickets' states are read back into the API;
 * creates whose outcome was unknown are finished, never repeated.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../helpers/server.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import {
  addTest,
  advance,
  createTicket,
  details,
  JIRA_EMAIL,
  JIRA_TOKEN,
  jiraConnection,
  repository,
  startTicketServer,
  useConnection,
} from "./support.js";

let server: TestServer;
let jira: FakeJira;

beforeAll(async () => {
  // A pass reads back the state of linked tickets read more than a second ago.
  server = await startTicketServer({ refreshMs: 1000 });
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
});

afterAll(async () => {
  await server.close();
  await jira.close();
});

afterEach(() => {
  expect(jira.violations).toEqual([]);
});

const pass = () => server.services.tickets.loop.runNow();

describe("the automatic rule", () => {
  it("creates one ticket for a test flaky long enough with an owner, none for the others", async () => {
    const repo = await repository(server, "ruled-app");
    const connection = await jiraConnection(server, jira, { name: "Jira rules" });
    await useConnection(server, repo, connection, { flaky: true, after_hours: 24 });
    const owned = await addTest(server, repo, { hoursAgo: 48 });
    const ownerless = await addTest(server, repo, { hoursAgo: 48, file: "lib/cart.rb" });
    const fileless = await addTest(server, repo, { hoursAgo: 48, file: null });
    const healthy = await addTest(server, repo, { status: "healthy", hoursAgo: 48 });
    const recent = await addTest(server, repo, { hoursAgo: 2 });
    const broken = await addTest(server, repo, { status: "broken", hoursAgo: 48 });
    const linked = await addTest(server, repo, {
      hoursAgo: 48,
      ticket: "https://tracker.example/T-7",
    });
    const before = jira.issues.length;

    await pass();
    expect(jira.issues.length).toBe(before + 1);
    const shown = await details(server, repo, owned);
    expect(shown.test.ticket?.key).toBe(jira.issues.at(-1)?.key);
    expect(shown.status_history[0]).toMatchObject({
      kind: "ticket",
      actor: "mainline:auto-ticket",
      reason: expect.stringContaining("(created in Jira)") as string,
    });
    for (const id of [ownerless, fileless, healthy, recent, broken]) {
      expect((await details(server, repo, id)).test.ticket, id).toBeUndefined();
    }
    expect((await details(server, repo, linked)).test.ticket?.html_url).toBe(
      "https://tracker.example/T-7",
    );

    // Never twice: the owned test has its ticket now.
    await pass();
    expect(jira.issues.length).toBe(before + 1);

    // Without the owner requirement, and with broken tests, the others get theirs.
    await useConnection(server, repo, connection, { broken: true, require_owner: false });
    await pass();
    expect(jira.issues.length).toBe(before + 4);
    for (const id of [ownerless, fileless, broken]) {
      expect((await details(server, repo, id)).test.ticket?.key).toMatch(/^ENG-/);
    }
    for (const id of [healthy, recent]) {
      expect((await details(server, repo, id)).test.ticket).toBeUndefined();
    }
  });

  it("leaves a rate-limited connection alone until its Retry-After, and shows why", async () => {
    const repo = await repository(server, "limited-app");
    const connection = await jiraConnection(server, jira, { name: "Jira limited" });
    await useConnection(server, repo, connection, { flaky: true });
    const testId = await addTest(server, repo);
    jira.fault({ kind: 429, retryAfterSeconds: 3600 }, "create");
    const before = jira.requests.length;
    await pass();
    const creates = () => jira.requests.slice(before).filter((r) => r.call === "create").length;
    expect(creates()).toBe(1);
    const listed = await server.call<{
      connections: { id: string; lastError: string | null; pausedUntil: string | null }[];
    }>("tickets/listConnections", {});
    const shown = listed.body.connections.find((c) => c.id === connection);
    expect(shown?.lastError).toContain(
      "Jira answered 429 to the create: rate limited; retry after 3600 s",
    );
    expect(Date.parse(shown?.pausedUntil ?? "") - Date.now()).toBeGreaterThan(3_500_000);
    await pass();
    expect(creates()).toBe(1);
    expect((await details(server, repo, testId)).test.ticket).toBeUndefined();
  });
});

describe("state read back", () => {
  it("reads each linked ticket's state into the API until it is closed; then a new one may be made", async () => {
    const repo = await repository(server, "states-app");
    await useConnection(server, repo, await jiraConnection(server, jira, { name: "Jira states" }));
    const testId = await addTest(server, repo);
    const created = await createTicket(server, repo, testId);
    expect(created.status, created.text).toBe(200);
    const key = created.body.ticket.key ?? "";
    expect((await details(server, repo, testId)).test.ticket?.state).toMatchObject({
      name: "To Do",
      open: true,
    });

    jira.setStatus(key, "In Progress");
    advance(2000);
    await pass();
    const progressing = (await details(server, repo, testId)).test.ticket;
    expect(progressing).toMatchObject({ key, state: { name: "In Progress", open: true } });
    expect(Date.parse(progressing?.state?.checked_at ?? "")).toBeGreaterThan(
      Date.parse(created.headers.get("date") ?? "") - 60_000,
    );

    jira.setStatus(key, "Done");
    advance(2000);
    await pass();
    expect((await details(server, repo, testId)).test.ticket?.state).toMatchObject({
      name: "Done",
      open: false,
    });
    const next = await createTicket(server, repo, testId);
    expect(next.status, next.text).toBe(200);
    expect(next.body.ticket.key).not.toBe(key);
  });
});

describe("creates left unfinished", () => {
  it("links the ticket a create made before its answer was lost, without making another", async () => {
    const repo = await repository(server, "lost-app");
    await useConnection(server, repo, await jiraConnection(server, jira, { name: "Jira lost" }));
    const testId = await addTest(server, repo);
    const before = jira.issues.length;
    jira.fault({ kind: "created-then-502" }, "create");
    expect((await createTicket(server, repo, testId)).status).toBe(502);
    // The failure paused the connection for the loop (a minute after a first failure).
    advance(2 * 60_000);
    await pass();
    expect(jira.issues.length).toBe(before + 1);
    const shown = await details(server, repo, testId);
    expect(shown.test.ticket?.key).toBe(jira.issues.at(-1)?.key);
    expect(shown.status_history[0]?.actor).toMatch(/^token:/);
  });

  it("creates the ticket of a create that timed out without making it, once", async () => {
    const repo = await repository(server, "timeout-app");
    await useConnection(server, repo, await jiraConnection(server, jira, { name: "Jira slow" }));
    const testId = await addTest(server, repo);
    const before = jira.issues.length;
    jira.fault({ kind: "hang", created: false }, "create");
    const lost = await createTicket(server, repo, testId);
    expect(lost.status).toBe(502);
    expect(lost.body.error?.message).toContain("no answer within 1000 ms");
    expect(jira.issues.length).toBe(before);
    advance(2 * 60_000);
    await pass();
    await pass();
    expect(jira.issues.length).toBe(before + 1);
    expect((await details(server, repo, testId)).test.ticket?.key).toBe(jira.issues.at(-1)?.key);
  });

  it("drops an unfinished create when someone linked a ticket by hand meanwhile", async () => {
    const repo = await repository(server, "relinked-app");
    await useConnection(
      server,
      repo,
      await jiraConnection(server, jira, { name: "Jira relinked" }),
    );
    const testId = await addTest(server, repo);
    jira.fault({ kind: "hang", created: false }, "create");
    expect((await createTicket(server, repo, testId)).status).toBe(502);
    const linked = await server.call("flaky-tests/link-ticket-to-test-case", {
      org_url_slug: "acme",
      repo: repo.ref,
      test_case_id: testId,
      external_ticket_id: "https://tracker.example/T-9",
    });
    expect(linked.status, linked.text).toBe(200);
    const before = jira.issues.length;
    advance(2 * 60_000);
    await pass();
    expect(jira.issues.length).toBe(before);
    expect((await details(server, repo, testId)).test.ticket?.html_url).toBe(
      "https://tracker.example/T-9",
    );
    const intents = await server.database.handle.db
      .selectFrom("ticketIntents")
      .selectAll()
      .execute();
    expect(intents).toEqual([]);
  });
});

describe("tickets the provider no longer finds", () => {
  it("count as closed, without pausing the connection: a new one may be made", async () => {
    const repo = await repository(server, "deleted-issue-app");
    const connection = await jiraConnection(server, jira, { name: "Jira deleted" });
    await useConnection(server, repo, connection);
    const testId = await addTest(server, repo);
    const created = await createTicket(server, repo, testId);
    expect(created.status, created.text).toBe(200);
    jira.remove(created.body.ticket.key ?? "");
    advance(2000);
    await pass();
    expect((await details(server, repo, testId)).test.ticket?.state).toMatchObject({
      name: "Not found",
      open: false,
    });
    const listed = await server.call<{ connections: { id: string; pausedUntil: string | null }[] }>(
      "tickets/listConnections",
      {},
    );
    expect(listed.body.connections.find((c) => c.id === connection)?.pausedUntil).toBeNull();
    const next = await createTicket(server, repo, testId);
    expect(next.status, next.text).toBe(200);
    expect(next.body.ticket.key).not.toBe(created.body.ticket.key);
  });
});

describe("the rule among many tests it skips", () => {
  it("still reaches a test with an owner behind more ownerless ones than a page holds", async () => {
    const repo = await repository(server, "crowded-app");
    await useConnection(
      server,
      repo,
      await jiraConnection(server, jira, { name: "Jira crowded" }),
      {
        flaky: true,
      },
    );
    for (let i = 0; i < 60; i++) {
      await addTest(server, repo, { hoursAgo: 100, file: `lib/unowned_${i}.rb` });
    }
    const owned = await addTest(server, repo, { hoursAgo: 30 });
    const before = jira.issues.length;
    await pass();
    expect(jira.issues.length).toBe(before + 1);
    expect((await details(server, repo, owned)).test.ticket?.key).toBe(jira.issues.at(-1)?.key);
  });
});
