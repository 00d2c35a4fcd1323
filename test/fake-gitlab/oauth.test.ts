import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { gitIn, type Json } from "../helpers/fake-gitlab/client.js";
import { fault, FakeGitLab } from "../helpers/fake-gitlab/index.js";

/**
 * The fake GitLab's OAuth 2.0 provider over real HTTP: the authorization-code flow with PKCE,
 * Doorkeeper's error answers, refresh tokens rotated (the old pair dead at once), expiry, revocation,
 * OAuth access tokens on the API and on git, and faults on `/oauth/token`.
 */

const P = "acme/oauth";
const CALLBACK = "https://mainline.example.com/gitlab/oauth/callback";
const OTHER_CALLBACK = "https://mainline.example.com/other/callback";
const INVALID_GRANT = {
  error: "invalid_grant",
  error_description:
    "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.",
};
const INVALID_CLIENT = {
  error: "invalid_client",
  error_description:
    "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.",
};

let gl: FakeGitLab;
let work: string;
let app: { id: number; applicationId: string; secret: string };
let cookie: string;

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 31 });
  work = mkdtempSync(join(tmpdir(), "fake-gitlab-oauth-"));
  gl.createUser("alice");
  await gl.createProject({ path: P, files: { "README.md": "oauth\n" } });
  gl.addMember(P, "alice", 30);
  app = gl.createOAuthApplication({
    name: "Mainline",
    redirectUri: `${CALLBACK}\n${OTHER_CALLBACK}`,
    scopes: ["api", "write_repository"],
  });
  cookie = gl.browserCookie("alice");
});

afterEach(() => {
  gl.faults.clear();
});

afterAll(async () => {
  await gl.close();
  rmSync(work, { recursive: true, force: true });
});

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

/** GET /oauth/authorize as a browser (signed in unless `cookie: null`), redirects not followed. */
async function authorize(
  params: Record<string, string>,
  options: { cookie?: string | null; method?: string } = {},
): Promise<{ status: number; location: string; text: string }> {
  const url = new URL(`${gl.url}/oauth/authorize`);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const c = options.cookie === undefined ? cookie : options.cookie;
  const answer = await fetch(url, {
    method: options.method ?? "GET",
    redirect: "manual",
    headers: c === null ? {} : { cookie: c },
  });
  return {
    status: answer.status,
    location: answer.headers.get("location") ?? "",
    text: await answer.text(),
  };
}

const codeParams = (challenge: string, extra: Record<string, string> = {}) => ({
  client_id: app.applicationId,
  redirect_uri: CALLBACK,
  response_type: "code",
  state: "s-1",
  scope: "api write_repository",
  code_challenge: challenge,
  code_challenge_method: "S256",
  ...extra,
});

/** An authorization code for alice (with its PKCE verifier). */
async function code(
  extra: Record<string, string> = {},
): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const answer = await authorize(codeParams(challenge, extra));
  expect(answer.status).toBe(302);
  const location = new URL(answer.location);
  expect(location.searchParams.get("state")).toBe("s-1");
  return { code: location.searchParams.get("code") ?? "", verifier };
}

interface Answer {
  status: number;
  body: Json;
  headers: Headers;
  text: string;
}

