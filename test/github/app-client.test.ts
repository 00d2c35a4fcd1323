/**
 * The App's clients against the fake GitHub: installation tokens minted with the App's JWT, one
 * per installation, reused, created anew before they expire and bounded in number; GitHub's
 * throttling (`retry-after`) honoured and its 5xx retried; Mainline named in the user agent;
 * conditional GETs that cost nothing when nothing changed; and no token, JWT or key in anything
 * the clients log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GitHubApp } from "../../src/providers/github/client.js";
import { startGitHubWorld, type GitHubWorld } from "../helpers/github.js";

let world: GitHubWorld;
let acme: number;
let carol: number;
const logged: unknown[] = [];
let clockOffset = 0;

function newApp(
  options: {
    maxInstallations?: number;
    writeIntervalMs?: number;
    maxRateLimitWaitMs?: number;
  } = {},
): GitHubApp {
  return new GitHubApp({
    appId: world.config.appId,
    privateKey: world.config.privateKey,
    apiUrl: world.config.apiUrl,
    userAgent: "mainline/0.1.0",
    clock: { now: () => Date.now() + clockOffset },
    logger: {
      info: (fields, message) => logged.push({ level: "info", fields, message }),
      warn: (fields, message) => logged.push({ level: "warn", fields, message }),
      error: (fields, message) => logged.push({ level: "error", fields, message }),
    },
    ...options,
  });
}

const minted = (since: number, installationId?: number) =>
  world.gh.requests
    .filter({ operationId: "apps/create-installation-access-token", since })
    .filter((r) => installationId === undefined || r.path.includes(`/${installationId}/`)).length;

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  gh.createUser("carol");
  await gh.createRepository({ owner: "acme-gh", name: "widgets" });
  await gh.createRepository({ owner: "carol", name: "tools" });
  acme = gh.installApp(world.app.id, { account: "acme-gh" }).id;
  carol = gh.installApp(world.app.id, { account: "carol" }).id;
}, 30_000);

afterAll(async () => {
  await world.gh.close();
});

describe("the write lane of an installation", () => {
  /** Creates `count` branches at once through `app`; answers when each reached the fake. */
  async function createBranches(app: GitHubApp, prefix: string, count: number): Promise<number[]> {
    const client = app.installation(acme);
    const head = await client.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "heads/main",
    });
    const mark = world.gh.requests.mark();
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        client.request("POST /repos/{owner}/{repo}/git/refs", {
          owner: "acme-gh",
          repo: "widgets",
          ref: `refs/heads/${prefix}-${i}`,
          sha: head.data.object.sha,
        }),
      ),
    );
    return world.gh.requests
      .filter({ operationId: "git/create-ref", since: mark })
      .map((r) => r.atMs);
  }

  it("spaces writes a second apart by default, as GitHub asks", async () => {
    const at = await createBranches(newApp(), "spaced", 3);
    expect(at).toHaveLength(3);
    for (let i = 1; i < at.length; i++) {
      expect((at[i] ?? 0) - (at[i - 1] ?? 0)).toBeGreaterThanOrEqual(950);
    }
  });

  it("goes at once with an interval of 0 (against a stand-in of GitHub)", async () => {
    const at = await createBranches(newApp({ writeIntervalMs: 0 }), "unspaced", 3);
    expect(at).toHaveLength(3);
    // One second apart would take two; without the lane's spacing three local writes take less.
    expect((at[2] ?? 0) - (at[0] ?? 0)).toBeLessThan(1_900);
  });
});

describe("installation tokens", () => {
  it("are minted with the App's JWT, one per installation, and reused", async () => {
    const app = newApp();
    const mark = world.gh.requests.mark();
    const repositories = async (id: number) =>
      (
        (await app.installation(id).request("GET /installation/repositories")).data as {
          repositories: { full_name: string }[];
        }
      ).repositories.map((r) => r.full_name);
    expect(await repositories(acme)).toEqual(["acme-gh/widgets"]);
    expect(await repositories(acme)).toEqual(["acme-gh/widgets"]);
    expect(await repositories(carol)).toEqual(["carol/tools"]);
    expect(await repositories(carol)).toEqual(["carol/tools"]);
    expect(minted(mark, acme)).toBe(1);
    expect(minted(mark, carol)).toBe(1);
    // Minted with the JWT: the token requests carried the App's credential.
    const tokenRequests = world.gh.requests.filter({
      operationId: "apps/create-installation-access-token",
      since: mark,
    });
    expect(tokenRequests.every((r) => r.credential === "app" && r.appId === world.app.id)).toBe(
      true,
    );
    // The same client each time for an installation.
    expect(app.installation(acme)).toBe(app.installation(acme));
    world.gh.requests.assertNoBadTokens();
  });

  it("are created anew five minutes before they expire, never used after", async () => {
    const app = newApp();
    const mark = world.gh.requests.mark();
    await app.installation(acme).request("GET /installation/repositories");
    clockOffset = 54 * 60_000;
    await app.installation(acme).request("GET /installation/repositories");
    expect(minted(mark, acme)).toBe(1);
    clockOffset = 55 * 60_000 + 1_000;
    await app.installation(acme).request("GET /installation/repositories");
    expect(minted(mark, acme)).toBe(2);
    clockOffset = 0;
    world.gh.requests.assertNoBadTokens();
  });

  it("are kept for a bounded number of installations", async () => {
    const app = newApp({ maxInstallations: 1 });
    const mark = world.gh.requests.mark();
    for (const id of [acme, carol, acme]) {
      await app.installation(id).request("GET /installation/repositories");
    }
    // acme's token went when carol's came: three mints for three requests.
    expect(minted(mark)).toBe(3);
  });
});

