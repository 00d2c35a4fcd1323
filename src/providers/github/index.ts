/**
 * The GitHub provider: Mainline as a GitHub App (docs/github.md). `githubProvider` registers it
 * when the App is configured; `createGitHubProvider` (provider.ts) builds its parts over the App.
 * Storage comes in through ports; pushes and pull-request changes go out as host-neutral changes.
 */
import { VERSION } from "../../version.js";
import type { ProviderContext, ProviderRegistration } from "../host-provider.js";
import type { InboxOptions } from "../webhook-inbox.js";
import type { TestResultsOptions } from "./pull-request-test-results.js";
import type { PresenceOptions } from "./pull-request-presence.js";
import {
  createGitHubProvider,
  type GitHubProvider,
  type GitHubProviderDeps,
  type GitHubProviderSettings,
} from "./provider.js";
import { registerPullRequestCommands } from "./pull-request-commands.js";
import { registerGitHubRoutes } from "./routes.js";

export {
  createGitHubProvider,
  type GitHubProvider,
  type GitHubProviderDeps,
  type GitHubProviderSettings,
} from "./provider.js";

export type { GitHubClient, GitHubLogger } from "./client.js";
export { GitHubCi, DEFAULT_CI_POLL_INTERVAL_MS } from "./ci.js";
export {
  checkCounts,
  readRequiredChecks,
  requiredNames,
  unionRequiredChecks,
  type RequiredCheck,
} from "./required-checks.js";
export type { GitHubRepositoryAccess } from "./repositories.js";
export type { GitHubReconciler, ReconcileReport } from "./reconcile.js";
export type {
  InstallationDelivery,
  OrganizationDelivery,
  WebhookHandlers,
} from "./webhooks/registry.js";
export { registerGitHubRoutes } from "./routes.js";
export { registerPullRequestCommands } from "./pull-request-commands.js";
export type { PullRequestPresence } from "./pull-request-presence.js";
export {
  APP_EVENTS,
  APP_PERMISSIONS,
  ALWAYS_DELIVERED_EVENTS,
  appManifest,
  registrationUrl,
  signInCallbackUrl,
  webUrlOf,
  webhookUrl,
} from "./manifest.js";

/** The server's options of the GitHub provider (`github`: the App; without it, none). */
export interface GitHubProviderOptions {
  /** The GitHub App; without it, repositories on GitHub answer `host_not_connected`. */
  github?: Omit<GitHubProviderSettings, "userAgent"> & { reconcileIntervalMs?: number };
  /** The GitHub webhook inbox's worker (tests shorten its lease and polling). */
  githubInbox?: Partial<InboxOptions>;
  /** The worker that shows the queue on GitHub's pull requests (tests poll it faster). */
  githubPresence?: Partial<PresenceOptions>;
  /** The worker that comments test results on pull requests (tests poll it faster). */
  githubTestResults?: Partial<TestResultsOptions>;
  /** How often the App's installations are read again (default hourly; 0: only at start). */
  githubSyncIntervalMs?: number;
  /** Between GitHub reconcile passes (default: the configuration's; 0: only when asked). */
  githubReconcileIntervalMs?: number;
  /** The GitHub git host's retries and waits (tests shorten them). */
  githubGitHost?: GitHubProviderDeps["gitHost"];
  /** How often the GitHub CI reads the checks of the runs it watches (default 15 s). */
  githubCiPollIntervalMs?: number;
}

/** The GitHub App, when configured; without it `/v1/github/*` answer `host_not_connected`. */
export const githubProvider: ProviderRegistration<
  GitHubProviderOptions,
  GitHubProvider | undefined
> = {
  create(context, options) {
    if (!options.github) return undefined;
    const { records, hostRecords } = context;
    const github = createGitHubProvider({
      settings: { ...options.github, userAgent: `mainline/${VERSION}` },
      clock: context.clock,
      logger: context.logger,
      stores: {
        installations: hostRecords.githubInstallations,
        deliveries: hostRecords.webhookDeliveries,
        repositories: records.repositories,
        organizations: records.organizations,
        queues: records.queues,
        entries: records.runtime,
        ciRuns: hostRecords.watchedCiRuns,
        presence: hostRecords.prPresence,
        runtime: records.runtime,
      },
      pullRequestPage: (repository, branch, number) =>
        context.pullRequestPage(repository, branch, number),
      presence: { ...leaseOf(context), ...options.githubPresence },
      changes: context.changes,
      inbox: { ...leaseOf(context), ...options.githubInbox },
      ...(options.githubSyncIntervalMs === undefined
        ? {}
        : { syncIntervalMs: options.githubSyncIntervalMs }),
      ...optionalReconcileInterval(
        options.githubReconcileIntervalMs ?? options.github.reconcileIntervalMs,
      ),
      ...(options.githubGitHost ? { gitHost: options.githubGitHost } : {}),
      ...(options.githubCiPollIntervalMs === undefined
        ? {}
        : { ciPollIntervalMs: options.githubCiPollIntervalMs }),
      ciFailures: context.testHealth.failures,
      failureExplainer: context.testHealth.explainer,
      testResults: {
        store: hostRecords.pullRequestReports,
        settings: context.testHealth.reports.settings,
        failures: context.testHealth.failures,
        testPage: (repository, testId) => context.testPage(repository, testId),
        options: { ...leaseOf(context), ...options.githubTestResults },
      },
    });
    // Comment commands and the enqueueing label, through the same service as the API.
    registerPullRequestCommands(github.webhooks, {
      appId: () => github.appId(),
      queues: records.queues,
      organizations: records.organizations,
      runtime: records.runtime,
      pullRequests: context.pullRequests,
      app: github.app,
    });
    return github;
  },
  unconnectedRoutes(scope) {
    registerGitHubRoutes(scope, undefined);
  },
};

function optionalReconcileInterval(intervalMs: number | undefined) {
  return intervalMs === undefined ? {} : { reconcileIntervalMs: intervalMs };
}

/** The context's lease, where one is set, for the parts that claim work under a lease. */
function leaseOf(context: ProviderContext): { leaseMs?: number } {
  return context.leaseMs === undefined ? {} : { leaseMs: context.leaseMs };
}
