import { createHash } from "node:crypto";
import type { FakeResponse, RequestContext } from "./http.js";
import type { Token, User } from "./model.js";

/**
 * The OAuth provider's records and protocol pieces, as Doorkeeper (5.8) and GitLab's locale have
 * them: scopes, error bodies and texts, redirects, GitLab's error page, redirect URI matching, PKCE.
 */

export interface OAuthApplication {
  id: number;
  /** The application ID (`client_id`): 64 hex. */
  uid: string;
  /** `gloas-` and 64 hex. */
  secret: string;
  name: string;
  redirectUris: string[];
  scopes: string[];
  confidential: boolean;
  owner: User | null;
  createdAt: number;
}

/** A token the provider issued, for tests to count (`fake.oauthGrants`). */
export interface OAuthGrantRecord {
  grantType: "authorization_code" | "refresh_token";
  atMs: number;
  /** The application's `client_id`. */
  applicationId: string;
  user: string;
}

export interface AccessGrant {
  code: string;
  application: OAuthApplication;
  user: User;
  redirectUri: string;
  scopes: string[];
  challenge: string | null;
  challengeMethod: string | null;
  createdAtMs: number;
  revoked: boolean;
}

/** Doorkeeper's access token row: the access token and its refresh token live and die together. */
export interface Issued {
  access: Token;
  refreshToken: string;
  application: OAuthApplication;
  expiresInSeconds: number;
}

export type PreAuthorization =
  | {
      ok: true;
      application: OAuthApplication;
      redirectUri: string;
      scopes: string[];
      state: string | undefined;
      challenge: string | null;
      challengeMethod: string | null;
    }
  | {
      ok: false;
      error: ErrorName;
      description: string;
      /** Where the error may be sent (null: never redirected, RFC 6749 §4.1.2.1). */
      redirectUri: string | null;
      state: string | undefined;
    };

/** GitLab's scopes (`Gitlab::Auth`), the ones an application may have. */
export const OAUTH_SCOPES = [
  "api",
  "read_api",
  "read_user",
  "create_runner",
  "manage_runner",
  "k8s_proxy",
  "self_rotate",
  "read_repository",
  "write_repository",
  "read_registry",
  "write_registry",
  "read_virtual_registry",
  "write_virtual_registry",
  "read_observability",
  "write_observability",
  "ai_features",
  "ai_workflows",
  "sudo",
  "admin_mode",
  "read_service_ping",
  "openid",
  "profile",
  "email",
];

/** Authorization codes live 10 minutes (Doorkeeper's default, GitLab's). */
export const CODE_TTL_MS = 600_000;

export const MESSAGES = {
  invalid_client:
    "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.",
  invalid_grant:
    "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.",
  invalid_redirect_uri: "The redirect URI included is not valid.",
  invalid_scope: "The requested scope is invalid, unknown, or malformed.",
  access_denied: "The resource owner or authorization server denied the request.",
  unsupported_response_type: "The authorization server does not support this response type.",
  unsupported_grant_type:
    "The authorization grant type is not supported by the authorization server.",
  invalid_code_challenge_method: "The code_challenge_method must be one of plain, S256.",
} as const;
export type ErrorName = keyof typeof MESSAGES | "invalid_request";

export const missingParam = (name: string): string => `Missing required parameter: ${name}.`;

/** A parameter as Doorkeeper reads it: blank is absent. */
export function param(ctx: RequestContext, name: string): string | undefined {
  const value = ctx.input[name];
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

export function oauthError(name: ErrorName, description?: string): FakeResponse {
  const text = description ?? (name === "invalid_request" ? "" : MESSAGES[name]);
  return {
    status: name === "invalid_client" ? 401 : 400,
    body: { error: name, error_description: text },
    headers: {
      "cache-control": "no-store, no-cache",
      "content-type": "application/json; charset=utf-8",
      "www-authenticate": `Bearer realm="Doorkeeper", error="${name}", error_description="${text}"`,
    },
  };
}

export const redirect = (location: string): FakeResponse => ({
  status: 302,
  headers: { location },
});

/** Doorkeeper's URIBuilder: the parameters added to the URI's own query, blank ones left out. */
export function withQuery(url: string, params: Record<string, string | undefined>): string {
  const u = new URL(url);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") u.searchParams.set(key, value);
  }
  return u.toString();
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** GitLab's `doorkeeper/authorizations/error` page (200, no redirect). */
export function errorPage(description: string): FakeResponse {
  return {
    status: 200,
    raw: {
      contentType: "text/html; charset=utf-8",
      text: `<!DOCTYPE html>\n<html>\n<head><title>GitLab</title></head>\n<body>\n<h1 class="page-title">An error has occurred</h1>\n<main role="main"><pre>${escapeHtml(description)}</pre></main>\n</body>\n</html>\n`,
    },
  };
}

/** Doorkeeper's URIChecker.valid?: absolute, no fragment. */
export function validUri(url: string): boolean {
  if (url.includes("#")) return false;
  try {
    return new URL(url).protocol !== "localhost:";
  } catch {
    return false;
  }
}

const loopback = (u: URL): boolean =>
  /^127\.\d+\.\d+\.\d+$/.test(u.hostname) || u.hostname === "[::1]";

/**
 * Doorkeeper's URIChecker.matches?: equal URIs, the request's query ignored unless the registered
 * URI has one (then the same parameters in any order), the port ignored on loopback addresses
 * (RFC 8252 §7.3).
 */
export function uriMatches(url: string, registered: string): boolean {
  if (!validUri(url)) return false;
  let u: URL;
  let r: URL;
  try {
    u = new URL(url);
    r = new URL(registered);
  } catch {
    return false;
  }
  if (r.search !== "") {
    const sorted = (q: string): string => q.slice(1).split("&").sort().join("&");
    if (u.search === "" || sorted(u.search) !== sorted(r.search)) return false;
    r.search = "";
  }
  if (loopback(u) && loopback(r)) {
    u.port = "";
    r.port = "";
  }
  u.search = "";
  return u.href === r.href;
}

/** PKCE (RFC 7636): S256 is base64url(sha256(verifier)) without padding. */
export function verifierMatches(
  challenge: string | null,
  method: string | null,
  verifier: string | undefined,
): boolean {
  if (verifier === undefined) return challenge === null;
  if (method === "S256")
    return challenge === createHash("sha256").update(verifier).digest("base64url");
  if (method === "plain") return challenge === verifier;
  return false;
}

/** An application's redirect URIs (a list, or whitespace-separated as GitLab's form takes them). */
export function redirectUris(value: string | string[]): string[] {
  const uris = [value].flat().flatMap((u) => u.split(/\s+/).filter(Boolean));
  for (const uri of uris) {
    if (!validUri(uri) || /^(data|vbscript|javascript):/i.test(uri)) {
      throw new Error(`redirect URI ${uri}: must be an absolute URI without a fragment`);
    }
  }
  if (uris.length === 0) throw new Error("an application needs a redirect URI");
  return uris;
}
