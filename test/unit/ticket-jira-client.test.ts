/**
 * The Jira clients against the fake Jira (a real HTTP server checking every request and answer
 * against Atlassian's published descriptions): create, find by marker, read the state, and every
 * failure mapped to a `TicketError` with a readable message and no credential in it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { newMarker } from "../../src/notifications/tickets/draft.js";
import { jiraCloudClient, jiraDataCenterClient } from "../../src/notifications/tickets/jira.js";
import type {
  TicketClient,
  TicketConnection,
  TicketDraft,
} from "../../src/notifications/tickets/types.js";
import { startFakeJira, type FakeJira, type JiraFlavour } from "../helpers/fake-jira.js";

const TOKEN = "ATATT3xFfGF0-secret-token-value-1234567890";
const EMAIL = "bot@acme.example";

function draft(marker = newMarker("tc_1", "t-1")): TicketDraft {
  return {
    testId: "t-1",
    marker,
    title: 'Flaky test: Cart "quotes" \\ and {braces}',
    blocks: [
      { kind: "heading", text: "Impact" },
      { kind: "paragraph", spans: [{ text: "rate " }, { text: "30%", strong: true }] },
      { kind: "list", items: [[{ text: "x", code: true, href: "https://e.x/" }]] },
      { kind: "code", text: "trace" },
    ],
    labels: ["flaky-test"],
    owners: ["@acme/payments"],
  };
}

for (const flavour of ["cloud", "dc"] as const satisfies JiraFlavour[]) {
  describe(`Jira ${flavour === "cloud" ? "Cloud (v3, ADF)" : "Data Center (v2, wiki markup)"}`, () => {
    const client: TicketClient = flavour === "cloud" ? jiraCloudClient : jiraDataCenterClient;
    let jira: FakeJira;
    let connection: TicketConnection;

    beforeAll(async () => {
      jira = await startFakeJira({ flavour, email: EMAIL, token: TOKEN });
      connection = {
        id: "tc_1",
        kind: flavour === "cloud" ? "jira_cloud" : "jira_dc",
        baseUrl: jira.url,
        target: "ENG",
        issueType: null,
        email: flavour === "cloud" ? EMAIL : null,
        credential: TOKEN,
        timeoutMs: 1000,
        allowPrivate: true,
      };
    });

    afterAll(async () => {
      await jira.close();
    });

    afterEach(() => {
      expect(jira.violations).toEqual([]);
    });

    it("creates an issue, finds it by its marker, and reads its state until Done", async () => {
      const sent = draft();
      const created = await client.create(connection, sent);
      expect(created).toEqual({
        ok: true,
        value: {
          key: "ENG-1",
          url: `${jira.url}/browse/ENG-1`,
          externalId: expect.any(String) as string,
        },
      });
      const issue = jira.issues[0];
      expect(issue?.summary).toBe(sent.title);
      expect(issue?.issueType).toBe("Bug");
      expect(issue?.labels).toEqual([
        "flaky-test",
        expect.stringMatching(/^mainline-[0-9a-f]{12}$/),
      ]);
      if (flavour === "cloud")
        expect(issue?.description).toMatchObject({ type: "doc", version: 1 });
      else expect(issue?.description).toContain("h3. Impact");
      expect(await client.find(connection, sent.marker)).toEqual(created);
      expect(await client.find(connection, newMarker("tc_1", "t-1"))).toEqual({
        ok: true,
        value: null,
      });
      const ticket = created.ok ? created.value : { key: "", externalId: "" };
      expect(await client.state(connection, ticket)).toEqual({
        ok: true,
        value: { name: "To Do", open: true },
      });
      jira.setStatus("ENG-1", "Done");
      expect(await client.state(connection, ticket)).toEqual({
        ok: true,
        value: { name: "Done", open: false },
      });
    });

    it("maps refusals to error kinds with Jira's own words and no credential", async () => {
      const cases = [
        {
          fault: { kind: 401 as const },
          kind: "auth",
          words: /Jira answered 401 to the create: the .*refused/,
        },
        { fault: { kind: 403 as const }, kind: "auth", words: /403.*You do not have permission/ },
        { fault: { kind: 404 as const }, kind: "not_found", words: /404.*not found/ },
        {
          fault: { kind: 429 as const, retryAfterSeconds: 7 },
          kind: "rate_limited",
          words: /429.*retry after 7 s/,
        },
        {
          fault: { kind: 503 as const },
          kind: "unknown_outcome",
          words: /503.*may have been created/,
        },
      ];
      for (const { fault, kind, words } of cases) {
        jira.fault(fault, "create");
        const result = await client.create(connection, draft());
        expect(result.ok).toBe(false);
        if (result.ok) continue;
        expect(result.error.kind).toBe(kind);
        expect(result.error.message).toMatch(words);
        expect(result.error.message).not.toContain(TOKEN);
        if (kind === "rate_limited") expect(result.error.retryAfterMs).toBe(7000);
      }
      jira.fault({ kind: 503 }, "get");
      const read = await client.state(connection, {
        key: "ENG-1",
        externalId: jira.issues[0]?.id ?? "",
      });
      expect(read).toMatchObject({ ok: false, error: { kind: "unavailable", status: 503 } });
    });

    it("refuses an unknown project with Jira's message, a wrong token as auth", async () => {
      const bad = await client.create({ ...connection, target: "NOPE" }, draft());
      expect(bad).toMatchObject({ ok: false, error: { kind: "invalid", status: 400 } });
      expect(bad.ok ? "" : bad.error.message).toContain("project: valid project is required");
      const wrong = await client.create(
        { ...connection, credential: "wrong-token-value" },
        draft(),
      );
      expect(wrong).toMatchObject({ ok: false, error: { kind: "auth", status: 401 } });
      expect(wrong.ok ? "" : wrong.error.message).not.toContain("wrong-token-value");
    });

    it("after 'created, then 502' the create's outcome is unknown and find finds the one issue", async () => {
      const before = jira.issues.length;
      const sent = draft();
      jira.fault({ kind: "created-then-502" }, "create");
      const result = await client.create(connection, sent);
      expect(result).toMatchObject({ ok: false, error: { kind: "unknown_outcome", status: 502 } });
      expect(jira.issues.length).toBe(before + 1);
      const found = await client.find(connection, sent.marker);
      expect(found).toMatchObject({ ok: true, value: { key: jira.issues.at(-1)?.key } });
    });

    it("a create that gets no answer in time is an unknown outcome; a read is unavailable", async () => {
      jira.fault({ kind: "hang", created: true }, "create");
      const result = await client.create({ ...connection, timeoutMs: 200 }, draft());
      expect(result).toMatchObject({ ok: false, error: { kind: "unknown_outcome", status: null } });
      expect(result.ok ? "" : result.error.message).toContain("no answer within 200 ms");
      jira.fault({ kind: "hang", created: false }, "search");
      const found = await client.find({ ...connection, timeoutMs: 200 }, "m");
      expect(found).toMatchObject({ ok: false, error: { kind: "unavailable" } });
    });
  });
}

describe("the Jira clients' network rules", () => {
  const base: TicketConnection = {
    id: "tc_1",
    kind: "jira_dc",
    baseUrl: "",
    target: "ENG",
    issueType: null,
    email: null,
    credential: TOKEN,
    timeoutMs: 1000,
    allowPrivate: false,
  };

  it("refuses loopback and private addresses unless allowed, before connecting", async () => {
    let reached = 0;
    const server = http.createServer((_req, res) => {
      reached += 1;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const baseUrl of [url, "http://localhost:9", "http://10.1.2.3"]) {
        const result = await jiraDataCenterClient.create({ ...base, baseUrl }, draft());
        expect(result).toMatchObject({ ok: false, error: { kind: "unavailable", status: null } });
        expect(result.ok ? "" : result.error.message).toContain("MAINLINE_WEBHOOKS_ALLOW_PRIVATE");
      }
      expect(reached).toBe(0);
    } finally {
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    }
  });

  it("follows no redirect, and a refused connection is unavailable, not an unknown outcome", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(302, { location: "https://elsewhere.example/rest/api/2/issue" });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const redirected = await jiraDataCenterClient.create(
        { ...base, baseUrl: `http://127.0.0.1:${port}`, allowPrivate: true },
        draft(),
      );
      expect(redirected).toMatchObject({ ok: false, error: { kind: "unavailable", status: 302 } });
      expect(redirected.ok ? "" : redirected.error.message).toContain("does not follow");
    } finally {
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    }
    const refused = await jiraDataCenterClient.create(
      { ...base, baseUrl: `http://127.0.0.1:${port}`, allowPrivate: true },
      draft(),
    );
    expect(refused).toMatchObject({ ok: false, error: { kind: "unavailable", status: null } });
    expect(refused.ok ? "" : refused.error.message).toContain("ECONNREFUSED");
  });
});

describe("the fake Jira's guard", () => {
  it("records requests that Atlassian's description refuses, and refuses non-ADF descriptions", async () => {
    const jira = await startFakeJira({ flavour: "cloud", email: EMAIL, token: TOKEN });
    const headers = {
      authorization: `Basic ${Buffer.from(`${EMAIL}:${TOKEN}`).toString("base64")}`,
      "content-type": "application/json",
    };
    try {
      await fetch(`${jira.url}/rest/api/3/search/jql?jql=x&maxResults=many&bogus=1`, { headers });
      const string = await fetch(`${jira.url}/rest/api/3/issue`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          fields: {
            project: { key: "ENG" },
            issuetype: { name: "Bug" },
            summary: "s",
            description: "a plain string",
          },
        }),
      });
      expect(string.status).toBe(400);
      expect(await string.json()).toEqual({
        errorMessages: [],
        errors: { description: "Operation value must be an Atlassian Document" },
      });
      await fetch(`${jira.url}/rest/api/3/issue`, {
        method: "POST",
        headers,
        body: JSON.stringify({ fields: "not an object", update: [] }),
      });
      expect(jira.violations).toEqual([
        expect.stringContaining("query parameter maxResults"),
        expect.stringContaining("query parameter bogus is not in the description"),
        expect.stringContaining("create body"),
      ]);
    } finally {
      await jira.close();
    }
  });
});
