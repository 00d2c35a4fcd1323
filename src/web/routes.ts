/**
 * The dashboard (docs/dashboard.md): `GET /` (the organization's home, or the sign-in form),
 * sign-in and sign-out, the static files under `/assets/`, and every page. The pages get domain
 * services only (narrowed), never storage; the API layer registers this on its server.
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { ApiError } from "../lib/errors.js";
import type { Clock } from "../lib/clock.js";
import type { MergeQueueService } from "../mergequeue/queue-service.js";
import type { Principal } from "../organizations/service.js";
import type { SessionService } from "../organizations/sessions.js";
import type { TestHealthOverview } from "../testhealth/overview.js";
import type { TestManagementService } from "../testhealth/test-management.js";
import type { RepositoryHealthService } from "../testhealth/repository-health.js";
import { ASSET_PREFIX, assetCatalog, type AssetCatalog } from "./assets/catalog.js";
import {
  clearSessionCookie,
  cookieValue,
  crossSite,
  isSecure,
  sessionCookieName,
  setSessionCookie,
  setSignInCookie,
  SIGN_IN_COOKIE,
} from "./cookies.js";
import { registerGitHubSignIn, type GitHubSignInFlow } from "./github-sign-in.js";
import { markup } from "./html.js";
import { registerMergeQueuePages, type MergeQueuePageDependencies } from "./merge-queue-routes.js";
import {
  gettingStarted,
  presentHome,
  queuesTable,
  renderHome,
  repositoriesTable,
} from "./pages/home.js";
import { presentRepository, renderRepository } from "./pages/repository.js";
import { renderSignIn } from "./pages/sign-in.js";
import { presentUploads, renderUploads, renderUploadsIndex } from "./pages/uploads.js";
import { redirect } from "./respond.js";
import { parseRepo, repoRef } from "./repo-param.js";
import { testPageForms } from "./test-page/forms.js";
import { renderTestPage, type TestPageLoader } from "./test-page/html.js";
import { registerTicketPages, type TicketPageDependencies } from "./ticket-routes.js";
import { registerWebhookPages, type WebhookPageDependencies } from "./webhook-routes.js";
import { CSRF_FIELD, webScope, type PageContext, type Viewer, type Web } from "./toolkit.js";
import type { WebApp } from "./types.js";
import { urls } from "./urls.js";

export interface DashboardDependencies {
  sessions: Pick<
    SessionService,
    "resume" | "signIn" | "signInWithGitHub" | "signOut" | "csrfToken" | "csrfMatches" | "lifetimes"
  >;
  /** "Sign in with GitHub" (ADR 0029), when the App's OAuth credentials are configured. */
  github?: GitHubSignInFlow | undefined;
  /** The principal of an `x-api-token` header (scripts reading pages). */
  authenticate(token: string): Promise<Principal>;
  overview: Pick<TestHealthOverview, "organization">;
  queues: Pick<MergeQueueService, "overview">;
  /** The test page's view (built by the API layer's presenters). */
  testPage: TestPageLoader;
  /** A repository's tests table, trends and uploads. */
  repositoryHealth: Pick<RepositoryHealthService, "repository" | "uploads" | "invalidate">;
  /** The test page's forms: quarantine override, ticket. */
  testManagement: Pick<TestManagementService, "setOverride" | "linkTicket">;
  publicUrl: string | undefined;
  clock: Clock;
  /** The merge queue's pages (queue, pull request, health, live stream); placeholders without. */
  mergeQueue?: MergeQueuePageDependencies | undefined;
  /** Webhooks' pages (the endpoints, their deliveries); placeholders without. */
  webhooks?: WebhookPageDependencies | undefined;
  /** Tickets: the test page's "Create ticket" and the connections' page; none without. */
  tickets?: Omit<TicketPageDependencies, "testPage" | "invalidate"> | undefined;
  /** The static files; default: built from `src/` (running from source) or `dist/assets/`. */
  assets?: (() => Promise<AssetCatalog>) | undefined;
}

const CSRF_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A path of this server to go to after signing in; anything else (`//host`, `https:`) is not. */
export function safeNext(next: unknown): string | undefined {
  if (typeof next !== "string" || next.length > 2048) return undefined;
  if (!/^\/(?![/\\])/.test(next) || /[\p{Cc}\\]/u.test(next)) return undefined;
  if (next.startsWith("/sign-in") || next.startsWith("/sign-out")) return undefined;
  return next;
}

