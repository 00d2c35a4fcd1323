/**
 * The GitHub provider's parts, built over one App: clients, installations, the merge queue's git
 * host and CI, the webhook inbox and its handlers, the reconcile loop, sign-in and forked runs.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { ApiApp } from "../../api/types.js";
import type { Clock } from "../../lib/clock.js";
import { HOUR_MS, MINUTE_MS } from "../../lib/time.js";
import type { HostChanges } from "../../mergequeue/host-changes.js";
import type {
  MergeQueueRecords,
  RepositoryRecords,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { PresenceRecords } from "../../mergequeue/pull-request-presence-records.js";
import type { WatchedCiRunRecords } from "../../mergequeue/watched-ci-runs.js";
import type { DeliveryRecords } from "../../mergequeue/webhook-delivery-records.js";
import type { GitHubInstallationRecords } from "../../organizations/github-installations.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import type { Principal } from "../../organizations/service.js";
import type { RepoRef, Repository } from "../../organizations/repositories.js";
import type { HostProvider } from "../host-provider.js";
import {
  DEFAULT_CI_POLL_INTERVAL_MS,
  GitHubCi,
  registerCiHandlers,
  type GitHubCiDeps,
  type PollLease,
} from "./ci.js";
import { GitHubApp, type GitHubLogger } from "./client.js";
import { GITHUB_SOURCE, GitHubInstallations } from "./installations.js";
import { GitHubForkedRuns } from "./forked-runs.js";
import { GitHubReconciler } from "./reconcile.js";
import { GitHubGitHost, type GitHubGitHostOptions } from "./host.js";
import { GitHubRepositories } from "./repositories.js";
import {
  PullRequestTestResults,
  type TestResultsDeps,
  type TestResultsOptions,
} from "./pull-request-test-results.js";
import {
  PullRequestPresence,
  type PresenceDeps,
  type PresenceOptions,
} from "./pull-request-presence.js";
import { GitHubSignIn } from "./sign-in.js";
import { registerGitHubRoutes } from "./routes.js";
import { WebhookDispatcher } from "./webhooks/dispatch.js";
import { registerConnectionHandlers } from "./webhooks/handlers.js";
import { WebhookInbox, type InboxOptions } from "../webhook-inbox.js";
import { registerWebhookRoute } from "./webhooks/receiver.js";
import { DeliveryWriter } from "../webhook-writer.js";
import { WebhookHandlers } from "./webhooks/registry.js";

export interface GitHubProviderSettings {
  appId: string;
  /** PKCS#8 PEM. */
  privateKey: string;
  webhookSecret: string;
  apiUrl: string;
  /** The host its repositories carry (`github.com`, a GHES host). */
  host: string;
  userAgent: string;
  /** The App's OAuth credentials: "Sign in with GitHub" (ADR 0029) when given. */
  oauth?: { clientId: string; clientSecret: string } | undefined;
  /** GitHub's web address (OAuth's pages; config.ts derives it); default: the API URL's origin. */
  webUrl?: string | undefined;
  /** How often the CI reads its watched runs again (default 15 s); `ciPollIntervalMs` wins. */
  ciPollIntervalMs?: number | undefined;
  /** The prefix of the test branches CI tests (default `trunk-merge/`). */
  testBranchPrefix?: string | undefined;
  /** The least time between two writes of one installation (default 1,000 ms). */
  writeIntervalMs?: number | undefined;
  /** The client's retries wait this, 4× and 9× it (default 1,000 ms). */
  retryBaseMs?: number | undefined;
}

