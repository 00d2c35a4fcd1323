import { expired } from "./auth.js";
import type { FakeResponse, HttpServer, RequestContext } from "./http.js";
import {
  CODE_TTL_MS,
  redirectUris,
  type AccessGrant,
  type Issued,
  type OAuthApplication,
  type OAuthGrantRecord,
  type PreAuthorization,
  errorPage,
  MESSAGES,
  missingParam,
  OAUTH_SCOPES,
  oauthError,
  param,
  redirect,
  uriMatches,
  verifierMatches,
  withQuery,
  type ErrorName,
} from "./oauth-protocol.js";
import type { Token, User } from "./model.js";
import type { World } from "./world.js";

/**
 * GitLab's OAuth 2.0 provider, Doorkeeper as GitLab configures it: applications (`client_id` and a
 * `gloas-` secret), the authorization-code flow with PKCE at `/oauth/authorize` (a signed-in
 * browser is a session cookie; the GET consents at once, as if the user clicked Authorize),
 * `/oauth/token` (`authorization_code`, `refresh_token`: the old pair is revoked when the new one is
 * issued), `/oauth/revoke` and `/oauth/token/info`. Access tokens go into `world.tokens` as kind
 * `oauth`, so the API guard and git over HTTP take them. Bodies, texts and the order of the checks
 * are Doorkeeper's (5.8), with GitLab's locale (`The redirect URI included is not valid.`).
 */

export class OAuthProvider {
  /** By `client_id`. */
  readonly applications = new Map<string, OAuthApplication>();
  /** Every token issued, in order. */
  readonly issued: OAuthGrantRecord[] = [];
  private readonly codes = new Map<string, AccessGrant>();
  private readonly byAccess = new Map<string, Issued>();
  private readonly byRefresh = new Map<string, Issued>();
  private readonly sessions = new Map<string, User>();
  private nextApplicationId = 1;

  constructor(
    private readonly world: World,
    private readonly tokenTtlSeconds: number,
    private readonly refreshRevokes: "at-once" | "on-first-use" = "at-once",
  ) {}

  createApplication(options: {
    name: string;
    redirectUri: string | string[];
    scopes: string[];
    confidential?: boolean;
    owner?: string;
  }): OAuthApplication {
    const uris = redirectUris(options.redirectUri);
    const unknown = options.scopes.filter((s) => !OAUTH_SCOPES.includes(s));
    if (options.scopes.length === 0 || unknown.length > 0) {
      throw new Error(`scopes must be some of GitLab's (unknown: ${unknown.join(", ")})`);
    }
    const application: OAuthApplication = {
      id: this.nextApplicationId++,
      uid: this.world.random.hex(64),
      secret: `gloas-${this.world.random.hex(64)}`,
      name: options.name,
      redirectUris: uris,
      scopes: [...new Set(options.scopes)],
      confidential: options.confidential ?? true,
      owner: options.owner === undefined ? null : this.world.user(options.owner),
      createdAt: Date.now(),
    };
    this.applications.set(application.uid, application);
    return application;
  }

  application(uid: string): OAuthApplication {
    const application = this.applications.get(uid);
    if (application === undefined) throw new Error(`no OAuth application ${uid}`);
    return application;
  }

  renewSecret(uid: string): string {
    const application = this.application(uid);
    application.secret = `gloas-${this.world.random.hex(64)}`;
    return application.secret;
  }

  /** The access tokens issued so far, oldest first (revoked and expired ones too). */
  accessTokens(username?: string): string[] {
    return [...this.byAccess.values()]
      .filter((i) => username === undefined || i.access.user.username === username)
      .map((i) => i.access.token);
  }

  /** A `Cookie` header value: a browser signed in as the user. */
  browserCookie(username: string): string {
    const id = this.world.random.hex(32);
    this.sessions.set(id, this.world.user(username));
    return `_gitlab_session=${id}`;
  }

  /** Current OAuth access tokens (the user's, or everyone's) expire now; refresh tokens live on. */
  expireTokens(username?: string): void {
    const now = Date.now();
    for (const { access } of this.byAccess.values()) {
      if (username !== undefined && access.user.username.toLowerCase() !== username.toLowerCase())
        continue;
      access.expiresAtMs = Math.min(access.expiresAtMs ?? now, now - 1);
    }
  }

