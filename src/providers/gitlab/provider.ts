/**
 * The GitLab provider's parts, over the one GitLab instance the server is configured for:
 * organizations' connections, the project mirrors, the merge queue's git host and CI, the webhook
 * receiver and its inbox worker (docs/gitlab.md).
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Clock } from "../../lib/clock.js";
import { ApiError } from "../../lib/errors.js";
import type { HostChanges } from "../../mergequeue/host-changes.js";
import type {
  MergeQueueRecords,
  RepositoryRecords,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { WatchedCiRunRecords } from "../../mergequeue/watched-ci-runs.js";
import type { DeliveryRecords } from "../../mergequeue/webhook-delivery-records.js";
import type { GitLabConnectionRecords } from "../../organizations/gitlab-connections.js";
import type { RepoRef, Repository } from "../../organizations/repositories.js";
import type { Principal } from "../../organizations/service.js";
import type { HostProvider, ProviderLogger } from "../host-provider.js";
import { WebhookInbox, type InboxOptions } from "../webhook-inbox.js";
import { DeliveryWriter } from "../webhook-writer.js";
import { GitLabCi } from "./ci.js";
import { projectId, type GitLabClientOptions } from "./client.js";
import { GitLabConnections, asApiError } from "./connections.js";
import { GitLabEvents } from "./events.js";
import { GitLabGitHost, type GitLabGitHostOptions } from "./host.js";
import { GitLabMirrors } from "./mirror.js";
import { DEFAULT_GITLAB_RECONCILE_INTERVAL_MS, GitLabReconciler } from "./reconcile.js";
import { HOOK_EVENTS, registerGitLabRoutes } from "./routes.js";
import { GITLAB_SOURCE, gitlabWebhookUrl, registerGitLabWebhookRoute } from "./webhooks.js";

export interface GitLabProviderSettings {
  url: string;
  host: string;
  userAgent: string;
  testBranchPrefix?: string | undefined;
  ciPollIntervalMs?: number | undefined;
  retryBaseMs?: number | undefined;
  /** Between reconcile passes (default 60 s; 0: only when asked, `reconciler.pass()`). */
  reconcileIntervalMs?: number | undefined;
}

export interface GitLabProviderDeps {
  settings: GitLabProviderSettings;
  dataDir: string;
  publicUrl: string | undefined;
  clock: Clock;
  logger: ProviderLogger;
  stores: {
    connections: GitLabConnectionRecords;
    deliveries: DeliveryRecords;
    repositories: Pick<RepositoryRecords, "ensure">;
    queues: Pick<MergeQueueRecords, "listForHost">;
    entries: Pick<RuntimeRecords, "activeSummaries">;
    ciRuns: WatchedCiRunRecords;
  };
  changes: Pick<HostChanges, "apply">;
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
}

export const DEFAULT_TEST_BRANCH_PREFIX = "trunk-merge/";

export function createGitLabProvider(deps: GitLabProviderDeps): GitLabProvider {
  const { settings, clock, logger, stores } = deps;
  const testBranchPrefix = settings.testBranchPrefix ?? DEFAULT_TEST_BRANCH_PREFIX;
  const connections = new GitLabConnections({
    records: stores.connections,
    clock,
    url: settings.url,
    userAgent: settings.userAgent,
    retryBaseMs: settings.retryBaseMs,
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
    clock,
    logger,
    ...(settings.ciPollIntervalMs === undefined
      ? {}
      : { pollIntervalMs: settings.ciPollIntervalMs }),
  });
  const events = new GitLabEvents({
    hostName: settings.host,
    testBranchPrefix,
    connections,
    changes: deps.changes,
    pipelineChanged: (sha) => ci.pipelineChanged(sha),
  });
  const inbox = new WebhookInbox(
    {
      deliveries: stores.deliveries,
      dispatch: (delivery) => events.dispatch(delivery),
      linkedNow: () => Promise.resolve(true),
      clock,
      logger,
      owner: `${hostname()}:${String(process.pid)}:${randomUUID().slice(0, 8)}`,
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

  async function existingRepository(principal: Principal, ref: RepoRef): Promise<Repository> {
    const { client, connection } = await connections.access(principal.organizationId);
    const project = await client
      .find<{ path_with_namespace: string }>(`/projects/${projectId(ref.owner, ref.name)}`)
      .catch((error: unknown) => {
        throw asApiError(error);
      });
    if (!project) {
      throw new ApiError(
        "not_found",
        `GitLab has no project ${ref.owner}/${ref.name} that ${connection.username} can see.`,
      );
    }
    const repository = await stores.repositories.ensure(principal.organizationId, ref, clock.now());
    await ensureHook(principal.organizationId, ref).catch((error: unknown) => {
      logger.warn(
        { err: error, repo: `${ref.owner}/${ref.name}` },
        "gitlab: could not register the project's webhook; a Maintainer adds it (docs/gitlab.md)",
      );
    });
    return repository;
  }

  /** The project's webhook to this server, registered unless it is there already. */
  async function ensureHook(organizationId: string, ref: RepoRef): Promise<void> {
    const base = deps.publicUrl;
    if (base === undefined) return;
    const { client, connection } = await connections.access(organizationId);
    const url = gitlabWebhookUrl(base, connection.hookKey);
    const path = `/projects/${projectId(ref.owner, ref.name)}/hooks`;
    const hooks = (await client.get<{ url: string }[]>(path, { per_page: 100 })).data;
    if (hooks.some((hook) => hook.url === url)) return;
    await client.request("POST", path, {
      body: {
        url,
        token: connection.webhookSecret,
        enable_ssl_verification: url.startsWith("https:"),
        ...Object.fromEntries(HOOK_EVENTS.map((event) => [event, true])),
      },
    });
  }

  return {
    hostName: settings.host,
    connections,
    gitHost,
    ci,
    inbox,
    reconciler,
    existingRepository,
    storedPullRequest: (repo, number) =>
      gitHost.mergeRequestState(repo, number).catch((error: unknown) => {
        throw asApiError(error);
      }),
    routes(scope) {
      registerGitLabRoutes(scope, { connections, host: settings.host, publicUrl });
    },
    webhookRoutes(scope) {
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
      return Promise.resolve();
    },
    async stop() {
      await reconciler.stop();
      await ci.stop();
      await inbox.stop();
    },
  };
}