export interface GitHubProviderDeps {
  settings: GitHubProviderSettings;
  clock: Clock;
  logger: GitHubLogger;
  stores: {
    installations: GitHubInstallationRecords;
    deliveries: DeliveryRecords;
    repositories: Pick<RepositoryRecords, "find" | "findById">;
    organizations: Pick<OrganizationRecords, "findById" | "findBySlug">;
    /**
     * The queues: which repositories to watch and what they hold (the reconcile loop), and
     * their settings (the CI's `createPrsForTestingBranches`).
     */
    queues: Pick<MergeQueueRecords, "listForHost" | "findById">;
    entries: Pick<RuntimeRecords, "activeSummaries">;
    /** What the App shows on pull requests, and the queues' records it follows. */
    presence: PresenceRecords;
    runtime: Pick<RuntimeRecords, "latestEntry" | "activeSummaries" | "transitions">;
    /** The runs the CI provider watches. */
    ciRuns: WatchedCiRunRecords;
  };
  /** A pull request's page on the dashboard (links from the comment and the check run). */
  pullRequestPage?: (
    repository: Repository,
    branch: string,
    number: number,
  ) => Promise<string | undefined>;
  presence?: Partial<PresenceOptions>;
  /** Pushes and pull-request changes, as host-neutral events, to the queues. */
  changes: Pick<HostChanges, "apply">;
  inbox?: Partial<InboxOptions>;
  /** How often every installation is read again from GitHub (default hourly; 0: only at start). */
  syncIntervalMs?: number;
  /** Between reconcile passes (default 60 s; 0: only when asked, `reconciler.pass()`). */
  reconcileIntervalMs?: number;
  /** The git host's retries and waits (tests make them short). */
  gitHost?: Pick<
    GitHubGitHostOptions,
    "attempts" | "retryDelayMs" | "mergeabilityReads" | "requirementsTtlMs" | "pushWaitMs"
  >;
  /** How often the CI provider reads its watched runs again (default 15 s). */
  ciPollIntervalMs?: number;
  /** Test health's view of a failed run's commit (the flaky-only retry); absent: none. */
  ciFailures?: GitHubCiDeps["failures"];
  /** Why a pull request failed (its failing tests), for the comment; absent: the reason only. */
  failureExplainer?: PresenceDeps["failures"];
  /**
   * Test results on pull requests (the repositories' `pull_request_comments`): their records,
   * settings and failing tests; absent: no such comments.
   */
  testResults?: Pick<TestResultsDeps, "store" | "settings" | "failures" | "testPage"> & {
    options?: Partial<TestResultsOptions>;
  };
}

export interface GitHubProvider extends HostProvider {
  /** The host name its repositories carry. */
  hostName: string;
  app: GitHubApp;
  installations: GitHubInstallations;
  repositories: GitHubRepositories;
  /** `x-forked-workflow-run-id`: a fork's workflow run, checked with GitHub, in place of a token. */
  forkedRuns: GitHubForkedRuns;
  /** The merge queue's git host for GitHub repositories (test branches, merges). */
  gitHost: GitHubGitHost;
  /** Where webhook handlers register (event, or event.action). */
  webhooks: WebhookHandlers;
  /** The merge queue's CI for GitHub repositories. */
  ci: GitHubCi;
  inbox: WebhookInbox;
  /** The reconcile loop (started and stopped with the provider). */
  reconciler: GitHubReconciler;
  /** The App's numeric id. */
  appId(): Promise<number>;
  /** The comment, check run and labels the App keeps on pull requests (docs/github.md). */
  presence: PullRequestPresence;
  /** The comment of test results on pull requests, when test health is wired in. */
  testResults: PullRequestTestResults | undefined;
  /** "Sign in with GitHub", when the App's OAuth credentials are configured. */
  signIn: GitHubSignIn | undefined;
  /** The organization's repository on GitHub, if an installation grants it (createQueue). */
  existingRepository(principal: Principal, ref: RepoRef): Promise<Repository>;
  /** `/v1/github/*`, on the authenticated scope. */
  routes(scope: ApiApp): void;
  /** `POST /webhooks/github`, on a scope of its own (no API token). */
  webhookRoutes(scope: ApiApp): void;
  /**
   * Starts the inbox's worker, the CI's watching of stored runs, the installations' sync (at
   * once, then periodically) and the reconcile loop (its first pass an interval later).
   */
  start(): Promise<void>;
  /** Finishes the deliveries in hand and stops. */
  stop(): Promise<void>;
  /** Resolves once the installations' sync under way (if any) has ended. */
  synced(): Promise<void>;
}

/** A lease owner unique to this process and part. */
const leaseOwner = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

