/**
 * How dashboard pages (`web.page`) and forms (`web.action`) are added: docs/dashboard.md, "The
 * toolkit", has a worked example. Pages need a viewer (session or `x-api-token`); actions need a
 * session, a same-site form and its `csrf` field, else 403. A path's `:org` must be the viewer's
 * organization (else 404); every answer carries `respond.ts`'s headers.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type, type Static, type TObject, type TSchema } from "typebox";
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from "../lib/faults.js";
import type { Principal } from "../organizations/service.js";
import type { SessionService, WebSession } from "../organizations/sessions.js";
import { AssetCatalog } from "./assets/catalog.js";
import {
  clearLegacyCookies,
  clearSessionCookie,
  cookieValue,
  crossSite,
  isSecure,
  sessionCookieName,
} from "./cookies.js";
import { markup } from "./html.js";
import { renderDocument, type PageView } from "./layout.js";
import { redirect, sendHtml } from "./respond.js";
import { urls } from "./urls.js";
import type { WebApp } from "./types.js";

/** The anti-forgery field of every form that changes something. */
export const CSRF_FIELD = "csrf";
const FORM_BODY_LIMIT = 16 * 1024;

/** What the toolkit needs: sessions, tokens (for scripts), the clock and the static files. */
export interface WebDependencies {
  sessions: Pick<SessionService, "resume" | "csrfToken" | "csrfMatches">;
  /** The principal of an `x-api-token` header; throws `unauthorized` for a bad one. */
  authenticate(token: string): Promise<Principal>;
  /** MAINLINE_PUBLIC_URL when set; otherwise links use the address each request came to. */
  publicUrl: string | undefined;
  clock: Clock;
  assets(): Promise<AssetCatalog>;
}

/** Who is looking. */
export interface Viewer {
  principal: Principal;
  /** Undefined when an `x-api-token` header signed the request (scripts): no forms then. */
  session: WebSession | undefined;
  /** The session's anti-forgery token, for the forms a page shows. */
  csrf: string | undefined;
}

export interface PageContext {
  viewer: Viewer;
  /** The viewer's organization slug (the `:org` of the path, when it has one). */
  org: string;
  now: number;
  /** `https://mainline.example.com`: for absolute links (the API's `html_url`s). */
  baseUrl: string;
}

/** A page's answer: a view to render (status 200 unless given), a redirect, or a 404 page. */
export type PageAnswer =
  { view: PageView; status?: number } | { redirect: string } | { notFound: true };

/** An action's answer: where the browser goes next (303), or a page (a form with problems). */
export type ActionAnswer = { redirect: string } | { view: PageView; status: number };

interface RouteSchemas<P extends TSchema, Q extends TSchema> {
  params?: P;
  querystring?: Q;
}

type Handler<P extends TSchema, Q extends TSchema, B, A> = (
  request: FastifyRequest & { params: Static<P>; query: Static<Q>; body: B },
  context: PageContext,
) => Promise<A>;

declare module "fastify" {
  interface FastifyRequest {
    webViewer: Viewer | null;
  }
}

/** `/v1/...` stays the API's: its paths never become pages, and keep the JSON 404. */
const API_SEGMENT = "v1";

export class Web {
  constructor(
    readonly app: WebApp,
    readonly deps: WebDependencies,
  ) {}

  /** Absolute base of links: the public URL, else the address the request came to. */
  baseUrl(request: FastifyRequest): string {
    return (this.deps.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, "");
  }

