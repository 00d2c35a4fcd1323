import { randomUUID } from "node:crypto";
import Fastify, { type FastifyServerOptions } from "fastify";
import swagger from "@fastify/swagger";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FailFirstService } from "../mergequeue/fail-first.js";
import type { PullRequestService } from "../mergequeue/pull-request-service.js";
import type { MergeQueueService } from "../mergequeue/queue-service.js";
import type { ForkedWorkflowRuns } from "../organizations/forked-workflow-runs.js";
import type { OrganizationService } from "../organizations/service.js";
import { renderDocsPage, type OpenApiDocument } from "./docs-page.js";
import { registerCancelPullRequest } from "./mergequeue/cancelPullRequest.js";
import { registerCreateQueue } from "./mergequeue/createQueue.js";
import { registerDeleteQueue } from "./mergequeue/deleteQueue.js";
import { registerGetMergeQueueMetrics } from "./mergequeue/getMergeQueueMetrics.js";
import { registerGetFailFirstTests } from "./mergequeue/getFailFirstTests.js";
import { registerGetMergeQueueTestingDetails } from "./mergequeue/getMergeQueueTestingDetails.js";
import { registerGetQueue } from "./mergequeue/getQueue.js";
import { registerGetSubmittedPullRequest } from "./mergequeue/getSubmittedPullRequest.js";
import { registerGetSubmittedPullRequests } from "./mergequeue/getSubmittedPullRequests.js";
import { registerListPullRequests } from "./mergequeue/listPullRequests.js";
import { registerRestartTestsOnPullRequest } from "./mergequeue/restartTestsOnPullRequest.js";
import { registerSetImpactedTargets } from "./mergequeue/setImpactedTargets.js";
import { registerSubmitPullRequest } from "./mergequeue/submitPullRequest.js";
import { registerUpdateQueue } from "./mergequeue/updateQueue.js";
import { requireApiToken } from "./plugins/auth.js";
import { clientError, installErrorHandling, routerError } from "./plugins/errors.js";
import { InFlightWork, trackHandlers } from "./plugins/in-flight.js";
import { redactingLogger } from "./plugins/logging.js";
import { releaseConnectionsOnClose } from "./plugins/closing.js";
import { HttpMetrics, installMetrics } from "./plugins/metrics.js";
import { installTextCheck } from "./plugins/text.js";
import { registerServiceRoutes, registerWhoAmI } from "./service/routes.js";
import { registerUploaderRoute } from "./service/uploader.js";
import { registerUnauthenticatedUploadRoutes, registerUploadRoutes } from "./flakytests/uploads.js";
import type { Clock } from "../lib/clock.js";
import type { PublicRepositoryIds } from "../testhealth/public-repository-ids.js";
import type { RepositoryAccess } from "../testhealth/repository-access.js";
import type { TestManagementService } from "../testhealth/test-management.js";
import type { TestQueryService } from "../testhealth/test-queries.js";
import type { UploadService } from "../testhealth/upload-service.js";
import { registerListRoutes } from "./flakytests/lists.js";
import { testPageView } from "./flakytests/presenters/test-page.js";
import { registerPublicRepoIdRoutes } from "./flakytests/public-repo-id.js";
import type { GitHubSignInFlow } from "../web/github-sign-in.js";
import { registerDashboard } from "../web/routes.js";
import type { MergeQueuePageDependencies } from "../web/merge-queue-routes.js";
import type { QueueDashboardService } from "../mergequeue/dashboard.js";
import type { SessionService } from "../organizations/sessions.js";
import type { TestHealthOverview } from "../testhealth/overview.js";
import type { RepositoryHealthService } from "../testhealth/repository-health.js";
import { registerTestRoutes } from "./flakytests/tests.js";
import { EVENT_TYPES, PING_EVENT_TYPE } from "../notifications/events.js";
import { registerTicketRoutes, type TicketRouteDeps } from "./tickets/routes.js";
import { registerWebhookRoutes, type WebhookRouteDeps } from "./webhooks/routes.js";
import type { ApiApp } from "./types.js";