const SignInQuery = Type.Object({ next: Type.Optional(Type.String({ maxLength: 2048 })) });
const SignInForm = Type.Object(
  {
    token: Type.Optional(Type.String({ maxLength: 4096 })),
    [CSRF_FIELD]: Type.Optional(Type.String({ maxLength: 200 })),
    next: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
);

const TestParams = Type.Object({
  org: Type.String({ maxLength: 63 }),
  id: Type.String({ maxLength: 64 }),
});
const TestQuery = Type.Object({
  repo: Type.Optional(Type.String({ maxLength: 600 })),
  host: Type.Optional(Type.String({ maxLength: 255 })),
  /** What the last form did (a word of TEST_NOTES, never text shown as given). */
  note: Type.Optional(Type.String({ maxLength: 40 })),
});
const TestFormQuery = Type.Object({
  repo: Type.String({ maxLength: 600 }),
  host: Type.Optional(Type.String({ maxLength: 255 })),
});
const OverrideForm = Type.Object({
  override: Type.Union([
    Type.Literal("ALWAYS_QUARANTINE"),
    Type.Literal("NEVER_QUARANTINE"),
    Type.Literal("UNSPECIFIED"),
  ]),
  reason: Type.Optional(Type.String({ maxLength: 500 })),
});
const TicketForm = Type.Object({ ticket: Type.Optional(Type.String({ maxLength: 500 })) });
/** `page=N` (1-based): a query string holds text, so a pattern rather than an integer. */
const PageNumber = Type.String({ pattern: "^[1-9][0-9]{0,5}$" });
const RepositoryQuery = Type.Object({
  repo: Type.String({ maxLength: 600 }),
  host: Type.Optional(Type.String({ maxLength: 255 })),
  status: Type.Optional(
    Type.Union([
      Type.Literal(""),
      Type.Literal("flaky"),
      Type.Literal("broken"),
      Type.Literal("quarantined"),
      Type.Literal("healthy"),
    ]),
  ),
  owner: Type.Optional(Type.String({ maxLength: 200 })),
  q: Type.Optional(Type.String({ maxLength: 200 })),
  sort: Type.Optional(
    Type.Union([
      Type.Literal(""),
      Type.Literal("failure_rate"),
      Type.Literal("prs_impacted"),
      Type.Literal("last_failure"),
    ]),
  ),
  page: Type.Optional(PageNumber),
});
const UploadsQuery = Type.Object({
  repo: Type.Optional(Type.String({ maxLength: 600 })),
  host: Type.Optional(Type.String({ maxLength: 255 })),
  page: Type.Optional(PageNumber),
});
const OrgParams = Type.Object({ org: Type.String({ maxLength: 63 }) });

const OVERRIDE_NOTES = {
  ALWAYS_QUARANTINE: "quarantine-always",
  NEVER_QUARANTINE: "quarantine-never",
  UNSPECIFIED: "quarantine-rule",
} as const;

export function registerDashboard(app: WebApp, deps: DashboardDependencies): void {
  const assets = deps.assets ?? assetCatalog;
  const web = webScope(app, {
    sessions: deps.sessions,
    authenticate: (token) => deps.authenticate(token),
    publicUrl: deps.publicUrl,
    clock: deps.clock,
    assets,
  });
  registerAssets(app, assets);
  registerSignIn(web, deps);
  registerGitHubSignIn(web, {
    github: deps.github,
    sessions: deps.sessions,
    publicUrl: deps.publicUrl,
    clock: deps.clock,
    safeNext,
  });
  registerPages(web, deps);
}

/** `/assets/<name>.<hash>.<ext>`: from memory, cached for a year (the name changes with it). */
function registerAssets(app: WebApp, assets: () => Promise<AssetCatalog>): void {
  app.get(
    `${ASSET_PREFIX}:file`,
    { schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 200 }) }) } },
    async (request, reply) => {
      const asset = (await assets()).file(request.params.file);
      if (!asset) {
        reply.callNotFound();
        return reply;
      }
      void reply.headers({
        "cache-control": "public, max-age=31536000, immutable",
        etag: asset.etag,
        "x-content-type-options": "nosniff",
        "cross-origin-resource-policy": "same-origin",
      });
      if (request.headers["if-none-match"] === asset.etag) return reply.code(304).send();
      return reply.type(asset.contentType).send(asset.body);
    },
  );
}