describe("GitHub's limits and failures", () => {
  it("waits as long as GitHub's retry-after says on a secondary rate limit, then goes on", async () => {
    const app = newApp();
    await app.installation(acme).request("GET /installation/repositories");
    const rule = world.gh.addFault(
      world.gh.fault.secondaryRateLimit("apps/list-repos-accessible-to-installation", 1, {
        times: 1,
      }),
    );
    const mark = world.gh.requests.mark();
    const started = performance.now();
    const answer = await app.installation(acme).request("GET /installation/repositories");
    const waited = performance.now() - started;
    expect(answer.status).toBe(200);
    expect(world.gh.faults.fired(rule)).toBe(1);
    expect(
      world.gh.requests.count({
        operationId: "apps/list-repos-accessible-to-installation",
        since: mark,
      }),
    ).toBe(2);
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "github: secondary rate limit reached",
        fields: expect.objectContaining({ retryAfter: 1, retrying: true }) as unknown,
      }),
    );
    world.gh.faults.clear();
  });

  it("holds every request of the installation after a secondary rate limit until retry-after", async () => {
    const app = newApp({ writeIntervalMs: 0 });
    const client = app.installation(acme);
    const read = () => client.request("GET /installation/repositories");
    await read();
    const rule = world.gh.addFault(
      world.gh.fault.secondaryRateLimit("git/create-ref", 2, { times: 1 }),
    );
    const head = await client.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "heads/main",
    });
    const mark = world.gh.requests.mark();
    // A write is refused; reads and other writes asked for meanwhile wait, then all go on.
    const write = client.request("POST /repos/{owner}/{repo}/git/refs", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "refs/heads/held-after-limit",
      sha: head.data.object.sha,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(app.rateLimit(acme)).toMatchObject({ kind: "secondary" });
    const others = [read(), read()];
    // Another installation is not held.
    await app.installation(carol).request("GET /installation/repositories");
    expect(app.rateLimit(carol)).toBeUndefined();
    await Promise.all([write, ...others]);
    expect(world.gh.faults.fired(rule)).toBe(1);
    const made = world.gh.requests.filter({ since: mark }).filter((r) => r.installationId === acme);
    const refused = made.find((r) => r.status === 403);
    expect(refused).toBeDefined();
    const after = made.filter((r) => r.seq > (refused?.seq ?? 0));
    // The refused write again and both reads, none before retry-after (2 s) was over.
    expect(after.length).toBeGreaterThanOrEqual(3);
    for (const request of after) {
      expect(request.atMs - (refused?.atMs ?? 0)).toBeGreaterThanOrEqual(1_950);
    }
    expect(app.rateLimit(acme)).toBeUndefined();
    world.gh.faults.clear();
  });

  it("answers at once, sending nothing, while a rate limit longer than it waits lasts", async () => {
    const app = newApp({ writeIntervalMs: 0, maxRateLimitWaitMs: 1_000 });
    const client = app.installation(acme);
    await client.request("GET /installation/repositories");
    world.gh.addFault(
      world.gh.fault.secondaryRateLimit("apps/list-repos-accessible-to-installation", 30, {
        times: 1,
      }),
    );
    await expect(client.request("GET /installation/repositories")).rejects.toMatchObject({
      status: 403,
    });
    const mark = world.gh.requests.mark();
    const started = performance.now();
    await expect(
      client.request("GET /repos/{owner}/{repo}", { owner: "acme-gh", repo: "widgets" }),
    ).rejects.toMatchObject({ status: 403 });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(world.gh.requests.count({ since: mark })).toBe(0);
    expect(app.rateLimit(acme)?.until).toBeGreaterThan(Date.now() + 25_000);
    world.gh.faults.clear();
  });

  it("does not repeat a merge GitHub answered with a 5xx (its caller reads first)", async () => {
    const app = newApp({ writeIntervalMs: 0 });
    const client = app.installation(acme);
    await world.gh.commit("acme-gh/widgets", {
      branch: "ghost-head",
      from: "main",
      files: { "ghost.txt": "g\n" },
      by: "carol",
    });
    const head = await client.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "heads/main",
    });
    await client.request("POST /repos/{owner}/{repo}/git/refs", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "refs/heads/ghost-base",
      sha: head.data.object.sha,
    });
    world.gh.addFault(world.gh.fault.succeedsButErrors("repos/merge", 502));
    const mark = world.gh.requests.mark();
    await expect(
      client.request("POST /repos/{owner}/{repo}/merges", {
        owner: "acme-gh",
        repo: "widgets",
        base: "ghost-base",
        head: "ghost-head",
      }),
    ).rejects.toMatchObject({ status: 502 });
    expect(world.gh.requests.count({ operationId: "repos/merge", since: mark })).toBe(1);
    // It was made: the branch moved.
    expect(await world.gh.readRef("acme-gh/widgets", "heads/ghost-base")).not.toBe(
      head.data.object.sha,
    );
    world.gh.faults.clear();
  });

  it("retries GitHub's 5xx, and not its 4xx", async () => {
    const app = newApp();
    await app.installation(acme).request("GET /installation/repositories");
    world.gh.addFault(
      world.gh.fault.serverError("apps/list-repos-accessible-to-installation", 502, { times: 2 }),
    );
    const mark = world.gh.requests.mark();
    const answer = await app.installation(acme).request("GET /installation/repositories");
    expect(answer.status).toBe(200);
    expect(
      world.gh.requests.count({
        operationId: "apps/list-repos-accessible-to-installation",
        since: mark,
      }),
    ).toBe(3);
    world.gh.faults.clear();

    const before = world.gh.requests.mark();
    await expect(
      app
        .installation(acme)
        .request("GET /repos/{owner}/{repo}", { owner: "acme-gh", repo: "nowhere" }),
    ).rejects.toMatchObject({ status: 404 });
    expect(world.gh.requests.count({ since: before })).toBe(1);
  }, 20_000);

  it("recovers when GitHub's clock and ours disagree about the JWT", async () => {
    const app = newApp();
    world.gh.setClockSkew(-300);
    try {
      const answer = await app.app.request("GET /app");
      expect((answer.data as { id: number }).id).toBe(world.app.id);
    } finally {
      world.gh.setClockSkew(0);
    }
  });
});

