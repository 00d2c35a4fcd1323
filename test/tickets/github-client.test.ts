import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitHubTicketClient, GITHUB_BODY_MAX } from "../../src/notifications/tickets/github.js";
import { renderTicketMarkdown } from "../../src/notifications/tickets/markdown.js";
import type { TicketConnection } from "../../src/notifications/tickets/types.js";
import { FakeGitHub } from "../helpers/fake-github/index.js";
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
 * The GitHub Issues ticket client against the fake GitHub (real HTTP; every request checked
 * against GitHub's description of the operation, every answer against its schema).
 */

let gh: FakeGitHub;
let token: string;
let readerToken: string;
let redirector: { url: string; close: () => Promise<void> };
const client = new GitHubTicketClient();
const NAME = "acme/tracker";
const errors = new ErrorMessages();
const failure = errors.failure.bind(errors);

function connection(overrides: Partial<TicketConnection> = {}): TicketConnection {
  return ticketConnection(
    { kind: "github", baseUrl: gh.url, target: NAME, credential: token },
    overrides,
  );
}

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 31 });
  gh.createOrganization("acme");
  for (const login of ["alice", "bob", "outsider"]) gh.createUser(login);
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "tracker" });
  await gh.createRepository({ owner: "acme", name: "quiet", settings: { hasIssues: false } });
  gh.setCollaborator(NAME, "bob", "write");
  const app = gh.createApp({ slug: "mainline" });
  token = gh.installationToken(gh.installApp(app.id, { account: "acme" }).id);
  const reader = gh.createApp({
    slug: "reader",
    permissions: { issues: "read", metadata: "read" },
  });
  readerToken = gh.installationToken(gh.installApp(reader.id, { account: "acme" }).id);
  redirector = await startRedirector(301, "https://elsewhere.example/api?token=secret");
});

afterAll(async () => {
  await gh.close();
  await redirector.close();
  gh.schema.assertValid();
  expect(errors.leaking([token, readerToken, "secret"])).toEqual([]);
});