  /** Outstanding authorization codes are past their 10 minutes. */
  expireCodes(): void {
    for (const grant of this.codes.values()) grant.createdAtMs = Date.now() - CODE_TTL_MS - 1;
  }

  register(http: HttpServer): void {
    const add = (
      method: string,
      path: string,
      handler: (ctx: RequestContext) => FakeResponse,
    ): void => {
      http.add({ method, path, scope: "none", root: true, handler });
    };
    add("GET", "/oauth/authorize", (ctx) => this.authorize(ctx, "new"));
    add("POST", "/oauth/authorize", (ctx) => this.authorize(ctx, "create"));
    add("DELETE", "/oauth/authorize", (ctx) => this.authorize(ctx, "destroy"));
    add("POST", "/oauth/token", (ctx) => this.token(ctx));
    add("POST", "/oauth/revoke", (ctx) => this.revoke(ctx));
    add("GET", "/oauth/token/info", (ctx) => this.info(ctx));
  }

  // ---- /oauth/authorize ---------------------------------------------------------------------

  /**
   * `new` (GET: GitLab renders every error as its error page; the fake then consents at once, or
   * denies with `fake_decision=deny`), `create` (POST, the Authorize button: errors redirected
   * when they may be) and `destroy` (DELETE, the Deny button). Signed out: to the sign-in page.
   */
  private authorize(ctx: RequestContext, action: "new" | "create" | "destroy"): FakeResponse {
    const session = /(?:^|;\s*)_gitlab_session=([^;]+)/.exec(ctx.headers.cookie ?? "")?.[1];
    const user = session === undefined ? undefined : this.sessions.get(session);
    if (user === undefined) return redirect(`${this.world.url}/users/sign_in`);
    const pre = this.preAuthorize(ctx);
    if (!pre.ok) {
      if (action !== "create") return errorPage(pre.description);
      const { error, description, state } = pre;
      if (pre.redirectUri === null) return oauthError(error, description);
      return redirect(withQuery(pre.redirectUri, { error, error_description: description, state }));
    }
    if (action === "destroy" || param(ctx, "fake_decision") === "deny") {
      return redirect(
        withQuery(pre.redirectUri, {
          error: "access_denied",
          error_description: MESSAGES.access_denied,
          state: pre.state,
        }),
      );
    }
    const code = this.world.random.hex(64);
    this.codes.set(code, {
      code,
      application: pre.application,
      user,
      redirectUri: pre.redirectUri,
      scopes: pre.scopes,
      challenge: pre.challenge,
      challengeMethod: pre.challengeMethod,
      createdAtMs: Date.now(),
      revoked: false,
    });
    return redirect(withQuery(pre.redirectUri, { code, state: pre.state }));
  }

  /** Doorkeeper's PreAuthorization, its checks in its order. */
  private preAuthorize(ctx: RequestContext): PreAuthorization {
    const state = param(ctx, "state");
    const fail = (
      error: ErrorName,
      redirectUri: string | null,
      description?: string,
    ): PreAuthorization => ({
      ok: false,
      error,
      description: description ?? (error === "invalid_request" ? "" : MESSAGES[error]),
      redirectUri,
      state,
    });
    const clientId = param(ctx, "client_id");
    if (clientId === undefined) return fail("invalid_request", null, missingParam("client_id"));
    const application = this.applications.get(clientId);
    if (application === undefined) return fail("invalid_client", null);
    const redirectUri = param(ctx, "redirect_uri");
    if (
      redirectUri === undefined ||
      !application.redirectUris.some((r) => uriMatches(redirectUri, r))
    )
      return fail("invalid_redirect_uri", null);
    const responseType = param(ctx, "response_type");
    if (responseType === undefined)
      return fail("invalid_request", redirectUri, missingParam("response_type"));
    if (responseType !== "code") return fail("unsupported_response_type", redirectUri);
    // Without `scope`, GitLab's default scopes (`api`) that the application has.
    const scope = param(ctx, "scope") ?? (application.scopes.includes("api") ? "api" : "");
    const scopes = [...new Set(scope.split(/\s+/).filter(Boolean))];
    if (scopes.length === 0 || /[\n\r\t]/.test(scope)) return fail("invalid_scope", redirectUri);
    if (!scopes.every((s) => application.scopes.includes(s)))
      return fail("invalid_scope", redirectUri);
    const challenge = param(ctx, "code_challenge") ?? null;
    const method = param(ctx, "code_challenge_method") ?? null;
    if (challenge !== null && method !== "plain" && method !== "S256")
      return fail("invalid_code_challenge_method", redirectUri);
    return {
      ok: true,
      application,
      redirectUri,
      scopes,
      state,
      challenge,
      challengeMethod: challenge === null ? null : method,
    };
  }

