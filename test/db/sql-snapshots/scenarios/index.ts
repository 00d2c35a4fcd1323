import { ciRunsScenario } from "./ci-runs.js";
import { watchedCiRunsScenario } from "./watched-ci-runs.js";
import { githubInstallationsScenario } from "./github-installations.js";
import { gitlabConnectionsScenario } from "./gitlab-connections.js";
import { gitlabOAuthStatesScenario } from "./gitlab-oauth-states.js";
import { prPresenceScenario } from "./pr-presence.js";
import { pullRequestReportsScenario } from "./pull-request-reports.js";
import { localPullRequestsScenario } from "./local-pull-requests.js";
import { mergeQueueRuntimeScenario } from "./merge-queue-runtime.js";
import { mergeQueuesScenario } from "./merge-queues.js";
import { organizationsScenario } from "./organizations.js";
import { outboundDeliveriesScenario, outboundWebhooksScenario } from "./outbound-webhooks.js";
import { repositoriesScenario } from "./repositories.js";
import { repositoryHealthScenario } from "./repository-health.js";
import { repositoryTableScenario } from "./repository-table.js";
import { serverSecretsScenario } from "./server-secrets.js";
import { sessionsScenario } from "./sessions.js";
import { testCasesScenario } from "./test-cases.js";
import { testDetailsScenario } from "./test-details.js";
import { testIngestScenario } from "./test-ingest.js";
import { testListsScenario } from "./test-lists.js";
import { testOverviewScenario } from "./test-overview.js";
import { testSettingsScenario } from "./test-settings.js";
import { testViewsScenario } from "./test-views.js";
import { ticketsScenario } from "./tickets.js";
import { uploadsScenario } from "./uploads.js";
import { webhookDeliveriesScenario } from "./webhook-deliveries.js";
import type { StoreScenario } from "./types.js";

/**
 * What the SQL snapshots are made of: for every store in `src/db/stores/`, its scenario in the
 * file of the same name here. A store method missing from its scenario fails the snapshot test
 * (see `withoutSql` for the exceptions). The order is the order in which they are rendered.
 */
export const SCENARIOS: StoreScenario[] = [
  githubInstallationsScenario,
  watchedCiRunsScenario,
  prPresenceScenario,
  gitlabConnectionsScenario,
  gitlabOAuthStatesScenario,
  pullRequestReportsScenario,
  webhookDeliveriesScenario,
  ciRunsScenario,
  localPullRequestsScenario,
  mergeQueueRuntimeScenario,
  mergeQueuesScenario,
  organizationsScenario,
  outboundWebhooksScenario,
  outboundDeliveriesScenario,
  repositoriesScenario,
  serverSecretsScenario,
  testCasesScenario,
  testDetailsScenario,
  testIngestScenario,
  testListsScenario,
  testSettingsScenario,
  sessionsScenario,
  testOverviewScenario,
  repositoryHealthScenario,
  repositoryTableScenario,
  testViewsScenario,
  ticketsScenario,
  uploadsScenario,
];
