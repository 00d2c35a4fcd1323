import type { Kysely } from "kysely";
import type { DatabaseHandle } from "../../../src/db/connection.js";
import type { Database } from "../../../src/db/schema.js";
import { CiRunStore } from "../../../src/db/stores/ci-runs.js";
import { GitHubInstallationStore } from "../../../src/db/stores/github-installations.js";
import { WebhookDeliveryStore } from "../../../src/db/stores/webhook-deliveries.js";
import { GitHubCiRunStore } from "../../../src/db/stores/github-ci-runs.js";
import { GitHubPresenceStore } from "../../../src/db/stores/github-presence.js";
import { LocalPullRequestStore } from "../../../src/db/stores/local-pull-requests.js";
import { MergeQueueRuntimeStore } from "../../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../../src/db/stores/merge-queues.js";
import { OrganizationStore } from "../../../src/db/stores/organizations.js";
import { RepositoryStore } from "../../../src/db/stores/repositories.js";
import { ServerSecretStore } from "../../../src/db/stores/server-secrets.js";
import { TestCaseStore } from "../../../src/db/stores/test-cases.js";
import { TestDetailsStore } from "../../../src/db/stores/test-details.js";
import { TestIngestStore } from "../../../src/db/stores/test-ingest.js";
import { TestListStore } from "../../../src/db/stores/test-lists.js";
import { TestSettingsStore } from "../../../src/db/stores/test-settings.js";
import { TestViewStore } from "../../../src/db/stores/test-views.js";
import { UploadStore } from "../../../src/db/stores/uploads.js";
import { SessionStore } from "../../../src/db/stores/sessions.js";
import { TestOverviewStore } from "../../../src/db/stores/test-overview.js";
import { RepositoryHealthStore } from "../../../src/db/stores/repository-health.js";
import { RepositoryTableStore } from "../../../src/db/stores/repository-table.js";
import { DEFAULT_QUEUE_SETTINGS } from "../../../src/mergequeue/settings.js";
import type { Answer } from "./recorder.js";

/**
 * What the SQL snapshots are made of: for every store in `src/db/stores/`, one or more calls of
 * each of its methods with fixed arguments (no clock, no random values), and the rows the
 * recording database answers with so that each call goes down the path that sends the most SQL.
 * A store method missing here fails the snapshot test (see `withoutSql` for the exceptions).
 */

export interface Call<S> {
  method: keyof S & string;
  /** Which variant of the call, when a method has several (optional arguments, branches). */
  variant?: string;
  answer?: Answer;
  /** `db` is the recording database, for the methods that take a transaction or connection. */
  run(store: S, db: Kysely<Database>): Promise<unknown>;
}

export interface TypedScenario<S> {
  /** The file in `src/db/stores/` (without `.ts`), which names the snapshot files too. */
  file: string;
  name: string;
  create(handle: DatabaseHandle): S;
  calls: Call<S>[];
  /** Public methods that send no SQL of their own, with why. */
  withoutSql?: Partial<Record<keyof S & string, string>>;
}

/** A scenario of any store. */
export interface StoreScenario {
  file: string;
  name: string;
  create(handle: DatabaseHandle): object;
  calls: {
    method: string;
    variant?: string;
    answer?: Answer;
    run(store: object, db: Kysely<Database>): Promise<unknown>;
  }[];
  withoutSql?: Partial<Record<string, string>>;
}

function scenario<S extends object>(s: TypedScenario<S>): StoreScenario {
  return s;
}

/** 2026-01-15 12:34:56.789 UTC: inside an hour, so that windows have partial edges. */
const NOW = Date.UTC(2026, 0, 15, 12, 34, 56, 789);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ORG = "org-1";
const REPO_ID = "repo-1";
const QUEUE_ID = "queue-1";
const REPO = { host: "local", owner: "acme", name: "widgets" };
const OWNED_REPO = { ...REPO, organizationId: ORG };
const QUARANTINE = { quarantiningEnabled: true, autoQuarantine: true };
const CONFIGURATION = { ...DEFAULT_QUEUE_SETTINGS, state: "running" as const, pendingMode: null };

/** Answers statements whose SQL matches `pattern` with `rows`, the others with none. */
function when(...rules: [pattern: RegExp, rows: Record<string, unknown>[]][]): Answer {
  return (sql) => rules.find(([pattern]) => pattern.test(sql))?.[1];
}

const REPOSITORY_ROW = {
  id: REPO_ID,
  organization_id: ORG,
  host: "local",
  owner: "acme",
  name: "widgets",
  created_at: NOW,
};

const CI_RUN = {
  queueId: QUEUE_ID,
  runId: "run-1",
  request: {} as never,
  status: "queued" as const,
  checks: [],
  error: null,
  flakyOnly: false,
  createdAt: NOW,
  finishedAt: null,
  owner: null,
  leaseUntil: 0,
};

const ENTRY = {
  id: "entry-1",
  queueId: QUEUE_ID,
  prNumber: 7,
  prTitle: "Add widgets",
  prSha: "a".repeat(40),
  prHeadBranch: "feature",
  prBaseBranch: "main",
  prAuthor: "ada",
  state: "testing" as const,
  stateChangedAt: NOW,
  submittedAt: NOW,
  concludedAt: null,
  priorityValue: 100,
  usedDefaultPriority: true,
  noBatch: false,
  seq: 1,
  readiness: {
    mergeability: "mergeable" as const,
    baseBranchMatches: true,
    requiresImpactedTargets: false,
    impactedTargets: null,
  },
  lastReason: "",
};

