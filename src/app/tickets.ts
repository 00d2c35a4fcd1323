/**
 * Tickets wired (docs/tickets.md): the connections' service, the ticket service over each
 * provider's client, its background loop, and how a ticket tells of its test (the Flaky Tests
 * API's presentation of the test, its latest failing runs).
 */
import {
  presentFailingTest,
  presentationOf,
  repositoryHtmlUrl,
} from "../api/flakytests/presenters/tests.js";
import type { DatabaseHandle } from "../db/connection.js";
import type { RepositoryStore } from "../db/stores/repositories.js";
import { TestDetailsStore } from "../db/stores/test-details.js";
import type { TestSettingsStore } from "../db/stores/test-settings.js";
import type { TestViewStore } from "../db/stores/test-views.js";
import type { TicketStore } from "../db/stores/tickets.js";
import { isoTime, type Clock } from "../lib/clock.js";
import { MINUTE_MS, SECOND_MS } from "../lib/time.js";
import { TicketConnectionService } from "../notifications/tickets/connections.js";
import type { TicketSubject } from "../notifications/tickets/draft.js";
import { GitHubTicketClient } from "../notifications/tickets/github.js";
import { jiraCloudClient, jiraDataCenterClient } from "../notifications/tickets/jira.js";
import { LinearTicketClient } from "../notifications/tickets/linear.js";
import { TicketLoop } from "../notifications/tickets/loop.js";
import { TicketService, type TicketSubjects } from "../notifications/tickets/service.js";
import type { TicketClient, TicketProviderKind } from "../notifications/tickets/types.js";
import { LOCAL_HOST, repositoryName } from "../organizations/repositories.js";
import { noFigures } from "../testhealth/test-queries.js";
import { outboundAddresses } from "./webhooks.js";

/** Each kind's client (null: a kind this version cannot create tickets in). */
export const TICKET_CLIENTS: Record<TicketProviderKind, TicketClient | null> = {
  jira_cloud: jiraCloudClient,
  jira_dc: jiraDataCenterClient,
  linear: new LinearTicketClient(),
  github: new GitHubTicketClient(),
};

export interface TicketSettings {
  /** MAINLINE_TICKETS_POLL_MS (default 5 min). */
  pollMs: number;
  /** MAINLINE_TICKETS_REFRESH_MS (default 15 min). */
  refreshMs: number;
  /** MAINLINE_TICKETS_TIMEOUT_MS (default 15 s). */
  timeoutMs: number;
  /** MAINLINE_WEBHOOKS_ALLOW_PRIVATE: providers may be internal addresses (intranet Jira). */
  allowPrivate: boolean;
  /** MAINLINE_LINEAR_API_URL. */
  linearApiUrl: string;
  /** MAINLINE_GITHUB_API_URL. */
  githubApiUrl: string;
  /** Links in tickets the loop creates; default: the address the server listens on. */
  publicUrl: string | undefined;
  listenOrigins: () => readonly string[];
  /** The clients by kind (tests may replace one). */
  clients: Record<TicketProviderKind, TicketClient | null>;
}

export const DEFAULT_TICKET_SETTINGS: TicketSettings = {
  pollMs: 5 * MINUTE_MS,
  refreshMs: 15 * MINUTE_MS,
  timeoutMs: 15 * SECOND_MS,
  allowPrivate: false,
  linearApiUrl: "https://api.linear.app/graphql",
  githubApiUrl: "https://api.github.com",
  publicUrl: undefined,
  listenOrigins: () => [],
  clients: TICKET_CLIENTS,
};

export interface Tickets {
  connections: TicketConnectionService;
  service: TicketService;
  loop: TicketLoop;
  stop(): Promise<void>;
}

/** How many of a test's latest runs are read to find its recent failures. */
const RUNS_READ = 50;

