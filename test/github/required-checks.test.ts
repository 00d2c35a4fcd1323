/**
 * GitHub's required checks of a branch: the union of classic branch protection and active
 * rulesets, App pins kept (pure), and the reader against the fake GitHub (404 from the classic API
 * is "no classic protection"; `evaluate` rulesets do not count).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GITHUB_ACTIONS_APP_ID } from "../helpers/fake-github/index.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";
import {
  checkCounts,
  readRequiredChecks,
  requiredNames,
  unionRequiredChecks,
} from "../../src/providers/github/index.js";
import type { GitHubClient, GitHubRepositoryAccess } from "../../src/providers/github/index.js";
import { GitHubRequiredSources } from "../../src/providers/github/required-sources.js";

describe("the union (pure)", () => {
  it("unions classic contexts, classic pinned checks and ruleset checks; pins kept", () => {
    const union = unionRequiredChecks(
      {
        contexts: ["ci", "build"],
        checks: [
          { context: "ci", app_id: null },
          { context: "build", app_id: 15368 },
        ],
      },
      [
        { type: "pull_request", parameters: {} },
        {
          type: "required_status_checks",
          parameters: {
            required_status_checks: [
              { context: "build", integration_id: 15368 },
              { context: "build", integration_id: 99 },
              { context: "e2e" },
            ],
          },
        },
      ],
    );
    expect(union).toEqual([
      { context: "ci", appId: null },
      { context: "build", appId: 15368 },
      { context: "build", appId: 99 },
      { context: "e2e", appId: null },
    ]);
    expect(requiredNames(union)).toEqual(["ci", "build", "e2e"]);
  });

  it("reads an App id of -1 as any App, and no protection as nothing", () => {
    expect(
      unionRequiredChecks({ contexts: [], checks: [{ context: "x", app_id: -1 }] }, []),
    ).toEqual([{ context: "x", appId: null }]);
    expect(unionRequiredChecks(undefined, [])).toEqual([]);
  });

  it("counts a pinned check only from its App", () => {
    expect(checkCounts({ context: "build", appId: 15368 }, "build", 15368)).toBe(true);
    expect(checkCounts({ context: "build", appId: 15368 }, "build", 7)).toBe(false);
    expect(checkCounts({ context: "build", appId: 15368 }, "lint", 15368)).toBe(false);
    expect(checkCounts({ context: "build", appId: null }, "build", 7)).toBe(true);
  });
});

describe("reading them from GitHub", () => {
  let world: GitHubWorld;
  let server: TestServer;
  let client: GitHubClient;
  let installationId = 0;
  const REPO = "acme-rc/widgets";

  beforeAll(async () => {
    world = await startGitHubWorld();
    world.gh.createOrganization("acme-rc");
    await world.gh.createRepository({ owner: "acme-rc", name: "widgets" });
    server = await startGitHubServer(world);
    installationId = world.gh.installApp(world.app.id, {
      account: "acme-rc",
      repositories: ["widgets"],
    }).id;
    await settle(world, server);
    const github = server.services.github;
    if (!github) throw new Error("no GitHub provider");
    client = github.app.installation(installationId);
  }, 60_000);

  afterAll(async () => {
    await server.close();
    world.gh.schema.assertValid();
    await world.gh.close();
  });

  const where = { owner: "acme-rc", name: "widgets" };

  it("reads nothing from an unprotected branch (the classic 404 is no protection)", async () => {
    expect(await readRequiredChecks(client, where, "main")).toEqual([]);
  });

  it("reads a rulesets-only branch, and unions classic protection with active rulesets", async () => {
    const { gh } = world;
    const ruleset = gh.addRuleset(REPO, {
      name: "checks",
      enforcement: "active",
      include: ["~DEFAULT_BRANCH"],
      exclude: [],
      bypassActors: [],
      rules: [
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [
              { context: "e2e", integration_id: GITHUB_ACTIONS_APP_ID },
              { context: "lint" },
            ],
          },
        },
      ],
    });
    const evaluateOnly = gh.addRuleset(REPO, {
      name: "trial",
      enforcement: "evaluate",
      include: ["~DEFAULT_BRANCH"],
      exclude: [],
      bypassActors: [],
      rules: [
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [{ context: "not-yet" }],
          },
        },
      ],
    });
    // Rulesets only: the classic API answers 404, the rules are still read.
    expect(await readRequiredChecks(client, where, "main")).toEqual([
      { context: "e2e", appId: GITHUB_ACTIONS_APP_ID },
      { context: "lint", appId: null },
    ]);

    gh.protectBranch(REPO, "main", {
      requiredStatusChecks: {
        strict: false,
        contexts: ["ci"],
        checks: [{ context: "build", appId: GITHUB_ACTIONS_APP_ID }],
      },
    });
    const union = await readRequiredChecks(client, where, "main");
    expect(union).toContainEqual({ context: "build", appId: GITHUB_ACTIONS_APP_ID });
    expect(union).toContainEqual({ context: "e2e", appId: GITHUB_ACTIONS_APP_ID });
    expect(union).toContainEqual({ context: "lint", appId: null });
    expect(union.map((c) => c.context)).not.toContain("not-yet");
    expect(union.filter((c) => c.context === "ci")).toHaveLength(1);
    // Another branch is not protected by either.
    expect(await readRequiredChecks(client, where, "release")).toEqual([]);

    gh.unprotectBranch(REPO, "main");
    gh.removeRuleset(REPO, ruleset);
    gh.removeRuleset(REPO, evaluateOnly);
    expect(await readRequiredChecks(client, where, "main")).toEqual([]);
  });
  it("keeps the sources: read once, again after a push touching a file or a protection change", async () => {
    const { gh } = world;
    gh.createUser("rc-admin");
    gh.addOrgMember("acme-rc", "rc-admin", "admin");
    const access: GitHubRepositoryAccess = { ...where, installationId, githubId: 0, client };
    const host = server.services.github?.gitHost;
    if (!host) throw new Error("no GitHub");
    // The protection's checks as the git host keeps them (its readiness reads them too).
    const sources = new GitHubRequiredSources({
      now: () => Date.now(),
      branchChecks: (on, branch) => host.requiredChecks(on, branch),
    });
    const trunk = (names: string) => `merge:\n  required_statuses: [${names}]\n`;
    const file = ".trunk/trunk.yaml";
    await gh.commit(REPO, { branch: "main", files: { [file]: trunk("a") }, by: "rc-admin" });
    const tested = async (branch: string, files: Record<string, string>) =>
      gh.commit(REPO, { branch, from: "main", files, by: "rc-admin" });
    const reads = (since: number) => gh.requests.filter({ since }).map((r) => r.operationId);

    // Runs whose pull requests leave the file alone: read once (at main), then one compare each.
    let mark = gh.requests.mark();
    const one = await tested("run-1", { "one.txt": "1\n" });
    expect(await sources.fileAt(access, "main", one, file)).toBe(trunk("a"));
    const two = await tested("run-2", { "two.txt": "2\n" });
    expect(await sources.fileAt(access, "main", two, file)).toBe(trunk("a"));
    expect(reads(mark).filter((op) => op === "repos/get-content")).toHaveLength(1);
    expect(reads(mark).filter((op) => op.startsWith("repos/compare"))).toHaveLength(2);

    // A run that changes the file reads it at its tested commit.
    const changing = await tested("run-3", { [file]: trunk("b") });
    expect(await sources.fileAt(access, "main", changing, file)).toBe(trunk("b"));

    // A push to main touching the file: read again (its webhook's facts, as GitHub sends them).
    await gh.commit(REPO, { branch: "main", files: { [file]: trunk("c") }, by: "rc-admin" });
    const push = gh
      .deliveries("push")
      .filter((d) => d.payload.ref === "refs/heads/main")
      .at(-1)?.payload as unknown as Parameters<GitHubRequiredSources["pushed"]>[1];
    const other = await tested("run-4", { "four.txt": "4\n" });
    expect(await sources.fileAt(access, "main", other, file)).toBe(trunk("a")); // not told yet
    sources.pushed(where, push);
    expect(await sources.fileAt(access, "main", other, file)).toBe(trunk("c"));
    // A push that touches nothing kept forgets nothing.
    mark = gh.requests.mark();
    await gh.commit(REPO, { branch: "main", files: { "five.txt": "5\n" }, by: "rc-admin" });
    const quiet = gh.deliveries("push").at(-1)?.payload as unknown as Parameters<
      GitHubRequiredSources["pushed"]
    >[1];
    sources.pushed(where, quiet);
    expect(await sources.fileAt(access, "main", other, file)).toBe(trunk("c"));
    expect(reads(mark).filter((op) => op === "repos/get-content")).toHaveLength(0);

    // The protection's checks: read once, again once a webhook says they changed.
    mark = gh.requests.mark();
    expect(await sources.requiredChecks(access, "main")).toEqual([]);
    gh.protectBranch(REPO, "main", { requiredStatusChecks: { contexts: ["lint"] } });
    expect(await sources.requiredChecks(access, "main")).toEqual([]);
    host.forgetRequirements(where);
    expect(await sources.requiredChecks(access, "main")).toEqual([
      { context: "lint", appId: null },
    ]);
    expect(reads(mark).filter((op) => op === "repos/get-branch-rules")).toHaveLength(2);
    gh.unprotectBranch(REPO, "main");
  });
});
