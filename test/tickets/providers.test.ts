/**
 * Creating a test's ticket through the API in Linear and in GitHub Issues, on both databases,
 * against their faithful fakes (Linear's published GraphQL schema checks every request; the fake
 * GitHub's guard checks them against GitHub's OpenAPI description): the ticket made once, linked,
 * its state read back, a second create answered 409, and a refused key answered clearly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub } from "../helpers/fake-github/index.js";
import { FakeLinear, type LinearTeam } from "../helpers/fake-linear.js";
import type { TestServer } from "../helpers/server.js";
import {
  addTest,
  createTicket,
  details,
  repository,
  startTicketServer,
  useConnection,
  type Repo,
} from "./support.js";

let server: TestServer;
let linear: FakeLinear;
let github: FakeGitHub;
let team: LinearTeam;
let linearKey: string;
let githubToken: string;

async function connection(body: Record<string, unknown>): Promise<string> {
  const created = await server.call<{ connection: { id: string } }>(
    "tickets/createConnection",
    body,
  );
  expect(created.status, created.text).toBe(200);
  return created.body.connection.id;
}

beforeAll(async () => {
  linear = await FakeLinear.start({ seed: 7 });
  linearKey = linear.createApiKey();
  team = linear.createTeam("ENG", "Engineering");
  github = await FakeGitHub.start({ seed: 17 });
  github.createOrganization("acme");
  await github.createRepository({ owner: "acme", name: "tracker" });
  const app = github.createApp({ slug: "mainline" });
  githubToken = github.installationToken(github.installApp(app.id, { account: "acme" }).id);
  server = await startTicketServer({ linearApiUrl: linear.url, githubApiUrl: github.url });
});

afterAll(async () => {
  await server.close();
  await linear.close();
  await github.close();
  github.schema.assertValid();
});

describe("tickets in Linear and GitHub Issues", () => {
  it("creates a Linear issue in the team once, links it, and reads its state", async () => {
    const repo: Repo = await repository(server, "linear-app");
    await useConnection(
      server,
      repo,
      await connection({
        kind: "linear",
        name: "Linear ENG",
        target: team.id,
        credential: linearKey,
      }),
    );
    const testId = await addTest(server, repo);
    const answer = await createTicket(server, repo, testId);
    expect(answer.status, answer.text).toBe(200);
    const issue = linear.issues.at(-1);
    expect(answer.body.ticket).toMatchObject({
      key: "ENG-1",
      html_url: expect.stringMatching(/^https:\/\/linear\.app\/acme\/issue\/ENG-1\//) as string,
    });
    expect(answer.body.ticket.state?.open).toBe(true);
    expect(issue?.title).toMatch(/^Flaky test: CartSpec keeps the cart /);
    expect(issue?.description).toContain("@acme/payments");
    expect(issue?.description).toContain(`flaky-tests/test/${testId}`);
    expect(linear.rejected).toEqual([]);

    const again = await createTicket(server, repo, testId);
    expect(again.status).toBe(409);
    expect(linear.issues).toHaveLength(1);
    expect((await details(server, repo, testId)).test.ticket?.key).toBe("ENG-1");
    // The key in the log of Linear's requests only: never in the answers.
    expect(JSON.stringify([answer.body, again.body])).not.toContain(linearKey);
  });

  it("opens a GitHub issue in the named repository, once", async () => {
    const repo = await repository(server, "github-app");
    await useConnection(
      server,
      repo,
      await connection({ kind: "github", target: "acme/tracker", credential: githubToken }),
    );
    const testId = await addTest(server, repo);
    const answer = await createTicket(server, repo, testId);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.ticket).toMatchObject({
      key: "#1",
      html_url: expect.stringMatching(/\/acme\/tracker\/issues\/1$/) as string,
      state: { open: true },
    });
    expect((await createTicket(server, repo, testId)).status).toBe(409);
  });

  it("answers a refused Linear key clearly, never a 500, and makes nothing", async () => {
    const repo = await repository(server, "linear-refused");
    await useConnection(
      server,
      repo,
      await connection({ kind: "linear", target: team.id, credential: "lin_api_wrong0123456789" }),
    );
    const before = linear.issues.length;
    const answer = await createTicket(server, repo, await addTest(server, repo));
    expect(answer.status).toBe(502);
    expect(answer.body.error?.code).toBe("ticket_provider_error");
    expect(answer.body.error?.message).toMatch(/Linear/);
    expect(answer.text).not.toContain("lin_api_wrong0123456789");
    expect(linear.issues).toHaveLength(before);
  });
});