describe("GitHub Issues ticket client", () => {
  it("creates an issue with the Markdown body, labels and the plain users among the owners", async () => {
    const ticket = draft({
      owners: ["@bob", "@acme/payments", "dev@example.com", "@Bob", "alice"],
    });
    const created = value(await client.create(connection(), ticket));
    const number = Number(created.externalId);
    expect(created).toEqual({
      key: `#${String(number)}`,
      url: `${gh.url}/html/acme/tracker/issues/${String(number)}`,
      externalId: String(number),
    });
    const issue = gh.issue(NAME, number);
    expect(issue.title).toBe(ticket.title);
    expect(issue.body).toBe(
      renderTicketMarkdown(ticket.blocks, ticket.marker, { maxLength: GITHUB_BODY_MAX }),
    );
    expect(issue.body).toMatch(/\n\n<!-- mainline:ticket t\d+:conn_1 -->$/);
    expect(issue.labels.map((l) => l.name)).toEqual(["flaky-test"]);
    expect(issue.assignees.map((a) => a.login)).toEqual(["bob"]);
  });

  it("sends titles and bodies byte for byte, whatever quotes, backslashes or markup they hold", async () => {
    const nasty = NASTY_TEXT;
    const ticket = draft({
      title: nasty,
      blocks: [
        { kind: "paragraph", spans: [{ text: nasty }] },
        { kind: "code", text: nasty },
      ],
    });
    const created = value(await client.create(connection(), ticket));
    const issue = gh.issue(NAME, Number(created.externalId));
    expect(issue.title).toBe(nasty);
    expect(issue.body).toBe(
      renderTicketMarkdown(ticket.blocks, ticket.marker, { maxLength: GITHUB_BODY_MAX }),
    );
    expect(issue.body).toContain(`\`\`\`\n${nasty}\n\`\`\``);
  });

  it("creates the issue without assignees when GitHub refuses one of them", async () => {
    const mark = gh.requests.mark();
    const created = value(await client.create(connection(), draft({ owners: ["@outsider"] })));
    expect(gh.issue(NAME, Number(created.externalId)).assignees).toEqual([]);
    expect(gh.requests.count({ operationId: "issues/create", since: mark })).toBe(2);
  });

  it("finds the one issue a create whose answer was a 502 made, and not a pull request", async () => {
    const ticket = draft();
    gh.addFault(gh.fault.succeedsButErrors("issues/create", 502));
    const before = gh.issuesOf(NAME).length;

    const error = failure(await client.create(connection(), ticket));
    expect(error).toMatchObject({ kind: "unknown_outcome", status: 502 });
    expect(error.message).toContain("may have been created");
    expect(gh.issuesOf(NAME)).toHaveLength(before + 1);
    const made = gh.issuesOf(NAME).at(-1);

    // A newer pull request whose body carries the same marker: the issue list holds it too.
    await gh.commit(NAME, { branch: "pr", from: "main", files: { "p.txt": "p\n" }, by: "bob" });
    const pr = await gh.openPullRequest(NAME, { head: "pr", by: "bob", title: "Quotes a ticket" });
    await gh.editPullRequest(NAME, pr, { body: made?.body ?? "" });
    expect(pr).toBeGreaterThan(made?.number ?? Infinity);

    const found = value(await client.find(connection(), ticket.marker));
    expect(found).toEqual({
      key: `#${String(made?.number)}`,
      url: `${gh.url}/html/acme/tracker/issues/${String(made?.number)}`,
      externalId: String(made?.number),
    });
  });

  it("finds nothing for a marker no issue holds, nor for one that only starts another", async () => {
    value(await client.create(connection(), draft({ marker: "prefix:conn_1-long" })));
    expect(value(await client.find(connection(), "prefix:conn_1"))).toBeNull();
    expect(value(await client.find(connection(), "never-written"))).toBeNull();
  });

  it("reads the state: open, then closed once closed on GitHub", async () => {
    const created = value(await client.create(connection(), draft()));
    const ref = { key: created.key, externalId: created.externalId };
    expect(value(await client.state(connection(), ref))).toEqual({ open: true, name: "open" });
    gh.closeIssue(NAME, Number(created.externalId), { by: "alice" });
    expect(value(await client.state(connection(), ref))).toEqual({ open: false, name: "closed" });
    gh.reopenIssue(NAME, Number(created.externalId));
    gh.closeIssue(NAME, Number(created.externalId), { reason: "not_planned" });
    expect(value(await client.state(connection(), ref))).toEqual({
      open: false,
      name: "closed (not planned)",
    });
  });
});

