import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { FastifyServerOptions } from "fastify";
import { buildServer, type ServerDependencies } from "./api/server.js";
import type { ApiApp } from "./api/types.js";
import {
  openDatabase,
  pingDatabase,
  type DatabaseHandle,
  type OpenDatabaseOptions,
} from "./db/connection.js";
import { migrateToLatest } from "./db/migrate.js";
import { MergeQueueStore } from "./db/stores/merge-queues.js";
import { OrganizationStore } from "./db/stores/organizations.js";
import { RepositoryStore } from "./db/stores/repositories.js";
import { ServerSecretStore } from "./db/stores/server-secrets.js";
import { TestCaseStore } from "./db/stores/test-cases.js";
import { TestIngestStore } from "./db/stores/test-ingest.js";
import { TestSettingsStore } from "./db/stores/test-settings.js";
import { TestViewStore } from "./db/stores/test-views.js";
import { UploadStore } from "./db/stores/uploads.js";
import { systemClock, type Clock } from "./lib/clock.js";
import { MergeQueueRuntimeStore } from "./db/stores/merge-queue-runtime.js";
import { QueueDashboardService } from "./mergequeue/dashboard.js";
import { CiRunStore } from "./db/stores/ci-runs.js";
import { LocalPullRequestStore } from "./db/stores/local-pull-requests.js";
import { MergeQueueEngine, type EngineOptions } from "./mergequeue/engine.js";
import type { CiProvider, GitHost } from "./mergequeue/providers.js";
import { PullRequestService } from "./mergequeue/pull-request-service.js";
import { MergeQueueService } from "./mergequeue/queue-service.js";
import { SessionService, type SessionLifetimes } from "./organizations/sessions.js";
import { SessionStore } from "./db/stores/sessions.js";
import { OrganizationService, type Principal } from "./organizations/service.js";
import type { RepoRef } from "./organizations/repositories.js";
import { BundleStorage } from "./testhealth/ingest/bundle-storage.js";
import { UploadProcessor } from "./testhealth/ingest/processor.js";
import { IngestWorker, type WorkerLogger, type WorkerOptions } from "./testhealth/ingest/worker.js";
import { Pager } from "./testhealth/pager.js";
import { RepositoryAccess } from "./testhealth/repository-access.js";
import { PublicRepositoryIds } from "./testhealth/public-repository-ids.js";
import { DEFAULT_MAX_BUNDLE_BYTES, UploadService } from "./testhealth/upload-service.js";
import { CiFailures } from "./testhealth/ci-failures.js";
import { TestManagementService } from "./testhealth/test-management.js";
import { TestQueryService } from "./testhealth/test-queries.js";
import { TestHealthOverview } from "./testhealth/overview.js";
import { TestOverviewStore } from "./db/stores/test-overview.js";
import { RepositoryHealthStore } from "./db/stores/repository-health.js";
import { RepositoryTableStore } from "./db/stores/repository-table.js";
import { RepositoryHealthService } from "./testhealth/repository-health.js";
import { TestDetailsStore } from "./db/stores/test-details.js";
import { TestListStore } from "./db/stores/test-lists.js";
import { VERSION } from "./version.js";
import { isDatabaseUnavailable } from "./lib/faults.js";
import { HostChanges } from "./mergequeue/host-changes.js";
import { CiRouter, GitHostRouter } from "./mergequeue/host-router.js";
import { createLocalProvider, LOCAL_HOST, type LocalProvider } from "./providers/local/index.js";
import { upgradeLocalRepositoryLayout } from "./providers/local/git/layout-upgrade.js";
import type { GitHubAppConfig } from "./config.js";
import { GitHubInstallationStore } from "./db/stores/github-installations.js";
import { GitHubPresenceStore } from "./db/stores/github-presence.js";
import { urls } from "./web/urls.js";
import { WebhookDeliveryStore } from "./db/stores/webhook-deliveries.js";
import { GitHubCiRunStore } from "./db/stores/github-ci-runs.js";
import {
  createGitHubProvider,
  registerGitHubRoutes,
  registerPullRequestCommands,
  type GitHubProvider,
  type GitHubProviderDeps,
} from "./providers/github/index.js";
import type { InboxOptions } from "./providers/github/webhooks/inbox.js";
import type { PresenceOptions } from "./providers/github/pull-request-presence.js";

