/**
 * A GitHub Issues ticket connection without a token: the issue is opened in the test's own
 * repository with the GitHub App's installation token (the App asks for Issues: write), against
 * the fake GitHub whose guard checks every request against GitHub's OpenAPI description. A
 * repository the App is not installed on gets a clear refusal and no issue.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";
import { addTest, createTicket, details, repository, useConnection } from "../tickets/support.js";

let world: GitHubWorld;
let server: TestServer;

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme");
  await gh.createRepository({ owner: "acme", name: "shop" });
  await gh.createRepository({ owner: "acme", name: "elsewhere" });
  server = await startGitHubServer(world, {
    webhooks: { allowPrivate: true },
    tickets: { pollMs: 60_000, refreshMs: 60_000, timeoutMs: 2000, githubApiUrl: gh.url },
  });
  const installationId = gh.installApp(world.app.id, {
    account: "acme",
    repositories: ["shop"],
  }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

describe("GitHub Issues through the GitHub App", () => {
  it("opens the issue in the test's repository with the installation's token, once", async () => {
    const created = await server.call<{ connection: { id: string } }>("tickets/createConnection", {
      kind: "github",
      name: "Issues",
    });
    expect(created.status, created.text).toBe(200);
    const shop = await repository(server, "shop");
    await useConnection(server, shop, created.body.connection.id);
    const testId = await addTest(server, shop);
    const answer = await createTicket(server, shop, testId);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.ticket).toMatchObject({
      key: "#1",
      html_url: expect.stringMatching(/\/acme\/shop\/issues\/1$/) as string,
      state: { open: true },
    });
    expect((await details(server, shop, testId)).test.ticket?.key).toBe("#1");
    expect((await createTicket(server, shop, testId)).status).toBe(409);

    // Not installed on this one: no token to ask GitHub with; refused in words, nothing sent.
    const elsewhere = await repository(server, "elsewhere");
    await useConnection(server, elsewhere, created.body.connection.id);
    const refused = await createTicket(server, elsewhere, await addTest(server, elsewhere));
    expect(refused.status).toBe(502);
    expect(refused.body.error?.code).toBe("ticket_provider_error");
    expect(refused.body.error?.message).toMatch(
      /no credential, and no GitHub App installation of this organization grants acme\/elsewhere/,
    );
  });
});