function registerSignIn(web: Web, deps: DashboardDependencies): void {
  const { app } = web;

  /**
   * The sign-in form with its anti-forgery token: the one the browser holds (several tabs keep
   * working), else a new one; the cookie is set again either way.
   */
  async function signInForm(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    next: string | undefined,
    problem?: string,
  ): Promise<FastifyReply> {
    const held = cookieValue(request, SIGN_IN_COOKIE);
    const csrf =
      held !== undefined && CSRF_PATTERN.test(held) ? held : randomBytes(32).toString("base64url");
    setSignInCookie(reply, isSecure(request, deps.publicUrl), csrf);
    return web.send(
      reply,
      status,
      renderSignIn({
        csrf,
        next,
        problem,
        lifetimes: deps.sessions.lifetimes,
        github: deps.github !== undefined,
      }),
      undefined,
    );
  }

  // The dashboard's front door: the organization's home, or the sign-in form.
  app.get("/", { schema: { hide: true } }, async (request, reply) => {
    const viewer = await web.viewer(request, true);
    if (!viewer) return signInForm(request, reply, 200, undefined);
    return home(web, deps, reply, viewer, contextOf(web, deps, request, viewer));
  });

  app.get(
    "/sign-in",
    { schema: { hide: true, querystring: SignInQuery } },
    async (request, reply) => {
      const next = safeNext(request.query.next);
      const viewer = await web.viewer(request, false);
      if (viewer) return redirect(reply, next ?? urls.home(viewer.principal.organizationSlug));
      return signInForm(request, reply, 200, next);
    },
  );

  app.post("/sign-in", { schema: { hide: true, body: SignInForm } }, async (request, reply) => {
    const body = request.body;
    const next = safeNext(body.next);
    if (crossSite(request, deps.publicUrl)) {
      return web.message(
        reply,
        403,
        "Sign-in refused",
        "The sign-in form was sent from another site; sign in from this server's own page.",
      );
    }
    const held = cookieValue(request, SIGN_IN_COOKIE);
    const field = body[CSRF_FIELD];
    const formMatches =
      held !== undefined &&
      typeof field === "string" &&
      CSRF_PATTERN.test(held) &&
      CSRF_PATTERN.test(field) &&
      timingSafeEqual(Buffer.from(held), Buffer.from(field));
    if (!formMatches) {
      return signInForm(
        request,
        reply,
        403,
        next,
        "The sign-in form had expired or did not come from this page; enter the token again.",
      );
    }
    const token = body.token?.trim() ?? "";
    if (token === "") return signInForm(request, reply, 401, next, "Enter an API token.");
    let signedIn: Awaited<ReturnType<typeof deps.sessions.signIn>>;
    try {
      signedIn = await deps.sessions.signIn(token);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== "unauthorized") throw error;
      return signInForm(request, reply, 401, next, "That token is not valid or was revoked.");
    }
    const secure = isSecure(request, deps.publicUrl);
    // A session the browser held before ends: one browser, one session.
    const previous = cookieValue(request, sessionCookieName(secure));
    if (previous !== undefined) await deps.sessions.signOut(previous);
    setSignInCookie(reply, secure, "");
    setSessionCookie(reply, secure, signedIn.sessionId, deps.sessions.lifetimes.absoluteMs / 1000);
    return redirect(reply, next ?? urls.home(signedIn.session.principal.organizationSlug));
  });

  app.post(
    "/sign-out",
    { schema: { hide: true, body: Type.Object({}, { additionalProperties: true }) } },
    async (request, reply) => {
      const viewer = await web.checkForm(request, reply);
      if (!viewer) return reply;
      const secure = isSecure(request, deps.publicUrl);
      const sessionId = cookieValue(request, sessionCookieName(secure));
      if (sessionId !== undefined) await deps.sessions.signOut(sessionId);
      clearSessionCookie(reply, secure);
      return redirect(reply, urls.signIn());
    },
  );
}

function contextOf(
  web: Web,
  deps: DashboardDependencies,
  request: FastifyRequest,
  viewer: Viewer,
): PageContext {
  return {
    viewer,
    org: viewer.principal.organizationSlug,
    now: deps.clock.now(),
    baseUrl: web.baseUrl(request),
  };
}

/** The organization's home (also `GET /` when signed in). */
async function home(
  web: Web,
  deps: DashboardDependencies,
  reply: FastifyReply,
  viewer: Viewer,
  context: PageContext,
): Promise<FastifyReply> {
  const [health, queues] = await Promise.all([
    deps.overview.organization(viewer.principal),
    deps.queues.overview(viewer.principal),
  ]);
  const view = renderHome(presentHome(context.org, health, queues), context.baseUrl);
  return web.send(reply, 200, view, viewer);
}