/** The composition root: stores and services over one database. */
export interface Services {
  database: DatabaseHandle;
  clock: Clock;
  organizations: OrganizationService;
  /** The dashboard's sign-in sessions (ADR 0023). */
  sessions: SessionService;
  queues: MergeQueueService;
  pullRequests: PullRequestService;
  /** The merge queue's dashboard reads (board, pull request history, health). */
  queueDashboard: QueueDashboardService;
  uploads: UploadService;
  pager: Pager;
  access: RepositoryAccess;
  /** Public repository ids: uploads from forks (Trunk's `x-trunk-public-repo-id`). */
  publicIds: PublicRepositoryIds;
  /** Test health's read side: the Flaky Tests lists, a test's details and runs, uploads. */
  testQueries: TestQueryService;
  /** Test health's writes people drive: overrides, tickets, settings. */
  testManagement: TestManagementService;
  /** Test health across an organization's repositories (the dashboard's home). */
  testOverview: TestHealthOverview;
  /** The dashboard's repository, uploads and test pages. */
  repositoryHealth: RepositoryHealthService;
  stores: {
    repositories: RepositoryStore;
    testCases: TestCaseStore;
    testSettings: TestSettingsStore;
    ingest: TestIngestStore;
    uploads: UploadStore;
    testViews: TestViewStore;
    bundles: BundleStorage;
  };
  /** Background processing of uploads; started by `mainline serve` (and tests that need it). */
  worker: IngestWorker;
  /** The merge-queue driver; started by `mainline serve` (and tests that need it). */
  engine: MergeQueueEngine;
  /** What the merge queue tests and merges through: the local git host and built-in runner for
   * `local` repositories; a host with no provider answers `host_not_connected`. */
  gitHost: GitHost;
  ci: CiProvider;
  /** The local git host (docs/contract.md §6) and the built-in CI runner; started by `mainline serve`. */
  local: LocalServices;
  /** The GitHub App (docs/github.md), when configured; started by `mainline serve`. */
  github: GitHubProvider | undefined;
  /** MAINLINE_PUBLIC_URL when set (upload URLs, test pages); else derived from each request. */
  publicUrl: string | undefined;
}

/** The local provider: its git host, runner, routes, start and stop. */
export type LocalServices = LocalProvider;

export interface ServiceOptions {
  clock?: Clock;
  /** Where uploaded bundles are kept until processed (default: ./mainline-data). */
  dataDir?: string;
  publicUrl?: string | undefined;
  maxBundleBytes?: number;
  /** Uploads with a public repository id: per repository and hour (default 60), bundle cap (100 MiB). */
  publicUploads?: { perHour?: number; maxBundleBytes?: number };
  worker?: Partial<WorkerOptions>;
  logger?: ServiceLogger;
  /** The GitHub App; without it, repositories on GitHub answer `host_not_connected`. */
  github?: GitHubAppConfig;
  /** The GitHub webhook inbox's worker (tests shorten its lease and polling). */
  githubInbox?: Partial<InboxOptions>;
  /** The worker that shows the queue on GitHub's pull requests (tests poll it faster). */
  githubPresence?: Partial<PresenceOptions>;
  /** How often the App's installations are read again (default hourly; 0: only at start). */
  githubSyncIntervalMs?: number;
  /** Between GitHub reconcile passes (default: the configuration's; 0: only when asked). */
  githubReconcileIntervalMs?: number;
  /** The GitHub git host's retries and waits (tests shorten them). */
  githubGitHost?: GitHubProviderDeps["gitHost"];
  /** How often the GitHub CI reads the checks of the runs it watches (default 15 s). */
  githubCiPollIntervalMs?: number;
  /**
   * The git host and CI of repositories that are not on the local git host (tests and the
   * simulator give in-memory ones); without them such repositories answer `host_not_connected`.
   */
  gitHost?: GitHost;
  ci?: CiProvider;
  engine?: Partial<EngineOptions>;
  /** Checks the built-in runner runs at once (default 2). */
  ciParallelism?: number;
  /** How often the local repositories are looked at for pushes (default 1000 ms). */
  watchIntervalMs?: number;
  /** Dashboard sessions: idle and absolute lifetimes (default: a day, a week). */
  sessionLifetimes?: SessionLifetimes | undefined;
}

/** What the background parts log through (`warn` falls back to `info`). */
export interface ServiceLogger extends WorkerLogger {
  warn?(fields: object, message: string): void;
}

