/** What the composition root hands every registered host: its ports, over one database. */
import type { DatabaseHandle } from "../db/connection.js";
import { CiRunStore } from "../db/stores/ci-runs.js";
import { WatchedCiRunStore } from "../db/stores/watched-ci-runs.js";
import { GitHubInstallationStore } from "../db/stores/github-installations.js";
import { PrPresenceStore } from "../db/stores/pr-presence.js";
import { GitLabConnectionStore } from "../db/stores/gitlab-connections.js";
import { GitLabOAuthStateStore } from "../db/stores/gitlab-oauth-states.js";
import { PullRequestReportStore } from "../db/stores/pull-request-reports.js";
import { LocalPullRequestStore } from "../db/stores/local-pull-requests.js";
import { WebhookDeliveryStore } from "../db/stores/webhook-deliveries.js";
import { isDatabaseUnavailable } from "../lib/faults.js";
import { CiFailures } from "../testhealth/ci-failures.js";
import { FailureExplainer } from "../mergequeue/failure-explanation.js";
import type { ProviderContext } from "../providers/host-provider.js";
import { urls } from "../web/urls.js";
import type { TestHealth } from "./test-health.js";

export interface ProviderContextParts extends Pick<
  ProviderContext,
  "dataDir" | "clock" | "logger" | "changes" | "records" | "pullRequests" | "leaseMs"
> {
  testHealth: TestHealth;
  publicUrl: string | undefined;
}

export function providerContext(
  database: DatabaseHandle,
  parts: ProviderContextParts,
): ProviderContext {
  const { db, dialect } = database;
  const { testHealth, publicUrl, ...shared } = parts;
  const { records } = shared;
  const { testCases, testSettings, uploads } = testHealth.stores;
  const failures = new CiFailures({
    repositories: records.repositories,
    uploads,
    testCases,
    settings: testSettings,
  });
  return {
    ...shared,
    publicUrl,
    hostRecords: {
      localPullRequests: new LocalPullRequestStore(db),
      ciRuns: new CiRunStore(db),
      githubInstallations: new GitHubInstallationStore(db, dialect),
      webhookDeliveries: new WebhookDeliveryStore(db, dialect),
      watchedCiRuns: new WatchedCiRunStore(db),
      prPresence: new PrPresenceStore(db),
      pullRequestReports: new PullRequestReportStore(db),
      gitlabConnections: new GitLabConnectionStore(db),
      gitlabOAuthStates: new GitLabOAuthStateStore(db),
    },
    testHealth: {
      reports: {
        organizationSlug: async (id) => (await records.organizations.findById(id))?.slug,
        uploads: testHealth.uploads,
        testCases,
        settings: testSettings,
      },
      failures,
      explainer: new FailureExplainer({ failures, runtime: records.runtime }),
    },
    pullRequestPage: async (repository, branch, number) => {
      if (publicUrl === undefined) return undefined;
      const organization = await records.organizations.findById(repository.organizationId);
      if (!organization) return undefined;
      const path = urls.pullRequest(organization.slug, repository, branch, number);
      return `${publicUrl.replace(/\/+$/, "")}${path}`;
    },
    testPage: async (repository, testId) => {
      if (publicUrl === undefined) return undefined;
      const organization = await records.organizations.findById(repository.organizationId);
      if (!organization) return undefined;
      return `${publicUrl.replace(/\/+$/, "")}${urls.test(organization.slug, testId, repository)}`;
    },
    isStorageUnavailable: isDatabaseUnavailable,
  };
}
