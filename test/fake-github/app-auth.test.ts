import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/core";
import { RequestError } from "@octokit/request-error";
import { Webhooks } from "@octokit/webhooks";
import { createHmac, createSign } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";
import { WebhookReceiver } from "../helpers/fake-github/receiver.js";

let gh: FakeGitHub;
let receiver: WebhookReceiver;
let app: CreatedApp;
let installationId: number;

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 7 });
  receiver = await WebhookReceiver.start();
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.addOrgMember("acme", "alice", "admin");
  gh.addOrgMember("acme", "bob", "member");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  await gh.createRepository({ owner: "acme", name: "gadgets", private: true });
  await gh.createRepository({ owner: "acme", name: "secret", private: true });
  app = gh.createApp({ slug: "mainline", webhookUrls: [receiver.url] });
  installationId = gh.installApp(app.id, {
    account: "acme",
    repositories: ["widgets", "gadgets"],
  }).id;
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
  await receiver.close();
});

function appClient(): Octokit {
  return new Octokit({
    baseUrl: gh.url,
    authStrategy: createAppAuth,
    auth: { appId: app.id, privateKey: app.privateKey },
  });
}

function installationClient(): Octokit {
  return new Octokit({
    baseUrl: gh.url,
    authStrategy: createAppAuth,
    auth: { appId: app.id, privateKey: app.privateKey, installationId },
  });
}

/** A JWT signed with the App's key, with chosen claims (to test GitHub's refusals). */
function jwt(claims: Record<string, unknown>): string {
  const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString("base64url");
  const unsigned = `${part({ alg: "RS256", typ: "JWT" })}.${part(claims)}`;
  const signature = createSign("RSA-SHA256")
    .update(unsigned)
    .sign(app.privateKey)
    .toString("base64url");
  return `${unsigned}.${signature}`;
}

describe("App authentication", () => {
  it("answers GET /app and the installations to the App's JWT", async () => {
    const octokit = appClient();
    const { data: me } = await octokit.request("GET /app");
    expect(me?.slug).toBe("mainline");
    const { data: installations } = await octokit.request("GET /app/installations");
    expect(installations.map((i) => i.id)).toEqual([installationId]);
    expect(
      installations[0]?.account && "login" in installations[0].account
        ? installations[0].account.login
        : null,
    ).toBe("acme");
    const { data: one } = await octokit.request("GET /repos/{owner}/{repo}/installation", {
      owner: "acme",
      repo: "widgets",
    });
    expect(one.id).toBe(installationId);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/installation", { owner: "acme", repo: "secret" }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("mints scoped one-hour installation tokens that reach only the selected repositories", async () => {
    const octokit = installationClient();
    const { data } = await octokit.request("GET /installation/repositories");
    expect(data.repositories.map((r) => r.full_name).sort()).toEqual([
      "acme/gadgets",
      "acme/widgets",
    ]);
    const { data: token } = await appClient().request(
      "POST /app/installations/{installation_id}/access_tokens",
      {
        installation_id: installationId,
        repositories: ["widgets"],
        permissions: { contents: "read" },
      },
    );
    const left = Date.parse(token.expires_at) - Date.now();
    expect(left).toBeGreaterThan(59 * 60 * 1000);
    expect(left).toBeLessThanOrEqual(60 * 60 * 1000);
    expect(token.permissions).toEqual({ contents: "read" });
    const narrowed = new Octokit({ baseUrl: gh.url, auth: token.token });
    const { data: narrowedRepos } = await narrowed.request("GET /installation/repositories");
    expect(narrowedRepos.repositories.map((r) => r.name)).toEqual(["widgets"]);
    await expect(
      appClient().request("POST /app/installations/{installation_id}/access_tokens", {
        installation_id: installationId,
        permissions: { administration: "write" },
      }),
    ).rejects.toMatchObject({ status: 422 });
  });

  it("refuses bad JWTs with GitHub's messages, and auth-app recovers from clock drift", async () => {
    const now = Math.floor(Date.now() / 1000);
    const raw = new Octokit({ baseUrl: gh.url });
    const attempt = (token: string): Promise<unknown> =>
      raw.request("GET /app", { headers: { authorization: `bearer ${token}` } });
    await expect(attempt(jwt({ iat: now + 120, exp: now + 600, iss: app.id }))).rejects.toThrow(
      /'Issued at' claim \('iat'\)/,
    );
    await expect(attempt(jwt({ iat: now - 60, exp: now + 1200, iss: app.id }))).rejects.toThrow(
      /is too far in the future/,
    );
    await expect(attempt(jwt({ iat: now - 700, exp: now - 100, iss: app.id }))).rejects.toThrow(
      /'Expiration time' claim \('exp'\) must be a numeric value/,
    );
    await expect(attempt("a.b.c")).rejects.toThrow(/A JSON web token could not be decoded/);
    await expect(
      attempt(jwt({ iat: now - 60, exp: now + 500, iss: app.id })),
    ).resolves.toBeDefined();

    // The fake's clock runs 5 minutes behind: auth-app's first JWT is "from the future", and
    // it retries with the offset read from the `date` header.
    gh.setClockSkew(-300);
    try {
      const { data } = await appClient().request("GET /app");
      expect(data?.id).toBe(app.id);
      const rejected = gh.requests.entries.filter((e) => e.rejected === "jwt");
      expect(rejected.length).toBeGreaterThan(0);
    } finally {
      gh.setClockSkew(0);
    }
  });

  it("refuses unknown and expired tokens, and logs them as bad tokens", async () => {
    const mark = gh.requests.mark();
    const stranger = new Octokit({ baseUrl: gh.url, auth: "ghs_notatoken" });
    await expect(stranger.request("GET /installation/repositories")).rejects.toMatchObject({
      status: 401,
    });
    const token = gh.installationToken(installationId);
    gh.setClockSkew(3601);
    try {
      const expired = new Octokit({ baseUrl: gh.url, auth: token });
      await expect(expired.request("GET /installation/repositories")).rejects.toMatchObject({
        status: 401,
      });
    } finally {
      gh.setClockSkew(0);
    }
    const bad = gh.requests.badTokenRequests().filter((e) => e.seq > mark);
    expect(bad.map((e) => e.rejected)).toEqual(["unknown", "expired"]);
    expect(() => {
      gh.requests.assertNoBadTokens();
    }).toThrow(/bad token/);
  });

  it("proves a user's organization role with a user token", async () => {
    const alice = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken("alice") });
    const { data: me } = await alice.request("GET /user");
    expect(me.login).toBe("alice");
    const { data: membership } = await alice.request("GET /user/memberships/orgs/{org}", {
      org: "acme",
    });
    expect(membership).toMatchObject({ role: "admin", state: "active" });
    const bob = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken("bob") });
    const { data: bobs } = await bob.request("GET /user/memberships/orgs/{org}", { org: "acme" });
    expect(bobs.role).toBe("member");
    const carol = gh.createUser("carol");
    const stranger = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken(carol.login) });
    await expect(
      stranger.request("GET /user/memberships/orgs/{org}", { org: "acme" }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("sends rate-limit, request-id and date headers, and pages with Link", async () => {
    for (let i = 0; i < 3; i++) await gh.createRepository({ owner: "acme", name: `many-${i}` });
    const all = gh.createApp({ slug: "paging" });
    const inst = gh.installApp(all.id, { account: "acme" });
    const octokit = new Octokit({ baseUrl: gh.url, auth: gh.installationToken(inst.id) });
    const first = await octokit.request("GET /installation/repositories", { per_page: 2 });
    expect(first.headers["x-ratelimit-limit"]).toBe("5000");
    expect(Number(first.headers["x-ratelimit-remaining"])).toBe(4999);
    expect(first.headers["x-github-request-id"]).toMatch(/^[0-9A-F:]+$/);
    expect(Date.parse(first.headers.date ?? "")).not.toBeNaN();
    expect(first.headers.link).toMatch(/[?&]page=2[^>]*>; rel="next"/);
    expect(first.headers.link).toMatch(/[?&]page=3[^>]*>; rel="last"/);
    expect(first.data.total_count).toBe(6);
    const second = await octokit.request("GET /installation/repositories", {
      per_page: 2,
      page: 3,
    });
    expect(second.data.repositories).toHaveLength(2);
    expect(second.headers.link).toMatch(/rel="prev"/);
    expect(second.headers.link).not.toMatch(/rel="next"/);
    // A conditional request that matches costs nothing.
    const again = await octokit
      .request("GET /installation/repositories", {
        per_page: 2,
        headers: { "if-none-match": first.headers.etag ?? "" },
      })
      .catch((e: unknown) => e);
    expect(again).toBeInstanceOf(RequestError);
    expect((again as RequestError).status).toBe(304);
    expect((again as RequestError).response?.headers["x-ratelimit-remaining"]).toBe("4998");
  });
});

