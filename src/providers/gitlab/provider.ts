/**
 * The GitLab provider's parts, over the one GitLab instance the server is configured for:
 * organizations' connections, the project mirrors, the merge queue's git host and CI, the webhook
 * receiver and its inbox worker (docs/gitlab.md).
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../../lib/clock.js";
import type { HostChanges } from "../../mergequeue/host-changes.js";
import type {
  MergeQueueRecords,
  RepositoryRecords,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { WatchedCiRunRecords } from "../../mergequeue/watched-ci-runs.js";
import type { DeliveryRecords } from "../../mergequeue/webhook-delivery-records.js";
import type {
  GitLabConnectionRecords,
  GitLabOAuthStates,
} from "../../organizations/gitlab-connections.js";
import type { Repository } from "../../organizations/repositories.js";
import type { HostProvider, ProviderLogger } from "../host-provider.js";
import type { PresenceOptions } from "../presence/driver.js";
import type { FailureExplainer } from "../../mergequeue/failure-explanation.js";
import type { PresenceRecords } from "../../mergequeue/pull-request-presence-records.js";
import type { PullRequestService } from "../../mergequeue/pull-request-service.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import { WebhookInbox, type InboxOptions } from "../webhook-inbox.js";
import { DeliveryWriter } from "../webhook-writer.js";
import { GitLabCi, type GitLabCiDeps } from "./ci.js";
import type { GitLabClientOptions } from "./client.js";
import { GitLabConnections, asApiError } from "./connections.js";
import { GitLabEvents } from "./events.js";
import { GitLabGitHost, type GitLabGitHostOptions } from "./host.js";
import { GitLabMirrors } from "./mirror.js";
import { GitLabOAuthApp } from "./oauth-app.js";
import { GitLabOAuthGrants } from "./oauth-grants.js";
import { GitLabCommands } from "./commands.js";
import { GitLabPresence } from "./presence.js";
import { DEFAULT_GITLAB_RECONCILE_INTERVAL_MS, GitLabReconciler } from "./reconcile.js";
import { GitLabRepositories } from "./repositories.js";
import { registerGitLabCallbackRoute } from "./oauth-routes.js";
import { registerGitLabRoutes } from "./routes.js";
import { GITLAB_SOURCE, registerGitLabWebhookRoute } from "./webhooks.js";

export interface GitLabProviderSettings {
  url: string;
  host: string;
  userAgent: string;
  testBranchPrefix?: string | undefined;
  ciPollIntervalMs?: number | undefined;
  retryBaseMs?: number | undefined;
  /** Between reconcile passes (default 60 s; 0: only when asked, `reconciler.pass()`). */
  reconcileIntervalMs?: number | undefined;
  /** The OAuth application organizations may connect through (docs/gitlab.md). */
  oauth?: { clientId: string; clientSecret: string } | undefined;
}

export interface GitLabProviderDeps {
  settings: GitLabProviderSettings;
  dataDir: string;
  publicUrl: string | undefined;
  clock: Clock;
  logger: ProviderLogger;
  stores: {
    connections: GitLabConnectionRecords;
    oauthStates: GitLabOAuthStates;
    deliveries: DeliveryRecords;
    repositories: Pick<RepositoryRecords, "ensure">;
    queues: Pick<MergeQueueRecords, "listForHost" | "find" | "listForOrganization" | "findById">;
    entries: Pick<RuntimeRecords, "activeSummaries" | "latestEntry" | "transitions">;
    organizations: Pick<OrganizationRecords, "findById">;
    repositoryById: Pick<RepositoryRecords, "findById">;
    presence: PresenceRecords;
    ciRuns: WatchedCiRunRecords;
  };
  changes: Pick<HostChanges, "apply">;
  /** The merge queue's submissions, for commands in notes. */
  pullRequests: Pick<PullRequestService, "submit" | "cancel">;
  /** A merge request's page on the dashboard (the note links it). */
  pullRequestPage?: (
    repository: Repository,
    branch: string,
    number: number,
  ) => Promise<string | undefined>;
  /** Test health's view of a failed run's commit: a run failed by flaky tests only. */
  ciFailures?: GitLabCiDeps["failures"];
  /** Why a merge request failed (its failing tests), for the note. */
  failureExplainer?: Pick<FailureExplainer, "explainEntry">;
  presence?: Partial<PresenceOptions>;
  inbox?: Partial<InboxOptions>;
  gitHost?: Pick<
    GitLabGitHostOptions,
    "mergeabilityReads" | "mergeabilityWaitMs" | "mergeAttempts" | "retryDelayMs"
  >;
  /** Every request to GitLab's REST API (counting); never sees a token. */
  onRequest?: GitLabClientOptions["onRequest"];
}

export interface GitLabProvider extends HostProvider {
  connections: GitLabConnections;
  gitHost: GitLabGitHost;
  ci: GitLabCi;
  inbox: WebhookInbox;
  reconciler: GitLabReconciler;
  presence: GitLabPresence;
}