const silentLogger: WorkerLogger = { info: () => undefined, error: () => undefined };

export function createServices(database: DatabaseHandle, options: ServiceOptions = {}): Services {
  const { db } = database;
  const clock = options.clock ?? systemClock;
  const repositories = new RepositoryStore(db);
  const testCases = new TestCaseStore(db);
  const testSettings = new TestSettingsStore(db);
  const ingest = new TestIngestStore(database);
  const uploadStore = new UploadStore(db, database.dialect);
  const secrets = new ServerSecretStore(db);
  const dataDir = options.dataDir ?? "./mainline-data";
  const bundles = new BundleStorage(dataDir);
  const organizationStore = new OrganizationStore(db);
  /** The slug of an organization that must exist (a row that refers to it was just read). */
  const slugOf = async (organizationId: string): Promise<string> => {
    const organization = await organizationStore.findById(organizationId);
    if (!organization) throw new Error(`organization ${organizationId} vanished`);
    return organization.slug;
  };
  const access = new RepositoryAccess(repositories);
  const processor = new UploadProcessor({
    uploads: uploadStore,
    ingest,
    settings: testSettings,
    bundles,
    clock,
    organizationSlug: slugOf,
    repository: async (repositoryId) => {
      const repository = await repositories.findById(repositoryId);
      if (!repository) throw new Error(`repository ${repositoryId} vanished`);
      return repository;
    },
  });
  const worker = new IngestWorker(
    {
      uploads: uploadStore,
      ingest,
      settings: testSettings,
      processor,
      bundles,
      clock,
      logger: options.logger ?? silentLogger,
    },
    options.worker,
  );
  const mergeQueues = new MergeQueueStore(db, database.dialect);
  const publicIds = new PublicRepositoryIds({
    repositories,
    access,
    clock,
    ...options.publicUploads,
    organizationSlug: slugOf,
  });
  const uploads = new UploadService({
    publicIds,
    testCases,
    uploads: uploadStore,
    settings: testSettings,
    secrets,
    bundles,
    access,
    clock,
    maxBundleBytes: options.maxBundleBytes ?? DEFAULT_MAX_BUNDLE_BYTES,
    onBundleStored: () => {
      worker.wake();
    },
  });

  const pager = new Pager(secrets, clock);
  const testViews = new TestViewStore(db, database.dialect);
  const testDetails = new TestDetailsStore(db, database.dialect);
  const testQueries = new TestQueryService({
    access,
    settings: testSettings,
    views: testViews,
    lists: new TestListStore(db, database.dialect),
    details: testDetails,
    uploads: uploadStore,
    pager,
    clock,
  });
  const testManagement = new TestManagementService({
    queries: testQueries,
    details: testDetails,
    clock,
    reclassify: (repositoryId) => {
      worker.reclassify(repositoryId);
    },
  });

  const testOverview = new TestHealthOverview({ overview: new TestOverviewStore(db), clock });

  const log = options.logger ?? silentLogger;
  const runtime = new MergeQueueRuntimeStore(db, database.dialect);
  // Host changes reach the engine, which needs the providers' git hosts: built after them.
  const changes = new HostChanges({
    queues: mergeQueues,
    engine: { notify: (queueId, command) => engine.notify(queueId, command) },
  });
  // The local git host and the built-in runner, for repositories whose host is `local`.
  const local = createLocalProvider({
    dataDir,
    clock,
    logger: log,
    stores: {
      pullRequests: new LocalPullRequestStore(db),
      ciRuns: new CiRunStore(db),
      repositories,
      queues: mergeQueues,
    },
    testResults: {
      organizationSlug: async (id) => (await organizationStore.findById(id))?.slug,
      uploads,
      testCases,
      settings: testSettings,
    },
    changes,
    isStorageUnavailable: isDatabaseUnavailable,
    ...(options.ciParallelism === undefined ? {} : { ciParallelism: options.ciParallelism }),
    ...(options.watchIntervalMs === undefined ? {} : { watchIntervalMs: options.watchIntervalMs }),
  });
  const github: GitHubProvider | undefined = options.github
    ? createGitHubProvider({
        settings: { ...options.github, userAgent: `mainline/${VERSION}` },
        clock,
        logger: {
          info: (fields, message) => {
            log.info(fields, message);
          },
          warn: (fields, message) => {
            (options.logger?.warn ?? log.info)(fields, message);
          },
          error: (fields, message) => {
            log.error(fields, message);
          },
        },
        stores: {
          installations: new GitHubInstallationStore(db, database.dialect),
          deliveries: new WebhookDeliveryStore(db, database.dialect),
          repositories,
          organizations: organizationStore,
          queues: mergeQueues,
          entries: runtime,
          ciRuns: new GitHubCiRunStore(db),
          presence: new GitHubPresenceStore(db),
          runtime,
        },
        pullRequestPage: async (repository, branch, number) => {
          if (options.publicUrl === undefined) return undefined;
          const organization = await organizationStore.findById(repository.organizationId);
          if (!organization) return undefined;
          const path = urls.pullRequest(organization.slug, repository, branch, number);
          return `${options.publicUrl.replace(/\/+$/, "")}${path}`;
        },
        ...(options.githubPresence ? { presence: options.githubPresence } : {}),
        changes,
        ...(options.githubInbox ? { inbox: options.githubInbox } : {}),
        ...(options.githubSyncIntervalMs === undefined
          ? {}
          : { syncIntervalMs: options.githubSyncIntervalMs }),
        reconcileIntervalMs:
          options.githubReconcileIntervalMs ?? options.github.reconcileIntervalMs,
        ...(options.githubGitHost ? { gitHost: options.githubGitHost } : {}),
        ...(options.githubCiPollIntervalMs === undefined
          ? {}
          : { ciPollIntervalMs: options.githubCiPollIntervalMs }),
        ciFailures: new CiFailures({
          repositories,
          uploads: uploadStore,
          testCases,
          settings: testSettings,
        }),
      })
    : undefined;
  const gitHost: GitHostRouter = new GitHostRouter(
    new Map<string, GitHost>([
      [local.hostName, local.gitHost],
      ...(github ? [[github.hostName.toLowerCase(), github.gitHost] as const] : []),
    ]),
    options.gitHost,
  );
  const ci: CiRouter = new CiRouter(
    new Map<string, CiProvider>([
      [local.hostName, local.ci],
      ...(github ? [[github.hostName.toLowerCase(), github.ci] as const] : []),
    ]),
    options.ci,
  );
  const engine = new MergeQueueEngine(
    {
      runtime,
      queues: mergeQueues,
      repositories,
      gitHost,
      ci,
      clock,
      logger: {
        error: (message, error) => {
          log.error({ err: error }, message);
        },
      },
    },
    { owner: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, ...options.engine },
  );
  const pullRequests = new PullRequestService({
    queues: mergeQueues,
    runtime,
    commands: engine,
    clock,
    storedPullRequest: (repo, number) => {
      const host = repo.host.toLowerCase();
      if (host === local.hostName) return local.gitHost.storedPullRequest(repo, number);
      // One read of GitHub: a submission is answered once stored, not after the queue's step.
      if (github && host === github.hostName.toLowerCase()) {
        return github.gitHost.pullRequestState(repo, number);
      }
      return null;
    },
    hostConnected: (host) => gitHost.connected(host),
  });
  if (github) {
    // Comment commands and the enqueueing label, through the same service as the API.
    registerPullRequestCommands(github.webhooks, {
      appId: () => github.appId(),
      queues: mergeQueues,
      organizations: organizationStore,
      runtime,
      pullRequests,
    });
  }
  const organizations = new OrganizationService(organizationStore, clock);
  return {
    database,
    clock,
    organizations,
    sessions: new SessionService({
      sessions: new SessionStore(db),
      organizations,
      clock,
      lifetimes: options.sessionLifetimes,
    }),
    queues: new MergeQueueService({
      repositories,
      existingRepositories: new Map([
        [LOCAL_HOST, (principal, ref) => local.existingRepository(principal, ref)],
        ...(github
          ? [
              [
                github.hostName.toLowerCase(),
                (principal: Principal, ref: RepoRef) => github.existingRepository(principal, ref),
              ] as const,
            ]
          : []),
      ]),
      queues: mergeQueues,
      contents: pullRequests,
      clock,
      settingsChanged: (queueId) => {
        engine.kick(queueId);
      },
    }),
    pullRequests,
    queueDashboard: new QueueDashboardService({ queues: mergeQueues, runtime, clock }),
    uploads,
    pager,
    access,
    publicIds,
    testQueries,
    testManagement,
    testOverview,
    repositoryHealth: new RepositoryHealthService({
      access,
      settings: testSettings,
      overview: testOverview,
      records: new RepositoryHealthStore(db),
      table: new RepositoryTableStore(database),
      uploads: uploadStore,
      clock,
    }),
    stores: {
      repositories,
      testCases,
      testSettings,
      ingest,
      uploads: uploadStore,
      testViews,
      bundles,
    },
    worker,
    engine,
    gitHost,
    ci,
    local,
    github,
    publicUrl: options.publicUrl,
  };
}

