/** The merge queue's services over the connected hosts: the engine, submissions, queues, reads. */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { MergeQueueRuntimeStore } from "../db/stores/merge-queue-runtime.js";
import type { MergeQueueStore } from "../db/stores/merge-queues.js";
import type { RepositoryStore } from "../db/stores/repositories.js";
import type { Clock } from "../lib/clock.js";
import { ConfigCheckService } from "../mergequeue/config-check.js";
import { QueueDashboardService } from "../mergequeue/dashboard.js";
import { MergeQueueEngine, type EngineOptions } from "../mergequeue/engine.js";
import { FailFirstService, type FailedTestsSource } from "../mergequeue/fail-first.js";
import { FailureExplainer, type FailureExplainerDeps } from "../mergequeue/failure-explanation.js";
import type { CiFailures } from "../testhealth/ci-failures.js";
import { PullRequestService } from "../mergequeue/pull-request-service.js";
import { MergeQueueService } from "../mergequeue/queue-service.js";
import type { HostDispatch } from "./providers.js";

export interface MergeQueueDeps {
  queues: MergeQueueStore;
  runtime: MergeQueueRuntimeStore;
  repositories: RepositoryStore;
  /** Each repository's host, through its provider. */
  hosts: HostDispatch;
  clock: Clock;
  logger: {
    error(fields: object, message: string): void;
    info(fields: object, message: string): void;
    warn?(fields: object, message: string): void;
  };
  engine?: Partial<EngineOptions> | undefined;
  /** What test health knows of a run's failed tests (`getFailFirstTests`, why a PR failed). */
  failedTests: FailedTestsSource & Pick<CiFailures, "explain">;
  /** The end of a check's log where Mainline's own CI ran it (why a PR failed). */
  checkLog?: FailureExplainerDeps["checkLog"];
}

export interface MergeQueue {
  engine: MergeQueueEngine;
  queues: MergeQueueService;
  pullRequests: PullRequestService;
  queueDashboard: QueueDashboardService;
  failFirst: FailFirstService;
  /** The configuration a queue's runs will use, checked before they run (built-in runner). */
  configCheck: ConfigCheckService;
  /** Why a pull request failed (the events' `failure`). */
  failures: FailureExplainer;
}

export function createMergeQueue(deps: MergeQueueDeps): MergeQueue {
  const { queues, runtime, repositories, hosts, clock, logger } = deps;
  const engine = new MergeQueueEngine(
    {
      runtime,
      queues,
      repositories,
      gitHost: hosts.gitHost,
      ci: hosts.ci,
      clock,
      logger: {
        error: (message, error) => {
          logger.error({ err: error }, message);
        },
        warn: (message, fields = {}) => {
          if (logger.warn) logger.warn(fields, message);
          else logger.info(fields, message);
        },
        info: (message, fields = {}) => {
          logger.info(fields, message);
        },
      },
    },
    { owner: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, ...deps.engine },
  );
  const failures = new FailureExplainer({
    failures: deps.failedTests,
    runtime,
    checkLog: deps.checkLog,
  });
  const configCheck = new ConfigCheckService({
    queues,
    source: (host) => hosts.configSource(host),
    logger: {
      warn: (fields, message) => {
        if (logger.warn) logger.warn(fields, message);
        else logger.info(fields, message);
      },
    },
  });
  const pullRequests = new PullRequestService({
    failures,
    queues,
    runtime,
    commands: engine,
    clock,
    storedPullRequest: hosts.storedPullRequest,
    hostConnected: (host) => hosts.gitHost.connected(host),
    hostRateLimit: (repo) => hosts.gitHost.rateLimit(repo),
    configWarnings: (queue, repo, prNumber) =>
      configCheck.submissionWarnings(queue, repo, prNumber),
  });
  return {
    engine,
    failures,
    pullRequests,
    queues: new MergeQueueService({
      repositories,
      existingRepositories: hosts.existingRepositories,
      queues,
      contents: pullRequests,
      clock,
      settingsChanged: (queueId) => {
        engine.kick(queueId);
      },
      hostConnected: (host) => hosts.gitHost.connected(host),
    }),
    queueDashboard: new QueueDashboardService({
      queues,
      runtime,
      clock,
      failures,
    }),
    failFirst: new FailFirstService({ queues, runtime, failures: deps.failedTests }),
    configCheck,
  };
}
