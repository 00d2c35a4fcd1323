/**
 * GitLab's OAuth 2.0 endpoints for the application an operator registered (docs/gitlab.md,
 * "Connecting with an OAuth application"): the authorization address a person opens, the code's
 * exchange, the refresh and the revocation at `/oauth/token` and `/oauth/revoke`.
 *
 * GitLab revokes the previous access and refresh tokens the moment it issues a new pair, so a
 * refresh whose answer is lost cannot be recovered: the client tries the same refresh again
 * (GitLab may not have done it) and, when GitLab then refuses the refresh token, says that the
 * grant was lost rather than refused (`GitLabGrantLost`).
 */
import { createHash } from "node:crypto";
import { SECOND_MS } from "../../lib/time.js";
import { unreachable, type GitLabClientOptions, type GitLabUnreachable } from "./client.js";

/** The scopes Mainline asks for: the REST API, and git pushes of test branches. */
export const OAUTH_SCOPES = ["api", "write_repository"] as const;

export interface GitLabOAuthAppOptions {
  url: string;
  clientId: string;
  clientSecret: string;
  userAgent: string;
  retryBaseMs?: number | undefined;
  timeoutMs?: number;
  onRequest?: GitLabClientOptions["onRequest"];
}

/** What `/oauth/token` granted. */
export interface OAuthTokens {
  accessToken: string;
  refreshToken: string;
  /** When it arrived (epoch ms, this server's clock). */
  issuedAt: number;
  /** `issuedAt + expires_in`, or null when GitLab gave no lifetime. */
  expiresAt: number | null;
  scopes: string[];
}

/** GitLab refused the request: `invalid_grant`, `invalid_client`, `invalid_request`… */
export class GitLabOAuthRefused extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
  ) {
    super(`GitLab refused the OAuth request (${String(status)} ${error}): ${description}`);
  }
}

/** A refresh GitLab carried out but whose answer never arrived: the grant is gone. */
export class GitLabGrantLost extends Error {
  constructor(readonly firstFailure: string) {
    super(
      `GitLab renewed the OAuth grant but its answer was lost (${firstFailure}); GitLab revoked the previous tokens when it issued the new ones`,
    );
  }
}

const ATTEMPTS = 3;

export class GitLabOAuthApp {
  constructor(private readonly options: GitLabOAuthAppOptions) {}

  /** The address where a person approves the application (`/oauth/authorize`, PKCE S256). */
  authorizeUrl(input: { redirectUri: string; state: string; codeVerifier: string }): string {
    const url = new URL(`${this.options.url}/oauth/authorize`);
    url.searchParams.set("client_id", this.options.clientId);
    url.searchParams.set("redirect_uri", input.redirectUri);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("state", input.state);
    url.searchParams.set("scope", OAUTH_SCOPES.join(" "));
    url.searchParams.set("code_challenge", codeChallenge(input.codeVerifier));
    url.searchParams.set("code_challenge_method", "S256");
    return url.toString();
  }

  /** The code's exchange. A code serves once: never sent again once GitLab may have seen it. */
  exchange(code: string, redirectUri: string, codeVerifier: string): Promise<OAuthTokens> {
    return this.grant(
      {
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        code_verifier: codeVerifier,
      },
      false,
    );
  }

  /**
   * A new pair for `refreshToken`. Tried again when the outcome is unknown; `GitLabGrantLost`
   * when GitLab then refuses the refresh token (it had done the first).
   */
  refresh(refreshToken: string, redirectUri: string): Promise<OAuthTokens> {
    return this.grant(
      { grant_type: "refresh_token", refresh_token: refreshToken, redirect_uri: redirectUri },
      true,
    );
  }

  /** Revokes a token; GitLab's trouble is ignored (the token expires on its own). */
  async revoke(token: string): Promise<void> {
    await this.post("/oauth/revoke", { token }).catch(() => undefined);
  }

  private async grant(params: Record<string, string>, retryUnknown: boolean) {
    let unknown: string | undefined;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.post("/oauth/token", params);
      } catch (error) {
        const failure = error as GitLabUnreachable;
        if (attempt < ATTEMPTS && (failure.notSent || retryUnknown)) {
          if (!failure.notSent) unknown ??= failure.reason;
          await this.pause(attempt);
          continue;
        }
        throw failure;
      }
      if (response.ok) {
        // A proxy's page, or a body cut short: whether GitLab issued a pair is unknown.
        const tokens = await response
          .json()
          .then(tokensOf)
          .catch(() => undefined);
        if (tokens) return tokens;
        unknown ??= "GitLab's answer held no token pair";
        if (retryUnknown && attempt < ATTEMPTS) {
          await this.pause(attempt);
          continue;
        }
        throw new GitLabOAuthRefused(response.status, "invalid_response", unknown);
      }
      const body = (await response.json().catch(() => ({}))) as {
        error?: string;
        error_description?: string;
      };
      const refused = new GitLabOAuthRefused(
        response.status,
        body.error ?? `HTTP ${String(response.status)}`,
        (body.error_description ?? response.statusText).slice(0, 300),
      );
      if (response.status === 429 || (response.status >= 500 && retryUnknown)) {
        if (response.status >= 500) unknown ??= `GitLab answered ${String(response.status)}`;
        if (attempt < ATTEMPTS) {
          await this.pause(attempt);
          continue;
        }
      }
      if (refused.error === "invalid_grant" && unknown !== undefined) {
        throw new GitLabGrantLost(unknown);
      }
      throw refused;
    }
  }

  private async post(path: "/oauth/token" | "/oauth/revoke", params: Record<string, string>) {
    const body = new URLSearchParams({
      ...params,
      client_id: this.options.clientId,
      client_secret: this.options.clientSecret,
    });
    let response: Response;
    try {
      response = await fetch(`${this.options.url}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
          "user-agent": this.options.userAgent,
        },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30 * SECOND_MS),
        redirect: "error",
      });
    } catch (error) {
      this.options.onRequest?.({ method: "POST", path, status: null });
      throw unreachable("POST", path, error);
    }
    this.options.onRequest?.({ method: "POST", path, status: response.status });
    return response;
  }

  private pause(attempt: number): Promise<void> {
    const ms = (this.options.retryBaseMs ?? SECOND_MS) * attempt * attempt;
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** PKCE's S256 challenge of a verifier. */
export function codeChallenge(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

function tokensOf(body: unknown): OAuthTokens {
  const answer = body as {
    access_token?: unknown;
    refresh_token?: unknown;
    expires_in?: unknown;
    scope?: unknown;
  };
  if (typeof answer.access_token !== "string" || typeof answer.refresh_token !== "string") {
    throw new GitLabOAuthRefused(200, "invalid_response", "GitLab's answer had no token pair");
  }
  // Timed by this server's clock (GitLab's `created_at` is its own, which may be skewed).
  const issuedAt = Date.now();
  return {
    accessToken: answer.access_token,
    refreshToken: answer.refresh_token,
    issuedAt,
    expiresAt:
      typeof answer.expires_in === "number" ? issuedAt + answer.expires_in * SECOND_MS : null,
    scopes: typeof answer.scope === "string" ? answer.scope.split(/\s+/).filter(Boolean) : [],
  };
}
