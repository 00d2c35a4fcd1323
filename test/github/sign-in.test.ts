/**
 * "Sign in with GitHub" (ADR 0029) through a real server against the fake GitHub: the OAuth web
 * flow (state checked, a code good once), the installations the user reaches deciding the
 * organizations they may enter (one: a session; several: a chooser; none: an explanation and
 * nothing created), never another organization's, and a session that ends with its
 * installation's link. (The log's side: sign-in-process.test.ts.)
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGitHubConfig } from "../../src/config.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let world: GitHubWorld;
let server: TestServer;
const installations = { acme: 0, globex: 0, solo: 0 };

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh, app } = world;
  const config = loadGitHubConfig({
    ...world.env,
    MAINLINE_GITHUB_CLIENT_ID: app.clientId,
    MAINLINE_GITHUB_CLIENT_SECRET: app.clientSecret,
  });
  if (!config?.oauth) throw new Error("the OAuth credentials did not load");
  world.config = config;
  for (const org of ["acme-gh", "globex-gh", "initech-gh"]) gh.createOrganization(org);
  for (const login of ["alice", "bob", "carol", "dave"]) gh.createUser(login);
  gh.addOrgMember("acme-gh", "alice", "admin");
  gh.addOrgMember("acme-gh", "bob", "member");
  gh.addOrgMember("globex-gh", "bob", "member");
  gh.addOrgMember("initech-gh", "carol", "member");
  server = await startGitHubServer(world);
  await server.services.organizations.createOrganizationWithToken("globex");
  installations.acme = gh.installApp(app.id, { account: "acme-gh" }).id;
  installations.globex = gh.installApp(app.id, { account: "globex-gh" }).id;
  // Installed on initech-gh, but never linked here.
  gh.installApp(app.id, { account: "initech-gh" });
  await settle(world, server);
  const github = server.services.github;
  if (!github) throw new Error("no GitHub provider");
  await github.installations.linkAsOperator(installations.acme, "acme");
  await github.installations.linkAsOperator(installations.globex, "globex");
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

interface Step {
  status: number;
  location: string;
  cookies: string[];
  text: string;
}

async function get(url: string, cookie?: string): Promise<Step> {
  const response = await fetch(url, {
    redirect: "manual",
    headers: cookie ? { cookie } : {},
  });
  return {
    status: response.status,
    location: response.headers.get("location") ?? "",
    cookies: response.headers.getSetCookie(),
    text: await response.text(),
  };
}

function cookieOf(step: Step, name: string): string | undefined {
  const found = step.cookies.find((c) => c.startsWith(`${name}=`));
  const value = found?.split(";")[0];
  return value === `${name}=` ? undefined : value;
}

/** Starts a sign-in, and follows GitHub's authorize page back to the callback's URL. */
async function authorize(login: string | null, next?: string) {
  world.gh.authorizeAs(login);
  const start = await get(
    `${server.url}/sign-in/github${next ? `?next=${encodeURIComponent(next)}` : ""}`,
  );
  expect(start.status).toBe(303);
  expect(start.location.startsWith(`${world.gh.url}/login/oauth/authorize?`)).toBe(true);
  const stateCookie = cookieOf(start, "mainline_github_state");
  expect(stateCookie).toBeDefined();
  expect(start.cookies.join()).toContain("HttpOnly");
  const github = await get(start.location);
  expect(github.status).toBe(302);
  return { callback: github.location, stateCookie: stateCookie ?? "" };
}

async function sessionCount(): Promise<number> {
  const { rows } = await sql<{
    n: number | string;
  }>`select count(*) as n from web_sessions`.execute(server.database.handle.db);
  return Number(rows[0]?.n ?? 0);
}