function registerPages(web: Web, deps: DashboardDependencies): void {
  registerOrganizationHome(web, deps);
  registerTestsIndex(web, deps);
  registerQueuesIndex(web, deps);
  registerTestPage(web, deps);
  registerTestForms(web, deps);
  registerRepositoryPage(web, deps);
  registerUploadsPage(web, deps);
  if (deps.mergeQueue) registerMergeQueuePages(web, deps.mergeQueue);
  if (deps.webhooks) registerWebhookPages(web, deps.webhooks);
  if (deps.tickets) {
    registerTicketPages(web, {
      ...deps.tickets,
      testPage: deps.testPage,
      invalidate: (repositoryId) => {
        deps.repositoryHealth.invalidate(repositoryId);
      },
    });
  }
  registerPlaceholders(web, deps.mergeQueue !== undefined, deps.webhooks !== undefined);
}

/** The organization's home at `/:org` (`/v1` is the API's). */
function registerOrganizationHome(web: Web, deps: DashboardDependencies): void {
  web.app.get("/:org", { schema: { hide: true, params: OrgParams } }, async (request, reply) => {
    if (request.params.org === "v1") {
      reply.callNotFound();
      return reply;
    }
    const viewer = await web.viewer(request, true);
    if (!viewer) return redirect(reply, urls.signIn(request.url));
    if (request.params.org !== viewer.principal.organizationSlug) {
      return web.notFound(reply, viewer);
    }
    return home(web, deps, reply, viewer, contextOf(web, deps, request, viewer));
  });
}

/** Tests: the repositories with their test health. */
function registerTestsIndex(web: Web, deps: DashboardDependencies): void {
  web.page("/:org/flaky-tests", { params: OrgParams }, async (_request, context) => {
    const [health, queues] = await Promise.all([
      deps.overview.organization(context.viewer.principal),
      deps.queues.overview(context.viewer.principal),
    ]);
    const view = presentHome(context.org, health, queues);
    const empty = view.repositories.length === 0;
    return {
      view: {
        title: `${context.org} · Tests`,
        section: "tests",
        breadcrumbs: [{ label: "Tests" }],
        main: markup`<h1>Tests</h1>
${empty ? gettingStarted(context.org, context.baseUrl) : repositoriesTable(view)}`,
      },
    };
  });
}

/** Merge queues: every queue with its state. */
function registerQueuesIndex(web: Web, deps: DashboardDependencies): void {
  web.page("/:org/merge-queue", { params: OrgParams }, async (_request, context) => {
    const queues = await deps.queues.overview(context.viewer.principal);
    const view = presentHome(context.org, { repositories: [], daily: [] }, queues);
    return {
      view: {
        title: `${context.org} · Merge queues`,
        section: "queues",
        breadcrumbs: [{ label: "Merge queues" }],
        main: markup`<h1>Merge queues</h1>
${view.queues.length === 0 ? gettingStarted(context.org, context.baseUrl) : queuesTable(view)}`,
      },
    };
  });
}

/** The test page (docs/contract.md §3: every test's html_url). */
function registerTestPage(web: Web, deps: DashboardDependencies): void {
  web.page(
    "/:org/flaky-tests/test/:id",
    { params: TestParams, querystring: TestQuery },
    async (request, context) => {
      const repo = parseRepo(request.query.repo);
      if (!repo) {
        return {
          status: 400,
          view: {
            title: "Which repository?",
            main: markup`<h1>Which repository?</h1><p>Add ?repo=owner/name to the address (the test's html_url carries it).</p>`,
          },
        };
      }
      const view = await deps.testPage(
        context.viewer.principal,
        { testId: request.params.id, repo: { ...repo, host: request.query.host } },
        context.baseUrl,
      );
      if (!view) {
        return {
          status: 404,
          view: {
            title: "Test not found",
            main: markup`<h1>Test not found</h1><p>No test ${request.params.id} in repository ${repo.owner}/${repo.name} of organization "${context.org}".</p>`,
          },
        };
      }
      const ref = { ...repo, host: request.query.host || "github.com" };
      return {
        view: renderTestPage(
          view,
          testPageForms(context, request.params.id, ref, { note: request.query.note }),
        ),
      };
    },
  );
}