/** What `openMigratedDatabase` reports of the upgrade of the data directory's layout. */
export interface UpgradeLogger {
  info(message: string): void;
  error(message: string): void;
}

const stderrUpgradeLogger: UpgradeLogger = {
  info: (message) => {
    process.stderr.write(`${message}\n`);
  },
  error: (message) => {
    process.stderr.write(`${message}\n`);
  },
};

/**
 * Opens the database, brings its schema up to date, then the data directory's layout (local
 * repositories of the old shared layout move into their organization's tree).
 */
export async function openMigratedDatabase(
  options: OpenDatabaseOptions,
  logger: UpgradeLogger = stderrUpgradeLogger,
): Promise<DatabaseHandle> {
  const database = openDatabase(options);
  try {
    await migrateToLatest(database);
    const repositories = new RepositoryStore(database.db);
    await upgradeLocalRepositoryLayout(options.dataDir, {
      owner: (ref) => repositories.oldestAnywhere(ref),
      logger,
    });
    return database;
  } catch (error) {
    await database.close();
    throw error;
  }
}

/**
 * Stops everything in order: requests (and the work of those still running, even when their
 * client hung up), the upload worker, the webhook inbox and the built-in runner (before the
 * engine, so that no change or result is handed to an engine that stopped listening: they resume
 * at the next start), the merge-queue engine, then the database.
 */
