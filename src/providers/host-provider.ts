/**
 * What a git host plugs into the server, and what the server hands every host. Each host's folder
 * exports a `ProviderRegistration`; the composition root lists them once (its provider registry).
 */
import type { ApiApp } from "../api/types.js";
import type { Clock } from "../lib/clock.js";
import type { CiRunStorage } from "../mergequeue/ci-run-records.js";
import type { RepoConfigSource } from "../mergequeue/config-check.js";
import type { HostChanges } from "../mergequeue/host-changes.js";
import type { LocalPullRequestStorage } from "../mergequeue/local-pull-request-records.js";
import type { CiProvider, GitHost } from "../mergequeue/providers.js";
import type { PullRequestReportRecords } from "../testhealth/pull-request-report-records.js";
import type { PresenceRecords } from "../mergequeue/pull-request-presence-records.js";
import type {
  PullRequestService,
  StoredPullRequestLookup,
} from "../mergequeue/pull-request-service.js";
import type {
  MergeQueueRecords,
  RepositoryRecords,
  RuntimeRecords,
} from "../mergequeue/records.js";
import type { WatchedCiRunRecords } from "../mergequeue/watched-ci-runs.js";
import type { DeliveryRecords } from "../mergequeue/webhook-delivery-records.js";
import type { GitHubInstallationRecords } from "../organizations/github-installations.js";
import type {
  GitLabConnectionRecords,
  GitLabOAuthStates,
} from "../organizations/gitlab-connections.js";
import type { OrganizationRecords } from "../organizations/records.js";
import type { RepoRef, Repository } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import type { CiFailures } from "../testhealth/ci-failures.js";
import type { FailureExplainer } from "../mergequeue/failure-explanation.js";
import type { TestCaseRecords } from "../testhealth/ports.js";
import type { QuarantineSettings } from "../testhealth/quarantine.js";
import type { UploadService } from "../testhealth/upload-service.js";

/** One connected git host: what the merge queue, the API and `mainline serve` use of it. */
export interface HostProvider {
  /** The host its repositories carry in `repo.host` (`local`, `github.com`). */
  hostName: string;
  /** The merge queue's git host and CI for the host's repositories. */
  gitHost: GitHost;
  ci: CiProvider;
  /** The host's own operations, on the authenticated API scope. */
  routes(scope: ApiApp): void;
  /** Where the host delivers webhooks, on a scope of its own (no API token); hosts that do. */
  webhookRoutes?(scope: ApiApp): void;
  /** The repository of a principal's organization on this host (createQueue never makes one). */
  existingRepository(principal: Principal, ref: RepoRef): Promise<Repository>;
  /** What the host has stored of a pull request, to answer a submission once it is stored. */
  storedPullRequest: StoredPullRequestLookup;
  /**
   * Where the configuration check reads a repository's files before any run: a host whose CI is
   * the built-in runner (`mergequeue/config-check.ts`). None: nothing is checked before CI runs.
   */
  configSource?: RepoConfigSource;
  /** Starts its background work (after the HTTP server listens). */
  start(): Promise<void>;
  /** Stops it: after requests and the upload worker, before the engine and the database. */
  stop(): Promise<void>;
}

export interface ProviderLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** What the composition root hands every host: shared ports, and the records of hosts' tables. */
export interface ProviderContext {
  /** Where a host keeps files (the local host's repositories, the runner's checkouts). */
  dataDir: string;
  /** The server's public address (where hosts deliver webhooks), when known. */
  publicUrl: string | undefined;
  clock: Clock;
  logger: ProviderLogger;
  /** Pushes and pull-request changes, as host-neutral events, to the queues. */
  changes: HostChanges;
  records: {
    repositories: RepositoryRecords;
    organizations: OrganizationRecords;
    queues: MergeQueueRecords;
    runtime: RuntimeRecords;
  };
  /** The tables of particular hosts (a host that needs one adds its store here). */
  hostRecords: {
    localPullRequests: LocalPullRequestStorage;
    ciRuns: CiRunStorage;
    githubInstallations: GitHubInstallationRecords;
    webhookDeliveries: DeliveryRecords;
    watchedCiRuns: WatchedCiRunRecords;
    prPresence: PresenceRecords;
    pullRequestReports: PullRequestReportRecords;
    gitlabConnections: GitLabConnectionRecords;
    gitlabOAuthStates: GitLabOAuthStates;
  };
  testHealth: {
    /** Where a built-in CI's JUnit reports go, and what it asks of known flaky tests. */
    reports: {
      organizationSlug(organizationId: string): Promise<string | undefined>;
      uploads: Pick<UploadService, "submitBundle">;
      testCases: Pick<TestCaseRecords, "flakyOrQuarantined">;
      settings: {
        get(
          repositoryId: string,
        ): Promise<{ quarantine: QuarantineSettings; pullRequestComments: boolean }>;
      };
    };
    /**
     * What test health knows of a tested commit's failures: a CI's flaky-only retry, and the
     * failed tests a localization run runs first.
     */
    failures: Pick<CiFailures, "ofCommit" | "failedTests" | "explain">;
    /** Why a pull request failed in the queue (its failing tests), as its page says it. */
    explainer: Pick<FailureExplainer, "explainEntry">;
  };
  /** The merge queue's submissions, for commands people give on the host's pull requests. */
  pullRequests: Pick<PullRequestService, "submit" | "cancel">;
  /** A pull request's page on the dashboard, when the server knows its public address. */
  pullRequestPage(
    repository: Repository,
    branch: string,
    number: number,
  ): Promise<string | undefined>;
  /** A test's page on the dashboard, when the server knows its public address. */
  testPage(repository: Repository, testId: string): Promise<string | undefined>;
  /** Whether an error means the storage is away for now (work then resumes later). */
  isStorageUnavailable: (error: unknown) => boolean;
  /**
   * How long work a process claimed (a check it runs, a webhook delivery, a cursor) stays its own
   * without a renewal: how soon another process takes over from one that died. Undefined: each
   * part's default (30 s).
   */
  leaseMs: number | undefined;
}

/**
 * A host's entry in the registry: `create` gives its provider, or undefined when this server is
 * not configured for the host (its repositories then answer `host_not_connected`).
 */
export interface ProviderRegistration<Options, Provider extends HostProvider | undefined> {
  create(context: ProviderContext, options: Options): Provider;
  /** The host's routes when it is not connected (they answer `host_not_connected`). */
  unconnectedRoutes?(scope: ApiApp): void;
}