  // ---- /oauth/token ---------------------------------------------------------------------------

  private token(ctx: RequestContext): FakeResponse {
    const grantType = param(ctx, "grant_type");
    if (grantType === undefined) return oauthError("invalid_request", missingParam("grant_type"));
    if (grantType === "authorization_code") return this.exchangeCode(ctx);
    if (grantType === "refresh_token") return this.refresh(ctx);
    return oauthError("unsupported_grant_type");
  }

  /** Doorkeeper's AuthorizationCodeRequest. */
  private exchangeCode(ctx: RequestContext): FakeResponse {
    const code = param(ctx, "code");
    if (code === undefined) return oauthError("invalid_request", missingParam("code"));
    const grant = this.codes.get(code);
    const client = this.client(ctx);
    const redirectUri = param(ctx, "redirect_uri");
    const verifier = param(ctx, "code_verifier");
    if (grant !== undefined && grant.challenge !== null && verifier === undefined)
      return oauthError("invalid_request", missingParam("code_verifier"));
    if (redirectUri === undefined)
      return oauthError("invalid_request", missingParam("redirect_uri"));
    if (client === null) return oauthError("invalid_client");
    if (
      grant === undefined ||
      grant.application !== client ||
      grant.revoked ||
      Date.now() > grant.createdAtMs + CODE_TTL_MS ||
      !uriMatches(redirectUri, grant.redirectUri) ||
      !verifierMatches(grant.challenge, grant.challengeMethod, verifier)
    ) {
      return oauthError("invalid_grant");
    }
    grant.revoked = true;
    return this.issue(client, grant.user, grant.scopes, this.tokenTtlSeconds, "authorization_code");
  }

  /**
   * Doorkeeper's RefreshTokenRequest, with the old pair revoked as the new one is issued (GitLab:
   * "Invalidates the existing access_token and refresh_token").
   */
  private refresh(ctx: RequestContext): FakeResponse {
    const text = param(ctx, "refresh_token");
    if (text === undefined) return oauthError("invalid_request", missingParam("refresh_token"));
    const old = this.byRefresh.get(text);
    if (old === undefined || old.access.revoked) return oauthError("invalid_grant");
    const credentials = this.credentials(ctx);
    const client = this.client(ctx);
    if (credentials !== null && client === null) return oauthError("invalid_client");
    if (client !== old.application) return oauthError("invalid_grant");
    let scopes = old.access.scopes;
    const scope = param(ctx, "scope") ?? param(ctx, "scopes");
    if (scope !== undefined) {
      const asked = [...new Set(scope.split(/\s+/).filter(Boolean))];
      if (/[\n\r\t]/.test(scope) || !asked.every((s) => old.access.scopes.includes(s)))
        return oauthError("invalid_scope");
      scopes = asked;
    }
    const answer = this.issue(
      client,
      old.access.user,
      scopes,
      old.expiresInSeconds,
      "refresh_token",
    );
    if (this.refreshRevokes === "at-once") {
      old.access.revoked = true;
    } else {
      const fresh = this.byAccess.get((answer.body as { access_token: string }).access_token);
      if (fresh) {
        fresh.access.onFirstUse = () => {
          old.access.revoked = true;
        };
      }
    }
    return answer;
  }

  private issue(
    application: OAuthApplication,
    user: User,
    scopes: string[],
    expiresInSeconds: number,
    grantType: OAuthGrantRecord["grantType"],
  ): FakeResponse {
    const now = Date.now();
    const access: Token = {
      id: this.world.nextId("token"),
      token: this.world.random.hex(64),
      name: application.name,
      user,
      scopes: [...scopes],
      expiresAt: null,
      revoked: false,
      createdAt: now,
      lastUsedAt: null,
      kind: "oauth",
      expiresAtMs: now + expiresInSeconds * 1000,
    };
    const issued: Issued = {
      access,
      refreshToken: this.world.random.hex(64),
      application,
      expiresInSeconds,
    };
    this.world.tokens.set(access.token, access);
    this.byAccess.set(access.token, issued);
    this.byRefresh.set(issued.refreshToken, issued);
    this.issued.push({ grantType, atMs: now, applicationId: application.uid, user: user.username });
    return {
      status: 200,
      body: {
        access_token: access.token,
        token_type: "Bearer",
        expires_in: expiresInSeconds,
        refresh_token: issued.refreshToken,
        scope: scopes.join(" "),
        created_at: Math.floor(now / 1000),
      },
      headers: {
        "cache-control": "no-store, no-cache",
        "content-type": "application/json; charset=utf-8",
        pragma: "no-cache",
      },
    };
  }