/** The test page's forms: they change the test, then go back to its page with a note. */
function registerTestForms(web: Web, deps: DashboardDependencies): void {
  web.action(
    "/:org/flaky-tests/test/:id/quarantine",
    { params: TestParams, querystring: TestFormQuery, body: OverrideForm },
    async (request, context) => {
      const repo = repoRef(request.query);
      if (!repo) return { redirect: urls.tests(context.org) };
      const reason = request.body.reason?.trim() ?? "";
      const { test } = await deps.testManagement.setOverride(context.viewer.principal, {
        orgUrlSlug: context.org,
        repo,
        testId: request.params.id,
        override: request.body.override,
        reason: reason === "" ? null : reason,
        actor: null,
      });
      deps.repositoryHealth.invalidate(test.repositoryId);
      return {
        redirect: urls.test(
          context.org,
          request.params.id,
          repo,
          OVERRIDE_NOTES[request.body.override],
        ),
      };
    },
  );
  web.action(
    "/:org/flaky-tests/test/:id/ticket",
    { params: TestParams, querystring: TestFormQuery, body: TicketForm },
    async (request, context) => {
      const repo = repoRef(request.query);
      if (!repo) return { redirect: urls.tests(context.org) };
      const ticket = request.body.ticket?.trim() ?? "";
      const { test } = await deps.testManagement.linkTicket(context.viewer.principal, {
        orgUrlSlug: context.org,
        repo,
        testId: request.params.id,
        ticket: ticket === "" ? null : ticket,
      });
      deps.repositoryHealth.invalidate(test.repositoryId);
      return {
        redirect: urls.test(
          context.org,
          request.params.id,
          repo,
          ticket === "" ? "ticket-unlinked" : "ticket-linked",
        ),
      };
    },
  );
}

/** A repository: figures, trends, the tests table (filters, sort and page in the address). */
function registerRepositoryPage(web: Web, deps: DashboardDependencies): void {
  web.page(
    "/:org/flaky-tests/repo",
    { params: OrgParams, querystring: RepositoryQuery },
    async (request, context) => {
      const repo = repoRef(request.query);
      if (!repo) return { notFound: true };
      const { status, owner, q, sort, page } = request.query;
      const found = await deps.repositoryHealth.repository(context.viewer.principal, repo, {
        status: status || undefined,
        owner,
        q,
        sort: sort || undefined,
        page: page === undefined ? undefined : Number(page),
      });
      return { view: renderRepository(presentRepository(context.org, found, context.now)) };
    },
  );
}

/** Uploads: of a repository, or the repositories to choose from. */
function registerUploadsPage(web: Web, deps: DashboardDependencies): void {
  web.page(
    "/:org/flaky-tests/uploads",
    { params: OrgParams, querystring: UploadsQuery },
    async (request, context) => {
      if (request.query.repo === undefined) {
        const health = await deps.overview.organization(context.viewer.principal);
        return {
          view: renderUploadsIndex(
            context.org,
            health.repositories.map((r) => ({ repo: r.repository, tests: r.tests })),
          ),
        };
      }
      const repo = repoRef(request.query);
      if (!repo) return { notFound: true };
      const found = await deps.repositoryHealth.uploads(
        context.viewer.principal,
        repo,
        Number(request.query.page ?? 1),
      );
      return { view: renderUploads(presentUploads(context.org, found, context.now)) };
    },
  );
}

/**
 * PLACEHOLDER pages: the queue page of a server without the merge queue's pages (no engine, as in
 * some tests), and Webhooks without the webhook service, answer at their URL (src/web/urls.ts), so
 * that links still work, and say that they are not available.
 */
function registerPlaceholders(
  web: Web,
  queuePagesBuilt: boolean,
  webhookPagesBuilt: boolean,
): void {
  const pending = [
    ...(queuePagesBuilt
      ? []
      : [{ path: "/:org/merge-queue/queue", title: "Merge queue", section: "queues" as const }]),
    ...(webhookPagesBuilt
      ? []
      : [{ path: "/:org/webhooks", title: "Webhooks", section: "webhooks" as const }]),
  ];
  for (const { path, title, section } of pending) {
    web.page(
      path,
      {
        params: OrgParams,
        querystring: Type.Object({}, { additionalProperties: Type.String({ maxLength: 600 }) }),
      },
      async (request) => {
        const query = request.query as Record<string, string>;
        const about = query.repo ? `${query.repo}${query.branch ? ` · ${query.branch}` : ""}` : "";
        return Promise.resolve({
          view: {
            title,
            section,
            breadcrumbs: [{ label: about ? `${title}: ${about}` : title }],
            main: markup`<h1>${title}${about ? markup` <span class="muted">${about}</span>` : ""}</h1><p class="notice">This server does not run the ${title} pages. The API has its data: see <a href="/docs">/docs</a>.</p>`,
          },
        });
      },
    );
  }
}
