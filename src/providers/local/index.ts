/**
 * The local provider: the local git host (bare repositories in the data directory) and the
 * built-in CI runner. `localProvider` registers it; its storage comes in through ports, and what
 * happens on the host goes out as host-neutral changes (`mergequeue/host-changes.ts`).
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import type { ApiApp } from "../../api/types.js";
import type { HostProvider, ProviderRegistration } from "../host-provider.js";
import type { Clock } from "../../lib/clock.js";
import type { HostChanges } from "../../mergequeue/host-changes.js";
import type { MergeQueueRecords, RepositoryRecords } from "../../mergequeue/records.js";
import type { Principal } from "../../organizations/service.js";
import type { RepoRef, Repository } from "../../organizations/repositories.js";
import { CheckoutPool } from "./ci/checkouts.js";
import type { CiRunStorage } from "../../mergequeue/ci-run-records.js";
import { LocalCiRunner } from "./ci/runner.js";
import { CiRunService } from "./ci/service.js";
import { CiTestResults, type CiTestResultsDeps } from "./ci/test-results.js";
import type { FailedTestsSource } from "../../mergequeue/fail-first.js";
import { LocalConfigSource } from "./git/config-source.js";
import { LocalGitHost } from "./git/host.js";
import { LOCAL_HOST } from "./git/layout.js";
import type { LocalPullRequestStorage } from "../../mergequeue/local-pull-request-records.js";
import { LocalRepositories } from "./git/repositories.js";
import { LocalHostService } from "./git/service.js";
import { LocalRefWatcher } from "./git/watcher.js";
import { registerCiRoutes } from "./routes/ci.js";
import { registerLocalHostRoutes } from "./routes/pull-requests.js";

export { LOCAL_HOST } from "./git/layout.js";

export interface LocalProviderLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface LocalProviderDeps {
  /** Where the bare repositories, the runner's logs and its checkouts live. */
  dataDir: string;
  clock: Clock;
  logger: LocalProviderLogger;
  stores: {
    pullRequests: LocalPullRequestStorage;
    ciRuns: CiRunStorage;
    repositories: Pick<RepositoryRecords, "find" | "ensure">;
    queues: Pick<MergeQueueRecords, "find">;
  };
  /** Where the runner's JUnit reports go (test health). */
  testResults: Omit<CiTestResultsDeps, "repository" | "clock">;
  /** Where a localization run finds what failed in its batch run (test health). */
  failedTests?: FailedTestsSource;
  /** Pushes and pull-request changes, as host-neutral events, to the queues. */
  changes: Pick<HostChanges, "watched" | "hasQueues" | "apply">;
  /** Whether an error means the storage is away for now (runs then resume later). */
  isStorageUnavailable?: (error: unknown) => boolean;
  /** Checks the built-in runner runs at once (default 2). */
  ciParallelism?: number;
  /** How often the repositories are looked at for pushes (default 1000 ms). */
  watchIntervalMs?: number;
  /** How long a check stays this process's runner's without a renewal (default 30 s). */
  ciLeaseMs?: number | undefined;
}

export interface LocalProvider extends HostProvider {
  /** The host name its repositories carry (`local`). */
  hostName: string;
  gitHost: LocalGitHost;
  ci: LocalCiRunner;
  /** The host's API (repositories, pull requests) and the runner's runs, as services. */
  service: LocalHostService;
  ciRuns: CiRunService;
  watcher: LocalRefWatcher;
  configSource: LocalConfigSource;
  /** The repository of a principal's organization on this host (`not_found` when it has none). */
  existingRepository(principal: Principal, ref: RepoRef): Promise<Repository>;
  /** Registers the host's HTTP operations (`/v1/local/*`) on an authenticated scope. */
  routes(scope: ApiApp): void;
  /** Resumes the runner's unfinished runs and starts watching the repositories for pushes. */
  start(): Promise<void>;
  /** Stops the checks (their runs resume at the next start) and the watcher. */
  stop(): Promise<void>;
}

