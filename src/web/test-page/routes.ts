import { randomBytes, timingSafeEqual } from "node:crypto";
import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { ApiError } from "../../lib/errors.js";
import type { Principal } from "../../organizations/service.js";
import { renderLoginPage, renderMessagePage, renderTestPage, type TestPageView } from "./html.js";

/** The fastify scope the page is registered in (TypeBox schemas type each request). */
export type WebApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What the test page needs: who a token is, and the test's view (built by the HTTP layer). */
export interface TestPageDependencies {
  /** The principal of an API token; throws `unauthorized` for an unknown or revoked one. */
  authenticate(token: string): Promise<Principal>;
  /** Throws `forbidden` when `orgSlug` is not the principal's organization. */
  checkOrganization(principal: Principal, orgSlug: string): void;
  /** The page's view of a test of the caller's organization; undefined when there is none. */
  testPage(
    principal: Principal,
    query: { testId: string; repo: { owner: string; name: string; host?: string | undefined } },
    baseUrl: string,
  ): Promise<TestPageView | undefined>;
  /** MAINLINE_PUBLIC_URL when set; otherwise links use the address each request came to. */
  publicUrl: string | undefined;
}

export const TOKEN_COOKIE = "mainline_token";
/** The sign-in form's anti-forgery token (double-submit: this cookie and the form's field). */
export const CSRF_COOKIE = "mainline_csrf";
export const CSRF_FIELD = "csrf";
const COOKIE_MAX_AGE_S = 30 * 24 * 3600;
const CSRF_MAX_AGE_S = 12 * 3600;
const CSRF_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const FORM_BODY_LIMIT = 16 * 1024;

const PAGE_PATH = "/:org/flaky-tests/test/:id";
const PageParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  id: Type.String({ maxLength: 64 }),
});
const PageQuery = Type.Object({
  repo: Type.Optional(Type.String({ maxLength: 600 })),
  host: Type.Optional(Type.String({ maxLength: 255 })),
});

/** Test data is private: the page must not be framed, cached, or run anything. */
const HTML_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.status(status).headers(HTML_HEADERS).send(page);
}

