import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LinearTicketClient } from "../../src/notifications/tickets/linear.js";
import { renderTicketMarkdown } from "../../src/notifications/tickets/markdown.js";
import type { TicketConnection } from "../../src/notifications/tickets/types.js";
import { FakeLinear, type LinearProject, type LinearTeam } from "../helpers/fake-linear.js";
import {
  deadAddress,
  ErrorMessages,
  NASTY_TEXT,
  startRedirector,
  ticketConnection,
  ticketDraft as draft,
  valueOf as value,
} from "../helpers/ticket-clients.js";

/**
 * The Linear ticket client against the fake Linear (real HTTP; every request validated against
 * Linear's published GraphQL schema before it is answered).
 */

let linear: FakeLinear;
let key: string;
let team: LinearTeam;
let otherTeam: LinearTeam;
let project: LinearProject;
let redirector: { url: string; close: () => Promise<void> };
const client = new LinearTicketClient();
const errors = new ErrorMessages();
const failure = errors.failure.bind(errors);
const credentials: string[] = [];

function connection(overrides: Partial<TicketConnection> = {}): TicketConnection {
  return ticketConnection(
    { kind: "linear", baseUrl: linear.url, target: team.id, credential: key },
    overrides,
  );
}

async function post(body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(linear.url, {
    method: "POST",
    headers: { authorization: key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

beforeAll(async () => {
  linear = await FakeLinear.start({ seed: 5 });
  key = linear.createApiKey();
  credentials.push(key);
  team = linear.createTeam("ENG", "Engineering");
  otherTeam = linear.createTeam("OPS", "Operations");
  project = linear.createProject("Flaky tests", [team]);
  redirector = await startRedirector(308, "https://api.linear.app/graphql");
});

afterAll(async () => {
  await linear.close();
  await redirector.close();
  // Every request the client sent was valid against Linear's schema.
  expect(linear.rejected).toEqual([]);
  expect(errors.leaking(credentials)).toEqual([]);
});

describe("Linear ticket client", () => {
  it("creates an issue in the team with the Markdown description, by variables, with the bare key", async () => {
    const ticket = draft();
    const created = value(await client.create(connection(), ticket));
    const issue = linear.issue(created.externalId);
    expect(created).toEqual({
      key: issue.identifier,
      url: `https://linear.app/acme/issue/${issue.identifier}/${issue.title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
      externalId: issue.id,
    });
    expect(issue.identifier).toMatch(/^ENG-\d+$/);
    expect(issue.team.id).toBe(team.id);
    expect(issue.project).toBeNull();
    expect(issue.title).toBe(ticket.title);
    expect(issue.description).toBe(
      renderTicketMarkdown(ticket.blocks, ticket.marker, { visibleMarker: true }),
    );
    const request = linear.requests.at(-1);
    expect(request?.authorization).toBe(key);
    expect(request?.operationName).toBeNull();
    expect(request?.query).toContain("mutation MainlineTicketCreate($input: IssueCreateInput!)");
    expect(request?.query).not.toContain(ticket.title);
    expect(request?.variables).toEqual({
      input: { teamId: team.id, title: ticket.title, description: issue.description },
    });
  });

  it("puts the issue in the connection's project, and says when the project does not exist", async () => {
    const created = value(await client.create(connection({ issueType: project.id }), draft()));
    expect(linear.issue(created.key).project?.id).toBe(project.id);
    const missing = failure(
      await client.create(
        connection({ issueType: "2f1c0a9e-0000-4000-a000-000000000000" }),
        draft(),
      ),
    );
    expect(missing).toMatchObject({ kind: "not_found", status: 200 });
    expect(missing.message).toContain("Entity not found: Project");
  });

  it("sends an OAuth token as Bearer", async () => {
    const token = linear.createOAuthToken();
    credentials.push(token);
    value(await client.create(connection({ credential: token }), draft()));
    expect(linear.requests.at(-1)?.authorization).toBe(`Bearer ${token}`);
  });

  it("keeps titles and descriptions byte for byte, whatever quotes, backslashes or markup they hold", async () => {
    const nasty = NASTY_TEXT;
    const ticket = draft({
      title: nasty,
      blocks: [
        { kind: "paragraph", spans: [{ text: nasty }] },
        { kind: "code", text: nasty },
      ],
    });
    const issue = linear.issue(value(await client.create(connection(), ticket)).externalId);
    expect(issue.title).toBe(nasty);
    expect(issue.description).toBe(
      renderTicketMarkdown(ticket.blocks, ticket.marker, { visibleMarker: true }),
    );
    expect(issue.description).toContain(`\`\`\`\n${nasty}\n\`\`\``);
  });

  it("finds the one issue a create whose answer was a 502 made", async () => {
    const ticket = draft();
    const before = linear.issues.length;
    linear.failNext({ kind: "done-then-error", status: 502 });
    const error = failure(await client.create(connection(), ticket));
    expect(error).toMatchObject({ kind: "unknown_outcome", status: 502 });
    expect(error.message).toContain("may have been created");
    expect(linear.issues).toHaveLength(before + 1);
    const made = linear.issues.at(-1);

    const found = value(await client.find(connection(), ticket.marker));
    expect(found).toEqual({
      key: made?.identifier,
      url: `https://linear.app/acme/issue/${String(made?.identifier)}/${ticket.title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`,
      externalId: made?.id,
    });
    expect(linear.issues).toHaveLength(before + 1);
  });

  it("finds nothing for a marker that only starts another, nor in another team", async () => {
    value(await client.create(connection(), draft({ marker: "m:conn_1-long" })));
    expect(value(await client.find(connection(), "m:conn_1"))).toBeNull();
    value(await client.create(connection({ target: otherTeam.id }), draft({ marker: "ops-only" })));
    expect(value(await client.find(connection(), "ops-only"))).toBeNull();
    expect(
      value(await client.find(connection({ target: otherTeam.id }), "ops-only")),
    ).not.toBeNull();
  });

  it("reads the state: open until Linear completes or cancels the issue", async () => {
    const created = value(await client.create(connection(), draft()));
    const ref = { key: created.key, externalId: created.externalId };
    expect(value(await client.state(connection(), ref))).toEqual({ open: true, name: "Todo" });
    linear.moveIssue(created.key, "started");
    expect(value(await client.state(connection(), ref))).toEqual({
      open: true,
      name: "In Progress",
    });
    linear.completeIssue(created.key);
    expect(value(await client.state(connection(), ref))).toEqual({ open: false, name: "Done" });
    linear.moveIssue(created.key, "canceled");
    expect(value(await client.state(connection(), ref))).toEqual({ open: false, name: "Canceled" });
  });
});

describe("Linear's failures as ticket errors", () => {
  it("a wrong key: auth, whether Linear answers it with 401, 400 or 200", async () => {
    const wrong = "lin_api_0000000000000000000000000000000000000000";
    credentials.push(wrong);
    const error = failure(await client.create(connection({ credential: wrong }), draft()));
    expect(error).toMatchObject({ kind: "auth", status: 401, retryAfterMs: null });
    expect(error.message).toContain("Authentication required, not authenticated");
    expect(error.message).toContain("You need to authenticate to access this operation.");
    for (const status of [400, 200]) {
      linear.failNext({ kind: "auth", status });
      expect(
        failure(await client.state(connection(), { key: "ENG-1", externalId: "x" })),
      ).toMatchObject({
        kind: "auth",
        status,
      });
    }
  });

  it("a key that may not create issues: auth (FORBIDDEN)", async () => {
    const reader = linear.createApiKey({ readOnly: true });
    credentials.push(reader);
    const error = failure(await client.create(connection({ credential: reader }), draft()));
    expect(error).toMatchObject({ kind: "auth", status: 200 });
    expect(error.message).toContain("This API key may not create issues.");
    linear.failNext({ kind: "forbidden" });
    expect(failure(await client.find(connection(), "x"))).toMatchObject({ kind: "auth" });
  });

  it("RATELIMITED: rate_limited until the requests budget's reset, or after Retry-After", async () => {
    linear.failNext({ kind: "ratelimited", status: 429, resetInMs: 90_000 });
    const error = failure(await client.create(connection(), draft()));
    expect(error).toMatchObject({ kind: "rate_limited", status: 429 });
    expect(error.retryAfterMs).toBeGreaterThan(80_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(90_000);
    linear.failNext({ kind: "ratelimited", status: 400, retryAfterSec: 9 });
    expect(failure(await client.find(connection(), "x"))).toMatchObject({
      kind: "rate_limited",
      status: 400,
      retryAfterMs: 9_000,
    });
  });

  it("a team or an issue that does not exist: not_found", async () => {
    const error = failure(
      await client.create(connection({ target: "7d0a1c2b-0000-4000-a000-000000000000" }), draft()),
    );
    expect(error).toMatchObject({ kind: "not_found", status: 200 });
    expect(error.message).toContain("Entity not found: Team");
    const state = failure(
      await client.state(connection(), { key: "ENG-999", externalId: "ENG-999" }),
    );
    expect(state).toMatchObject({ kind: "not_found" });
    expect(state.message).toContain("Could not find referenced Issue.");
  });

  it("a 5xx: an unknown outcome on a create, unavailable on a read", async () => {
    const before = linear.issues.length;
    linear.failNext({ kind: "server", status: 500 });
    expect(failure(await client.create(connection(), draft()))).toMatchObject({
      kind: "unknown_outcome",
      status: 500,
    });
    expect(linear.issues).toHaveLength(before);
    linear.failNext({ kind: "server", status: 503 });
    expect(failure(await client.find(connection(), "x"))).toMatchObject({
      kind: "unavailable",
      status: 503,
    });
  });

  it("no answer in time on a create: an unknown outcome", async () => {
    linear.failNext({ kind: "delay", ms: 1_500 });
    const error = failure(await client.create(connection({ timeoutMs: 300 }), draft()));
    expect(error).toMatchObject({ kind: "unknown_outcome", status: null });
    expect(error.message).toContain("no answer within 300 ms");
  });

  it("a redirect is not followed; a private address is refused unless allowed", async () => {
    const redirect = failure(
      await client.create(connection({ baseUrl: `${redirector.url}/graphql` }), draft()),
    );
    expect(redirect).toMatchObject({ kind: "invalid", status: 308 });
    expect(redirect.message).toContain("does not follow");
    const count = linear.requests.length;
    const refused = failure(await client.create(connection({ allowPrivate: false }), draft()));
    expect(refused).toMatchObject({ kind: "unavailable", status: null });
    expect(refused.message).toContain("loopback, private or link-local");
    expect(linear.requests).toHaveLength(count);
  });

  it("nothing listening: unavailable", async () => {
    const baseUrl = `${await deadAddress()}/graphql`;
    const error = failure(await client.find(connection({ baseUrl }), "x"));
    expect(error).toMatchObject({ kind: "unavailable", status: null });
  });
});

describe("the fake Linear's schema guard", () => {
  it("refuses a query Linear's schema refuses, and variables it cannot coerce", async () => {
    const unknownField = await post({ query: "query { issues { nodes { id nonsense } } }" });
    expect(unknownField).toMatchObject({
      status: 400,
      json: {
        errors: [
          {
            message: 'Cannot query field "nonsense" on type "Issue".',
            extensions: { code: "GRAPHQL_VALIDATION_FAILED" },
          },
        ],
      },
    });
    const badVariable = await post({
      query: "mutation ($input: IssueCreateInput!) { issueCreate(input: $input) { success } }",
      variables: { input: { teamId: team.id, title: 3, nonsense: true } },
    });
    expect(badVariable.status).toBe(400);
    expect(JSON.stringify(badVariable.json)).toContain("BAD_USER_INPUT");
    const broken = await post({ query: "mutation { issueCreate(input: { teamId: " });
    expect(JSON.stringify(broken.json)).toContain("GRAPHQL_PARSE_FAILED");
    const unimplemented = await post({ query: "query { viewer { id } }" });
    expect(unimplemented.status).toBe(400);
    expect(linear.rejected).toHaveLength(4);
    // Deliberate: the guard caught them; the client's own requests are checked in afterAll.
    linear.rejected.splice(0, linear.rejected.length);
  });
});