/** docs/contract.md §1: JSON bodies up to 20 MiB. */
export const BODY_LIMIT_BYTES = 20 * 1024 * 1024;

export interface ServerDependencies {
  /** Resolves when the database answers a trivial query (the status routes). */
  pingDatabase: () => Promise<void>;
  organizations: OrganizationService;
  /** The dashboard's sign-in sessions. */
  sessions: SessionService;
  /** "Sign in with GitHub" (ADR 0029): the GitHub App's user authorization, when configured. */
  githubSignIn?: GitHubSignInFlow | undefined;
  queues: MergeQueueService;
  /** The merge queue's dashboard reads; its pages exist only with it and `pullRequests`. */
  queueDashboard?: QueueDashboardService | undefined;
  /** A check's log of the built-in CI runner, for the dashboard's log links. */
  ciLog?: MergeQueuePageDependencies["ciLog"];
  /** The configuration check of a queue's target branch, for the queue page. */
  configCheck?: MergeQueuePageDependencies["configuration"];
  /** The pull-request operations; their routes exist only when given (they need the engine). */
  pullRequests?: PullRequestService | undefined;
  /** The failed tests a localization run runs first (`getFailFirstTests`), when given. */
  failFirst?: FailFirstService | undefined;
  /** `x-forked-workflow-run-id` on setImpactedTargets (the GitHub App, when configured). */
  forkedRuns?: ForkedWorkflowRuns | undefined;
  uploads: UploadService;
  /** Test health's services: what its routes and the test page call. */
  testHealth: {
    queries: TestQueryService;
    management: TestManagementService;
    access: Pick<RepositoryAccess, "checkOrganization">;
    publicIds: PublicRepositoryIds;
    /** Test health across an organization's repositories (the dashboard's home). */
    overview: TestHealthOverview;
    /** A repository's tests table, trends and uploads (the dashboard's repository pages). */
    repositoryHealth: RepositoryHealthService;
    clock: Clock;
  };
  /** The providers' own operations (the local host's `/v1/local/*`), on the authenticated scope. */
  providerRoutes?: readonly ((scope: ApiApp) => void)[];
  /** Where git hosts deliver webhooks (`/webhooks/github`): outside `/v1`, no API token (each
   * delivery is signed), each in a scope of its own (they read their bodies raw). */
  webhookRoutes?: readonly ((scope: ApiApp) => void)[];
  /** Run when the server closes, after its requests (background work to stop). */
  onClose?: (() => Promise<void>) | undefined;
  /** Outbound webhooks' management (`/v1/webhooks/*`). */
  webhooks?: WebhookRouteDeps | undefined;
  /** Ticket connections (`/v1/tickets/*`) and creating a test's ticket. */
  tickets?: Omit<TicketRouteDeps, "publicUrl"> | undefined;
  /** MAINLINE_PUBLIC_URL when set; otherwise links use the address each request came to. */
  publicUrl: string | undefined;
  logger: FastifyServerOptions["logger"];
  version: string;
  /** The standalone uploader the server hands out; default: the package's dist/uploader/. */
  uploaderFile?: string | undefined;
}