const QUEUE_ROW = {
  id: QUEUE_ID,
  repository_id: REPO_ID,
  target_branch: "main",
  required_statuses: null,
  version: 1,
};

const RUN = {
  testKey: 1,
  uploadKey: 10,
  fileIndex: 0,
  at: NOW,
  status: "failed" as const,
  attempt: "final" as const,
  durationMs: 12,
  failureSignature: "sig",
  failureSummary: "expected 1 to be 2",
  failureText: "AssertionError: expected 1 to be 2",
};

const TEST_CASE_ROW = { key: 1, repository_id: REPO_ID, id: "test-1", status: "flaky" };

const INSTALLATION_ROW = {
  id: 42,
  account_id: 7,
  account_login: "acme",
  account_type: "Organization",
  repository_selection: "selected",
  organization_id: ORG,
  linked_at: NOW,
  suspended_at: null,
  deleted_at: null,
  synced_at: null,
  created_at: NOW,
  updated_at: NOW,
};
const GITHUB_REPOSITORY_ROW = (githubId: number, name: string) => ({
  github_id: githubId,
  installation_id: 42,
  owner: "acme",
  name,
  organization_id: ORG,
  repository_id: REPO_ID,
  removed_at: null,
  updated_at: NOW,
});
const DELIVERY = {
  source: "github",
  deliveryId: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
  event: "pull_request",
  action: "opened",
  installationId: 42,
  payload: "{}",
  receivedAt: NOW,
};
const DELIVERY_ROW = {
  key: 5,
  source: "github",
  delivery_id: DELIVERY.deliveryId,
  event: "pull_request",
  action: "opened",
  installation_id: 42,
  received_at: NOW,
  state: "processing",
  attempts: 1,
  lease_until: NOW + 30_000,
  lease_owner: "worker-1",
  next_attempt_at: NOW,
  error: null,
  processed_at: null,
};
const CLAIMED = {
  ...DELIVERY,
  key: 5,
  state: "processing" as const,
  attempts: 1,
  leaseUntil: NOW + 30_000,
  leaseOwner: "worker-1",
  nextAttemptAt: NOW,
  error: null,
  processedAt: null,
};