describe("requests", () => {
  it("name Mainline and its version in their user agent", async () => {
    const agents: string[] = [];
    world.gh.addFault({
      operation: "*",
      name: "observe the user agent",
      when: (ctx) => {
        agents.push(String(ctx.headers["user-agent"]));
        return false;
      },
      effect: { kind: "delay", ms: 0 },
    });
    await newApp().installation(carol).request("GET /installation/repositories");
    world.gh.faults.clear();
    expect(agents.length).toBeGreaterThanOrEqual(2);
    for (const agent of agents) expect(agent).toMatch(/^mainline\/0\.1\.0 /);
  });

  it("cost nothing when nothing changed (conditional GETs), and see changes", async () => {
    const app = newApp();
    const first = await app.conditionalGet<{ total_count: number }>(
      acme,
      "GET /installation/repositories",
    );
    expect(first).toMatchObject({ changed: true, data: { total_count: 1 } });
    const mark = world.gh.requests.mark();
    const second = await app.conditionalGet<{ total_count: number }>(
      acme,
      "GET /installation/repositories",
    );
    expect(second).toMatchObject({ changed: false, data: { total_count: 1 } });
    expect(world.gh.requests.filter({ since: mark }).map((r) => r.status)).toEqual([304]);
    // Per installation: another installation's same URL is another entry.
    expect((await app.conditionalGet(carol, "GET /installation/repositories")).changed).toBe(true);
    await world.gh.createRepository({ owner: "acme-gh", name: "gadgets" });
    const third = await app.conditionalGet<{ total_count: number }>(
      acme,
      "GET /installation/repositories",
    );
    expect(third).toMatchObject({ changed: true, data: { total_count: 2 } });
  });
});

describe("what the clients log", () => {
  it("holds no token, JWT or key", async () => {
    // A refused token too: auth-app logs its retries.
    const app = newApp();
    world.gh.addFault(world.gh.fault.unauthorizedAfterMint(5_000, { times: 1 }));
    await app.installation(carol).request("GET /installation/repositories");
    world.gh.faults.clear();
    const text = JSON.stringify(logged);
    expect(logged.length).toBeGreaterThan(0);
    for (const token of world.gh.world.tokens.keys()) expect(text).not.toContain(token);
    expect(text).not.toMatch(/\beyJ[A-Za-z0-9_-]{10,}\.eyJ/);
    expect(text).not.toMatch(/PRIVATE KEY|ghs_[A-Za-z0-9]{8}/);
    for (const line of world.app.privateKey.split("\n").filter((l) => l.length > 40)) {
      expect(text).not.toContain(line);
    }
  }, 20_000);
});