export function createGitHubProvider(deps: GitHubProviderDeps): GitHubProvider {
  const { settings, clock, logger, stores } = deps;
  const app = new GitHubApp({
    appId: settings.appId,
    privateKey: settings.privateKey,
    apiUrl: settings.apiUrl,
    userAgent: settings.userAgent,
    clock,
    logger,
    ...(settings.writeIntervalMs === undefined
      ? {}
      : { writeIntervalMs: settings.writeIntervalMs }),
    ...(settings.retryBaseMs === undefined ? {} : { retryBaseMs: settings.retryBaseMs }),
  });
  const installations = new GitHubInstallations({
    app,
    store: stores.installations,
    deliveries: stores.deliveries,
    organizations: stores.organizations,
    host: settings.host,
    clock,
    logger,
    linked: () => {
      inbox.wake();
    },
  });
  const repositories = new GitHubRepositories({
    store: stores.installations,
    repositories: stores.repositories,
    app,
  });
  const gitHost = new GitHubGitHost({
    repositories,
    app,
    logger,
    ...(settings.testBranchPrefix === undefined
      ? {}
      : { testBranchPrefix: settings.testBranchPrefix }),
    ...deps.gitHost,
  });
  const webhooks = new WebhookHandlers();
  registerGitHostCacheHandlers(webhooks, gitHost);
  registerConnectionHandlers(webhooks, {
    installations,
    store: stores.installations,
    changes: deps.changes,
  });
  const appId = appIdReader(settings, app);
  const { presence, testResults } = pullRequestWorkers(deps, repositories, appId);
  const ci = createCi(deps, app, repositories, gitHost);
  registerCiHandlers(webhooks, ci);
  const { inbox, writer } = createInbox(deps, webhooks, app, installations);
  const reconciler = new GitHubReconciler({
    host: settings.host,
    app,
    repositories,
    queues: stores.queues,
    entries: stores.entries,
    changes: deps.changes,
    logger,
    ...(deps.reconcileIntervalMs === undefined ? {} : { intervalMs: deps.reconcileIntervalMs }),
  });
  const sync = installationSync(installations, deps.syncIntervalMs ?? HOUR_MS, logger);
  return {
    hostName: settings.host,
    app,
    forkedRuns: new GitHubForkedRuns({
      host: settings.host,
      store: stores.installations,
      organizations: stores.organizations,
      app,
      clock,
      logger,
    }),
    signIn: createSignIn(deps),
    installations,
    repositories,
    gitHost,
    webhooks,
    ci,
    inbox,
    reconciler,
    presence,
    testResults,
    appId,
    existingRepository: (principal, ref) => repositories.existing(principal, ref),
    // One read of GitHub: a submission is answered once stored, not after the queue's step.
    storedPullRequest: (repo, number) => gitHost.pullRequestState(repo, number),
    routes(scope) {
      registerGitHubRoutes(scope, { installations, host: settings.host });
    },
    webhookRoutes: (scope) => {
      registerWebhookRoute(scope, {
        source: GITHUB_SOURCE,
        secret: settings.webhookSecret,
        store: (delivery) => writer.store(delivery),
        stored: () => {
          inbox.wake();
        },
        clock,
      });
    },
    start() {
      inbox.start();
      presence.start();
      testResults?.start();
      ci.startWatching();
      // In the background: a server whose GitHub is slow or away still starts.
      sync.start();
      reconciler.start();
      return Promise.resolve();
    },
    async stop() {
      sync.stopTimer();
      await reconciler.stop();
      await ci.stopWatching();
      await inbox.stop();
      await presence.stop();
      await testResults?.stop();
      await sync.synced();
    },
    synced: () => sync.synced(),
  };
}

/**
 * What the git host keeps of GitHub's answers, forgotten when GitHub says it changed. Registered
 * before the handlers that wake the queues: their reads must not be served from what is stale.
 */
function registerGitHostCacheHandlers(webhooks: WebhookHandlers, gitHost: GitHubGitHost): void {
  webhooks.forOrganization(["pull_request", "pull_request_review"], (delivery) => {
    gitHost.forgetPullRequest(
      { owner: delivery.payload.repository.owner.login, name: delivery.payload.repository.name },
      delivery.payload.pull_request.number,
    );
    return Promise.resolve();
  });
  webhooks.forOrganization("push", (delivery) => {
    const { after, ref, head_commit: head } = delivery.payload;
    if (!delivery.repository) return Promise.resolve();
    if (ref.startsWith("refs/heads/")) {
      gitHost.heard(delivery.repository, { branch: ref.slice("refs/heads/".length), sha: after });
    }
    if (head && head.id === after) gitHost.pushed(delivery.repository, after, head.tree_id);
    return Promise.resolve();
  });
  // Whether the repository's webhooks are flowing: a merge trusts their word on its base then.
  webhooks.forOrganization(["status", "check_run", "check_suite", "pull_request"], (delivery) => {
    if (delivery.repository) gitHost.heard(delivery.repository);
    return Promise.resolve();
  });
  webhooks.forOrganization(["branch_protection_rule", "repository_ruleset"], (delivery) => {
    // An organization's ruleset names no repository: every repository's are forgotten.
    const repository = delivery.payload.repository;
    gitHost.forgetRequirements(
      repository ? { owner: repository.owner.login, name: repository.name } : undefined,
    );
    return Promise.resolve();
  });
}

/**
 * The App's numeric id (its own comments carry it): configured, or read once from GitHub when the
 * App is configured by its client id.
 */
function appIdReader(settings: GitHubProviderSettings, app: GitHubApp): () => Promise<number> {
  let appIdRead: Promise<number> | undefined;
  return () => {
    if (/^\d+$/.test(settings.appId)) return Promise.resolve(Number(settings.appId));
    appIdRead ??= app.app.request("GET /app").then(
      ({ data }) => data?.id ?? Number.NaN,
      (error: unknown) => {
        appIdRead = undefined;
        throw error;
      },
    );
    return appIdRead;
  };
}

