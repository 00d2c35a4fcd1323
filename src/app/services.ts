/** The composition root: stores and services over one database, by area. */
import type { DatabaseHandle } from "../db/connection.js";
import { MergeQueueRuntimeStore } from "../db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../db/stores/merge-queues.js";
import { RepositoryStore } from "../db/stores/repositories.js";
import { systemClock, type Clock } from "../lib/clock.js";
import type { ConfigCheckService } from "../mergequeue/config-check.js";
import type { QueueDashboardService } from "../mergequeue/dashboard.js";
import type { FailFirstService } from "../mergequeue/fail-first.js";
import type { EngineOptions, MergeQueueEngine } from "../mergequeue/engine.js";
import { HostChanges } from "../mergequeue/host-changes.js";
import type { CiProvider, GitHost } from "../mergequeue/providers.js";
import type { PullRequestService } from "../mergequeue/pull-request-service.js";
import type { MergeQueueService } from "../mergequeue/queue-service.js";
import type { OrganizationService } from "../organizations/service.js";
import type { SessionLifetimes, SessionService } from "../organizations/sessions.js";
import type { HostProvider } from "../providers/host-provider.js";
import { CiFailures } from "../testhealth/ci-failures.js";
import type { WorkerLogger, WorkerOptions } from "../testhealth/ingest/worker.js";
import { createMergeQueue } from "./merge-queue.js";
import { createOrganizations } from "./organizations.js";
import { providerContext } from "./provider-context.js";
import {
  connectProviders,
  hostDispatch,
  type HostProviders,
  type ProviderOptions,
} from "./providers.js";
import { createTestHealth, type TestHealth } from "./test-health.js";
import { createTickets, type TicketSettings, type Tickets } from "./tickets.js";
import { createWebhooks, type WebhookSettings, type Webhooks } from "./webhooks.js";

/**
 * The services over one database. Each registered host's provider is there by its registry name
 * (`local`, `github`: undefined when not configured); `providers` lists the connected ones.
 */
export interface Services extends HostProviders, Omit<TestHealth, "stores"> {
  database: DatabaseHandle;
  clock: Clock;
  organizations: OrganizationService;
  /** The dashboard's sign-in sessions. */
  sessions: SessionService;
  queues: MergeQueueService;
  pullRequests: PullRequestService;
  /** The merge queue's dashboard reads (board, pull request history, health). */
  queueDashboard: QueueDashboardService;
  /** The failed tests a localization run runs first. */
  failFirst: FailFirstService;
  /** The configuration a queue's runs will use, checked before they run (built-in runner). */
  configCheck: ConfigCheckService;
  stores: TestHealth["stores"] & { repositories: RepositoryStore };
  /** The merge-queue driver; started by `mainline serve` (and tests that need it). */
  engine: MergeQueueEngine;
  /** What the merge queue tests and merges through: each repository's host's provider; a host
   * with none answers `host_not_connected`. */
  gitHost: GitHost;
  ci: CiProvider;
  /** The connected hosts' providers, in start order; started by `mainline serve`. */
  providers: readonly HostProvider[];
  /** MAINLINE_PUBLIC_URL when set (upload URLs, test pages); else derived from each request. */
  publicUrl: string | undefined;
  /** Outbound webhooks: the API's service and the delivery worker (started by `mainline serve`). */
  webhooks: Webhooks;
  /** Tickets: connections, creating tickets, the rules' and states' loop (started by serve). */
  tickets: Tickets;
}

export interface CoreServiceOptions {
  clock?: Clock;
  /** Where uploaded bundles are kept until processed (default: ./mainline-data). */
  dataDir?: string;
  publicUrl?: string | undefined;
  maxBundleBytes?: number;
  /** Uploads with a public repository id: per repository and hour (default 60), bundle cap (100 MiB). */
  publicUploads?: { perHour?: number; maxBundleBytes?: number };
  worker?: Partial<WorkerOptions>;
  logger?: ServiceLogger;
  /**
   * The git host and CI of repositories on a host with no provider (tests and the simulator give
   * in-memory ones); without them such repositories answer `host_not_connected`.
   */
  gitHost?: GitHost;
  ci?: CiProvider;
  engine?: Partial<EngineOptions>;
  /**
   * How long the merge queue's claims last without a renewal (a queue's driver, the hosts' checks,
   * webhook deliveries and cursors): how soon another process takes over (default 30 s).
   */
  leaseMs?: number | undefined;
  /** Dashboard sessions: idle and absolute lifetimes (default: a day, a week). */
  sessionLifetimes?: SessionLifetimes | undefined;
  /** Outbound webhooks' delivery settings (MAINLINE_WEBHOOKS_*). */
  webhooks?: Partial<WebhookSettings> | undefined;
  /** Tickets' settings (MAINLINE_TICKETS_*, MAINLINE_LINEAR_API_URL). */
  tickets?: Partial<TicketSettings> | undefined;
}

/** The service's options, with those of every registered host (`github`, `ciParallelism`…). */
export interface ServiceOptions extends CoreServiceOptions, ProviderOptions {}