/** submitPullRequest … getMergeQueueMetrics (background §trunk-api-3). */
function registerPullRequestRoutes(
  scope: ApiApp,
  pullRequests: PullRequestService,
  forkedRuns: ForkedWorkflowRuns | undefined,
): void {
  registerSubmitPullRequest(scope, pullRequests);
  registerCancelPullRequest(scope, pullRequests);
  registerRestartTestsOnPullRequest(scope, pullRequests);
  registerGetSubmittedPullRequest(scope, pullRequests);
  registerGetSubmittedPullRequests(scope, pullRequests);
  registerListPullRequests(scope, pullRequests);
  registerSetImpactedTargets(scope, pullRequests, forkedRuns);
  registerGetMergeQueueTestingDetails(scope, pullRequests);
  registerGetMergeQueueMetrics(scope, pullRequests);
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The path with every run of slashes made one, the query left as sent. Trunk's uploader given a
 * base URL that ends in "/" asks for `//v1/metrics/...`; every route answers such paths as if
 * the slashes were single.
 */
export function collapseSlashes(url: string): string {
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  if (!path.includes("//")) return url;
  return path.replace(/\/{2,}/g, "/") + (query === -1 ? "" : url.slice(query));
}

export async function buildServer(deps: ServerDependencies): Promise<ApiApp> {
  const app = createApp(deps);

  // Every operation takes JSON; fastify's built-in text/plain parser would let other bodies in.
  app.removeContentTypeParser("text/plain");
  app.decorateRequest("principal", null);
  app.decorateRequest("publicCaller", null);
  app.decorateRequest("forkedRunId", null);

  releaseConnectionsOnClose(app);
  app.addHook("onSend", (request, reply, payload, done) => {
    void reply.header("x-request-id", request.id);
    done(null, payload);
  });

  const inFlight = new InFlightWork();
  trackHandlers(app, inFlight);

  const routeMethods = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = routeMethods.get(route.url) ?? new Set<string>();
    for (const method of methods) known.add(method);
    routeMethods.set(route.url, known);
  });
  if (deps.onClose) {
    const onClose = deps.onClose;
    app.addHook("onClose", async () => {
      await onClose();
    });
  }
  installErrorHandling(app, routeMethods);
  installTextCheck(app);

  await registerOpenApi(app, deps.version);

  installMetrics(app, new HttpMetrics());
  registerServiceRoutes(app, deps.pingDatabase);
  registerUploaderRoute(app, { file: deps.uploaderFile, version: deps.version });
  registerDocs(app);

  await app.register((scope: ApiApp, _options, done) => {
    registerUnauthenticatedUploadRoutes(scope, deps.uploads);
    done();
  });

  for (const routes of deps.webhookRoutes ?? []) {
    await app.register((scope: ApiApp, _options, done) => {
      routes(scope);
      done();
    });
  }

  await registerDashboardScope(app, deps);
  await registerApiScope(app, deps, inFlight);

  await app.ready();
  return app;
}

