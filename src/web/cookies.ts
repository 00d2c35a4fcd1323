/**
 * The dashboard's cookies and the cross-site check of its forms. The session cookie holds only a
 * random session id (never a token), `HttpOnly`, `SameSite=Lax` so that links from GitHub or chat
 * open signed in, `__Host-` and `Secure` over HTTPS; the sign-in form's double-submit cookie is
 * `SameSite=Strict`.
 */
import type { FastifyReply, FastifyRequest } from "fastify";

export const SESSION_COOKIE = "mainline_session";
/** Over HTTPS: the browser then refuses it from any other host or path (no cookie tossing). */
export const SECURE_SESSION_COOKIE = "__Host-mainline_session";
export const SIGN_IN_COOKIE = "mainline_signin";
export const SIGN_IN_PATH = "/sign-in";
export const SIGN_IN_COOKIE_MAX_AGE_S = 2 * 3600;
const LEGACY_COOKIES = ["mainline_token", "mainline_csrf"];

/** The value of a cookie the request carries (the first of that name), decoded. */
export function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at === -1 || part.slice(0, at).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(at + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** HTTPS as far as cookies go: the request came over it, or the public URL is on it. */
export function isSecure(request: FastifyRequest, publicUrl: string | undefined): boolean {
  return request.protocol === "https" || (publicUrl?.startsWith("https:") ?? false);
}

export function sessionCookieName(secure: boolean): string {
  return secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE;
}

function cookie(
  name: string,
  value: string,
  attributes: { path: string; maxAge: number; sameSite: "Lax" | "Strict"; secure: boolean },
): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${attributes.path}`,
    `Max-Age=${Math.max(0, Math.floor(attributes.maxAge))}`,
    "HttpOnly",
    `SameSite=${attributes.sameSite}`,
    ...(attributes.secure ? ["Secure"] : []),
  ].join("; ");
}

export function setSessionCookie(
  reply: FastifyReply,
  secure: boolean,
  sessionId: string,
  maxAgeSeconds: number,
): void {
  void reply.header(
    "set-cookie",
    cookie(sessionCookieName(secure), sessionId, {
      path: "/",
      maxAge: maxAgeSeconds,
      sameSite: "Lax",
      secure,
    }),
  );
}

export function clearSessionCookie(reply: FastifyReply, secure: boolean): void {
  void reply.header(
    "set-cookie",
    cookie(sessionCookieName(secure), "", { path: "/", maxAge: 0, sameSite: "Lax", secure }),
  );
}

export function setSignInCookie(reply: FastifyReply, secure: boolean, value: string): void {
  void reply.header(
    "set-cookie",
    cookie(SIGN_IN_COOKIE, value, {
      path: SIGN_IN_PATH,
      maxAge: value === "" ? 0 : SIGN_IN_COOKIE_MAX_AGE_S,
      sameSite: "Strict",
      secure,
    }),
  );
}

/**
 * Clears the test page's old cookies where the browser sent them: they were set on
 * `/{org}/flaky-tests`, and a cookie is only replaced on its own path.
 */
export function clearLegacyCookies(request: FastifyRequest, reply: FastifyReply): void {
  const held = LEGACY_COOKIES.filter((name) => cookieValue(request, name) !== undefined);
  if (held.length === 0) return;
  const match = /^\/([^/?#]+)\/flaky-tests(?:[/?#]|$)/.exec(request.url);
  if (!match) return;
  const path = `/${match[1] ?? ""}/flaky-tests`;
  for (const name of held) {
    void reply.header("set-cookie", `${name}=; Path=${path}; Max-Age=0; HttpOnly; SameSite=Strict`);
  }
}

/**
 * Whether a form comes from another site. Browsers say so in `Sec-Fetch-Site` (anything but
 * `same-origin`, or `none` for a user's own action, is refused: `same-site` too, so a sibling
 * subdomain cannot post) and in `Origin` when it names a host (it must be this one or the
 * public URL's). `Origin: null` is what a browser sends for our own form under
 * `referrer-policy: no-referrer`, so it proves nothing: the anti-forgery token decides then.
 */
export function crossSite(request: FastifyRequest, publicUrl: string | undefined): boolean {
  const fetchSite = request.headers["sec-fetch-site"];
  if (fetchSite !== undefined && fetchSite !== "same-origin" && fetchSite !== "none") return true;
  const origin = request.headers.origin;
  if (origin === undefined || origin === "null") return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return true;
  }
  if (host === "") return true;
  if (host === request.host) return false;
  try {
    return publicUrl === undefined || new URL(publicUrl).host !== host;
  } catch {
    return true;
  }
}
