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
import type { GitHubClient } from "../../src/providers/github/index.js";

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
  const REPO = "acme-rc/widgets";

  beforeAll(async () => {
    world = await startGitHubWorld();
    world.gh.createOrganization("acme-rc");
    await world.gh.createRepository({ owner: "acme-rc", name: "widgets" });
    server = await startGitHubServer(world);
    const installationId = world.gh.installApp(world.app.id, {
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
});
