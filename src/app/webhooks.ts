/**
 * Outbound webhooks wired: the API's service, the delivery worker (woken when this process stores
 * events), and how events show a test or a pull request (the Flaky Tests API's presenter, the
 * dashboard's links).
 */
import { presentFailingTest, presentationOf } from "../api/flakytests/presenters/tests.js";
import type { DatabaseHandle } from "../db/connection.js";
import { OutboundDeliveryStore } from "../db/stores/outbound-deliveries.js";
import { OutboundWebhookStore } from "../db/stores/outbound-webhooks.js";
import type { RepositoryStore } from "../db/stores/repositories.js";
import type { TestSettingsStore } from "../db/stores/test-settings.js";
import type { TestViewStore } from "../db/stores/test-views.js";
import type { Clock } from "../lib/clock.js";
import type { FailureExplainer, PullRequestFailure } from "../mergequeue/failure-explanation.js";
import type { RunRecord } from "../mergequeue/records.js";
import type { FailureView } from "../notifications/events.js";
import { onOutboxWritten } from "../lib/outbox-signal.js";
import { DAY_MS, SECOND_MS } from "../lib/time.js";
import type { AddressPolicy } from "../notifications/addresses.js";
import { WebhookDispatcher, type EventViews } from "../notifications/dispatcher.js";
import { DEFAULT_SLACK_API_URL } from "../notifications/kinds.js";
import { DEFAULT_RETRY_SCHEDULE } from "../notifications/schedule.js";
import { sendWebhook, type Send } from "../notifications/sender.js";
import { WebhookService } from "../notifications/service.js";
import { noFigures } from "../testhealth/test-queries.js";
import { VERSION } from "../version.js";
import { urls } from "../web/urls.js";

export interface WebhookSettings {
  /** Waits before each attempt (MAINLINE_WEBHOOKS_RETRY_SCHEDULE). */
  schedule: readonly number[];
  /** MAINLINE_WEBHOOKS_TIMEOUT_MS (default 15 s). */
  timeoutMs: number;
  /** MAINLINE_WEBHOOKS_DISABLE_AFTER (default 5 days). */
  disableAfterMs: number;
  /** MAINLINE_WEBHOOKS_ALLOW_PRIVATE=1. */
  allowPrivate: boolean;
  /** How often the worker looks for due deliveries when not woken (default 1 s). */
  pollMs: number;
  /** Links in events, and "this service" for the endpoints' address check. */
  publicUrl: string | undefined;
  /** The address the server listens on (not an endpoint either). */
  listenOrigins: () => readonly string[];
  /** The HTTP sender (tests may count requests; default the real one). */
  send: Send;
  /**
   * How long deliveries may wait for uploads being processed (default 5 s; 0: never): ingestion
   * keeps its pace, and a delivery is late by at most this.
   */
  maxYieldMs: number;
  /** Slack's Web API base, where Slack bot endpoints post (MAINLINE_SLACK_API_URL). */
  slackApiUrl: string;
}

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  schedule: DEFAULT_RETRY_SCHEDULE,
  timeoutMs: 15 * SECOND_MS,
  disableAfterMs: 5 * DAY_MS,
  allowPrivate: false,
  pollMs: SECOND_MS,
  publicUrl: undefined,
  listenOrigins: () => [],
  send: sendWebhook,
  maxYieldMs: 5 * SECOND_MS,
  slackApiUrl: DEFAULT_SLACK_API_URL,
};

/**
 * Where outbound calls may go and what links in them start with: the public URL, else the
 * address the server listens on; this service itself is never a destination.
 */
export function outboundAddresses(settings: {
  publicUrl: string | undefined;
  listenOrigins: () => readonly string[];
  allowPrivate: boolean;
}): { baseUrl: () => string; policy: AddressPolicy } {
  return {
    baseUrl: () => settings.publicUrl ?? settings.listenOrigins()[0] ?? "http://localhost",
    policy: {
      allowPrivate: settings.allowPrivate,
      selfOrigins: () => [
        ...(settings.publicUrl === undefined ? [] : [settings.publicUrl]),
        ...settings.listenOrigins(),
      ],
    },
  };
}

export interface Webhooks {
  service: WebhookService;
  dispatcher: WebhookDispatcher;
  /** Stops the worker and its listening (at shutdown, before the database closes). */
  stop(): Promise<void>;
}