/** What the background parts log through (`warn` falls back to `info`). */
export interface ServiceLogger extends WorkerLogger {
  warn?(fields: object, message: string): void;
}

const silentLogger: WorkerLogger = { info: () => undefined, error: () => undefined };

export function createServices(database: DatabaseHandle, options: ServiceOptions = {}): Services {
  const clock = options.clock ?? systemClock;
  const dataDir = options.dataDir ?? "./mainline-data";
  const log = options.logger ?? silentLogger;
  const repositories = new RepositoryStore(database.db);
  const tenancy = createOrganizations(database, clock, options.sessionLifetimes);
  const testHealth = createTestHealth(database, repositories, tenancy.readSlug, {
    clock,
    dataDir,
    logger: log,
    maxBundleBytes: options.maxBundleBytes,
    publicUploads: options.publicUploads,
    worker: options.worker,
  });
  const queues = new MergeQueueStore(database.db, database.dialect);
  const runtime = new MergeQueueRuntimeStore(database.db, database.dialect);
  // Host changes reach the engine, which needs the providers' git hosts: built after them.
  const changes = new HostChanges({
    queues,
    engine: { notify: (queueId, command) => mergeQueue.engine.notify(queueId, command) },
  });
  const providers = connectProviders(
    providerContext(database, {
      dataDir,
      clock,
      logger: {
        info: (fields, message) => {
          log.info(fields, message);
        },
        warn: (fields, message) => {
          if (options.logger?.warn) options.logger.warn(fields, message);
          else log.info(fields, message);
        },
        error: (fields, message) => {
          log.error(fields, message);
        },
      },
      changes,
      records: { repositories, organizations: tenancy.store, queues, runtime },
      // A host's own commands (GitHub's comments and labels) go through the API's service.
      pullRequests: {
        submit: (...args) => mergeQueue.pullRequests.submit(...args),
        cancel: (...args) => mergeQueue.pullRequests.cancel(...args),
      },
      testHealth,
      publicUrl: options.publicUrl,
      leaseMs: options.leaseMs,
    }),
    options,
  );
  const hosts = hostDispatch(providers.connected, options);
  const { testCases, testSettings, uploads } = testHealth.stores;
  const mergeQueue = createMergeQueue({
    queues,
    runtime,
    repositories,
    hosts,
    clock,
    logger: log,
    failedTests: new CiFailures({ repositories, uploads, testCases, settings: testSettings }),
    checkLog: (queueId, runId, check) =>
      providers.byName.local.ci.readLogTail(queueId, runId, check),
    engine: {
      ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      ...options.engine,
    },
  });
  const { stores, ...testHealthServices } = testHealth;
  const warn = (fields: object, message: string) => {
    if (options.logger?.warn) options.logger.warn(fields, message);
    else log.info(fields, message);
  };
  const webhooks = createWebhooks(
    database,
    {
      clock,
      repositories,
      testViews: stores.testViews,
      testSettings: stores.testSettings,
      organizationSlug: tenancy.readSlug,
      leaseMs: options.leaseMs ?? 30_000,
      ingesting: () => testHealth.worker.busy,
      failures: {
        explainer: mergeQueue.failures,
        run: (queueId, runId) => runtime.run(queueId, runId),
      },
      logger: { warn },
    },
    { publicUrl: options.publicUrl, ...options.webhooks },
  );
  const github = providers.byName.github;
  const tickets = createTickets(
    database,
    {
      clock,
      store: stores.tickets,
      repositories,
      testViews: stores.testViews,
      testSettings: stores.testSettings,
      testQueries: testHealth.testQueries,
      organizationSlug: tenancy.readSlug,
      installationToken: github
        ? async (organizationId, repo) => {
            try {
              const access = await github.repositories.resolve({
                organizationId,
                host: github.hostName,
                ...repo,
              });
              const auth = (await access.client.auth({ type: "installation" })) as {
                token?: unknown;
              };
              return typeof auth.token === "string" ? auth.token : undefined;
            } catch {
              return undefined;
            }
          }
        : undefined,
      logger: { warn },
    },
    {
      publicUrl: options.publicUrl,
      ...(options.webhooks?.allowPrivate === undefined
        ? {}
        : { allowPrivate: options.webhooks.allowPrivate }),
      ...(options.webhooks?.listenOrigins === undefined
        ? {}
        : { listenOrigins: options.webhooks.listenOrigins }),
      ...(options.github?.apiUrl === undefined ? {} : { githubApiUrl: options.github.apiUrl }),
      ...options.tickets,
    },
  );
  return {
    webhooks,
    tickets,
    ...testHealthServices,
    ...providers.byName,
    database,
    clock,
    organizations: tenancy.organizations,
    sessions: tenancy.sessions,
    ...mergeQueue,
    stores: { ...stores, repositories },
    gitHost: hosts.gitHost,
    ci: hosts.ci,
    providers: providers.connected,
    publicUrl: options.publicUrl,
  };
}