  /** The viewer a request's session cookie (or, if `allowToken`, `x-api-token`) names. */
  async viewer(request: FastifyRequest, allowToken: boolean): Promise<Viewer | undefined> {
    const secure = isSecure(request, this.deps.publicUrl);
    const sessionId = cookieValue(request, sessionCookieName(secure));
    if (sessionId !== undefined) {
      const session = await this.deps.sessions.resume(sessionId);
      if (session) {
        return {
          principal: session.principal,
          session,
          csrf: this.deps.sessions.csrfToken(sessionId),
        };
      }
    }
    const header = request.headers["x-api-token"];
    const token = Array.isArray(header) ? header[0] : header;
    if (allowToken && token) {
      try {
        return {
          principal: await this.deps.authenticate(token),
          session: undefined,
          csrf: undefined,
        };
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== "unauthorized") throw error;
      }
    }
    return undefined;
  }

  /** Renders a view in the layout and sends it. */
  async send(
    reply: FastifyReply,
    status: number,
    view: PageView,
    viewer: Viewer | undefined,
  ): Promise<FastifyReply> {
    // A page without its stylesheet beats no page (an error page when the files are missing).
    const assets = await this.deps.assets().catch(() => new AssetCatalog([]));
    return sendHtml(
      reply,
      status,
      renderDocument(view, {
        orgSlug: viewer?.principal.organizationSlug,
        csrf: viewer?.csrf,
        assets,
      }),
    );
  }

  /** A message page (errors, refusals). */
  message(
    reply: FastifyReply,
    status: number,
    title: string,
    text: string,
    viewer?: Viewer,
  ): Promise<FastifyReply> {
    return this.send(
      reply,
      status,
      { title, main: markup`<h1>${title}</h1><p>${text}</p>` },
      viewer,
    );
  }

  /** The one 404 page: an unknown page, or another organization's (which it does not reveal). */
  notFound(reply: FastifyReply, viewer: Viewer | undefined): Promise<FastifyReply> {
    return this.message(
      reply,
      404,
      "Page not found",
      "There is no such page in your organization. Check the address, or go back to the home page.",
      viewer,
    );
  }

  /** A GET page for signed-in viewers (session or `x-api-token`). */
  page<P extends TSchema = TSchema, Q extends TSchema = TSchema>(
    path: string,
    schemas: RouteSchemas<P, Q>,
    handler: Handler<P, Q, undefined, PageAnswer>,
  ): void {
    this.app.get(
      path,
      { schema: { hide: true, ...schemas } },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const params = request.params as Record<string, string | undefined>;
        if (params.org === API_SEGMENT) {
          reply.callNotFound();
          return reply;
        }
        const viewer = await this.viewer(request, true);
        if (!viewer) return redirect(reply, urls.signIn(request.url));
        request.webViewer = viewer;
        const context = this.context(request, viewer);
        if (params.org !== undefined && params.org !== context.org) {
          return this.notFound(reply, viewer);
        }
        const answer = await handler(request as Parameters<typeof handler>[0], context);
        return this.answer(reply, answer, viewer);
      },
    );
  }

  /**
   * A POST form that changes something. `body` lists the form's own fields (strings); `csrf` is
   * checked before them, in `preValidation`, so that a forged post is refused whatever it holds.
   */
  action<P extends TSchema = TSchema, Q extends TSchema = TSchema, B extends TObject = TObject>(
    path: string,
    schemas: RouteSchemas<P, Q> & { body?: B },
    handler: Handler<P, Q, Static<B>, ActionAnswer>,
  ): void {
    const body = Type.Object(
      { ...(schemas.body?.properties ?? {}), [CSRF_FIELD]: Type.String({ maxLength: 200 }) },
      { additionalProperties: true },
    );
    this.app.post(
      path,
      {
        schema: { hide: true, ...schemas, body },
        preValidation: async (request, reply) => {
          const params = request.params as Record<string, string | undefined>;
          if (params.org === API_SEGMENT) {
            reply.callNotFound();
            return reply;
          }
          const viewer = await this.checkForm(request, reply);
          return viewer ? undefined : reply;
        },
      },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const viewer = request.webViewer;
        if (!viewer) throw new Error("action reached without its form check");
        const context = this.context(request, viewer);
        const params = request.params as Record<string, string | undefined>;
        if (params.org !== undefined && params.org !== context.org) {
          return this.notFound(reply, viewer);
        }
        const answer = await handler(request as Parameters<typeof handler>[0], context);
        return this.answer(reply, answer, viewer);
      },
    );
  }

  /**
   * A form's checks, in order: from this site, a live session, its anti-forgery token. Each
   * refusal is a page (403, or 401 without a session) and nothing else happens.
   */
  async checkForm(request: FastifyRequest, reply: FastifyReply): Promise<Viewer | undefined> {
    if (crossSite(request, this.deps.publicUrl)) {
      await this.message(
        reply,
        403,
        "Refused",
        "This form was sent from another site. Nothing was changed.",
      );
      return undefined;
    }
    const secure = isSecure(request, this.deps.publicUrl);
    const sessionId = cookieValue(request, sessionCookieName(secure));
    const session =
      sessionId === undefined ? undefined : await this.deps.sessions.resume(sessionId);
    if (!session || sessionId === undefined) {
      if (sessionId !== undefined) clearSessionCookie(reply, secure);
      await this.send(
        reply,
        401,
        {
          title: "Signed out",
          main: markup`<h1>Signed out</h1><p>Your session has ended, so nothing was changed. <a href="${urls.signIn()}">Sign in</a> and try again.</p>`,
        },
        undefined,
      );
      return undefined;
    }
    const body = request.body as Record<string, unknown> | null | undefined;
    const viewer: Viewer = {
      principal: session.principal,
      session,
      csrf: this.deps.sessions.csrfToken(sessionId),
    };
    if (!this.deps.sessions.csrfMatches(sessionId, body?.[CSRF_FIELD])) {
      await this.message(
        reply,
        403,
        "Refused",
        "This form had expired or did not come from this site. Nothing was changed; reload the page and try again.",
        viewer,
      );
      return undefined;
    }
    request.webViewer = viewer;
    return viewer;
  }

  private context(request: FastifyRequest, viewer: Viewer): PageContext {
    return {
      viewer,
      org: viewer.principal.organizationSlug,
      now: this.deps.clock.now(),
      baseUrl: this.baseUrl(request),
    };
  }

  private async answer(
    reply: FastifyReply,
    answer: PageAnswer | ActionAnswer,
    viewer: Viewer,
  ): Promise<FastifyReply> {
    if ("redirect" in answer) return redirect(reply, answer.redirect);
    if ("notFound" in answer) return this.notFound(reply, viewer);
    return this.send(reply, answer.status ?? 200, answer.view, viewer);
  }
}