export const SCENARIOS: StoreScenario[] = [
  scenario({
    file: "github-installations",
    name: "GitHubInstallationStore",
    create: (handle) => new GitHubInstallationStore(handle.db, handle.dialect),
    calls: [
      { method: "find", run: (s) => s.find(42) },
      { method: "list", run: (s) => s.list() },
      { method: "listForOrganization", run: (s) => s.listForOrganization(ORG) },
      {
        method: "upsert",
        answer: when([/github_installations/, [INSTALLATION_ROW]]),
        run: (s) =>
          s.upsert(
            {
              id: 42,
              accountId: 7,
              accountLogin: "acme",
              accountType: "Organization",
              repositorySelection: "selected",
              suspendedAt: null,
            },
            NOW,
          ),
      },
      { method: "markDeleted", run: (s) => s.markDeleted(42, NOW) },
      { method: "link", run: (s) => s.link(42, ORG, NOW) },
      { method: "unlink", run: (s) => s.unlink(42, ORG, NOW) },
      {
        method: "syncRepositories",
        variant: "one renamed, one new, one removed",
        answer: when(
          [/from "github_installations"/, [INSTALLATION_ROW]],
          [
            /from "github_repositories" where "installation_id"/,
            [GITHUB_REPOSITORY_ROW(1, "old-name"), GITHUB_REPOSITORY_ROW(3, "gone")],
          ],
        ),
        run: (s) =>
          s.syncRepositories(
            42,
            [
              { githubId: 1, owner: "acme", name: "new-name" },
              { githubId: 2, owner: "acme", name: "fresh" },
            ],
            "github.com",
            NOW,
          ),
      },
      { method: "repositories", run: (s) => s.repositories(42) },
      { method: "findRepository", run: (s) => s.findRepository(1) },
      {
        method: "resolve",
        answer: when(
          [/from "repositories"/, [GITHUB_REPOSITORY_ROW(1, "widgets")]],
          [/from "github_installations"/, [INSTALLATION_ROW]],
        ),
        run: (s) => s.resolve({ ...OWNED_REPO, host: "github.com" }),
      },
    ],
  }),
  scenario({
    file: "github-ci-runs",
    name: "GitHubCiRunStore",
    create: (handle) => new GitHubCiRunStore(handle.db),
    calls: [
      {
        method: "create",
        run: (s) =>
          s.create({
            queueId: QUEUE_ID,
            runId: "run-1",
            request: {
              repo: { ...OWNED_REPO, host: "github.com" },
              queueId: QUEUE_ID,
              runId: "run-1",
              targetBranch: "main",
              testBranch: "trunk-merge/main/run-1",
              sha: "a".repeat(40),
              prNumbers: [7],
              requiredStatuses: null,
            },
            status: "watching",
            required: null,
            result: null,
            testPrNumber: null,
            createdAt: NOW,
            finishedAt: null,
          }),
      },
      { method: "get", run: (s) => s.get(QUEUE_ID, "run-1") },
      {
        method: "prepared",
        run: (s) =>
          s.prepared(QUEUE_ID, "run-1", {
            required: { source: "branch_protection", checks: [{ context: "ci", appId: null }] },
            testPrNumber: 12,
          }),
      },
      { method: "finish", run: (s) => s.finish(QUEUE_ID, "run-1", "cancelled", null, NOW) },
      { method: "watching", run: (s) => s.watching() },
      { method: "watchingSha", run: (s) => s.watchingSha("a".repeat(40)) },
    ],
  }),
  scenario({
    file: "github-presence",
    name: "GitHubPresenceStore",
    create: (handle) => new GitHubPresenceStore(handle.db),
    calls: [
      {
        method: "claimCursor",
        answer: when([/^select/, [{ maxId: 41 }]], [/^update/, [{ last_id: 41 }]]),
        run: (s) => s.claimCursor("github-presence", "worker-1", NOW, NOW + 30_000),
      },
      {
        method: "advanceCursor",
        run: (s) => s.advanceCursor("github-presence", "worker-1", 42, NOW),
      },
      { method: "releaseCursor", run: (s) => s.releaseCursor("github-presence", "worker-1") },
      { method: "transitionsAfter", run: (s) => s.transitionsAfter(41, 500) },
      { method: "find", run: (s) => s.find(QUEUE_ID, 7) },
      {
        method: "save",
        run: (s) =>
          s.save({
            queueId: QUEUE_ID,
            prNumber: 7,
            commentId: 1001,
            checkRunId: 2002,
            checkSha: "a".repeat(40),
            stateLabel: "trunk:testing",
            presented: "{}",
            updatedAt: NOW,
          }),
      },
    ],
  }),
  scenario({
    file: "webhook-deliveries",
    name: "WebhookDeliveryStore",
    create: (handle) => new WebhookDeliveryStore(handle.db, handle.dialect),
    calls: [
      {
        method: "storeMany",
        answer: when([
          /^insert into "webhook_deliveries"/,
          [
            { key: 5, source: "github", delivery_id: DELIVERY.deliveryId },
            { key: 6, source: "github", delivery_id: "second" },
          ],
        ]),
        run: (s) => s.storeMany([DELIVERY, { ...DELIVERY, deliveryId: "second" }]),
      },
      {
        method: "claim",
        answer: when(
          [/^update/, [DELIVERY_ROW]],
          [/^select/, [{ delivery_key: 5, payload: "{}" }]],
        ),
        run: (s) => s.claim(NOW, NOW + 30_000, "worker-1", 4),
      },
      { method: "renew", run: (s) => s.renew(CLAIMED, NOW + 30_000) },
      {
        method: "complete",
        answer: when([/^update/, [{ key: 5 }]]),
        run: (s) => s.complete([CLAIMED, { ...CLAIMED, key: 6, attempts: 2 }], NOW),
      },
      {
        method: "retryLater",
        run: (s) => s.retryLater(CLAIMED, NOW + 5_000, "GitHub answered 502"),
      },
      { method: "fail", run: (s) => s.fail(CLAIMED, "GitHub answered 502", NOW) },
      { method: "park", run: (s) => s.park(CLAIMED, NOW) },
      { method: "unpark", run: (s) => s.unpark("github", 42, NOW) },
      { method: "prune", run: (s) => s.prune(NOW - 7 * DAY, NOW - 30 * DAY) },
      { method: "find", run: (s) => s.find("github", DELIVERY.deliveryId) },
    ],
  }),
  scenario({
    file: "ci-runs",
    name: "CiRunStore",
    create: (handle) => new CiRunStore(handle.db),
    calls: [
      { method: "create", run: (s) => s.create(CI_RUN) },
      { method: "get", run: (s) => s.get(QUEUE_ID, "run-1") },
      { method: "update", run: (s) => s.update(CI_RUN) },
      { method: "unfinished", run: (s) => s.unfinished() },
      { method: "claim", run: (s) => s.claim(QUEUE_ID, "run-1", "worker-1", NOW, NOW + 60_000) },
      { method: "renew", run: (s) => s.renew("worker-1", NOW + 60_000) },
      { method: "release", run: (s) => s.release("worker-1") },
      {
        method: "unbuilt",
        variant: "a queue's runs",
        answer: when([
          /from "mq_runs"/,
          [
            {
              id: "run-1",
              status: "failed",
              prs: '[{"number":7}]',
              base_sha: "b",
              started_at: NOW,
            },
          ],
        ]),
        run: (s) => s.unbuilt(QUEUE_ID, 20),
      },
      { method: "unbuilt", variant: "one run", run: (s) => s.unbuilt(QUEUE_ID, 1, "run-1") },
      { method: "list", run: (s) => s.list(QUEUE_ID, 20) },
    ],
  }),
  scenario({
    file: "local-pull-requests",
    name: "LocalPullRequestStore",
    create: (handle) => new LocalPullRequestStore(handle.db),
    calls: [
      {
        method: "open",
        run: (s) =>
          s.open({
            repositoryId: REPO_ID,
            headBranch: "feature",
            baseBranch: "main",
            title: "Add widgets",
            author: "ada",
            now: NOW,
          }),
      },
      { method: "close", run: (s) => s.close(REPO_ID, 7, NOW) },
      { method: "get", run: (s) => s.get(REPO_ID, 7) },
      { method: "list", variant: "every state", run: (s) => s.list(REPO_ID) },
      { method: "list", variant: "one state", run: (s) => s.list(REPO_ID, "open") },
      {
        method: "find",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.find(OWNED_REPO, 7),
      },
      {
        method: "listOpen",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.listOpen(OWNED_REPO),
      },
      {
        method: "listMerged",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.listMerged(OWNED_REPO),
      },
      {
        method: "markMerging",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.markMerging(OWNED_REPO, 7, "c".repeat(40)),
      },
      {
        method: "markMerged",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.markMerged(OWNED_REPO, 7, "c".repeat(40), NOW),
      },
    ],
  }),
  scenario({
    file: "merge-queue-runtime",
    name: "MergeQueueRuntimeStore",
    create: (handle) => new MergeQueueRuntimeStore(handle.db, handle.dialect),
    calls: [
      { method: "acquireLease", run: (s) => s.acquireLease(QUEUE_ID, "engine-1", NOW, 30_000) },
      { method: "releaseLease", run: (s) => s.releaseLease(QUEUE_ID, "engine-1", 3) },
      { method: "loadSnapshot", run: (s) => s.loadSnapshot(QUEUE_ID) },
      { method: "loadDriverState", run: (s) => s.loadDriverState(QUEUE_ID) },
      { method: "issueIds", run: (s) => s.issueIds(QUEUE_ID, 3, 200) },
      { method: "sharedSnapshot", run: (s) => s.sharedSnapshot(QUEUE_ID) },
      {
        method: "commit",
        answer: when(
          [/^select .*"mq_runtime"/, [{ lease_epoch: 3 }]],
          [/^insert into "mq_entries"/, [{ id: "entry-1" }]],
        ),
        run: (s) =>
          s.commit({
            queueId: QUEUE_ID,
            epoch: 3,
            now: NOW,
            snapshot: { version: 1 },
            wakeAt: NOW + 60_000,
            entries: [ENTRY],
            transitions: [
              {
                entryId: "entry-1",
                queueId: QUEUE_ID,
                at: NOW,
                from: "pending",
                to: "testing",
                reason: "started",
                actor: { kind: "queue" },
                runId: "run-1",
                detail: null,
              },
            ],
            runs: [
              {
                id: "run-1",
                queueId: QUEUE_ID,
                kind: "main",
                status: "running",
                baseSha: "b".repeat(40),
                testBranch: "mainline/test/run-1",
                testBranchSha: null,
                prs: [{ entryId: "entry-1", number: 7, headSha: "a".repeat(40) }],
                unit: ["entry-1"],
                requiredStatuses: ["ci"],
                requiredStatusesSource: null,
                checks: [],
                startedAt: NOW,
                finishedAt: null,
              },
            ],
            appliedCommands: [{ id: 1, result: { ok: true } }],
          }),
      },
      {
        method: "enqueueCommand",
        answer: () => [{ id: 1 }],
        run: (s) => s.enqueueCommand(QUEUE_ID, { op: "noop" }, NOW),
      },
      {
        method: "enqueueCommands",
        answer: () => [{ id: 1 }, { id: 2 }],
        run: (s) =>
          s.enqueueCommands(
            [
              { queueId: QUEUE_ID, payload: { op: "noop" } },
              { queueId: "queue-2", payload: { op: "noop" } },
            ],
            NOW,
          ),
      },
      { method: "pendingCommands", run: (s) => s.pendingCommands(QUEUE_ID, 100) },
      { method: "command", run: (s) => s.command(1) },
      { method: "dueQueues", run: (s) => s.dueQueues(NOW) },
      { method: "latestEntry", run: (s) => s.latestEntry(QUEUE_ID, 7) },
      { method: "latestEntryByBranch", run: (s) => s.latestEntryByBranch(QUEUE_ID, "feature") },
      { method: "activeEntries", run: (s) => s.activeEntries(QUEUE_ID) },
      { method: "latestTransitionId", run: (s) => s.latestTransitionId(QUEUE_ID) },
      { method: "failures", run: (s) => s.failures(QUEUE_ID, ["entry-1", "entry-2"]) },
      { method: "recentlyConcluded", run: (s) => s.recentlyConcluded(QUEUE_ID, 10) },
      { method: "runsByIds", run: (s) => s.runsByIds(QUEUE_ID, ["run-1", "run-2"]) },
      { method: "runTimings", run: (s) => s.runTimings(QUEUE_ID, NOW - 86_400_000, 50) },
      { method: "activeSummaries", run: (s) => s.activeSummaries(QUEUE_ID) },
      {
        method: "listEntries",
        variant: "first page",
        run: (s) => s.listEntries(QUEUE_ID, { take: 50 }),
      },
      {
        method: "listEntries",
        variant: "every filter",
        run: (s) =>
          s.listEntries(QUEUE_ID, {
            state: "merged",
            concludedSince: NOW - DAY,
            afterSeq: 10,
            take: 50,
          }),
      },
      { method: "transitions", run: (s) => s.transitions("entry-1") },
      { method: "pullRequestTransitions", run: (s) => s.pullRequestTransitions(QUEUE_ID, 7) },
      { method: "run", run: (s) => s.run(QUEUE_ID, "run-1") },
      { method: "transitionsSince", run: (s) => s.transitionsSince(QUEUE_ID, NOW - HOUR) },
    ],
  }),
  scenario({
    file: "merge-queues",
    name: "MergeQueueStore",
    create: (handle) => new MergeQueueStore(handle.db, handle.dialect),
    calls: [
      { method: "find", run: (s) => s.find(ORG, REPO, "main") },
      {
        method: "overview",
        answer: when([/from "merge_queues"/, [{ id: QUEUE_ID, target_branch: "main" }]]),
        run: (s) => s.overview(ORG),
      },
      {
        method: "listForOrganization",
        variant: "every repository",
        run: (s) => s.listForOrganization(ORG),
      },
      {
        method: "listForOrganization",
        variant: "one repository",
        run: (s) => s.listForOrganization(ORG, REPO),
      },
      { method: "listForHost", variant: "every repository", run: (s) => s.listForHost("local") },
      {
        method: "listForHost",
        variant: "one repository",
        run: (s) => s.listForHost("local", OWNED_REPO),
      },
      {
        method: "insert",
        answer: () => [{ id: QUEUE_ID }],
        run: (s) =>
          s.insert({
            id: QUEUE_ID,
            repositoryId: REPO_ID,
            targetBranch: "main",
            createdAt: NOW,
            configuration: CONFIGURATION,
          }),
      },
      {
        method: "modify",
        answer: () => [QUEUE_ROW],
        run: (s) => s.modify(ORG, REPO, "main", NOW, () => CONFIGURATION),
      },
      { method: "findById", run: (s) => s.findById(QUEUE_ID) },
      {
        method: "setConfiguration",
        run: (s) => s.setConfiguration(QUEUE_ID, CONFIGURATION, NOW),
      },
      { method: "delete", run: (s) => s.delete(QUEUE_ID) },
    ],
  }),
  scenario({
    file: "organizations",
    name: "OrganizationStore",
    create: (handle) => new OrganizationStore(handle.db),
    calls: [
      {
        method: "ensure",
        answer: (sql) =>
          sql.startsWith("select") ? [{ id: ORG, slug: "acme", created_at: NOW }] : [],
        run: (s) => s.ensure({ id: ORG, slug: "acme", createdAt: NOW }),
      },
      { method: "findBySlug", run: (s) => s.findBySlug("acme") },
      { method: "list", run: (s) => s.list() },
      { method: "count", answer: () => [{ n: 1 }], run: (s) => s.count() },
      {
        method: "insertToken",
        run: (s) =>
          s.insertToken({
            id: "token-1",
            organizationId: ORG,
            name: "ci",
            tokenHash: "hash",
            tokenHint: "mlt_…abcd",
            createdAt: NOW,
          }),
      },
      { method: "findTokenByHash", run: (s) => s.findTokenByHash("hash") },
      { method: "findById", run: (s) => s.findById(ORG) },
      { method: "findActiveTokenOwner", run: (s) => s.findActiveTokenOwner("hash") },
      { method: "listTokens", run: (s) => s.listTokens(ORG) },
      { method: "findToken", run: (s) => s.findToken("token-1") },
      { method: "revokeToken", run: (s) => s.revokeToken("token-1", NOW) },
    ],
  }),
  scenario({
    file: "repositories",
    name: "RepositoryStore",
    create: (handle) => new RepositoryStore(handle.db),
    calls: [
      { method: "find", run: (s) => s.find(ORG, REPO) },
      { method: "oldestAnywhere", run: (s) => s.oldestAnywhere(REPO) },
      { method: "findById", run: (s) => s.findById(REPO_ID) },
      {
        method: "ensure",
        variant: "created by another request meanwhile",
        answer: (_sql, index) => (index === 2 ? [REPOSITORY_ROW] : []),
        run: (s) => s.ensure(ORG, REPO, NOW),
      },
      { method: "publicId", run: (s) => s.publicId(REPO_ID) },
      {
        method: "setPublicId",
        variant: "unless it has one",
        answer: when([/^select/, [{ public_id: "pub-1" }]]),
        run: (s) => s.setPublicId(REPO_ID, "pub-1", false),
      },
      {
        method: "setPublicId",
        variant: "replacing it",
        answer: when([/^select/, [{ public_id: "pub-1" }]]),
        run: (s) => s.setPublicId(REPO_ID, "pub-1", true),
      },
      { method: "findByPublicId", run: (s) => s.findByPublicId("pub-1") },
    ],
  }),
  scenario({
    file: "server-secrets",
    name: "ServerSecretStore",
    create: (handle) => new ServerSecretStore(handle.db),
    calls: [
      {
        method: "getOrCreate",
        answer: (_sql, index) => (index === 2 ? [{ value: "c2VjcmV0" }] : []),
        run: (s) => s.getOrCreate("page-tokens", NOW),
      },
    ],
  }),
  scenario({
    file: "test-cases",
    name: "TestCaseStore",
    create: (handle) => new TestCaseStore(handle.db),
    calls: [
      {
        method: "quarantinedIds",
        variant: "auto-quarantine on",
        run: (s) => s.quarantinedIds(REPO_ID, QUARANTINE),
      },
      {
        method: "quarantinedIds",
        variant: "overrides only",
        run: (s) => s.quarantinedIds(REPO_ID, { ...QUARANTINE, autoQuarantine: false }),
      },
      {
        method: "flakyOrQuarantined",
        run: (s) => s.flakyOrQuarantined(REPO_ID, ["test-1", "test-2"], QUARANTINE),
      },
      {
        method: "flakyOrQuarantined",
        variant: "quarantining off",
        run: (s) =>
          s.flakyOrQuarantined(REPO_ID, ["test-1"], { ...QUARANTINE, quarantiningEnabled: false }),
      },
    ],
  }),
  scenario({
    file: "test-details",
    name: "TestDetailsStore",
    create: (handle) => new TestDetailsStore(handle.db, handle.dialect),
    calls: [
      { method: "runsPage", run: (s) => s.runsPage(1, 0, 25) },
      { method: "statusHistory", run: (s) => s.statusHistory(1, 100) },
      {
        method: "setOverride",
        answer: when([/^update/, [TEST_CASE_ROW]]),
        run: (s) =>
          s.setOverride(
            1,
            { override: "ALWAYS_QUARANTINE", actor: "ada", reason: "noisy", at: NOW },
            "quarantined by ada",
          ),
      },
      {
        method: "setTicket",
        answer: when(
          [/^select/, [{ ...TEST_CASE_ROW, ticket: null }]],
          [/^update/, [TEST_CASE_ROW]],
        ),
        run: (s) =>
          s.setTicket(1, { ticket: "BUG-1", actor: "ada", at: NOW }, () => "linked BUG-1"),
      },
      {
        method: "modifySettings",
        run: (s) => s.modifySettings(REPO_ID, NOW, (current) => current),
      },
      {
        method: "findTestByRepositoryName",
        variant: "any host",
        answer: when([/from "repositories"/, [REPOSITORY_ROW]]),
        run: (s) => s.findTestByRepositoryName(ORG, "test-1", { owner: "acme", name: "widgets" }),
      },
      {
        method: "findTestByRepositoryName",
        variant: "one host",
        run: (s) => s.findTestByRepositoryName(ORG, "test-1", REPO),
      },
    ],
  }),
  scenario({
    file: "test-ingest",
    name: "TestIngestStore",
    create: (handle) => new TestIngestStore(handle),
    calls: [
      {
        method: "ensureTestCases",
        run: (s) =>
          s.ensureTestCases(
            REPO_ID,
            [
              {
                id: "test-1",
                name: "adds",
                classname: "Widgets",
                parent: null,
                file: "widgets.test.ts",
                variant: "",
              },
            ],
            NOW,
          ),
      },
      { method: "insertRunsNow", variant: "one run", run: (s) => s.insertRunsNow([RUN]) },
      {
        method: "insertRunsNow",
        variant: "51 runs (SQLite: 50 per statement, then one by one)",
        run: (s) =>
          s.insertRunsNow(Array.from({ length: 51 }, (_, i) => ({ ...RUN, testKey: i + 1 }))),
      },
      { method: "deleteRuns", variant: "an upload", run: (s) => s.deleteRuns(10) },
      { method: "deleteRuns", variant: "one file", run: (s) => s.deleteRuns(10, 2) },
      {
        method: "transaction",
        variant: "writing runs",
        run: (s) => s.transaction(REPO_ID, (tx) => tx.insertRuns([RUN])),
      },
      {
        method: "aggregateUpload",
        variant: "inside `transaction`",
        run: (s) =>
          s.transaction(REPO_ID, ({ trx }) =>
            s.aggregateUpload(trx, {
              key: 10,
              repositoryId: REPO_ID,
              prNumber: 7,
              excluded: false,
            }),
          ),
      },
      {
        method: "aggregateUploads",
        variant: "inside `transaction`, some uploads excluded",
        run: (s) =>
          s.transaction(REPO_ID, ({ trx }) =>
            s.aggregateUploads(trx, REPO_ID, [
              { key: 10, repositoryId: REPO_ID, prNumber: 7, excluded: false },
              { key: 11, repositoryId: REPO_ID, prNumber: null, excluded: true },
            ]),
          ),
      },
      {
        method: "aggregateUploads",
        variant: "inside `transaction`, every upload excluded",
        run: (s) =>
          s.transaction(REPO_ID, ({ trx }) =>
            s.aggregateUploads(trx, REPO_ID, [
              { key: 11, repositoryId: REPO_ID, prNumber: null, excluded: true },
            ]),
          ),
      },
      {
        method: "refreshFigures",
        variant: "inside `transaction`",
        run: (s) => s.transaction(REPO_ID, ({ trx }) => s.refreshFigures(trx, [10, 11], NOW)),
      },
      {
        method: "candidatesOfUploads",
        variant: "inside `transaction`",
        run: (s) =>
          s.transaction(REPO_ID, ({ trx }) => s.candidatesOfUploads(trx, [10, 11], NOW - 7 * DAY)),
      },
      {
        method: "activeCandidates",
        variant: "active monitors",
        run: (s, db) => s.activeCandidates(db, REPO_ID),
      },
      {
        method: "activeCandidates",
        variant: "and recent failures",
        run: (s, db) => s.activeCandidates(db, REPO_ID, NOW - DAY),
      },
      { method: "repositoriesWithActiveMonitors", run: (s) => s.repositoriesWithActiveMonitors() },
      {
        method: "runsForClassification",
        answer: when([
          /from test_runs/,
          [{ test_key: 1, at: NOW, status: "failed", upload_key: 10 }],
        ]),
        run: (s, db) => s.runsForClassification(db, [1, 2], NOW - 7 * DAY, [9], [10]),
      },
      {
        method: "applyClassifications",
        run: (s, db) =>
          s.applyClassifications(db, [
            {
              key: 1,
              status: "flaky",
              reason: "failed and passed on the same commit",
              changedAt: NOW,
              monitorStates: "{}",
              monitorsActive: true,
            },
            {
              key: 2,
              status: "healthy",
              reason: "",
              changedAt: null,
              monitorStates: "{}",
              monitorsActive: false,
            },
          ]),
      },
      { method: "pruneRuns", run: (s) => s.pruneRuns(NOW - 30 * DAY, 1000) },
      { method: "pruneAggregates", run: (s) => s.pruneAggregates(NOW - 30 * DAY) },
    ],
  }),
  scenario({
    file: "test-lists",
    name: "TestListStore",
    create: (handle) => new TestListStore(handle.db, handle.dialect),
    calls: [
      {
        method: "failing",
        variant: "a week, first read",
        answer: (sql) =>
          /'e' as kind/.test(sql)
            ? [
                { kind: "d", unit: Math.floor(NOW / DAY) * DAY - DAY, a: 2, b: 3 },
                { kind: "e", unit: 3, a: 1, b: 0 },
              ]
            : /as tests/.test(sql)
              ? [{ unit: Math.floor(NOW / DAY) * DAY - DAY, tests: "[1,2]", failures: "[1,2]" }]
              : undefined,
        run: (s) => s.failing(REPO_ID, { start: NOW - 7 * DAY, end: NOW }, 0, 25),
      },
      {
        method: "unhealthy",
        variant: "a page past the end",
        run: (s) => s.unhealthy(REPO_ID, "flaky", NOW, 50, 25),
      },
      {
        method: "quarantined",
        variant: "a page past the end",
        answer: when([/count\(\*\) as "n"/, [{ n: 3 }]]),
        run: (s) => s.quarantined(REPO_ID, QUARANTINE, 50, 25),
      },
    ],
  }),
  scenario({
    file: "test-settings",
    name: "TestSettingsStore",
    create: (handle) => new TestSettingsStore(handle.db),
    calls: [
      { method: "get", run: (s) => s.get(REPO_ID) },
      {
        method: "put",
        run: (s) =>
          s.put(
            REPO_ID,
            {
              monitors: {} as never,
              quarantine: QUARANTINE,
              ticketBaseUrl: "https://tickets.example/",
            },
            NOW,
          ),
      },
      { method: "putCodeowners", run: (s) => s.putCodeowners(REPO_ID, "* @acme/core\n", NOW) },
    ],
  }),
  scenario({
    file: "sessions",
    name: "SessionStore",
    create: (handle) => new SessionStore(handle.db),
    calls: [
      {
        method: "insertSession",
        run: (s) =>
          s.insertSession({
            id: "ses_1",
            idHash: "hash",
            organizationId: ORG,
            tokenId: "token-1",
            githubUserId: null,
            githubLogin: null,
            githubInstallationId: null,
            createdAt: NOW,
            lastSeenAt: NOW,
            expiresAt: NOW + 7 * DAY,
          }),
      },
      { method: "findSessionByHash", run: (s) => s.findSessionByHash("hash") },
      { method: "touchSession", run: (s) => s.touchSession("ses_1", NOW) },
      { method: "revokeSession", run: (s) => s.revokeSession("ses_1", NOW, "signed_out") },
      { method: "listSessions", run: (s) => s.listSessions(ORG) },
      { method: "findSession", run: (s) => s.findSession("ses_1") },
    ],
  }),
  scenario({
    file: "test-overview",
    name: "TestOverviewStore",
    create: (handle) => new TestOverviewStore(handle.db),
    calls: [
      { method: "repositories", run: (s) => s.repositories(ORG) },
      { method: "statusCounts", run: (s) => s.statusCounts([REPO_ID, "repo-2"]) },
      { method: "overrideCounts", run: (s) => s.overrideCounts([REPO_ID, "repo-2"]) },
      { method: "statusChanges", run: (s) => s.statusChanges([REPO_ID, "repo-2"], NOW - 30 * DAY) },
    ],
  }),
  scenario({
    file: "repository-health",
    name: "RepositoryHealthStore",
    create: (handle) => new RepositoryHealthStore(handle.db),
    calls: [
      {
        method: "tests",
        run: (s) =>
          s.tests(REPO_ID, undefined, { quarantiningEnabled: true, autoQuarantine: true }),
      },
      {
        method: "tests",
        variant: "flaky",
        run: (s) => s.tests(REPO_ID, "flaky", { quarantiningEnabled: true, autoQuarantine: true }),
      },
      {
        method: "tests",
        variant: "quarantined",
        run: (s) =>
          s.tests(REPO_ID, "quarantined", { quarantiningEnabled: true, autoQuarantine: true }),
      },
      { method: "recentCounts", run: (s) => s.recentCounts(REPO_ID, NOW - 7 * DAY) },
      { method: "prsImpacted", run: (s) => s.prsImpacted(REPO_ID, NOW - 7 * DAY) },
      { method: "prsImpactedByFlaky", run: (s) => s.prsImpactedByFlaky(REPO_ID, NOW - 7 * DAY) },
      { method: "dailyFailures", run: (s) => s.dailyFailures(REPO_ID, NOW - 30 * DAY) },
      { method: "testDaily", run: (s) => s.testDaily(1, NOW - 30 * DAY) },
    ],
  }),
  scenario({
    file: "repository-table",
    name: "RepositoryTableStore",
    create: (handle) => new RepositoryTableStore(handle),
    calls: [
      {
        method: "refreshFigures",
        variant: "some figures expired",
        answer: when([/^select/, [{ key: 1 }]]),
        run: (s) => s.refreshFigures(REPO_ID, NOW),
      },
      {
        method: "tablePage",
        variant: "by failure rate",
        run: (s) =>
          s.tablePage(
            REPO_ID,
            undefined,
            { quarantiningEnabled: true, autoQuarantine: true },
            "failure_rate",
            0,
            50,
          ),
      },
      {
        method: "tablePage",
        variant: "flaky, by impacted pull requests",
        run: (s) =>
          s.tablePage(
            REPO_ID,
            "flaky",
            { quarantiningEnabled: true, autoQuarantine: true },
            "prs_impacted",
            50,
            50,
          ),
      },
      {
        method: "tablePage",
        variant: "quarantined, by last failure",
        run: (s) =>
          s.tablePage(
            REPO_ID,
            "quarantined",
            { quarantiningEnabled: true, autoQuarantine: true },
            "last_failure",
            0,
            50,
          ),
      },
      {
        method: "tableCount",
        run: (s) =>
          s.tableCount(REPO_ID, undefined, { quarantiningEnabled: true, autoQuarantine: true }),
      },
      { method: "testFiles", run: (s) => s.testFiles(REPO_ID) },
    ],
  }),
  scenario({
    file: "test-views",
    name: "TestViewStore",
    create: (handle) => new TestViewStore(handle.db, handle.dialect),
    calls: [
      { method: "rowsByKey", run: (s) => s.rowsByKey([1, 2]) },
      { method: "findById", run: (s) => s.findById(REPO_ID, "test-1") },
      { method: "figures", run: (s) => s.figures([1, 2], NOW) },
    ],
  }),
  scenario({
    file: "uploads",
    name: "UploadStore",
    create: (handle) => new UploadStore(handle.db, handle.dialect),
    calls: [
      {
        method: "create",
        run: (s) =>
          s.create({
            id: "upload-1",
            organizationId: ORG,
            repositoryId: REPO_ID,
            clientVersion: "0.1.0",
            createdAt: NOW,
            urlExpiresAt: NOW + HOUR,
          }),
      },
      { method: "find", variant: "any organization", run: (s) => s.find("upload-1") },
      { method: "find", variant: "one organization", run: (s) => s.find("upload-1", ORG) },
      { method: "findByKey", run: (s) => s.findByKey(10) },
      {
        method: "markReceived",
        run: (s) =>
          s.markReceived("upload-1", {
            bundlePath: "bundles/upload-1",
            bundleBytes: 1024,
            contentHash: "hash",
            receivedAt: NOW,
          }),
      },
      { method: "claimNext", run: (s) => s.claimNext(NOW, NOW + 60_000) },
      {
        method: "claimBatch",
        answer: when([/^select/, [{ key: 10, repository_id: REPO_ID, attempts: 0 }]]),
        run: (s) => s.claimBatch(NOW, NOW + 60_000, 8),
      },
      { method: "extendLease", run: (s) => s.extendLease({ key: 10, attempts: 1 }, NOW + 60_000) },
      {
        method: "findDuplicate",
        run: (s) =>
          s.findDuplicate({ key: 10, repositoryId: REPO_ID, contentHash: "hash" } as never),
      },
      {
        method: "markProcessed",
        run: (s, db) =>
          s.markProcessed(
            db,
            { key: 10, attempts: 1 },
            {
              commitSha: "a".repeat(40),
              branch: "main",
              prNumber: null,
              jobName: "test",
              jobUrl: null,
              variant: "",
              uploadedAt: NOW,
              filesTotal: 1,
              fileErrors: [],
              testsPassed: 10,
              testsFailed: 1,
              testsSkipped: 0,
              infrastructureFailure: false,
            },
            NOW,
          ),
      },
      { method: "markFailed", run: (s) => s.markFailed(10, "unreadable bundle", NOW) },
      {
        method: "sameCommit",
        run: (s, db) => s.sameCommit(db, REPO_ID, ["a".repeat(40)]),
      },
      {
        method: "commitFailures",
        run: (s) =>
          s.commitFailures(REPO_ID, "a".repeat(40), "trunk-merge/main/r1", NOW - HOUR, 500),
      },
      { method: "list", answer: when([/count/, [{ n: 1 }]]), run: (s) => s.list(REPO_ID, 0, 25) },
      { method: "oldBundles", run: (s) => s.oldBundles(NOW - 30 * DAY) },
      { method: "forgetBundle", run: (s) => s.forgetBundle([10, 11]) },
      { method: "deleteExpiredUnused", run: (s) => s.deleteExpiredUnused(NOW) },
      { method: "countByState", run: (s) => s.countByState() },
    ],
  }),
];