  /** Client credentials: HTTP Basic first, else `client_id` and `client_secret`. */
  private credentials(ctx: RequestContext): { uid: string; secret: string } | null {
    const basic = /^Basic\s+(.+)$/i.exec(ctx.headers.authorization ?? "")?.[1];
    if (basic !== undefined) {
      const decoded = Buffer.from(basic, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      const uid = colon < 0 ? decoded : decoded.slice(0, colon);
      if (uid !== "") return { uid, secret: colon < 0 ? "" : decoded.slice(colon + 1) };
    }
    const uid = param(ctx, "client_id");
    return uid === undefined ? null : { uid, secret: param(ctx, "client_secret") ?? "" };
  }

  /** The authenticated client: a public one may leave its secret out. */
  private client(ctx: RequestContext): OAuthApplication | null {
    const credentials = this.credentials(ctx);
    if (credentials === null) return null;
    const application = this.applications.get(credentials.uid);
    if (application === undefined) return null;
    if (credentials.secret === "" && !application.confidential) return application;
    return credentials.secret === application.secret ? application : null;
  }

  // ---- /oauth/revoke and /oauth/token/info ---------------------------------------------------

  /**
   * RFC 7009 as Doorkeeper answers it: 200 `{}` for an unknown token too; a confidential
   * application's token only with its credentials (else 403 `unauthorized_client`). An access
   * token that is no longer usable is left as it is (its refresh token too).
   */
  private revoke(ctx: RequestContext): FakeResponse {
    const text = param(ctx, "token") ?? "";
    const viaAccess = param(ctx, "token_type_hint") !== "refresh_token" && this.byAccess.has(text);
    const issued = viaAccess ? this.byAccess.get(text) : this.byRefresh.get(text);
    if (issued === undefined) return { status: 200, body: {} };
    if (issued.application.confidential && this.client(ctx) !== issued.application) {
      return {
        status: 403,
        body: {
          error: "unauthorized_client",
          error_description: "You are not authorized to revoke this token",
        },
      };
    }
    if (!issued.access.revoked && !(viaAccess && expired(issued.access))) {
      issued.access.revoked = true;
    }
    return { status: 200, body: {} };
  }

  /** GitLab's TokenInfoController: Doorkeeper's fields and the deprecated `scopes`, `expires_in_seconds`. */
  private info(ctx: RequestContext): FakeResponse {
    const bearer = /^Bearer\s+(.+)$/i.exec(ctx.headers.authorization ?? "")?.[1];
    const text = param(ctx, "access_token") ?? bearer ?? param(ctx, "bearer_token");
    const issued = text === undefined ? undefined : this.byAccess.get(text.trim());
    if (issued === undefined || issued.access.revoked || expired(issued.access)) {
      const description = "The access token is invalid";
      return {
        status: 401,
        body: { error: "invalid_token", error_description: description, state: "unauthorized" },
        headers: {
          "cache-control": "no-store, no-cache",
          "content-type": "application/json; charset=utf-8",
          "www-authenticate": `Bearer realm="Doorkeeper", error="invalid_token", error_description="${description}"`,
        },
      };
    }
    const { access } = issued;
    ctx.credential = { kind: "token", token: access, user: access.user };
    const expiresIn = Math.max(0, Math.round(((access.expiresAtMs ?? 0) - Date.now()) / 1000));
    const body = {
      resource_owner_id: access.user.id,
      scope: access.scopes,
      expires_in: expiresIn,
      application: { uid: issued.application.uid },
      created_at: Math.floor(access.createdAt / 1000),
      scopes: access.scopes,
      expires_in_seconds: expiresIn,
    };
    return { status: 200, body };
  }
}
