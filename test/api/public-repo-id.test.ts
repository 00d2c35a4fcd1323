import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, startTestServer, type TestServer } from "../helpers/server.js";
import { bundle, junit, uploadState } from "../helpers/uploads.js";

// Uploads from forks (Trunk's `--public-repo-id`, header `x-trunk-public-repo-id`): the public id
// permits creating uploads for its repository (and reading its quarantined ids), nothing else.

const PER_HOUR = 3;
const PUBLIC_CAP = 4096;
const OTHER_REPO = { host: "github.com", owner: "acme", name: "other" };

let server: TestServer;
let otherOrgToken: string;
beforeAll(async () => {
  server = await startTestServer({
    publicUploads: { perHour: PER_HOUR, maxBundleBytes: PUBLIC_CAP },
  });
  otherOrgToken = (await server.services.organizations.createOrganizationWithToken("globex")).token;
});
afterAll(async () => {
  await server.close();
});

const asPublic = (id: string) => ({ token: null, headers: { "x-trunk-public-repo-id": id } });

async function publicIdOf(repo = REPO, token = server.token, org = "acme"): Promise<string> {
  const answer = await server.call<{ public_repo_id: string }>(
    "flaky-tests/get-public-repo-id",
    { repo, org_url_slug: org },
    { token },
  );
  expect(answer.status, answer.text).toBe(200);
  return answer.body.public_repo_id;
}

const createBody = (repo = REPO, orgUrlSlug = "acme") => ({
  repo,
  orgUrlSlug,
  clientVersion: "trunk-analytics-cli 0.10.0",
  remoteUrls: [],
});

