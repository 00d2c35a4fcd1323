/**
 * Test results on GitHub pull requests (`pull_request_comments`), through the fake GitHub: CI's
 * uploads naming a pull request are processed, and one comment, edited in place, lists the tests
 * failing at its latest commit with whose red each is; nothing while the setting is off, nothing
 * for a pull request without failures; a comment GitHub made but answered 502 is found, not made
 * twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";
import { TEST_RESULTS_MARKER } from "../../src/providers/github/pull-request-test-results.js";
import { bundle, junit, putBundle, testIdOf, type CaseSpec } from "../helpers/uploads.js";

const OWNER = "acme-tr";
const REPO_NAME = `${OWNER}/shop`;
const SHOP = { host: "github.com", owner: OWNER, name: "shop" };
const PUBLIC_URL = "https://mainline.example.test";

let world: GitHubWorld;
let server: TestServer;
let prs = 0;

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization(OWNER);
  gh.createUser("bob");
  gh.addOrgMember(OWNER, "bob", "admin");
  await gh.createRepository({ owner: OWNER, name: "shop" });
  server = await startGitHubServer(world, {
    publicUrl: PUBLIC_URL,
    githubTestResults: { pollIntervalMs: 50 },
  });
  const installationId = gh.installApp(world.app.id, { account: OWNER, repositories: ["shop"] }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
  // The repository's history on main: `totals` and `checkout` pass there.
  await upload({ commit: "0".repeat(40), branch: "main" }, [
    { name: "totals", classname: "cart" },
    { name: "checkout", classname: "payments" },
  ]);
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

async function upload(
  where: { commit: string; branch: string; pr?: number },
  cases: CaseSpec[],
): Promise<void> {
  await putBundle(server, await bundle({ files: [junit(cases)], repo: SHOP, ...where }), SHOP);
  await server.services.worker.idle();
}

async function settings(patch: Record<string, unknown>): Promise<void> {
  const answer = await server.call("flaky-tests/update-test-settings", {
    repo: SHOP,
    org_url_slug: "acme",
    ...patch,
  });
  expect(answer.status, answer.text).toBe(200);
}

async function openPr(): Promise<number> {
  const branch = `feature-${String(++prs)}`;
  await world.gh.commit(REPO_NAME, {
    branch,
    from: "main",
    files: { [`${branch}.txt`]: "x\n" },
    by: "bob",
  });
  return world.gh.openPullRequest(REPO_NAME, { head: branch, by: "bob" });
}

const results = (number: number) =>
  world.gh
    .comments(REPO_NAME, number)
    .filter(
      (c) => c.user.login === `${world.app.slug}[bot]` && c.body.startsWith(TEST_RESULTS_MARKER),
    );

async function shown(): Promise<void> {
  await server.services.github?.testResults?.idle();
}

const sha = (n: number, pr: number) => `${String(pr).padStart(2, "0")}${String(n).repeat(38)}`;

describe("test results on pull requests", () => {
  it("says nothing while the repository's setting is off (the default)", async () => {
    const settingsNow = await server.call<{ pull_request_comments: boolean }>(
      "flaky-tests/get-test-settings",
      { repo: SHOP, org_url_slug: "acme" },
    );
    expect(settingsNow.body.pull_request_comments).toBe(false);
    const pr = await openPr();
    await upload({ commit: sha(1, pr), branch: `feature-${String(prs)}`, pr }, [
      { name: "totals", classname: "cart", status: "failed", message: "expected 3, got 4" },
    ]);
    await shown();
    expect(results(pr)).toEqual([]);
  });

  it("lists the failing tests with whose red each is, edits the one comment, and says when they pass", async () => {
    await settings({ pull_request_comments: true });
    const checkoutId = testIdOf({ name: "checkout", classname: "payments", repo: SHOP });
    const quarantined = await server.call("flaky-tests/set-quarantine-override", {
      repo: SHOP,
      org_url_slug: "acme",
      test_id: checkoutId,
      override: "ALWAYS_QUARANTINE",
    });
    expect(quarantined.status, quarantined.text).toBe(200);

    const pr = await openPr();
    const branch = `feature-${String(prs)}`;
    await upload({ commit: sha(1, pr), branch, pr }, [
      { name: "totals", classname: "cart", status: "failed", message: "expected 3, got 4" },
      { name: "checkout", classname: "payments", status: "failed", message: "sandbox timeout" },
      { name: "adds `items`", classname: "cart", status: "failed", message: "no items" },
      { name: "passes", classname: "cart" },
    ]);
    await shown();
    expect(results(pr)).toHaveLength(1);
    const body = results(pr)[0]?.body ?? "";
    expect(body).toContain(`3 failing tests at ${sha(1, pr).slice(0, 7)}`);
    expect(body).toContain("1 of them known to test health");
    const failing = body.indexOf("**Failing here");
    const fresh = body.indexOf("**New in this pull request**");
    const known = body.indexOf("**Known flaky, quarantined**");
    expect(failing).toBeGreaterThan(0);
    expect(fresh).toBeGreaterThan(failing);
    expect(known).toBeGreaterThan(fresh);
    expect(body).toContain("`cart.totals`");
    expect(body).toContain("`` cart.adds `items` ``");
    expect(body).toContain("`sandbox timeout`");
    // Each test links to its page on the dashboard.
    expect(body).toContain(`](${PUBLIC_URL}/acme/flaky-tests/test/${checkoutId}?`);
    expect(body).not.toContain("passes");

    // The same results processed again: nothing is written.
    const since = world.gh.requests.mark();
    await upload({ commit: sha(1, pr), branch, pr }, [
      { name: "totals", classname: "cart", status: "failed", message: "expected 3, got 4" },
    ]);
    await shown();
    expect(world.gh.requests.count({ since, method: "PATCH" })).toBe(0);
    expect(world.gh.requests.count({ since, method: "POST" })).toBe(0);

    // Another CI job of the repository started an upload and never sent it: nothing waits for it.
    const dangling = await server.call("metrics/createBundleUpload", {
      repo: SHOP,
      orgUrlSlug: "acme",
      clientVersion: "test",
      remoteUrls: [],
    });
    expect(dangling.status).toBe(200);
    // A new commit whose tests all pass: the same comment says so.
    await upload({ commit: sha(2, pr), branch, pr }, [
      { name: "totals", classname: "cart" },
      { name: "adds `items`", classname: "cart" },
    ]);
    await shown();
    expect(results(pr)).toHaveLength(1);
    expect(results(pr)[0]?.body).toContain(`No failing tests at ${sha(2, pr).slice(0, 7)}.`);
  });

  it("makes no comment on a pull request whose tests pass", async () => {
    const pr = await openPr();
    await upload({ commit: sha(1, pr), branch: `feature-${String(prs)}`, pr }, [
      { name: "totals", classname: "cart" },
    ]);
    await shown();
    expect(results(pr)).toEqual([]);
  });

  it("never makes its comment twice when GitHub made it but answered 502", async () => {
    const pr = await openPr();
    const since = world.gh.requests.mark();
    world.gh.addFault(world.gh.fault.succeedsButErrors("issues/create-comment", 502, { times: 1 }));
    await upload({ commit: sha(1, pr), branch: `feature-${String(prs)}`, pr }, [
      { name: "totals", classname: "cart", status: "failed", message: "expected 3, got 4" },
    ]);
    await expect
      .poll(
        async () => {
          await shown();
          return world.gh.requests.count({ since, operationId: "issues/list-comments" });
        },
        { timeout: 10_000 },
      )
      .toBe(1);
    await shown();
    expect(results(pr)).toHaveLength(1);
    expect(results(pr)[0]?.body).toContain("1 failing test at");
  });
});