describe("installation webhooks", () => {
  it("delivers installation.created signed with HMAC-SHA256 of the exact body", async () => {
    const [first] = await receiver.waitFor(1);
    expect(first?.event).toBe("installation");
    expect(first?.headers["user-agent"]).toMatch(/^GitHub-Hookshot\//);
    expect(first?.headers["x-github-hook-installation-target-type"]).toBe("integration");
    expect(first?.headers["x-github-hook-installation-target-id"]).toBe(String(app.id));
    expect(first?.delivery).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    const expected = `sha256=${createHmac("sha256", app.webhookSecret)
      .update(first?.body ?? "")
      .digest("hex")}`;
    expect(first?.headers["x-hub-signature-256"]).toBe(expected);
    const webhooks = new Webhooks({ secret: app.webhookSecret });
    expect(
      await webhooks.verify(first?.body ?? "", first?.headers["x-hub-signature-256"] ?? ""),
    ).toBe(true);
    expect(first?.payload).toMatchObject({
      action: "created",
      installation: { id: installationId, account: { login: "acme" } },
      sender: { login: "alice" },
    });
  });

  it("delivers installation_repositories.added and removed", async () => {
    const before = receiver.received.length;
    gh.addInstallationRepositories(installationId, ["secret"], "alice");
    gh.removeInstallationRepositories(installationId, ["gadgets"], "alice");
    await receiver.waitFor(before + 2);
    const [added, removed] = receiver.received.slice(before);
    expect(added?.payload).toMatchObject({
      action: "added",
      repositories_added: [{ full_name: "acme/secret" }],
    });
    expect(removed?.payload).toMatchObject({
      action: "removed",
      repositories_removed: [{ full_name: "acme/gadgets" }],
    });
    const octokit = new Octokit({ baseUrl: gh.url, auth: gh.installationToken(installationId) });
    const { data } = await octokit.request("GET /installation/repositories");
    expect(data.repositories.map((r) => r.name).sort()).toEqual(["secret", "widgets"]);
  });
});