export function createWebhooks(
  database: DatabaseHandle,
  deps: {
    clock: Clock;
    repositories: RepositoryStore;
    testViews: TestViewStore;
    testSettings: TestSettingsStore;
    organizationSlug: (organizationId: string) => Promise<string>;
    leaseMs: number;
    logger: { warn(fields: object, message: string): void };
    /** Test-health ingestion at work: deliveries wait for it (up to `maxYieldMs`). */
    ingesting?: () => boolean;
    /** Why a pull request failed, for the `failure` of its events; absent: not said. */
    failures?: {
      explainer: Pick<FailureExplainer, "explainTransition">;
      run(queueId: string, runId: string): Promise<RunRecord | undefined>;
    };
  },
  options: Partial<WebhookSettings> = {},
): Webhooks {
  const settings = { ...DEFAULT_WEBHOOK_SETTINGS, ...options };
  const records = new OutboundWebhookStore(database.db);
  const { baseUrl, policy } = outboundAddresses(settings);
  const queueView = async (queueId: string, runId?: string) => {
    const found = await records.queueContext(queueId, runId);
    if (!found) return undefined;
    const repository = { host: found.host, owner: found.owner, name: found.name };
    const page = urls.queue(found.organizationSlug, repository, found.targetBranch);
    return {
      found,
      view: { targetBranch: found.targetBranch, repository, htmlDetailsUrl: `${baseUrl()}${page}` },
    };
  };
  const batchView = async (queueId: string, runId: string) => {
    const queue = await queueView(queueId, runId);
    if (!queue) return undefined;
    const run = queue.found.run;
    return {
      ...queue.view,
      testBranch: run?.testBranch ?? null,
      testBranchSha: run?.testBranchSha ?? null,
      bisection: run?.kind === "bisection",
    };
  };
  const views: EventViews = {
    queue: async (queueId) => (await queueView(queueId))?.view,
    batch: batchView,
    async test(testKey) {
      const row = (await deps.testViews.rowsByKey([testKey])).get(testKey);
      if (!row) return undefined;
      const repository = await deps.repositories.findById(row.repositoryId);
      if (!repository) return undefined;
      const [figures, testSettings, slug] = await Promise.all([
        deps.testViews.figures([testKey], deps.clock.now()),
        deps.testSettings.get(repository.id),
        deps.organizationSlug(repository.organizationId),
      ]);
      const principal = {
        organizationId: repository.organizationId,
        organizationSlug: slug,
        tokenId: "",
      };
      const context = presentationOf({ principal, repository, settings: testSettings }, baseUrl());
      const testCase = presentFailingTest(row, figures.get(testKey) ?? noFigures(), context);
      return { testCase, repositoryId: repository.id };
    },
    async pullRequest(facts) {
      const found = await records.pullRequestContext(facts.entryId, facts.runId);
      if (!found) return undefined;
      const repo = { host: found.host, owner: found.owner, name: found.name };
      const explained =
        deps.failures && (facts.to === "failed" || facts.to === "pending_failure")
          ? await deps.failures.explainer.explainTransition(
              { organizationId: found.organizationId, ...repo },
              facts,
              facts.runId === null
                ? undefined
                : await deps.failures.run(facts.queueId, facts.runId),
              found.submittedAt,
            )
          : null;
      return {
        failure: explained && failureView(explained),
        number: found.prNumber,
        author: found.prAuthor,
        targetBranch: found.targetBranch,
        repository: repo,
        htmlDetailsUrl: `${baseUrl()}${urls.pullRequest(found.organizationSlug, repo, found.targetBranch, found.prNumber)}`,
        run: found.run
          ? {
              testBranch: found.run.testBranch,
              testBranchSha: found.run.testBranchSha,
              batched: found.run.prCount > 1,
              bisection: found.run.kind === "bisection",
            }
          : null,
      };
    },
  };
  const dispatcher = new WebhookDispatcher(
    {
      records: new OutboundDeliveryStore(database.db, database.dialect),
      views,
      send: settings.send,
      clock: deps.clock,
      logger: deps.logger,
      yieldTo: deps.ingesting,
    },
    {
      schedule: settings.schedule,
      timeoutMs: settings.timeoutMs,
      disableAfterMs: settings.disableAfterMs,
      allowPrivate: settings.allowPrivate,
      pollMs: settings.pollMs,
      leaseMs: deps.leaseMs,
      batchSize: 20,
      maxYieldMs: settings.maxYieldMs,
      userAgent: `Mainline/${VERSION}`,
      publicUrl: baseUrl,
      slackApiUrl: settings.slackApiUrl.replace(/\/+$/, ""),
    },
  );
  const unlisten = onOutboxWritten(() => {
    dispatcher.wake();
  });
  const service = new WebhookService({
    records,
    repositories: deps.repositories,
    clock: deps.clock,
    policy,
  });
  return {
    service,
    dispatcher,
    stop: async () => {
      unlisten();
      await dispatcher.stop();
    },
  };
}

/** A failure as the events show it. */
function failureView(failure: PullRequestFailure): FailureView {
  return {
    summary: failure.detail === null ? failure.message : `${failure.message} ${failure.detail}`,
    failedChecks: failure.failedChecks,
    tests: failure.tests.map((test) => ({
      name: test.classname === "" ? test.name : `${test.classname} ${test.name}`,
      verdict: test.verdict,
      summary: test.summary,
    })),
    testsTruncated: failure.testsTruncated,
    testsPending: failure.testsPending,
  };
}