/** POST form-urlencoded (or JSON) to an `/oauth/…` endpoint. */
async function post(
  path: string,
  params: Record<string, string>,
  options: { json?: boolean; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const answer = await fetch(`${gl.url}${path}`, {
    method: "POST",
    headers: {
      "content-type":
        options.json === true ? "application/json" : "application/x-www-form-urlencoded",
      ...options.headers,
    },
    body: options.json === true ? JSON.stringify(params) : new URLSearchParams(params),
  });
  const text = await answer.text();
  let body: Json = {};
  try {
    body = JSON.parse(text) as Json;
  } catch {
    // HTML
  }
  return { status: answer.status, body, headers: answer.headers, text };
}

const secretParams = (): Record<string, string> => ({
  client_id: app.applicationId,
  client_secret: app.secret,
});

async function exchange(c: { code: string; verifier: string }, extra: Record<string, string> = {}) {
  return post("/oauth/token", {
    ...secretParams(),
    grant_type: "authorization_code",
    code: c.code,
    redirect_uri: CALLBACK,
    code_verifier: c.verifier,
    ...extra,
  });
}

async function tokens(): Promise<{ access: string; refresh: string }> {
  const answer = await exchange(await code());
  expect(answer.status, answer.text).toBe(200);
  return {
    access: answer.body.access_token as string,
    refresh: answer.body.refresh_token as string,
  };
}

const refresh = (refreshToken: string, extra: Record<string, string> = {}) =>
  post("/oauth/token", {
    ...secretParams(),
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    redirect_uri: CALLBACK,
    ...extra,
  });

async function user(headers: Record<string, string>, query = ""): Promise<Answer> {
  const answer = await fetch(`${gl.apiUrl}/user${query}`, { headers });
  const text = await answer.text();
  return { status: answer.status, body: JSON.parse(text) as Json, headers: answer.headers, text };
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("the authorization code flow", () => {
  it("sends a signed-out browser to sign in", async () => {
    const answer = await authorize(codeParams(pkce().challenge), { cookie: null });
    expect(answer.status).toBe(302);
    expect(answer.location).toBe(`${gl.url}/users/sign_in`);
  });

  it("issues a code for PKCE S256 and a Bearer pair for it, usable on the API", async () => {
    const before = gl.oauthGrants.length;
    const c = await code();
    expect(c.code).toMatch(/^[0-9a-f]{64}$/);
    const answer = await exchange(c);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(
      ["access_token", "created_at", "expires_in", "refresh_token", "scope", "token_type"].sort(),
    );
    expect(answer.body).toMatchObject({
      token_type: "Bearer",
      expires_in: 7200,
      scope: "api write_repository",
    });
    expect(answer.body.access_token).toMatch(/^[0-9a-f]{64}$/);
    expect(answer.body.refresh_token).toMatch(/^[0-9a-f]{64}$/);
    expect(Math.abs((answer.body.created_at as number) - Date.now() / 1000)).toBeLessThan(5);
    expect(answer.headers.get("cache-control")).toBe("no-store, no-cache");
    expect(gl.oauthGrants.slice(before)).toEqual([
      expect.objectContaining({
        grantType: "authorization_code",
        applicationId: app.applicationId,
        user: "alice",
      }),
    ]);
    const access = answer.body.access_token as string;
    expect(gl.oauthAccessTokens("alice")).toContain(access);

    // Bearer and `access_token` work; PRIVATE-TOKEN and `private_token` do not take OAuth tokens.
    expect((await user(bearer(access))).body.username).toBe("alice");
    expect((await user({}, `?access_token=${access}`)).status).toBe(200);
    const unauthorized = { status: 401, body: { message: "401 Unauthorized" } };
    expect(await user({ "private-token": access })).toMatchObject(unauthorized);
    expect(await user({}, `?private_token=${access}`)).toMatchObject(unauthorized);
    const self = await fetch(`${gl.apiUrl}/personal_access_tokens/self`, {
      headers: bearer(access),
    });
    expect(self.status).toBe(404);
    expect(await self.json()).toEqual({ message: "404 Not Found" });

    const info = await fetch(`${gl.url}/oauth/token/info`, { headers: bearer(access) });
    expect(await info.json()).toMatchObject({
      resource_owner_id: gl.world.user("alice").id,
      scope: ["api", "write_repository"],
      scopes: ["api", "write_repository"],
      application: { uid: app.applicationId },
    });
    const bad = await fetch(`${gl.url}/oauth/token/info?access_token=nope`);
    expect(bad.status).toBe(401);
    expect(await bad.json()).toEqual({
      error: "invalid_token",
      error_description: "The access token is invalid",
      state: "unauthorized",
    });
  });

  it("checks the PKCE verifier; a code is single use and expires after 10 minutes", async () => {
    const c = await code();
    expect(await exchange(c, { code_verifier: pkce().verifier })).toMatchObject({
      status: 400,
      body: INVALID_GRANT,
    });
    const missing = await exchange({ code: c.code, verifier: "" });
    expect(missing).toMatchObject({
      status: 400,
      body: {
        error: "invalid_request",
        error_description: "Missing required parameter: code_verifier.",
      },
    });
    // A failed attempt does not use the code up.
    expect((await exchange(c)).status).toBe(200);
    expect(await exchange(c)).toMatchObject({ status: 400, body: INVALID_GRANT });

    const late = await code();
    gl.expireOAuthCodes();
    expect(await exchange(late)).toMatchObject({ status: 400, body: INVALID_GRANT });

    // `plain` and no PKCE at all are GitLab's too (JSON bodies as well).
    const plain = await authorize(codeParams("a".repeat(43), { code_challenge_method: "plain" }));
    const plainCode = new URL(plain.location).searchParams.get("code") ?? "";
    expect((await exchange({ code: plainCode, verifier: "a".repeat(43) })).status).toBe(200);
    const none = await authorize({
      ...codeParams(""),
      code_challenge: "",
      code_challenge_method: "",
    });
    const noneCode = new URL(none.location).searchParams.get("code") ?? "";
    const answer = await post(
      "/oauth/token",
      {
        ...secretParams(),
        grant_type: "authorization_code",
        code: noneCode,
        redirect_uri: CALLBACK,
      },
      { json: true },
    );
    expect(answer.status).toBe(200);
  });

  it("never redirects to an unregistered URI; the token request repeats the one used", async () => {
    const { challenge } = pkce();
    const page = await authorize(
      codeParams(challenge, { redirect_uri: "https://evil.example/cb" }),
    );
    expect(page.status).toBe(200);
    expect(page.location).toBe("");
    expect(page.text).toContain("An error has occurred");
    expect(page.text).toContain("The redirect URI included is not valid.");
    const unknown = await authorize(codeParams(challenge, { client_id: "f".repeat(64) }));
    expect(unknown.status).toBe(200);
    expect(unknown.text).toContain(
      "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.",
    );

    // The second registered URI is one too.
    const other = await code({ redirect_uri: OTHER_CALLBACK });
    expect(await exchange(other)).toMatchObject({ status: 400, body: INVALID_GRANT });
    expect((await exchange(other, { redirect_uri: OTHER_CALLBACK })).status).toBe(200);
    const c = await code();
    expect(await exchange(c, { redirect_uri: "" })).toMatchObject({
      status: 400,
      body: {
        error: "invalid_request",
        error_description: "Missing required parameter: redirect_uri.",
      },
    });
  });

  it("authenticates the client: wrong secrets are 401 invalid_client; Basic works; public clients need none", async () => {
    const c = await code();
    const wrong = await exchange(c, { client_secret: `gloas-${"0".repeat(64)}` });
    expect(wrong).toMatchObject({ status: 401, body: INVALID_CLIENT });
    expect(wrong.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="Doorkeeper", error="invalid_client"/,
    );
    expect(await exchange(c, { client_secret: "" })).toMatchObject({
      status: 401,
      body: INVALID_CLIENT,
    });
    const basic = Buffer.from(`${app.applicationId}:${app.secret}`).toString("base64");
    const viaBasic = await post(
      "/oauth/token",
      {
        grant_type: "authorization_code",
        code: c.code,
        redirect_uri: CALLBACK,
        code_verifier: c.verifier,
      },
      { headers: { authorization: `Basic ${basic}` } },
    );
    expect(viaBasic.status).toBe(200);

    const cli = gl.createOAuthApplication({
      name: "CLI",
      redirectUri: "http://127.0.0.1:7777/callback",
      scopes: ["api"],
      confidential: false,
    });
    const { verifier, challenge } = pkce();
    const answer = await authorize({
      ...codeParams(challenge),
      client_id: cli.applicationId,
      // A loopback redirect URI matches on any port (RFC 8252).
      redirect_uri: "http://127.0.0.1:51234/callback",
      scope: "api",
    });
    const cliCode = new URL(answer.location).searchParams.get("code") ?? "";
    const pair = await post("/oauth/token", {
      client_id: cli.applicationId,
      grant_type: "authorization_code",
      code: cliCode,
      redirect_uri: "http://127.0.0.1:51234/callback",
      code_verifier: verifier,
    });
    expect(pair).toMatchObject({ status: 200, body: { scope: "api" } });
  });

  it("denies, refuses unknown scopes and response types as GitLab does", async () => {
    const { challenge } = pkce();
    const denied = await authorize(codeParams(challenge, { fake_decision: "deny" }));
    expect(denied.status).toBe(302);
    expect(denied.location).toBe(
      `${CALLBACK}?error=access_denied&error_description=The+resource+owner+or+authorization+server+denied+the+request.&state=s-1`,
    );
    // GitLab's GET renders its error page for these; the consent form's POST redirects.
    const scope = await authorize(codeParams(challenge, { scope: "api sudo" }));
    expect(scope.status).toBe(200);
    expect(scope.text).toContain("The requested scope is invalid, unknown, or malformed.");
    const posted = await authorize(codeParams(challenge, { scope: "api sudo" }), {
      method: "POST",
    });
    expect(posted.status).toBe(302);
    expect(posted.location).toBe(
      `${CALLBACK}?error=invalid_scope&error_description=The+requested+scope+is+invalid%2C+unknown%2C+or+malformed.&state=s-1`,
    );
    const type = await authorize(codeParams(challenge, { response_type: "token" }));
    expect(type.text).toContain("The authorization server does not support this response type.");
    // Without `scope`: GitLab's default scopes (`api`) that the application has.
    const { verifier, challenge: c2 } = pkce();
    const noScope = Object.fromEntries(
      Object.entries(codeParams(c2)).filter(([k]) => k !== "scope"),
    );
    const defaulted = await authorize(noScope);
    const defaultCode = new URL(defaulted.location).searchParams.get("code") ?? "";
    const pair = await exchange({ code: defaultCode, verifier });
    expect(pair).toMatchObject({ status: 200, body: { scope: "api" } });
  });

  it("answers unknown and missing grant types as Doorkeeper does", async () => {
    expect(await post("/oauth/token", { ...secretParams(), grant_type: "implicit" })).toMatchObject(
      {
        status: 400,
        body: {
          error: "unsupported_grant_type",
          error_description:
            "The authorization grant type is not supported by the authorization server.",
        },
      },
    );
    expect(await post("/oauth/token", secretParams())).toMatchObject({
      status: 400,
      body: {
        error: "invalid_request",
        error_description: "Missing required parameter: grant_type.",
      },
    });
  });
});

describe("access tokens and refresh tokens", () => {
  it("rotates the pair on refresh: the old refresh and access tokens stop working at once", async () => {
    const first = await tokens();
    const before = gl.oauthGrants.filter((g) => g.grantType === "refresh_token").length;
    expect(await refresh(first.refresh, { client_secret: "wrong" })).toMatchObject({
      status: 401,
      body: INVALID_CLIENT,
    });
    const renewed = await refresh(first.refresh);
    expect(renewed.status).toBe(200);
    expect(renewed.body.scope).toBe("api write_repository");
    expect(renewed.body.access_token).not.toBe(first.access);
    expect(gl.oauthGrants.filter((g) => g.grantType === "refresh_token").length).toBe(before + 1);
    expect(await refresh(first.refresh)).toMatchObject({ status: 400, body: INVALID_GRANT });
    const old = await user(bearer(first.access));
    expect(old).toMatchObject({
      status: 401,
      body: {
        error: "invalid_token",
        error_description: "Token was revoked. You have to re-authorize from the user.",
      },
    });
    expect((await user(bearer(renewed.body.access_token as string))).status).toBe(200);
    // Without client credentials the refresh token is not the caller's.
    const { refresh_token: next } = renewed.body as { refresh_token: string };
    expect(
      await post("/oauth/token", { grant_type: "refresh_token", refresh_token: next }),
    ).toMatchObject({
      status: 400,
      body: INVALID_GRANT,
    });
  });

  it("refuses an expired access token with GitLab's body and header; its refresh token still works", async () => {
    const pair = await tokens();
    gl.expireOAuthTokens("alice");
    const expired = await user(bearer(pair.access));
    const description = "Token is expired. You can either do re-authorization or token refresh.";
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: "invalid_token", error_description: description });
    expect(expired.headers.get("www-authenticate")).toBe(
      `Bearer realm="", error="invalid_token", error_description="${description}"`,
    );
    expect((await refresh(pair.refresh)).status).toBe(200);

    // `oauthTokenTtlSeconds`: tokens that expire by themselves.
    const short = await FakeGitLab.start({ seed: 32, oauthTokenTtlSeconds: 1 });
    try {
      short.createUser("bob");
      const shortApp = short.createOAuthApplication({
        name: "x",
        redirectUri: CALLBACK,
        scopes: ["api"],
      });
      const { verifier, challenge } = pkce();
      const url = new URL(`${short.url}/oauth/authorize`);
      for (const [k, v] of Object.entries({
        ...codeParams(challenge),
        client_id: shortApp.applicationId,
        scope: "api",
      }))
        url.searchParams.set(k, v);
      const got = await fetch(url, {
        redirect: "manual",
        headers: { cookie: short.browserCookie("bob") },
      });
      const shortCode = new URL(got.headers.get("location") ?? "").searchParams.get("code") ?? "";
      const issued = await fetch(`${short.url}/oauth/token`, {
        method: "POST",
        body: new URLSearchParams({
          client_id: shortApp.applicationId,
          client_secret: shortApp.secret,
          grant_type: "authorization_code",
          code: shortCode,
          redirect_uri: CALLBACK,
          code_verifier: verifier,
        }),
      });
      const body = (await issued.json()) as { access_token: string; expires_in: number };
      expect(body.expires_in).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const late = await fetch(`${short.apiUrl}/user`, { headers: bearer(body.access_token) });
      expect(late.status).toBe(401);
    } finally {
      await short.close();
    }
  });

  it("clones and pushes over HTTP with oauth2:<access token>", async () => {
    const pair = await tokens();
    const dir = join(work, "clone");
    expect((await gitIn(work, ["clone", "--quiet", gl.gitUrl(P, pair.access), dir])).code).toBe(0);
    writeFileSync(join(dir, "o.txt"), "o\n");
    await gitIn(dir, ["add", "o.txt"]);
    await gitIn(dir, ["commit", "--quiet", "-m", "o"]);
    const push = await gitIn(dir, ["push", "--quiet", "origin", "HEAD:refs/heads/feature/oauth"]);
    expect(push.code, push.stderr).toBe(0);
    expect(await gl.branchHead(P, "feature/oauth")).not.toBeNull();
    await gl.settle();
    // Refreshed away: git is refused too.
    expect((await refresh(pair.refresh)).status).toBe(200);
    const refused = await gitIn(work, [
      "clone",
      "--quiet",
      gl.gitUrl(P, pair.access),
      join(work, "no"),
    ]);
    expect(refused.code).not.toBe(0);
  });

  it("issues the pair when GitLab did the refresh but answered 502; the old refresh token is then dead", async () => {
    const pair = await tokens();
    const refreshes = (): number =>
      gl.oauthGrants.filter((g) => g.grantType === "refresh_token").length;
    const before = refreshes();
    const since = gl.requestLog.length;
    const rule = gl.faults.add(fault.didThen5xx({ method: "POST", path: "/oauth/token" }));
    const lost = await refresh(pair.refresh);
    expect(lost.status).toBe(502);
    expect(lost.text).toContain("<html>");
    expect(gl.faults.fired(rule)).toBe(1);
    expect(refreshes()).toBe(before + 1);
    expect(await refresh(pair.refresh)).toMatchObject({ status: 400, body: INVALID_GRANT });
    expect((await user(bearer(pair.access))).status).toBe(401);
    expect(gl.requestLog.slice(since).map((r) => [r.method, r.route, r.status, r.fault])).toEqual([
      ["POST", "/oauth/token", 502, "502 after success"],
      ["POST", "/oauth/token", 400, null],
      ["GET", "/user", 401, null],
    ]);
    // Faults that answer instead leave the refresh token as it was.
    const next = await tokens();
    gl.faults.add(fault.serverError(503, { method: "POST", path: "/oauth/token" }));
    expect((await refresh(next.refresh)).status).toBe(503);
    expect((await refresh(next.refresh)).status).toBe(200);
  });

  it("revokes an access or refresh token with its pair; others' confidential tokens need the secret", async () => {
    const pair = await tokens();
    expect(await post("/oauth/revoke", { token: pair.access })).toMatchObject({
      status: 403,
      body: {
        error: "unauthorized_client",
        error_description: "You are not authorized to revoke this token",
      },
    });
    expect(await post("/oauth/revoke", { ...secretParams(), token: pair.access })).toMatchObject({
      status: 200,
      body: {},
    });
    expect((await user(bearer(pair.access))).status).toBe(401);
    expect(await refresh(pair.refresh)).toMatchObject({ status: 400, body: INVALID_GRANT });
    const other = await tokens();
    expect((await post("/oauth/revoke", { ...secretParams(), token: other.refresh })).status).toBe(
      200,
    );
    expect((await user(bearer(other.access))).body).toMatchObject({ error: "invalid_token" });
    expect(await post("/oauth/revoke", { ...secretParams(), token: "unknown" })).toMatchObject({
      status: 200,
      body: {},
    });
  });

  it("renews the application's secret: the old one stops working", async () => {
    const pair = await tokens();
    const old = app.secret;
    app = { ...app, secret: gl.renewOAuthSecret(app.applicationId) };
    expect(app.secret).toMatch(/^gloas-[0-9a-f]{64}$/);
    expect(await refresh(pair.refresh, { client_secret: old })).toMatchObject({
      status: 401,
      body: INVALID_CLIENT,
    });
    expect((await refresh(pair.refresh)).status).toBe(200);
  });
});