describe("GitHub's failures as ticket errors", () => {
  it("a wrong token: auth, 401", async () => {
    const wrong = "ghs_0123456789abcdefghijklmnopqrstuvwxyzAB";
    const error = failure(await client.create(connection({ credential: wrong }), draft()));
    expect(error).toMatchObject({ kind: "auth", status: 401, retryAfterMs: null });
    expect(error.message).toContain("Bad credentials");
    expect(error.message).not.toContain(wrong);
  });

  it("a token that may not write issues: auth, 403", async () => {
    const error = failure(await client.create(connection({ credential: readerToken }), draft()));
    expect(error).toMatchObject({ kind: "auth", status: 403 });
    expect(error.message).toContain("Resource not accessible by integration");
  });

  it("a secondary rate limit: rate_limited after Retry-After", async () => {
    gh.addFault(gh.fault.secondaryRateLimit("issues/create", 7));
    const error = failure(await client.create(connection(), draft()));
    expect(error).toMatchObject({ kind: "rate_limited", status: 403, retryAfterMs: 7_000 });
    expect(error.message).toContain("secondary rate limit");
    gh.addFault(gh.fault.tooManyRequests("issues/get", 3));
    const state = failure(await client.state(connection(), { key: "#1", externalId: "1" }));
    expect(state).toMatchObject({ kind: "rate_limited", status: 429, retryAfterMs: 3_000 });
  });

  it("a spent primary rate limit: rate_limited until x-ratelimit-reset", async () => {
    const own = gh.createUserToken("alice");
    gh.addFault(gh.fault.primaryRateLimit("issues/list-for-repo", 120));
    const error = failure(await client.find(connection({ credential: own }), "any"));
    expect(error).toMatchObject({ kind: "rate_limited", status: 403 });
    expect(error.retryAfterMs).toBeGreaterThan(100_000);
    expect(error.retryAfterMs).toBeLessThanOrEqual(121_000);
  });

  it("a repository that does not exist, or an issue: not_found", async () => {
    const error = failure(await client.create(connection({ target: "acme/gone" }), draft()));
    expect(error).toMatchObject({ kind: "not_found", status: 404 });
    const state = failure(await client.state(connection(), { key: "#999", externalId: "999" }));
    expect(state).toMatchObject({ kind: "not_found", status: 404 });
  });

  it("issues turned off: invalid, 410, said so", async () => {
    const error = failure(await client.create(connection({ target: "acme/quiet" }), draft()));
    expect(error).toMatchObject({ kind: "invalid", status: 410 });
    expect(error.message).toContain("issues are turned off");
  });

  it("content GitHub refuses: invalid, 422, with GitHub's errors", async () => {
    gh.addFault({
      operation: "issues/create",
      effect: {
        kind: "respond",
        response: {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [{ resource: "Label", code: "invalid", field: "name", value: "bad,label" }],
            documentation_url: "https://docs.github.com/rest",
            status: "422",
          },
        },
      },
    });
    const error = failure(await client.create(connection(), draft()));
    expect(error).toMatchObject({ kind: "invalid", status: 422 });
    expect(error.message).toBe('GitHub answered 422: Validation Failed; name "bad,label": invalid');
  });

  it("a 500 on a create is an unknown outcome; on a read, unavailable", async () => {
    gh.addFault(gh.fault.serverError("issues/create", 500));
    const create = failure(await client.create(connection(), draft()));
    expect(create).toMatchObject({ kind: "unknown_outcome", status: 500 });
    gh.addFault(gh.fault.serverError("issues/list-for-repo", 502));
    const find = failure(await client.find(connection(), "any"));
    expect(find).toMatchObject({ kind: "unavailable", status: 502 });
  });

  it("no answer in time on a create: unknown outcome", async () => {
    gh.addFault(gh.fault.delay("issues/create", 1_500));
    const error = failure(await client.create(connection({ timeoutMs: 300 }), draft()));
    expect(error).toMatchObject({ kind: "unknown_outcome", status: null });
    expect(error.message).toContain("no answer within 300 ms");
  });

  it("nothing listening: unavailable", async () => {
    const error = failure(
      await client.create(connection({ baseUrl: await deadAddress() }), draft()),
    );
    expect(error).toMatchObject({ kind: "unavailable", status: null });
    expect(error.message).toContain("ECONNREFUSED");
  });

  it("a redirect is not followed", async () => {
    const error = failure(await client.create(connection({ baseUrl: redirector.url }), draft()));
    expect(error).toMatchObject({ kind: "invalid", status: 301 });
    expect(error.message).toContain("does not follow");
    expect(error.message).toContain("https://elsewhere.example/api");
  });

  it("a private address is refused before anything is sent unless the connection allows it", async () => {
    const mark = gh.requests.mark();
    const error = failure(await client.create(connection({ allowPrivate: false }), draft()));
    expect(error).toMatchObject({ kind: "unavailable", status: null });
    expect(error.message).toContain("loopback, private or link-local");
    expect(gh.requests.count({ since: mark })).toBe(0);
  });

  it("a target that is not owner/name: invalid, nothing sent", async () => {
    const mark = gh.requests.mark();
    const error = failure(await client.create(connection({ target: "just-a-name" }), draft()));
    expect(error).toMatchObject({ kind: "invalid", status: null });
    expect(gh.requests.count({ since: mark })).toBe(0);
  });
});