/**
 * Sets up a scope for pages: form bodies, the old cookies cleared, errors as pages. Returns the
 * toolkit the pages are registered with.
 */
export function webScope(app: WebApp, deps: WebDependencies): Web {
  const web = new Web(app, deps);
  app.decorateRequest("webViewer", null);
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    },
  );
  app.addHook("onRequest", (request, reply, done) => {
    clearLegacyCookies(request, reply);
    done();
  });
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const viewer = request.webViewer ?? undefined;
    // A service's 404 (another organization's queue, a test that is not there) is the one 404.
    if (error instanceof ApiError && error.status === 404) return web.notFound(reply, viewer);
    if (error instanceof ApiError && error.status < 500) {
      return web.message(reply, error.status, "Not possible", error.message, viewer);
    }
    if (isDatabaseUnavailable(error) || (error instanceof ApiError && error.status === 503)) {
      request.log.warn({ err: error }, "page unavailable");
      void reply.header("retry-after", String(RETRY_AFTER_SECONDS));
      return web.message(
        reply,
        503,
        "Unavailable",
        "The server cannot answer right now; retry in a moment.",
      );
    }
    const status = error.validation ? 400 : (error.statusCode ?? 500);
    if (status >= 400 && status < 500) {
      if (status === 413) void reply.header("connection", "close");
      return web.message(
        reply,
        status,
        "Bad request",
        "This address or form is not one the dashboard understands.",
      );
    }
    request.log.error({ err: error }, "page failed");
    return web.message(
      reply,
      500,
      "Something went wrong",
      `The server log has the details under request id ${request.id}.`,
    );
  });
  return web;
}
