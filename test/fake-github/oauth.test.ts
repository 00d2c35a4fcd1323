/**
 * The fake GitHub's user authorization (the web flow of a GitHub App): the authorize page sends
 * the browser back with a code for the user the test chose, a code is good once and only with the
 * App's client credentials (errors as GitHub gives them: 200 with `error`), the token answers as
 * JSON or as a form, and `GET /user/installations` lists the App's installations the user reaches
 * (validated against GitHub's OpenAPI description).
 */
import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let app: CreatedApp;
let other: CreatedApp;
const CALLBACK = "http://127.0.0.1:1/callback";

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 11 });
  gh.createOrganization("acme");
  gh.createOrganization("globex");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.addOrgMember("acme", "alice", "member");
  app = gh.createApp({ slug: "mainline" });
  other = gh.createApp({ slug: "other" });
  gh.installApp(app.id, { account: "acme" });
  gh.installApp(app.id, { account: "globex" });
  gh.installApp(app.id, { account: "alice" });
  gh.installApp(other.id, { account: "acme" });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

async function authorize(clientId: string, state = "s1"): Promise<Response> {
  const url = new URL(`${gh.url}/login/oauth/authorize`);
  url.searchParams.set("client_id", clientId);
  url.searchParams.set("redirect_uri", CALLBACK);
  url.searchParams.set("state", state);
  return fetch(url, { redirect: "manual" });
}

async function codeFor(login: string): Promise<string> {
  gh.authorizeAs(login);
  const response = await authorize(app.clientId);
  expect(response.status).toBe(302);
  const back = new URL(response.headers.get("location") ?? "");
  expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
  expect(back.searchParams.get("state")).toBe("s1");
  return back.searchParams.get("code") ?? "";
}

async function exchange(
  body: Record<string, string>,
  options: { json?: boolean } = {},
): Promise<Record<string, string>> {
  const json = options.json ?? true;
  const response = await fetch(`${gh.url}/login/oauth/access_token`, {
    method: "POST",
    headers: {
      ...(json ? { accept: "application/json", "content-type": "application/json" } : {}),
      ...(!json ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
    body: json ? JSON.stringify(body) : new URLSearchParams(body).toString(),
  });
  expect(response.status).toBe(200);
  const text = await response.text();
  return json
    ? (JSON.parse(text) as Record<string, string>)
    : Object.fromEntries(new URLSearchParams(text));
}

describe("user authorization (web flow)", () => {
  it("sends a signed-out browser to log in, and refuses an unknown client id", async () => {
    gh.authorizeAs(null);
    const signedOut = await authorize(app.clientId);
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get("location")).toContain("/login?return_to=");
    gh.authorizeAs("alice");
    expect((await authorize("Iv23linope")).status).toBe(404);
  });

  it("exchanges a code once, with the App's credentials only", async () => {
    const code = await codeFor("alice");
    const wrong = await exchange({
      client_id: app.clientId,
      client_secret: other.clientSecret,
      code,
    });
    expect(wrong.error).toBe("incorrect_client_credentials");
    const mismatch = await exchange({
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
      redirect_uri: "http://127.0.0.1:2/elsewhere",
    });
    expect(mismatch.error).toBe("redirect_uri_mismatch");
    const granted = await exchange({
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
      redirect_uri: CALLBACK,
    });
    expect(granted).toMatchObject({ token_type: "bearer", scope: "" });
    expect(granted.access_token).toMatch(/^ghu_[A-Za-z0-9]{36}$/);
    const reused = await exchange({
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
    });
    expect(reused.error).toBe("bad_verification_code");
  });

  it("answers a form when JSON is not asked for", async () => {
    const code = await codeFor("bob");
    const granted = await exchange(
      { client_id: app.clientId, client_secret: app.clientSecret, code },
      { json: false },
    );
    expect(granted.token_type).toBe("bearer");
    expect(granted.access_token).toMatch(/^ghu_/);
  });

  it("lists the App's installations the user reaches, and who the user is", async () => {
    const code = await codeFor("alice");
    const { access_token: token = "" } = await exchange({
      client_id: app.clientId,
      client_secret: app.clientSecret,
      code,
    });
    const octokit = new Octokit({ baseUrl: gh.url, auth: token });
    const user = await octokit.request("GET /user");
    expect(user.data.login).toBe("alice");
    const listed = await octokit.request("GET /user/installations", { per_page: 100 });
    expect(
      listed.data.installations
        .map((i) => (i.account && "login" in i.account ? i.account.login : ""))
        .sort(),
    ).toEqual(["acme", "alice"]);
    expect(listed.data.total_count).toBe(2);
    // A user token that no App issued cannot list installations.
    const plain = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken("alice") });
    await expect(plain.request("GET /user/installations")).rejects.toMatchObject({ status: 403 });
  });
});