export function createLocalProvider(deps: LocalProviderDeps): LocalProvider {
  const { dataDir, clock, logger: log, stores, changes } = deps;
  const bare = new LocalRepositories(dataDir);
  const gitHost = new LocalGitHost({ dataDir, pullRequests: stores.pullRequests, clock });
  const testResults = new CiTestResults({
    ...deps.testResults,
    repository: (request) => stores.repositories.find(request.repo.organizationId, request.repo),
    clock,
  });
  // Runs reuse the checkouts of finished runs (a checkout of a large repository costs seconds).
  const checkouts = new CheckoutPool({
    root: path.join(dataDir, "ci", "checkouts", randomUUID()),
    checkout: (repo, sha, dir) => gitHost.checkout(repo, sha, dir),
    refresh: (repo, sha, dir) => gitHost.refreshCheckout(repo, sha, dir),
  });
  const runner = new LocalCiRunner({
    dataDir,
    records: stores.ciRuns,
    readFile: (repo, sha, file) => gitHost.readFile(repo, sha, file),
    workspaces: checkouts,
    clock,
    testResults: (input) => testResults.report(input),
    logger: {
      error: (message, error) => {
        log.error({ err: error }, message);
      },
      warn: (message) => {
        log.info({}, message);
      },
    },
    ...(deps.isStorageUnavailable === undefined
      ? {}
      : { isStorageUnavailable: deps.isStorageUnavailable }),
    ...(deps.failedTests === undefined ? {} : { failedTests: deps.failedTests }),
    ...(deps.ciParallelism === undefined ? {} : { parallelism: deps.ciParallelism }),
    ...(deps.ciLeaseMs === undefined ? {} : { leaseMs: deps.ciLeaseMs }),
  });
  const watcher = new LocalRefWatcher({
    repositories: bare,
    watched: () => changes.watched(LOCAL_HOST),
    listener: async ({ repo, branch }) => {
      if (!(await changes.hasQueues(repo))) return;
      const heads = (await stores.pullRequests.listOpen(repo)).filter(
        (pr) => pr.headBranch === branch,
      );
      await changes.apply({
        type: "branch_moved",
        repo,
        branch,
        pullRequests: heads.map((pr) => pr.number),
      });
    },
    logger: {
      error: (message, error) => {
        log.error({ err: error }, message);
      },
    },
    ...(deps.watchIntervalMs === undefined ? {} : { intervalMs: deps.watchIntervalMs }),
  });
  const service = new LocalHostService({
    repositories: stores.repositories,
    pullRequests: stores.pullRequests,
    bare,
    clock,
    pullRequestChanged: (repo, number) =>
      changes.apply({ type: "pull_request_changed", repo, number }),
  });
  const ciRuns = new CiRunService({
    queues: stores.queues,
    runs: stores.ciRuns,
    readLog: (queueId, runId, check) => runner.readLog(queueId, runId, check),
  });
  return {
    hostName: LOCAL_HOST,
    gitHost,
    ci: runner,
    service,
    ciRuns,
    watcher,
    existingRepository: (principal, ref) => service.repository(principal, ref),
    storedPullRequest: (repo, number) => gitHost.storedPullRequest(repo, number),
    // The built-in runner is this host's CI: its configuration can be checked before it runs.
    configSource: new LocalConfigSource({ gitHost, pullRequests: stores.pullRequests }),
    routes(scope) {
      registerLocalHostRoutes(scope, service);
      registerCiRoutes(scope, ciRuns);
    },
    async start() {
      await runner.resume();
      watcher.start();
    },
    async stop() {
      await watcher.stop();
      await runner.stop();
      await checkouts.close();
    },
  };
}

/** The server's options of the local provider. */
export interface LocalProviderOptions {
  /** Checks the built-in runner runs at once (default 2). */
  ciParallelism?: number;
  /** How often the local repositories are looked at for pushes (default 1000 ms). */
  watchIntervalMs?: number;
}

/** The local git host and built-in runner: on every server. */
export const localProvider: ProviderRegistration<LocalProviderOptions, LocalProvider> = {
  create: (context, options) =>
    createLocalProvider({
      dataDir: context.dataDir,
      clock: context.clock,
      logger: context.logger,
      stores: {
        pullRequests: context.hostRecords.localPullRequests,
        ciRuns: context.hostRecords.ciRuns,
        repositories: context.records.repositories,
        queues: context.records.queues,
      },
      testResults: context.testHealth.reports,
      failedTests: context.testHealth.failures,
      changes: context.changes,
      isStorageUnavailable: context.isStorageUnavailable,
      ciLeaseMs: context.leaseMs,
      ...(options.ciParallelism === undefined ? {} : { ciParallelism: options.ciParallelism }),
      ...(options.watchIntervalMs === undefined
        ? {}
        : { watchIntervalMs: options.watchIntervalMs }),
    }),
};