function createCi(
  deps: GitHubProviderDeps,
  app: GitHubApp,
  repositories: GitHubRepositories,
  gitHost: GitHubGitHost,
): GitHubCi {
  const { settings, stores } = deps;
  return new GitHubCi({
    hostName: settings.host,
    repositories,
    app,
    runs: stores.ciRuns,
    queues: stores.queues,
    clock: deps.clock,
    logger: deps.logger,
    pollIntervalMs:
      deps.ciPollIntervalMs ?? settings.ciPollIntervalMs ?? DEFAULT_CI_POLL_INTERVAL_MS,
    ...(deps.ciFailures ? { failures: deps.ciFailures } : {}),
    pollLease: ciPollLease(stores.presence, leaseOwner()),
    assembledChanges: (sha) => gitHost.assembledChanges(sha),
    branchChecks: (access, branch) => gitHost.requiredChecks(access, branch),
  });
}

/** The webhook inbox, handing each stored delivery to the handlers; `writer` stores them. */
function createInbox(
  deps: GitHubProviderDeps,
  handlers: WebhookHandlers,
  app: GitHubApp,
  installations: GitHubInstallations,
): { inbox: WebhookInbox; writer: DeliveryWriter } {
  const { stores } = deps;
  const dispatcher = new WebhookDispatcher({
    handlers,
    app,
    installations,
    store: stores.installations,
    repositories: stores.repositories,
  });
  const inbox = new WebhookInbox(
    {
      deliveries: stores.deliveries,
      dispatch: (delivery) => dispatcher.dispatch(delivery),
      linkedNow: async (id) => (await stores.installations.find(id))?.organizationId != null,
      clock: deps.clock,
      logger: deps.logger,
      owner: leaseOwner(),
      source: GITHUB_SOURCE,
    },
    deps.inbox,
  );
  return { inbox, writer: new DeliveryWriter(stores.deliveries) };
}

/** The installations read again from GitHub: at start, then every `intervalMs` (0: never). */
function installationSync(
  installations: GitHubInstallations,
  intervalMs: number,
  logger: GitHubLogger,
) {
  let timer: NodeJS.Timeout | undefined;
  let syncing: Promise<void> | undefined;
  const syncAll = () => {
    syncing ??= installations
      .syncAll(Math.min(intervalMs / 2, 10 * MINUTE_MS))
      .catch((error: unknown) => {
        logger.warn({ err: error }, "github: could not read the App's installations; will retry");
      })
      .finally(() => {
        syncing = undefined;
      });
    return syncing;
  };
  return {
    start() {
      void syncAll();
      if (intervalMs > 0) {
        timer = setInterval(() => void syncAll(), intervalMs);
        timer.unref();
      }
    },
    stopTimer() {
      clearInterval(timer);
    },
    /** Resolves once the sync under way (if any) has ended. */
    async synced() {
      await syncing;
    },
  };
}

function createSignIn({ settings, stores }: GitHubProviderDeps): GitHubSignIn | undefined {
  if (!settings.oauth) return undefined;
  return new GitHubSignIn({
    settings: {
      ...settings.oauth,
      apiUrl: settings.apiUrl,
      webUrl: settings.webUrl ?? new URL(settings.apiUrl).origin,
      userAgent: settings.userAgent,
    },
    installations: stores.installations,
    organizations: stores.organizations,
  });
}

/**
 * The CI poll's lease, kept as a lease-holding row of the presence cursors' table (its position is
 * not used): one process of a database polls at a time.
 */
function ciPollLease(
  store: Pick<PresenceRecords, "claimCursor" | "releaseCursor">,
  owner: string,
): PollLease {
  const name = "github-ci-poll";
  return {
    claim: async (now, until) => (await store.claimCursor(name, owner, now, until)) !== undefined,
    release: () => store.releaseCursor(name, owner),
  };
}

/** The workers that show things on pull requests: the queue's presence, the test results. */
function pullRequestWorkers(
  deps: GitHubProviderDeps,
  repositories: GitHubRepositories,
  appId: () => Promise<number>,
) {
  const { settings, stores, clock, logger } = deps;
  const presence = new PullRequestPresence(
    {
      store: stores.presence,
      queues: stores.queues,
      repositories: stores.repositories,
      runtime: stores.runtime,
      github: repositories,
      host: settings.host,
      appId,
      pageUrl: deps.pullRequestPage,
      failures: deps.failureExplainer,
      clock,
      logger,
      owner: leaseOwner(),
    },
    deps.presence,
  );
  const testResults =
    deps.testResults &&
    new PullRequestTestResults(
      {
        ...deps.testResults,
        repositories: stores.repositories,
        github: repositories,
        host: settings.host,
        appId,
        clock,
        logger,
        owner: leaseOwner(),
      },
      deps.testResults.options,
    );
  return { presence, testResults };
}
