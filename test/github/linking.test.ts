/**
 * Linking GitHub App installations to organizations, through a real server against the fake
 * GitHub: by an organization's token with proof of control of the GitHub account (an owner of
 * the organization, or the user account itself), and by the operator from the command line. A
 * token that proves nothing changes nothing; an installation linked to one organization never
 * moves to another; its repositories become the linked organization's repositories.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess } from "../helpers/process.js";
import { ok, type TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";

let world: GitHubWorld;
let server: TestServer;
let globex: { token: string; organizationId: string };
let orgInstallation: number;
let userInstallation: number;
const tokens = { alice: "", bob: "", carol: "", revoked: "" };

interface ErrorBody {
  error: { code: string; message: string };
}
interface InstallationBody {
  installation: {
    installationId: number;
    account: { login: string; type: string };
    repositories: { host: string; owner: string; name: string; removedAt: string | null }[];
  };
}

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  for (const login of ["alice", "bob", "carol"]) gh.createUser(login);
  gh.addOrgMember("acme-gh", "alice", "admin");
  gh.addOrgMember("acme-gh", "bob", "member");
  tokens.alice = gh.createUserToken("alice");
  tokens.bob = gh.createUserToken("bob");
  tokens.carol = gh.createUserToken("carol");
  tokens.revoked = gh.createUserToken("alice");
  gh.world.userTokens.delete(tokens.revoked);
  await gh.createRepository({ owner: "acme-gh", name: "widgets" });
  await gh.createRepository({ owner: "acme-gh", name: "gadgets" });
  await gh.createRepository({ owner: "carol", name: "tools" });
  await gh.createRepository({ owner: "carol", name: "private-notes" });
  server = await startGitHubServer(world);
  const issued = await server.services.organizations.createOrganizationWithToken("globex");
  globex = { token: issued.token, organizationId: issued.organization.id };
  orgInstallation = gh.installApp(world.app.id, { account: "acme-gh" }).id;
  userInstallation = gh.installApp(world.app.id, { account: "carol", repositories: ["tools"] }).id;
  // The installations are known (unlinked) once their webhooks are handled.
  await settle(world, server);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gh.close();
});

/** Every row the GitHub App's linking can touch, to show that a refusal changed none. */
async function githubRows(): Promise<unknown> {
  const db = server.database.handle.db;
  const rows = async (table: string) =>
    (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db)).rows
      .map((row) => JSON.stringify(row))
      .sort();
  return {
    installations: await rows("github_installations"),
    repositories: await rows("github_repositories"),
    organizationRepositories: await rows("repositories"),
  };
}