/** The fastify instance, with the server's limits, ids, URL rewriting and validation. */
function createApp(deps: ServerDependencies): ApiApp {
  return Fastify({
    // No secret in the log: request URLs, error messages and stacks are redacted.
    logger: redactingLogger(deps.logger),
    bodyLimit: BODY_LIMIT_BYTES,
    // A caller's x-request-id is kept when it is sane, so that logs correlate across services.
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Before routing, so that the router, the 404/405 answers and the logs all see one path.
    rewriteUrl: (request) => collapseSlashes(request.url ?? "/"),
    // Requests that arrive while shutting down get our own 503 envelope (below), not fastify's.
    return503OnClosing: false,
    // The router's own refusals (bad percent-encoding, over-long ids) get the error envelope.
    frameworkErrors: routerError,
    // So do requests Node's HTTP parser refuses (an address or headers over 16 KiB).
    clientErrorHandler: clientError,
    ajv: {
      // Values are taken exactly as sent: no type coercion, no defaults filled in, every
      // problem reported. `verbose` lets errors name the bounds they broke.
      customOptions: {
        coerceTypes: false,
        useDefaults: false,
        removeAdditional: false,
        allErrors: true,
        verbose: true,
        // `type: ["integer", "string"]` (a pull-request number sent either way) is one schema,
        // so that an error names its field once instead of once per branch of a union.
        allowUnionTypes: true,
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

/** The OpenAPI document of every route registered after it (swagger). */
async function registerOpenApi(app: ApiApp, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Mainline",
        version,
        description:
          "Test health and merge queue, compatible with Trunk.io's v1 API. Send the organization's API token in `x-api-token`. Every operation is POST with a JSON body unless shown otherwise.",
      },
      components: {
        securitySchemes: {
          ApiKeyAuth: { type: "apiKey", in: "header", name: "x-api-token" },
          PublicRepoId: { type: "apiKey", in: "header", name: "x-trunk-public-repo-id" },
          ForkedWorkflowRun: { type: "apiKey", in: "header", name: "x-forked-workflow-run-id" },
        },
      },
    },
  });
}

/** `/openapi.json` and `/docs`, built once on first use. */
function registerDocs(app: ApiApp): void {
  let openApi: OpenApiDocument | undefined;
  let docsPage: string | undefined;
  const document = (): OpenApiDocument => (openApi ??= app.swagger() as unknown as OpenApiDocument);
  app.get("/openapi.json", { schema: { hide: true } }, () => document());
  app.get("/docs", { schema: { hide: true } }, (_request, reply) => {
    docsPage ??= renderDocsPage(document());
    void reply.type("text/html; charset=utf-8").send(docsPage);
  });
}

async function registerDashboardScope(app: ApiApp, deps: ServerDependencies): Promise<void> {
  const connections = deps.tickets?.connections;
  // The dashboard: HTML pages with sessions of their own (src/web; docs/dashboard.md).
  await app.register((scope: ApiApp, _options, done) => {
    registerDashboard(scope, {
      sessions: deps.sessions,
      authenticate: (token) => deps.organizations.authenticate(token),
      overview: deps.testHealth.overview,
      queues: deps.queues,
      testPage: testPageView({
        ...deps.testHealth,
        ticketConnection: connections
          ? (principal, id) => connections.get(principal, id).catch(() => undefined)
          : undefined,
      }),
      mergeQueue:
        deps.queueDashboard && deps.pullRequests
          ? {
              dashboard: deps.queueDashboard,
              queues: deps.queues,
              pullRequests: deps.pullRequests,
              ciLog: deps.ciLog,
              configuration: deps.configCheck,
            }
          : undefined,
      webhooks: deps.webhooks
        ? {
            service: deps.webhooks.service,
            eventTypes: EVENT_TYPES.filter((type) => type !== PING_EVENT_TYPE),
          }
        : undefined,
      tickets: deps.tickets,
      repositoryHealth: deps.testHealth.repositoryHealth,
      testManagement: deps.testHealth.management,
      publicUrl: deps.publicUrl,
      clock: deps.testHealth.clock,
      github: deps.githubSignIn,
    });
    done();
  });
}

/** The `/v1` API: every route behind an API token (or the public ids some accept). */
async function registerApiScope(
  app: ApiApp,
  deps: ServerDependencies,
  inFlight: InFlightWork,
): Promise<void> {
  const baseUrl = (request: { protocol: string; host: string }) =>
    deps.publicUrl ?? `${request.protocol}://${request.host}`;

  await app.register((scope: ApiApp, _options, done) => {
    requireApiToken(scope, deps.organizations, inFlight, deps.testHealth.publicIds);
    scope.addHook("onRoute", (route) => {
      const security: Record<string, string[]>[] = [{ ApiKeyAuth: [] }];
      if (route.config?.publicRepoId === true) security.push({ PublicRepoId: [] });
      if (route.config?.forkedWorkflowRun === true) security.push({ ForkedWorkflowRun: [] });
      route.schema = { ...route.schema, security };
    });
    registerWhoAmI(scope);
    registerCreateQueue(scope, deps.queues);
    registerGetQueue(scope, deps.queues);
    registerUpdateQueue(scope, deps.queues);
    registerDeleteQueue(scope, deps.queues);
    if (deps.pullRequests) registerPullRequestRoutes(scope, deps.pullRequests, deps.forkedRuns);
    if (deps.failFirst) registerGetFailFirstTests(scope, deps.failFirst);
    for (const routes of deps.providerRoutes ?? []) routes(scope);
    registerUploadRoutes(scope, deps.uploads, deps.testHealth.queries, baseUrl);
    registerPublicRepoIdRoutes(scope, deps.testHealth.publicIds);
    const flakyTests = { ...deps.testHealth, publicUrl: deps.publicUrl };
    registerListRoutes(scope, flakyTests);
    registerTestRoutes(scope, flakyTests);
    if (deps.webhooks) registerWebhookRoutes(scope, deps.webhooks);
    if (deps.tickets) registerTicketRoutes(scope, { ...deps.tickets, publicUrl: deps.publicUrl });
    done();
  });
}
