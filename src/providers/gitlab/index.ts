/**
 * The GitLab provider: the merge queue on GitLab.com or a self-managed instance, CE or EE
 * (docs/gitlab.md). `gitlabProvider` registers it when MAINLINE_GITLAB_URL is set; each
 * organization then connects with its own access token.
 */
import { VERSION } from "../../version.js";
import type { ProviderRegistration } from "../host-provider.js";
import type { PresenceOptions } from "../presence/driver.js";
import type { InboxOptions } from "../webhook-inbox.js";
import {
  createGitLabProvider,
  type GitLabProvider,
  type GitLabProviderDeps,
  type GitLabProviderSettings,
} from "./provider.js";
import { registerGitLabRoutes } from "./routes.js";

export { createGitLabProvider, type GitLabProvider } from "./provider.js";

/** The server's options of the GitLab provider (`gitlab`: the instance; without it, none). */
export interface GitLabProviderOptions {
  gitlab?: Omit<GitLabProviderSettings, "userAgent">;
  /** The GitLab webhook inbox's worker (tests shorten its polling). */
  gitlabInbox?: Partial<InboxOptions>;
  /** The worker that shows the queue on merge requests (tests poll it faster). */
  gitlabPresence?: Partial<PresenceOptions>;
  /** The GitLab git host's retries and waits (tests shorten them). */
  gitlabGitHost?: GitLabProviderDeps["gitHost"];
  /** Every REST request to GitLab (tests and benchmarks count them). */
  gitlabOnRequest?: GitLabProviderDeps["onRequest"];
}

export const gitlabProvider: ProviderRegistration<
  GitLabProviderOptions,
  GitLabProvider | undefined
> = {
  create(context, options) {
    if (!options.gitlab) return undefined;
    const { records, hostRecords } = context;
    return createGitLabProvider({
      settings: { ...options.gitlab, userAgent: `mainline/${VERSION}` },
      dataDir: context.dataDir,
      publicUrl: context.publicUrl,
      clock: context.clock,
      logger: context.logger,
      stores: {
        connections: hostRecords.gitlabConnections,
        oauthStates: hostRecords.gitlabOAuthStates,
        deliveries: hostRecords.webhookDeliveries,
        repositories: records.repositories,
        queues: records.queues,
        entries: records.runtime,
        organizations: records.organizations,
        repositoryById: records.repositories,
        presence: hostRecords.prPresence,
        ciRuns: hostRecords.watchedCiRuns,
      },
      changes: context.changes,
      pullRequests: context.pullRequests,
      pullRequestPage: (repository, branch, number) =>
        context.pullRequestPage(repository, branch, number),
      failureExplainer: context.testHealth.explainer,
      ciFailures: context.testHealth.failures,
      presence: {
        ...(context.leaseMs === undefined ? {} : { leaseMs: context.leaseMs }),
        ...options.gitlabPresence,
      },
      inbox: {
        ...(context.leaseMs === undefined ? {} : { leaseMs: context.leaseMs }),
        ...options.gitlabInbox,
      },
      ...(options.gitlabGitHost ? { gitHost: options.gitlabGitHost } : {}),
      ...(options.gitlabOnRequest ? { onRequest: options.gitlabOnRequest } : {}),
    });
  },
  unconnectedRoutes(scope) {
    registerGitLabRoutes(scope, undefined);
  },
};