export const DEFAULT_TEST_BRANCH_PREFIX = "trunk-merge/";

export function createGitLabProvider(deps: GitLabProviderDeps): GitLabProvider {
  const { settings, clock, logger, stores } = deps;
  const testBranchPrefix = settings.testBranchPrefix ?? DEFAULT_TEST_BRANCH_PREFIX;
  const oauth = oauthGrants(deps);
  const connections = new GitLabConnections({
    records: stores.connections,
    clock,
    url: settings.url,
    userAgent: settings.userAgent,
    retryBaseMs: settings.retryBaseMs,
    oauth,
    ...(deps.onRequest ? { onRequest: deps.onRequest } : {}),
  });
  const mirrors = new GitLabMirrors({ dataDir: deps.dataDir, url: settings.url });
  const gitHost = new GitLabGitHost({
    connections,
    mirrors,
    clock,
    logger,
    testBranchPrefix,
    ...deps.gitHost,
  });
  const ci = new GitLabCi({
    hostName: settings.host,
    connections,
    mirrors,
    runs: stores.ciRuns,
    queues: stores.queues,
    clock,
    logger,
    ...(deps.ciFailures ? { failures: deps.ciFailures } : {}),
    ...(settings.ciPollIntervalMs === undefined
      ? {}
      : { pollIntervalMs: settings.ciPollIntervalMs }),
  });
  const owner = `${hostname()}:${String(process.pid)}:${randomUUID().slice(0, 8)}`;
  const presence = new GitLabPresence(
    {
      store: stores.presence,
      queues: stores.queues,
      repositories: stores.repositoryById,
      runtime: stores.entries,
      host: settings.host,
      pageUrl: deps.pullRequestPage,
      failures: deps.failureExplainer,
      clock,
      logger,
      owner,
      connections,
    },
    deps.presence,
  );
  const commands = new GitLabCommands({
    connections,
    queues: stores.queues,
    organizations: stores.organizations,
    pullRequests: deps.pullRequests,
  });
  const events = new GitLabEvents({
    hostName: settings.host,
    testBranchPrefix,
    connections,
    changes: deps.changes,
    pipelineChanged: (sha, status) => ci.pipelineChanged(sha, status),
    branchMoved: (repo, branch, sha) => {
      gitHost.branchMoved(repo, branch, sha);
    },
    commands,
    presenceWake: () => {
      presence.wake();
    },
  });
  const inbox = new WebhookInbox(
    {
      deliveries: stores.deliveries,
      dispatch: (delivery) => events.dispatch(delivery),
      linkedNow: () => Promise.resolve(true),
      clock,
      logger,
      owner,
      source: GITLAB_SOURCE,
    },
    deps.inbox,
  );
  const writer = new DeliveryWriter(stores.deliveries);
  const reconciler = new GitLabReconciler({
    host: settings.host,
    connections,
    queues: stores.queues,
    entries: stores.entries,
    changes: deps.changes,
    clock,
    logger,
    intervalMs: settings.reconcileIntervalMs ?? DEFAULT_GITLAB_RECONCILE_INTERVAL_MS,
  });
  const publicUrl = () => deps.publicUrl;

  const repositories = new GitLabRepositories({
    connections,
    repositories: stores.repositories,
    clock,
    logger,
    publicUrl: deps.publicUrl,
  });

  return {
    hostName: settings.host,
    connections,
    gitHost,
    ci,
    inbox,
    reconciler,
    presence,
    existingRepository: (principal, ref) => repositories.existing(principal, ref),
    storedPullRequest: (repo, number) =>
      gitHost.mergeRequestState(repo, number).catch((error: unknown) => {
        throw asApiError(error);
      }),
    routes(scope) {
      registerGitLabRoutes(scope, { connections, host: settings.host, publicUrl });
    },
    webhookRoutes(scope) {
      registerGitLabCallbackRoute(scope, connections);
      registerGitLabWebhookRoute(scope, {
        connections,
        store: (delivery) => writer.store(delivery),
        stored: () => {
          inbox.wake();
        },
        clock,
      });
    },
    start() {
      inbox.start();
      ci.startPolling();
      reconciler.start();
      presence.start();
      return Promise.resolve();
    },
    async stop() {
      await presence.stop();
      await reconciler.stop();
      await ci.stop();
      await inbox.stop();
    },
  };
}

/** The OAuth application's grants, when the operator configured one. */
function oauthGrants(deps: GitLabProviderDeps): GitLabOAuthGrants | undefined {
  const { settings } = deps;
  if (!settings.oauth) return undefined;
  return new GitLabOAuthGrants({
    app: new GitLabOAuthApp({
      url: settings.url,
      ...settings.oauth,
      userAgent: settings.userAgent,
      retryBaseMs: settings.retryBaseMs,
      ...(deps.onRequest ? { onRequest: deps.onRequest } : {}),
    }),
    records: deps.stores.connections,
    states: deps.stores.oauthStates,
    clock: deps.clock,
  });
}