export function createTickets(
  database: DatabaseHandle,
  deps: {
    clock: Clock;
    store: TicketStore;
    repositories: RepositoryStore;
    testViews: TestViewStore;
    testSettings: TestSettingsStore;
    testQueries: ConstructorParameters<typeof TicketService>[0]["queries"];
    organizationSlug: (organizationId: string) => Promise<string>;
    installationToken?: ConstructorParameters<typeof TicketService>[0]["installationToken"];
    logger: { warn(fields: object, message: string): void };
  },
  options: Partial<TicketSettings> = {},
): Tickets {
  const settings = { ...DEFAULT_TICKET_SETTINGS, ...options };
  const { baseUrl, policy } = outboundAddresses(settings);
  const subjects = ticketSubjects(database, deps);
  const connections = new TicketConnectionService({
    records: deps.store,
    clock: deps.clock,
    policy,
  });
  const service = new TicketService({
    connections: deps.store,
    links: deps.store,
    queries: deps.testQueries,
    subjects,
    clients: settings.clients,
    installationToken: deps.installationToken,
    clock: deps.clock,
    options: {
      timeoutMs: settings.timeoutMs,
      allowPrivate: settings.allowPrivate,
      linearApiUrl: settings.linearApiUrl,
      githubApiUrl: settings.githubApiUrl,
    },
  });
  const loop = new TicketLoop(
    {
      service,
      connections: deps.store,
      links: deps.store,
      repositories: deps.repositories,
      settings: deps.testSettings,
      views: deps.testViews,
      clock: deps.clock,
      logger: deps.logger,
    },
    {
      pollMs: settings.pollMs,
      refreshMs: settings.refreshMs,
      baseUrl,
      createsPerPass: 10,
      readsPerPass: 50,
    },
  );
  return { connections, service, loop, stop: () => loop.stop() };
}

/** A test as its ticket tells of it: as get-test-details presents it, with its failing runs. */
function ticketSubjects(
  database: DatabaseHandle,
  deps: Parameters<typeof createTickets>[1],
): TicketSubjects {
  const details = new TestDetailsStore(database.db, database.dialect);
  return {
    async subject(testKey, baseUrl): Promise<TicketSubject | undefined> {
      const row = (await deps.testViews.rowsByKey([testKey])).get(testKey);
      if (!row) return undefined;
      const repository = await deps.repositories.findById(row.repositoryId);
      if (!repository) return undefined;
      const [figures, testSettings, slug, runs] = await Promise.all([
        deps.testViews.figures([testKey], deps.clock.now()),
        deps.testSettings.get(repository.id),
        deps.organizationSlug(repository.organizationId),
        details.runsPage(testKey, 0, RUNS_READ),
      ]);
      const principal = {
        organizationId: repository.organizationId,
        organizationSlug: slug,
        tokenId: "",
      };
      const context = presentationOf({ principal, repository, settings: testSettings }, baseUrl);
      const test = presentFailingTest(row, figures.get(testKey) ?? noFigures(), context);
      const repositoryUrl = repositoryHtmlUrl(context);
      // The local git host has no pages of its own for commits and pull requests.
      const hosted = repository.host.toLowerCase() !== LOCAL_HOST;
      return {
        test: {
          id: test.id,
          name: test.name,
          classname: test.classname,
          parent: test.parent,
          file: test.file_path,
          variant: test.variant,
          htmlUrl: test.html_url,
          status: {
            value: test.status.value,
            reason: test.status.reason,
            since: test.status.timestamp,
          },
          quarantined: test.quarantined,
          owners: test.codeowners,
          failureRate7d: test.failure_rate_last_7d,
          failureRate24h: test.failure_rate_last_24h,
          prsImpacted7d: test.pull_requests_impacted_last_7d,
          mostCommonFailures: test.most_common_failures.map((failure) => ({
            summary: failure.summary,
            count: failure.occurrence_count,
            last: failure.last_occurrence,
          })),
        },
        repository: { name: repositoryName(repository), htmlUrl: repositoryUrl },
        recentFailures: runs.runs
          .filter((run) => run.status === "failed" && !run.excluded)
          .map((run) => ({
            at: isoTime(run.at),
            branch: run.branch,
            commitSha: run.commitSha,
            commitUrl: hosted && run.commitSha ? `${repositoryUrl}/commit/${run.commitSha}` : null,
            prNumber: run.prNumber,
            prUrl: hosted && run.prNumber !== null ? `${repositoryUrl}/pull/${run.prNumber}` : null,
            summary: run.failureSummary,
            text: run.failureText,
          })),
      };
    },
  };
}