function cookieValue(request: FastifyRequest, name: string): string | undefined {
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

/** The page's canonical path and query, rebuilt from what was parsed (never echoed raw). */
function pagePath(params: { org: string; id: string }, query: { repo?: string; host?: string }) {
  const search = new URLSearchParams();
  if (query.repo !== undefined) search.set("repo", query.repo);
  if (query.host !== undefined) search.set("host", query.host);
  const qs = search.toString().replace(/%2F/gi, "/");
  return `/${encodeURIComponent(params.org)}/flaky-tests/test/${encodeURIComponent(params.id)}${qs ? `?${qs}` : ""}`;
}

function pageCookie(
  services: Pick<TestPageDependencies, "publicUrl">,
  request: FastifyRequest,
  org: string,
  name: string,
  value: string,
  maxAge: number,
): string {
  const secure =
    request.protocol === "https" || (services.publicUrl?.startsWith("https:") ?? false);
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=/${encodeURIComponent(org)}/flaky-tests`,
    `Max-Age=${maxAge}`,
    "HttpOnly",
    "SameSite=Strict",
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

/**
 * Whether a sign-in post comes from another site (login CSRF). Browsers say so in
 * `Sec-Fetch-Site` (anything but `same-origin`, or `none` for a user's own action, is refused:
 * `same-site` too, so a sibling subdomain cannot post either) and in `Origin` when it names a
 * host (it must be this one or MAINLINE_PUBLIC_URL's). `Origin: null` is what a browser sends
 * for our own form under `referrer-policy: no-referrer`, so it is not proof of anything: the
 * double-submit token decides then.
 */
function crossSite(
  services: Pick<TestPageDependencies, "publicUrl">,
  request: FastifyRequest,
): boolean {
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
    return services.publicUrl === undefined || new URL(services.publicUrl).host !== host;
  } catch {
    return true;
  }
}

/** The form's field matches the cookie the form was served with (both our random value). */
function csrfMatches(request: FastifyRequest, field: unknown): boolean {
  const cookie = cookieValue(request, CSRF_COOKIE);
  if (cookie === undefined || typeof field !== "string") return false;
  if (!CSRF_PATTERN.test(cookie) || !CSRF_PATTERN.test(field)) return false;
  return timingSafeEqual(Buffer.from(cookie), Buffer.from(field));
}

/** `owner/name` (GitLab owners may hold slashes: the name is after the last one). */
function parseRepo(repo: string | undefined): { owner: string; name: string } | undefined {
  if (repo === undefined) return undefined;
  const at = repo.lastIndexOf("/");
  if (at <= 0 || at === repo.length - 1) return undefined;
  return { owner: repo.slice(0, at), name: repo.slice(at + 1) };
}

/**
 * The HTML page of a test, `GET /{org}/flaky-tests/test/{id}?repo={owner}/{name}` (the
 * `html_url` of every test). Outside the token-checked scope because a browser cannot send
 * `x-api-token`: the page takes that header or the `mainline_token` cookie, and without a valid
 * one answers 401 with a sign-in form that posts the token to the same URL, which sets the
 * cookie (HttpOnly, SameSite=Strict, scoped to the organization's pages) and redirects back.
 * The form is guarded against login CSRF by `Sec-Fetch-Site`/`Origin` and a double-submit token
 * (cookie `mainline_csrf` = field `csrf`); sessions may later bind that token to themselves.
 */
export function registerTestPage(app: WebApp, services: TestPageDependencies): void {
  // The sign-in form's body; only in this scope.
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    },
  );

  // Errors of this scope are pages too, not JSON envelopes.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ApiError) {
      if (error.status >= 500) request.log.error({ err: error }, "test page failed");
      const title = error.status === 503 ? "Unavailable" : "Something went wrong";
      return sendPage(reply, error.status, renderMessagePage(title, error.message));
    }
    const status = error.validation ? 400 : (error.statusCode ?? 500);
    if (status >= 400 && status < 500) {
      return sendPage(
        reply,
        status,
        renderMessagePage("Bad request", "This address or form is not one the page understands."),
      );
    }
    request.log.error({ err: error }, "test page failed");
    return sendPage(
      reply,
      500,
      renderMessagePage(
        "Something went wrong",
        `The server log has the details under request id ${request.id}.`,
      ),
    );
  });

  type PageRequest = FastifyRequest<{
    Params: { org: string; id: string };
    Querystring: { repo?: string; host?: string };
  }>;

  /**
   * The sign-in form, with its anti-forgery token: the one the browser already holds (so that
   * several tabs keep working), else a fresh one; the cookie is set again either way, to renew it.
   */
  function sendLoginPage(
    request: PageRequest,
    reply: FastifyReply,
    status: number,
    options: { title?: string; problem?: string | undefined },
  ): FastifyReply {
    const held = cookieValue(request, CSRF_COOKIE);
    const csrf =
      held !== undefined && CSRF_PATTERN.test(held) ? held : randomBytes(32).toString("base64url");
    const org = request.params.org;
    void reply.header(
      "set-cookie",
      pageCookie(services, request, org, CSRF_COOKIE, csrf, CSRF_MAX_AGE_S),
    );
    return sendPage(
      reply,
      status,
      renderLoginPage({
        action: pagePath(request.params, request.query),
        orgSlug: org,
        csrfToken: csrf,
        ...options,
      }),
    );
  }

  /** 401/403 pages, or the caller's principal. */
  async function authenticate(
    request: PageRequest,
    reply: FastifyReply,
    token: string | undefined,
    problem: string | undefined,
  ): Promise<Principal | undefined> {
    let principal: Principal | undefined;
    if (token) {
      try {
        principal = await services.authenticate(token);
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== "unauthorized") throw error;
      }
    }
    if (!principal) {
      if (token && cookieValue(request, TOKEN_COOKIE) === token) {
        const org = request.params.org;
        void reply.header("set-cookie", pageCookie(services, request, org, TOKEN_COOKIE, "", 0));
      }
      await sendLoginPage(request, reply, 401, {
        problem: token ? (problem ?? "That token is not valid or was revoked.") : problem,
      });
      return undefined;
    }
    try {
      services.checkOrganization(principal, request.params.org);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== "forbidden") throw error;
      await sendLoginPage(request, reply, 403, {
        title: "This test belongs to another organization",
        problem: `${error.message} Sign in with a token of "${request.params.org}" to see it.`,
      });
      return undefined;
    }
    return principal;
  }

  app.get(
    PAGE_PATH,
    { schema: { hide: true, params: PageParams, querystring: PageQuery } },
    async (request, reply) => {
      const header = request.headers["x-api-token"];
      const token =
        (Array.isArray(header) ? header[0] : header) ?? cookieValue(request, TOKEN_COOKIE);
      const principal = await authenticate(request, reply, token, undefined);
      if (!principal) return reply;

      const repo = parseRepo(request.query.repo);
      if (!repo) {
        return sendPage(
          reply,
          400,
          renderMessagePage(
            "Which repository?",
            "Add ?repo=owner/name to the address (the test's html_url carries it).",
          ),
        );
      }
      const view = await services.testPage(
        principal,
        { testId: request.params.id, repo: { ...repo, host: request.query.host } },
        (services.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, ""),
      );
      if (!view) {
        return sendPage(
          reply,
          404,
          renderMessagePage(
            "Test not found",
            `No test ${request.params.id} in repository ${repo.owner}/${repo.name} of organization "${principal.organizationSlug}".`,
          ),
        );
      }
      return sendPage(reply, 200, renderTestPage(view));
    },
  );

  // The sign-in form posts here: a valid token of this organization becomes the cookie.
  app.post(
    PAGE_PATH,
    { schema: { hide: true, params: PageParams, querystring: PageQuery } },
    async (request, reply) => {
      if (crossSite(services, request)) {
        return sendPage(
          reply,
          403,
          renderMessagePage(
            "Sign-in refused",
            "The sign-in form was sent from another site; sign in from the test page itself.",
          ),
        );
      }
      const body = request.body as Record<string, unknown> | null | undefined;
      if (!csrfMatches(request, body?.[CSRF_FIELD])) {
        return sendLoginPage(request, reply, 403, {
          problem:
            "The sign-in form had expired or did not come from this page; enter the token again.",
        });
      }
      const given = typeof body?.token === "string" ? body.token.trim() : "";
      const principal = await authenticate(
        request,
        reply,
        given || undefined,
        given ? undefined : "Enter an API token.",
      );
      if (!principal) return reply;
      return reply
        .status(303)
        .headers({ ...HTML_HEADERS, location: pagePath(request.params, request.query) })
        .header(
          "set-cookie",
          pageCookie(services, request, request.params.org, TOKEN_COOKIE, given, COOKIE_MAX_AGE_S),
        )
        .send(renderMessagePage("Signed in", "Continue to the test page."));
    },
  );
}