describe("public repository ids", () => {
  it("gives each repository one, the same until rotated", async () => {
    const id = await publicIdOf();
    expect(id).toMatch(/^mlpub_[A-Za-z0-9_-]{24}$/);
    expect(await publicIdOf()).toBe(id);
    expect(await publicIdOf(OTHER_REPO)).not.toBe(id);
  });

  it("lets a fork upload for the repository without a token", async () => {
    const id = await publicIdOf();
    const created = await server.call<{ id: string; url: string }>(
      "metrics/createBundleUpload",
      createBody(),
      asPublic(id),
    );
    expect(created.status, created.text).toBe(200);
    const put = await fetch(created.body.url, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: await bundle({ files: [junit([{ name: "from-a-fork", status: "failed" }])] }),
    });
    expect(put.status, await put.text()).toBe(200);
    await server.services.worker.idle();
    expect(await uploadState(server, created.body.id)).toMatchObject({
      state: "processed",
      tests_failed: 1,
    });

    const quarantine = await server.call(
      "metrics/getQuarantineConfig",
      { repo: REPO, orgUrlSlug: "acme", testIdentifiers: [] },
      asPublic(id),
    );
    expect(quarantine.status, quarantine.text).toBe(200);
    expect(quarantine.body).toMatchObject({ isDisabled: false, testIds: [] });
  });

  it("grants nothing else: no reads, no other operation", async () => {
    const id = await publicIdOf();
    const body = { repo: REPO, org_url_slug: "acme", page_query: { page_size: 5 } };
    for (const [operation, payload] of [
      ["whoami", {}],
      ["flaky-tests/list-uploads", body],
      ["flaky-tests/list-quarantined-tests", body],
      ["flaky-tests/list-unhealthy-tests", { ...body, status: "FLAKY" }],
      ["flaky-tests/get-public-repo-id", { repo: REPO, org_url_slug: "acme" }],
      ["flaky-tests/rotate-public-repo-id", { repo: REPO, org_url_slug: "acme" }],
      ["getQueue", { repo: REPO, targetBranch: "main" }],
    ] as const) {
      const answer = await server.call(operation, payload, asPublic(id));
      expect(answer.status, `${operation}: ${answer.text}`).toBe(401);
      expect(answer.body).toMatchObject({ error: { code: "unauthorized" } });
    }
  });

  it("permits only its own repository and organization", async () => {
    const id = await publicIdOf();
    const otherRepo = await server.call(
      "metrics/createBundleUpload",
      createBody(OTHER_REPO),
      asPublic(id),
    );
    expect(otherRepo.status).toBe(403);
    expect(otherRepo.body).toMatchObject({ error: { code: "forbidden" } });
    const otherQuarantine = await server.call(
      "metrics/getQuarantineConfig",
      { repo: OTHER_REPO, orgUrlSlug: "acme" },
      asPublic(id),
    );
    expect(otherQuarantine.status).toBe(403);

    // Another organization with a repository of the same name: unreachable with acme's id.
    await publicIdOf(REPO, otherOrgToken, "globex");
    const otherOrg = await server.call(
      "metrics/createBundleUpload",
      createBody(REPO, "globex"),
      asPublic(id),
    );
    expect(otherOrg.status).toBe(403);
    const globexUploads = await server.call<{ uploads: unknown[] }>(
      "flaky-tests/list-uploads",
      { repo: REPO, org_url_slug: "globex", page_query: { page_size: 5 } },
      { token: otherOrgToken },
    );
    expect(globexUploads.status).toBe(200);
    expect(globexUploads.body.uploads).toEqual([]);
  });

  it("refuses unknown and rotated ids", async () => {
    const unknown = await server.call(
      "metrics/createBundleUpload",
      createBody(),
      asPublic("mlpub_AAAAAAAAAAAAAAAAAAAAAAAA"),
    );
    expect(unknown.status).toBe(401);

    const old = await publicIdOf(OTHER_REPO);
    const rotated = await server.call<{ public_repo_id: string }>(
      "flaky-tests/rotate-public-repo-id",
      { repo: OTHER_REPO, org_url_slug: "acme" },
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.public_repo_id).not.toBe(old);
    expect(await publicIdOf(OTHER_REPO)).toBe(rotated.body.public_repo_id);
    const withOld = await server.call(
      "metrics/createBundleUpload",
      createBody(OTHER_REPO),
      asPublic(old),
    );
    expect(withOld.status).toBe(401);
  });

  it("caps the bundle size, and the cap cannot be lifted from the URL", async () => {
    const id = await publicIdOf(OTHER_REPO);
    const big = await bundle({
      repo: OTHER_REPO,
      files: [
        junit(
          Array.from({ length: 200 }, (_, i) => ({
            name: `t${i}-${randomBytes(16).toString("hex")}`,
          })),
        ),
      ],
    });
    expect(big.length).toBeGreaterThan(PUBLIC_CAP);
    const created = await server.call<{ url: string }>(
      "metrics/createBundleUpload",
      createBody(OTHER_REPO),
      asPublic(id),
    );
    expect(created.status).toBe(200);
    const url = new URL(created.body.url);
    expect(url.searchParams.get("limit")).toBe(String(PUBLIC_CAP));

    const lifted = new URL(url);
    lifted.searchParams.set("limit", String(PUBLIC_CAP * 1000));
    const tampered = await fetch(lifted, { method: "PUT", body: big });
    expect(tampered.status).toBe(403);
    const dropped = new URL(url);
    dropped.searchParams.delete("limit");
    expect((await fetch(dropped, { method: "PUT", body: big })).status).toBe(403);

    const tooBig = await fetch(url, { method: "PUT", body: big });
    expect(tooBig.status).toBe(413);
    expect(await tooBig.json()).toMatchObject({ error: { code: "payload_too_large" } });
  });

  it("limits the uploads a public id creates per hour, not those with a token", async () => {
    const repo = { host: "github.com", owner: "acme", name: "busy" };
    const id = await publicIdOf(repo);
    for (let i = 0; i < PER_HOUR; i++) {
      const ok = await server.call("metrics/createBundleUpload", createBody(repo), asPublic(id));
      expect(ok.status, ok.text).toBe(200);
    }
    const limited = await server.call("metrics/createBundleUpload", createBody(repo), asPublic(id));
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: "rate_limited" } });
    const withToken = await server.call("metrics/createBundleUpload", createBody(repo));
    expect(withToken.status).toBe(200);
  });
});