describe("linking through the API, with proof of control", () => {
  it("refuses tokens that do not prove control of the account, and changes nothing", async () => {
    const before = await githubRows();
    const attempts: [string, number, string][] = [
      ["a member who is not an owner", orgInstallation, tokens.bob],
      ["a user outside the organization", orgInstallation, tokens.carol],
      ["a revoked token", orgInstallation, tokens.revoked],
      ["something that is not a token", orgInstallation, "not-a-token"],
      ["an owner of another account", userInstallation, tokens.alice],
    ];
    for (const [why, installationId, githubToken] of attempts) {
      const answer = await server.call<ErrorBody>("github/linkInstallation", {
        installationId,
        githubToken,
      });
      expect(answer.status, `${why}: ${answer.text}`).toBe(403);
      expect(answer.body.error.code).toBe("forbidden");
      expect(answer.body.error.message).toContain("Nothing was linked");
      // The token is never echoed.
      expect(answer.text).not.toContain(githubToken);
    }
    expect(await githubRows()).toEqual(before);
    const listed = await ok(
      server.call<{ installations: unknown[] }>("github/listInstallations", {}),
    );
    expect(listed.installations).toEqual([]);
  });

  it("answers 404 for an installation the App does not have", async () => {
    const answer = await server.call<ErrorBody>("github/linkInstallation", {
      installationId: 999_999_999,
      githubToken: tokens.alice,
    });
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("not_found");
  });

  it("links with an owner's token: the installation's repositories become the organization's", async () => {
    const linked = await ok(
      server.call<InstallationBody>("github/linkInstallation", {
        installationId: orgInstallation,
        githubToken: tokens.alice,
      }),
    );
    expect(linked.installation.account).toEqual({ login: "acme-gh", type: "Organization" });
    expect(
      linked.installation.repositories.map((r) => `${r.host}/${r.owner}/${r.name}`).sort(),
    ).toEqual(["github.com/acme-gh/gadgets", "github.com/acme-gh/widgets"]);
    const repository = await server.services.stores.repositories.find(server.organizationId, {
      host: "github.com",
      owner: "acme-gh",
      name: "widgets",
    });
    expect(repository).toBeDefined();
    // Queues find them; a repository no installation grants is not the organization's.
    const widgets = { host: "github.com", owner: "acme-gh", name: "widgets" };
    expect((await server.call("createQueue", { repo: widgets, targetBranch: "main" })).status).toBe(
      200,
    );
    const stranger = await server.call<ErrorBody>("createQueue", {
      repo: { host: "github.com", owner: "acme-gh", name: "elsewhere" },
      targetBranch: "main",
    });
    expect(stranger.status).toBe(404);
    expect(stranger.body.error.message).toContain("not a repository of a GitHub App installation");
    // Linking again is harmless.
    const again = await server.call("github/linkInstallation", {
      installationId: orgInstallation,
      githubToken: tokens.alice,
    });
    expect(again.status).toBe(200);
    const listed = await ok(
      server.call<{ installations: { installationId: number }[] }>("github/listInstallations", {}),
    );
    expect(listed.installations.map((i) => i.installationId)).toEqual([orgInstallation]);
  });

  it("never moves an installation to another organization, whoever asks", async () => {
    const before = await githubRows();
    const moved = await server.call<ErrorBody>(
      "github/linkInstallation",
      { installationId: orgInstallation, githubToken: tokens.alice },
      { token: globex.token },
    );
    expect(moved.status).toBe(409);
    expect(moved.body.error.code).toBe("installation_linked_elsewhere");
    const unlinked = await server.call<ErrorBody>(
      "github/unlinkInstallation",
      { installationId: orgInstallation },
      { token: globex.token },
    );
    expect(unlinked.status).toBe(404);
    const listed = await ok(
      server.call<{ installations: unknown[] }>(
        "github/listInstallations",
        {},
        { token: globex.token },
      ),
    );
    expect(listed.installations).toEqual([]);
    expect(await githubRows()).toEqual(before);
  });

  it("links a user account's installation with that user's own token", async () => {
    const linked = await ok(
      server.call<InstallationBody>(
        "github/linkInstallation",
        { installationId: userInstallation, githubToken: tokens.carol },
        { token: globex.token },
      ),
    );
    // Only the selected repository.
    expect(linked.installation.repositories.map((r) => r.name)).toEqual(["tools"]);
    expect(
      await server.services.stores.repositories.find(globex.organizationId, {
        host: "github.com",
        owner: "carol",
        name: "tools",
      }),
    ).toBeDefined();
    expect(
      await server.services.stores.repositories.find(server.organizationId, {
        host: "github.com",
        owner: "carol",
        name: "tools",
      }),
    ).toBeUndefined();
  });

  it("unlinks by its own organization: its repositories stop serving the queue, their data stays", async () => {
    const widgets = { host: "github.com", owner: "acme-gh", name: "widgets" };
    expect(
      (await server.call("github/unlinkInstallation", { installationId: orgInstallation })).status,
    ).toBe(200);
    const refused = await server.call<ErrorBody>("createQueue", {
      repo: widgets,
      targetBranch: "release",
    });
    expect(refused.status).toBe(404);
    // The queue made while linked, and the repository, are kept.
    expect((await server.call("getQueue", { repo: widgets, targetBranch: "main" })).status).toBe(
      200,
    );
    await expect(
      server.services.github?.repositories.resolve({
        organizationId: server.organizationId,
        ...widgets,
      }),
    ).rejects.toThrow(/not a repository of a GitHub App installation linked to this organization/);
    // Linked again, they serve again.
    await ok(
      server.call("github/linkInstallation", {
        installationId: orgInstallation,
        githubToken: tokens.alice,
      }),
    );
    const access = await server.services.github?.repositories.resolve({
      organizationId: server.organizationId,
      ...widgets,
    });
    expect(access?.installationId).toBe(orgInstallation);
  });
});

describe("linking from the command line (the operator)", () => {
  const cli = (args: string[], env: Record<string, string> = world.env) =>
    runCliInProcess(["github", ...args], { ...server.database.env, ...env });

  it("lists installations, links and unlinks them, and never moves a linked one", async () => {
    const listed = await cli(["installations", "--json"]);
    expect(listed.stderr).toBe("");
    const installations = JSON.parse(listed.stdout) as {
      installationId: number;
      organization: string | null;
      repositories: { name: string }[];
    }[];
    expect(installations.map((i) => [i.installationId, i.organization])).toEqual([
      [orgInstallation, "acme"],
      [userInstallation, "globex"],
    ]);
    const table = await cli(["installations"]);
    expect(table.stdout).toMatch(/acme-gh\s+Organization\s+acme\s+active\s+2/);

    const moved = await cli(["link", "--installation", String(userInstallation), "--org", "acme"]);
    expect(moved.code).toBe(1);
    expect(moved.stderr).toContain("linked to another Mainline organization");

    const unlinked = await cli(["unlink", "--installation", String(userInstallation)]);
    expect(unlinked.code).toBe(0);
    expect(unlinked.stderr).toContain(`Unlinked installation ${userInstallation} from globex`);
    const linked = await cli(["link", "--installation", String(userInstallation), "--org", "acme"]);
    expect(linked.code).toBe(0);
    expect(linked.stderr).toContain("carol/tools");
    expect(
      await server.services.stores.repositories.find(server.organizationId, {
        host: "github.com",
        owner: "carol",
        name: "tools",
      }),
    ).toBeDefined();
  });

  it("says what is missing", async () => {
    const unknownOrg = await cli([
      "link",
      "--installation",
      String(orgInstallation),
      "--org",
      "nobody",
    ]);
    expect(unknownOrg.code).toBe(1);
    expect(unknownOrg.stderr).toContain('No organization "nobody"');
    const notConfigured = await cli(["installations"], {});
    expect(notConfigured.code).toBe(2);
    expect(notConfigured.stderr).toContain("GitHub is not configured");
    const badId = await cli(["unlink", "--installation", "12abc"]);
    expect(badId.code).toBe(1);
    expect(badId.stderr).toContain("--installation must be the installation's id");
  });
});
