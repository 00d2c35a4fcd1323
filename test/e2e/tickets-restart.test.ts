/**
 * A ticket's create across a crash, with real `mainline serve` processes on both databases: Jira
 * makes the issue but never answers, the server is killed with SIGKILL while the create's intent
 * is held, then started again on the same database. The new process looks for the intent's
 * marker and links the one issue; none is made twice. Neither process's log ever holds the Jira
 * token, a refused call's included.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { post } from "../cli/support.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { startFakeJira, type FakeJira } from "../helpers/fake-jira.js";
import {
  startServer,
  stopAllProcesses,
  waitFor,
  withBootstrapToken,
  type RunningServer,
} from "../helpers/process.js";
import { insertTestCase } from "../helpers/test-cases.js";
import { RepositoryStore } from "../../src/db/stores/repositories.js";

const JIRA_TOKEN = "ATATT3xFfGF0-restart-token-fedcba9876543210";
const JIRA_EMAIL = "bot@acme.example";
const REPO = { host: "github.com", owner: "acme", name: "app" };

let database: TestDatabase;
let jira: FakeJira;
beforeEach(async () => {
  database = await createTestDatabase();
  jira = await startFakeJira({ flavour: "cloud", email: JIRA_EMAIL, token: JIRA_TOKEN });
});
afterEach(async () => {
  await stopAllProcesses();
  await jira.close();
  await database.cleanup();
});
afterAll(stopAllProcesses);

describe("a ticket's create across a crash", () => {
  it("is finished by the next process from its intent: the one issue linked, none made twice", async () => {
    const { env: base, token } = withBootstrapToken(database.env);
    const env = {
      ...base,
      LOG_LEVEL: "info",
      MAINLINE_WEBHOOKS_ALLOW_PRIVATE: "1",
      MAINLINE_TICKETS_TIMEOUT_MS: "1000",
      MAINLINE_TICKETS_POLL_MS: "200",
    };
    const first: RunningServer = await startServer(env);
    const { db } = database.handle;
    const organization = await db
      .selectFrom("organizations")
      .select("id")
      .where("slug", "=", "acme")
      .executeTakeFirstOrThrow();
    const repository = await new RepositoryStore(db).ensure(organization.id, REPO, Date.now());
    const testId = randomUUID();
    await insertTestCase(db, repository.id, testId, Date.now() - 48 * 3_600_000, {
      status: "flaky",
      name: "keeps the cart",
    });

    const call = (url: string, operation: string, body: unknown) =>
      post(url, operation, body, token);
    const connection = await call(first.url, "tickets/createConnection", {
      kind: "jira_cloud",
      baseUrl: jira.url,
      target: "ENG",
      email: JIRA_EMAIL,
      credential: JIRA_TOKEN,
    });
    expect(connection.status).toBe(200);
    const connectionId = (connection.body as { connection: { id: string } }).connection.id;
    const settings = await call(first.url, "flaky-tests/update-test-settings", {
      org_url_slug: "acme",
      repo: REPO,
      ticket_connection_id: connectionId,
    });
    expect(settings.status).toBe(200);
    const create = { org_url_slug: "acme", repo: REPO, test_id: testId };

    // Jira makes the issue and never answers; the server dies holding the create's intent.
    jira.fault({ kind: "hang", created: true }, "create");
    void call(first.url, "flaky-tests/create-ticket-for-test-case", create).catch(() => undefined);
    await waitFor(() => jira.issues.length === 1, "Jira to make the issue", { intervalMs: 10 });
    expect(await first.stop("SIGKILL")).toMatchObject({ signal: "SIGKILL" });
    const intents = await db.selectFrom("ticketIntents").selectAll().execute();
    expect(intents.map((i) => i.testKey)).toHaveLength(1);

    const second = await startServer(env);
    const linked = async () => {
      const answer = await call(second.url, "flaky-tests/get-test-details", {
        org_url_slug: "acme",
        repo: REPO,
        test_id: testId,
      });
      return (answer.body as { test: { ticket?: { key?: string } } }).test.ticket?.key;
    };
    await waitFor(async () => (await linked()) === "ENG-1", "the new process to link ENG-1", {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    expect(jira.issues.map((i) => i.key)).toEqual(["ENG-1"]);
    expect(jira.requests.some((r) => r.call === "search")).toBe(true);
    expect(await db.selectFrom("ticketIntents").selectAll().execute()).toEqual([]);
    // A create now answers 409 with it: still one issue.
    const again = await call(second.url, "flaky-tests/create-ticket-for-test-case", create);
    expect(again.status).toBe(409);
    expect(jira.issues).toHaveLength(1);
    // A refused call is logged (a 502): with Jira's words, never the token.
    const otherId = randomUUID();
    await insertTestCase(db, repository.id, otherId, Date.now(), { status: "flaky" });
    jira.fault({ kind: 401 }, "create");
    const refused = await call(second.url, "flaky-tests/create-ticket-for-test-case", {
      ...create,
      test_id: otherId,
    });
    expect(refused.status).toBe(502);
    expect(jira.violations).toEqual([]);
    await second.stop();

    const logs = first.stdout + first.stderr + second.stdout + second.stderr;
    expect(logs).toContain("Jira answered 401");
    expect(logs).not.toContain(JIRA_TOKEN);
    expect(logs).not.toContain(Buffer.from(`${JIRA_EMAIL}:${JIRA_TOKEN}`).toString("base64"));
  }, 90_000);
});
