/**
 * What the tickets' tests share: a server whose ticket connections may point at the fake Jira
 * (loopback allowed), a repository with CODEOWNERS, flaky tests in it, and calls of the API.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { insertTestCase } from "../helpers/test-cases.js";
import { startTestServer, type ApiResponse, type TestServer } from "../helpers/server.js";
import type { FakeJira } from "../helpers/fake-jira.js";

export const JIRA_TOKEN = "ATATT3xFfGF0-jira-api-token-0123456789abcdef";
export const JIRA_EMAIL = "bot@acme.example";
export const JIRA_PAT = "NjM0NTY3ODkwMTIzOpersonal-access-token-xyz";
export const HOUR = 3_600_000;

/** The servers' clock runs this far ahead of the wall clock (`advance` moves it on). */
let skewMs = 0;

/** Moves the servers' clock on: a connection's pause (a backoff, a Retry-After) ends sooner. */
export function advance(ms: number): void {
  skewMs += ms;
}

export function startTicketServer(
  tickets: {
    pollMs?: number;
    refreshMs?: number;
    timeoutMs?: number;
    linearApiUrl?: string;
    githubApiUrl?: string;
  } = {},
): Promise<TestServer> {
  return startTestServer({
    startWorker: false,
    clock: { now: () => Date.now() + skewMs },
    webhooks: { allowPrivate: true },
    tickets: { pollMs: 60_000, refreshMs: 60_000, timeoutMs: 1000, ...tickets },
  });
}

export interface Repo {
  ref: { host: string; owner: string; name: string };
  id: string;
}

/** A repository of `acme` whose CODEOWNERS gives `spec/` to @acme/payments. */
export async function repository(server: TestServer, name: string): Promise<Repo> {
  const ref = { host: "github.com", owner: "acme", name };
  const { stores } = server.services;
  const repo = await stores.repositories.ensure(server.organizationId, ref, Date.now());
  await stores.testSettings.putCodeowners(repo.id, "/spec/ @acme/payments\n", Date.now());
  return { ref, id: repo.id };
}

/** A test of the repository with this status since `hoursAgo`; its id. */
export async function addTest(
  server: TestServer,
  repo: Repo,
  options: { status?: string; hoursAgo?: number; file?: string | null; ticket?: string } = {},
): Promise<string> {
  const id = randomUUID();
  const at = Date.now() - (options.hoursAgo ?? 48) * HOUR;
  await insertTestCase(server.database.handle.db, repo.id, id, at, {
    name: `keeps the cart ${id.slice(0, 8)}`,
    classname: "CartSpec",
    file: options.file === undefined ? "spec/cart_spec.rb" : options.file,
    status: options.status ?? "flaky",
    statusReason: "failure rate 30% over 7 days",
    ...(options.ticket === undefined ? {} : { ticket: options.ticket, ticketLinkedAt: at }),
  });
  return id;
}

export async function jiraConnection(
  server: TestServer,
  jira: FakeJira,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const body =
    jira.flavour === "cloud"
      ? {
          kind: "jira_cloud",
          baseUrl: jira.url,
          target: "ENG",
          email: JIRA_EMAIL,
          credential: JIRA_TOKEN,
        }
      : { kind: "jira_dc", baseUrl: jira.url, target: "ENG", credential: JIRA_PAT };
  const created = await server.call<{ connection: { id: string } }>("tickets/createConnection", {
    ...body,
    ...extra,
  });
  expect(created.status, created.text).toBe(200);
  return created.body.connection.id;
}

export async function useConnection(
  server: TestServer,
  repo: Repo,
  connectionId: string | null,
  rule?: Record<string, unknown>,
): Promise<void> {
  const updated = await server.call("flaky-tests/update-test-settings", {
    org_url_slug: "acme",
    repo: repo.ref,
    ticket_connection_id: connectionId,
    ...(rule ? { auto_ticket: rule } : {}),
  });
  expect(updated.status, updated.text).toBe(200);
}

export interface CreateAnswer {
  test_id: string;
  ticket: { html_url: string; key: string | null; state: { name: string; open: boolean } | null };
  created: boolean;
  error?: { code: string; message: string };
}

export function createTicket(
  server: TestServer,
  repo: Repo,
  testId: string,
  token?: string,
): Promise<ApiResponse<CreateAnswer>> {
  return server.call<CreateAnswer>(
    "flaky-tests/create-ticket-for-test-case",
    { org_url_slug: "acme", repo: repo.ref, test_id: testId },
    token === undefined ? {} : { token },
  );
}

export interface Details {
  test: {
    ticket?: {
      html_url: string;
      key?: string;
      state?: { name: string; open: boolean; checked_at: string } | null;
    };
  };
  status_history: { kind: string; reason: string; actor: string | null }[];
}

export async function details(server: TestServer, repo: Repo, testId: string): Promise<Details> {
  const answer = await server.call<Details>("flaky-tests/get-test-details", {
    org_url_slug: "acme",
    repo: repo.ref,
    test_id: testId,
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}