export async function stopService(
  app: ApiApp,
  database: DatabaseHandle,
  worker?: IngestWorker,
  engine?: MergeQueueEngine,
  local?: Pick<LocalServices, "stop">,
  github?: Pick<GitHubProvider, "stop">,
): Promise<void> {
  await app.close();
  await app.inFlight.idle();
  await worker?.stop();
  await github?.stop();
  await local?.stop();
  await engine?.stop();
  await database.close();
}

/** What the HTTP server is given of the services: each part only what its routes call. */
export function serverDependencies(
  services: Services,
  logger: FastifyServerOptions["logger"],
): ServerDependencies {
  return {
    pingDatabase: () => pingDatabase(services.database.db),
    organizations: services.organizations,
    sessions: services.sessions,
    queues: services.queues,
    pullRequests: services.pullRequests,
    forkedRuns: services.github?.forkedRuns,
    queueDashboard: services.queueDashboard,
    ciLog: (principal, address, runId, check) =>
      services.local.ciRuns.log(principal, address, runId, check),
    uploads: services.uploads,
    testHealth: {
      queries: services.testQueries,
      management: services.testManagement,
      access: services.access,
      publicIds: services.publicIds,
      overview: services.testOverview,
      repositoryHealth: services.repositoryHealth,
      clock: services.clock,
    },
    providerRoutes: [
      (scope) => {
        services.local.routes(scope);
      },
      (scope) => {
        // Answered on every server: without the App, with `host_not_connected`.
        if (services.github) services.github.routes(scope);
        else registerGitHubRoutes(scope, undefined);
      },
    ],
    webhookRoutes: services.github
      ? [
          (scope) => {
            services.github?.webhookRoutes(scope);
          },
        ]
      : [],
    publicUrl: services.publicUrl,
    githubSignIn: services.github?.signIn,
    logger,
    version: VERSION,
  };
}

export function createHttpServer(
  services: Services,
  logger: FastifyServerOptions["logger"],
): Promise<ApiApp> {
  return buildServer(serverDependencies(services, logger));
}

/** The GitHub App's manifest and registration link, for `mainline github setup`. */
export {
  ALWAYS_DELIVERED_EVENTS,
  APP_EVENTS,
  APP_PERMISSIONS,
  appManifest,
  registrationUrl,
  signInCallbackUrl,
  webUrlOf,
  webhookUrl,
} from "./providers/github/index.js";
