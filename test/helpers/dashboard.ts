/**
 * Driving the dashboard without a browser, through `app.inject`: sign in as a browser would
 * (the form's anti-forgery cookie and field, then the session cookie), fetch pages with the
 * session, and check what every page must hold (landmarks, security headers, no off-host URL).
 */
import { expect } from "vitest";
import type { ApiApp } from "../../src/api/types.js";

export interface InjectedAnswer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
  /** Every `name=value` the answer sets (first part of each Set-Cookie). */
  cookies: Map<string, string>;
  setCookies: string[];
}

function cookiesOf(headers: InjectedAnswer["headers"]): {
  map: Map<string, string>;
  raw: string[];
} {
  const raw = headers["set-cookie"];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [String(raw)];
  const map = new Map<string, string>();
  for (const line of list) {
    const pair = line.split(";")[0] ?? "";
    const at = pair.indexOf("=");
    map.set(pair.slice(0, at), decodeURIComponent(pair.slice(at + 1)));
  }
  return { map, raw: list };
}

export async function inject(
  app: ApiApp,
  options: {
    method?: "GET" | "POST" | "HEAD";
    path: string;
    cookie?: string | undefined;
    headers?: Record<string, string>;
    form?: Record<string, string>;
  },
): Promise<InjectedAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.cookie) headers.cookie = options.cookie;
  if (options.form) headers["content-type"] = "application/x-www-form-urlencoded";
  const answer = await app.inject({
    method: options.method ?? "GET",
    url: options.path,
    headers,
    ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
  });
  const { map, raw } = cookiesOf(answer.headers);
  return {
    status: answer.statusCode,
    headers: answer.headers,
    body: answer.body,
    cookies: map,
    setCookies: raw,
  };
}

/** The hidden `csrf` field of the first form on a page. */
export function csrfField(html: string): string {
  const value = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(html)?.[1];
  if (!value) throw new Error("the page has no form with an anti-forgery field");
  return value;
}

export interface SignedIn {
  /** `mainline_session=…`, as the browser sends it back. */
  cookie: string;
  sessionId: string;
  /** The session's anti-forgery token, from a page's sign-out form. */
  csrf: string;
}

/** Opens the sign-in form and posts a token, as a browser does; throws unless it signs in. */
export async function signIn(app: ApiApp, token: string, next?: string): Promise<SignedIn> {
  const answer = await postSignIn(app, token, next);
  if (answer.status !== 303)
    throw new Error(`sign-in answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  const sessionId = answer.cookies.get("mainline_session");
  if (!sessionId) throw new Error("sign-in set no session cookie");
  const cookie = `mainline_session=${sessionId}`;
  const home = await inject(app, { path: "/", cookie });
  return { cookie, sessionId, csrf: csrfField(home.body) };
}

/** The sign-in form's post: with the form just opened, unless `form` says otherwise. */
export async function postSignIn(
  app: ApiApp,
  token: string,
  next?: string,
  form?: { cookie: string; csrf: string } | null,
  headers: Record<string, string> = {},
): Promise<InjectedAnswer> {
  let held = form;
  if (held === undefined) {
    const page = await inject(app, { path: "/sign-in" });
    held = {
      cookie: `mainline_signin=${page.cookies.get("mainline_signin") ?? ""}`,
      csrf: csrfField(page.body),
    };
  }
  return inject(app, {
    method: "POST",
    path: "/sign-in",
    cookie: held?.cookie,
    headers,
    form: { token, ...(held ? { csrf: held.csrf } : {}), ...(next ? { next } : {}) },
  });
}

/** What every dashboard page answers with: its type and the security headers. */
export function expectPageHeaders(answer: InjectedAnswer): void {
  expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8");
  expect(answer.headers["cache-control"]).toBe("no-store");
  const csp = String(answer.headers["content-security-policy"]);
  for (const directive of [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ]) {
    expect(csp).toContain(directive);
  }
  expect(csp).not.toContain("unsafe");
  expect(answer.headers["x-content-type-options"]).toBe("nosniff");
  expect(answer.headers["referrer-policy"]).toBe("no-referrer");
}

/** Landmarks every page has: skip link to `main`, header, one `main`, one `h1`, a title. */
export function expectLandmarks(html: string): void {
  expect(html).toMatch(/^<!doctype html>\n<html lang="en">/);
  expect(html).toContain('<a class="skip-link" href="#main">');
  expect(html).toMatch(/<header[\s>]/);
  expect(html.match(/<main[\s>]/g)).toHaveLength(1);
  expect(html).toContain('<main id="main"');
  expect(html.match(/<h1[\s>]/g)).toHaveLength(1);
  expect(html).toMatch(/<title>[^<]+ · Mainline<\/title>/);
}

/**
 * Every URL a page loads from (scripts, styles, images, fonts, frames, media) is on this server:
 * no `http(s)://` or protocol-relative URL in a `src`, or in the `href` of a `<link>`; and no
 * inline script or style (the CSP would refuse them).
 */
export function expectNoExternalResources(html: string): void {
  const loaded = [
    ...[
      ...html.matchAll(
        /<(?:script|img|iframe|audio|video|source|embed|track|input)\b[^>]*\ssrc="([^"]*)"/gi,
      ),
    ].map((m) => m[1] ?? ""),
    ...[...html.matchAll(/<link\b[^>]*\shref="([^"]*)"/gi)].map((m) => m[1] ?? ""),
    ...[...html.matchAll(/url\(([^)]*)\)/gi)].map((m) => m[1] ?? ""),
  ];
  expect(loaded.filter((url) => /^\s*(?:https?:)?\/\//i.test(url))).toEqual([]);
  expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
  expect(html).not.toMatch(/<style[\s>]/i);
  expect(html).not.toMatch(/\sstyle="/i);
  expect(html).not.toMatch(/\son[a-z]+="/i);
}