describe("sign in with GitHub", () => {
  it("offers the button on the sign-in page", async () => {
    const page = await get(`${server.url}/sign-in`);
    expect(page.text).toContain('href="/sign-in/github"');
  });

  it("one linked installation: a session of that organization, and its home page", async () => {
    const { callback, stateCookie } = await authorize("alice");
    expect(callback.startsWith(`${server.url}/sign-in/github/callback?`)).toBe(true);
    const landed = await get(callback, stateCookie);
    expect(landed.status, landed.text).toBe(303);
    expect(landed.location).toBe("/acme");
    const session = cookieOf(landed, "mainline_session");
    expect(session).toBeDefined();
    const home = await get(`${server.url}/acme`, session);
    expect(home.status).toBe(200);
    expect(home.text).toContain("acme");
    // Never another organization's pages.
    const other = await get(`${server.url}/globex`, session);
    expect(other.status).not.toBe(200);
    expect(other.text).not.toContain("globex</h1>");
    const rows = await server.database.handle.db
      .selectFrom("webSessions")
      .select(["tokenId", "githubLogin", "githubInstallationId"])
      .where("githubLogin", "=", "alice")
      .execute();
    expect(rows).toEqual([
      { tokenId: null, githubLogin: "alice", githubInstallationId: installations.acme },
    ]);
  });

  it("refuses a callback whose state is not this browser's, and creates nothing", async () => {
    const before = await sessionCount();
    const { callback } = await authorize("alice");
    const noCookie = await get(callback);
    expect(noCookie.status).toBe(403);
    const other = await authorize("alice");
    const mismatched = await get(callback, other.stateCookie);
    expect(mismatched.status).toBe(403);
    expect(mismatched.text).toContain("did not start from this browser");
    expect(await sessionCount()).toBe(before);
  });

  it("refuses a code used twice", async () => {
    const { callback, stateCookie } = await authorize("alice");
    expect((await get(callback, stateCookie)).status).toBe(303);
    const before = await sessionCount();
    const again = await get(callback, stateCookie);
    expect(again.status).toBe(403);
    expect(again.text).toContain("used already or has expired");
    expect(await sessionCount()).toBe(before);
  });

  it("several organizations: a chooser whose signed choice makes the session", async () => {
    const { callback, stateCookie } = await authorize("bob");
    const chooser = await get(callback, stateCookie);
    expect(chooser.status).toBe(200);
    expect(chooser.text).toContain("Choose an organization");
    const values = [...chooser.text.matchAll(/name="choice" value="([^"]+)"/g)].map((m) => m[1]);
    expect(values).toHaveLength(2);
    const post = (choice: string, cookie: string) =>
      fetch(`${server.url}/sign-in/github/choose`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie },
        body: new URLSearchParams({ choice }).toString(),
      });
    // A choice forged or replayed from another browser is refused.
    const forged = `${Buffer.from("x acme 1 2 bob 0").toString("base64url")}.abc`;
    expect((await post(forged, stateCookie)).status).toBe(403);
    const elsewhere = await authorize("bob");
    expect((await post(values[1] ?? "", elsewhere.stateCookie)).status).toBe(403);
    const chosen = await post(values[1] ?? "", stateCookie);
    expect(chosen.status).toBe(303);
    expect(chosen.headers.get("location")).toBe("/globex");
  });

  it("no linked installation: an explanation, and no session", async () => {
    const before = await sessionCount();
    for (const login of ["carol", "dave"]) {
      const { callback, stateCookie } = await authorize(login);
      const page = await get(callback, stateCookie);
      expect(page.status).toBe(403);
      expect(page.text).toContain("No organization to enter");
      expect(page.text).toContain("linkInstallation");
    }
    expect(await sessionCount()).toBe(before);
  });

  it("keeps next when it is a path of this server", async () => {
    const { callback, stateCookie } = await authorize("alice", "/acme/flaky-tests");
    const landed = await get(callback, stateCookie);
    expect(landed.location).toBe("/acme/flaky-tests");
    const { callback: c2, stateCookie: s2 } = await authorize("alice", "//evil.example/x");
    expect((await get(c2, s2)).location).toBe("/acme");
  });

  it("ends the session once the installation is unlinked", async () => {
    const { callback, stateCookie } = await authorize("alice");
    const session = cookieOf(await get(callback, stateCookie), "mainline_session");
    expect((await get(`${server.url}/acme`, session)).status).toBe(200);
    await server.services.github?.installations.unlink(server.organizationId, installations.acme);
    const after = await get(`${server.url}/acme`, session);
    expect(after.status).toBe(303);
    expect(after.location).toContain("/sign-in");
    const listed = await server.services.sessions.list("acme");
    expect(listed.filter((s) => s.githubLogin === "alice").map((s) => s.state)).toContain(
      "installation_unlinked",
    );
  });

  it("says so when the user declines on GitHub, or GitHub fails, and creates nothing", async () => {
    const before = await sessionCount();
    const { callback, stateCookie } = await authorize("alice");
    const state = new URL(callback).searchParams.get("state") ?? "";
    const declined = await get(
      `${server.url}/sign-in/github/callback?error=access_denied&state=${state}`,
      stateCookie,
    );
    expect(declined.status).toBe(403);
    expect(declined.text).toContain("did not authorize");
    const rule = world.gh.addFault(
      world.gh.fault.serverError("apps/list-installations-for-authenticated-user", 503),
    );
    const again = await authorize("alice");
    const failed = await get(again.callback, again.stateCookie);
    world.gh.faults.remove(rule);
    expect(failed.status).toBe(502);
    expect(failed.text).toContain("GitHub answered 503");
    expect(await sessionCount()).toBe(before);
  });
});

describe("a server without the App's OAuth credentials", () => {
  it("shows no GitHub button and answers 404 for the GitHub sign-in", async () => {
    const plain = await startTestServer();
    try {
      const page = await get(`${plain.url}/sign-in`);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain("sign-in-github");
      const start = await get(`${plain.url}/sign-in/github`);
      expect(start.status).toBe(404);
      expect(start.text).toContain("MAINLINE_GITHUB_CLIENT_ID");
    } finally {
      await plain.close();
    }
  });
});
