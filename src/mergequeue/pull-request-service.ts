/**
 * The pull-request operations of the merge queue (Trunk's API): submit, cancel, restart, impacted
 * targets, reads of entries and test runs, and the queues' Prometheus metrics. Changes go to the
 * queue's engine as commands (its driver is the queue's only writer); reads come from the records
 * the engine keeps, with the commands acknowledged and not yet applied laid over them
 * (`acknowledged.ts`), so that a read never waits for the driver and shows every acknowledged write.
 */
import type { Clock } from "../lib/clock.js";
import { ApiError } from "../lib/errors.js";
import { isDatabaseUnavailable } from "../lib/faults.js";
import type { OwnedRepoRef, RepoRef } from "../organizations/repositories.js";
import type { Principal } from "../organizations/service.js";
import {
  DEFAULT_PRIORITY,
  URGENT_PRIORITY,
  parsePriority,
  priorityName,
  type Actor,
  type ImpactedTargets,
  type PrState,
  type QueueCommand,
  type QueueSnapshot,
} from "./model.js";
import {
  METRICS_WINDOW_MS,
  measureQueue,
  renderQueueMetrics,
  type QueueSeries,
} from "./queue-metrics.js";
import {
  describeQueue,
  requireQueue,
  type EnqueuedPullRequest,
  type QueueActivity,
  type QueueAddress,
  type QueueContents,
} from "./queue-service.js";
import { hostNotConnected } from "./host-router.js";
import type { ConfigWarning } from "./config-check.js";
import { upgradeSnapshot } from "./snapshot.js";
import { batchSizeChoice } from "./batch-size.js";
import { localizationsOf } from "./localizations.js";
import { NO_VERDICTS } from "./speculation.js";
import type { HostRateLimit } from "./providers.js";
import type { FailureExplainer } from "./failure-explanation.js";
import type {
  CommandResult,
  EntryListQuery,
  EntryRecord,
  EntrySummary,
  HostTrouble,
  MergeQueueRecord,
  MergeQueueRecords,
  RunRecord,
  RuntimeRecords,
  TransitionRecord,
} from "./records.js";
import { waitsOf } from "./waiting.js";
import {
  ACKNOWLEDGED_READ_LIMIT,
  nothingAcknowledged,
  acknowledgedCommands,
  acknowledgedTransition,
  activeWithAcknowledged,
  isAcknowledgedOnly,
  pageWithAcknowledged,
  withAcknowledged,
  withKeptTargets,
  type Acknowledged,
} from "./acknowledged.js";
import {
  DEFAULT_TAKE,
  MAX_TAKE,
  decodeCursor,
  encodeCursor,
  type ListQuery,
  type PullRequestPage,
  type PullRequestView,
  type TestRunStatus,
  type TestingDetails,
  type TimelineItem,
} from "./pull-request-views.js";

/** Hands a command to the queue's engine and answers once its driver has applied it. */
export interface CommandBus {
  execute(queueId: string, command: QueueCommand): Promise<CommandResult>;
  /**
   * Stores a command the driver never refuses (a submission already checked by the caller,
   * impacted targets) and returns once it is durable; the driver applies it later, when the
   * queue's host answers; reads show it meanwhile (`acknowledged.ts`). Without it, such commands
   * wait for the driver (`execute`).
   */
  accept?(
    queueId: string,
    command: Extract<QueueCommand, { type: "submit" } | { type: "set_impacted_targets" }>,
  ): Promise<void>;
  /**
   * The answer a command gets while the queue's git host does not answer (as its driver last
   * found), or null while it does: lets a submission be refused before the host is asked.
   */
  refusal?(queueId: string): Promise<Extract<CommandResult, { ok: false }> | null>;
}

/**
 * What a git host has stored about a pull request, read without asking git: enough to check a
 * submission before it is stored. Null when the host keeps no such record (the driver checks).
 */
export type StoredPullRequestLookup = (
  repo: OwnedRepoRef,
  number: number,
) => Promise<{ state: "open" | "closed" | "merged" } | undefined> | null;

// ---- presentation helpers of the domain --------------------------------------------------------

/** Who an API request acts as: the token, since tokens are what the organization manages. */
export function actorOf(principal: Principal): Actor {
  return { kind: "user", name: `api-token:${principal.tokenId}` };
}

/** A pull request's web page on its host; `""` where none is known (local repositories). */
export function pullRequestUrl(repo: RepoRef, number: number): string {
  if (repo.host.toLowerCase() === "local") return "";
  const base = `https://${repo.host}/${repo.owner}/${repo.name}`;
  return /gitlab/i.test(repo.host)
    ? `${base}/-/merge_requests/${number}`
    : `${base}/pull/${number}`;
}

/** An entry as a mergeItem: the priority's name, the default used, skip-the-line. */
export function toEnqueuedPullRequest(entry: EntrySummary): EnqueuedPullRequest {
  return {
    id: entry.id,
    state: entry.state,
    prNumber: entry.prNumber,
    prTitle: entry.prTitle,
    prSha: entry.prSha,
    prBaseBranch: entry.prBaseBranch,
    prAuthor: entry.prAuthor,
    stateChangedAt: entry.stateChangedAt,
    priorityValue: entry.priorityValue,
    priorityName: priorityName(entry.priorityValue),
    ...(entry.usedDefaultPriority ? { usedDefaultPriorityName: DEFAULT_PRIORITY } : {}),
    skipTheLine: entry.priorityValue === URGENT_PRIORITY,
    noBatch: entry.noBatch,
  };
}

function toTimelineItem(t: TransitionRecord): TimelineItem {
  return {
    at: t.at,
    fromState: t.from,
    toState: t.to,
    reason: t.reason,
    actor: t.actor,
    testRunId: t.runId,
    detail: t.detail,
  };
}

const IN_FLIGHT: readonly PrState[] = ["testing", "tests_passed", "pending_failure"];

/**
 * Active entries in (approximately) queue order: those in flight first, then those waiting by
 * priority and submission, then those not ready. The planner's exact order lives in its snapshot.
 */
function queueOrder<T extends EntrySummary>(entries: readonly T[]): T[] {
  const rank = (e: T) => (IN_FLIGHT.includes(e.state) ? 0 : e.state === "not_ready" ? 2 : 1);
  return [...entries].sort(
    (a, b) =>
      rank(a) - rank(b) || (rank(a) === 1 ? a.priorityValue - b.priorityValue : 0) || a.seq - b.seq,
  );
}

const RUN_STATUS: Record<RunRecord["status"], TestRunStatus> = {
  running: "in_progress",
  passed: "succeeded",
  failed: "failed",
  cancelled: "cancelled",
};

/** Trunk's clients know `trunk_config` for a configuration file; ours is one too. */
function requiredStatusesSource(
  source: RunRecord["requiredStatusesSource"],
): TestingDetails["requiredStatusesSource"] {
  switch (source) {
    case "mainline_config":
    case "mainline_checks":
      return "trunk_config";
    case "branch_protection":
      return "repo_provider_branch_protection";
    default:
      return source;
  }
}

/** The legacy spelling `IMPACTS_ALL` (and any letter case) means `"ALL"`. */
export function normalizeImpactedTargets(targets: string | readonly string[]): ImpactedTargets {
  if (typeof targets !== "string") return [...targets];
  const upper = targets.toUpperCase();
  if (upper === "ALL" || upper === "IMPACTS_ALL") return "ALL";
  throw ApiError.invalid("impactedTargets", 'must be a list of targets or "ALL"');
}

/**
 * A pull request of a repository whose host has no provider could never be read, tested or
 * merged: refused at once, instead of waiting in the queue forever.
 */
export function requireConnectedHost(
  connected: ((host: string) => boolean) | undefined,
  host: string,
): void {
  if (!connected || connected(host)) return;
  throw hostNotConnected(host);
}

/** A refused command's answer as the API's error (a 503 with its `Retry-After`). */
function apiErrorOf(result: Extract<CommandResult, { ok: false }>): ApiError {
  const { retryAfterSeconds } = result;
  return new ApiError(
    result.code,
    result.message,
    undefined,
    retryAfterSeconds === undefined ? {} : { retryAfterSeconds },
  );
}

// ---- the service -------------------------------------------------------------------------------

export interface PullRequestServiceDeps {
  queues: Pick<MergeQueueRecords, "find" | "listForOrganization">;
  runtime: Pick<
    RuntimeRecords,
    | "latestEntry"
    | "latestEntryByBranch"
    | "activeEntries"
    | "activeSummaries"
    | "listEntries"
    | "transitions"
    | "pullRequestTransitions"
    | "run"
    | "transitionsSince"
    | "loadSnapshot"
    | "sharedSnapshot"
    | "hostTrouble"
    | "pendingCommands"
  >;
  commands: CommandBus;
  clock: Clock;
  /** Lets submissions to hosts that store their pull requests be answered once stored. */
  storedPullRequest?: StoredPullRequestLookup;
  /** Whether a git host has a provider on this server (default: every host has one). */
  hostConnected?: (host: string) => boolean;
  /** The git host's rate limit holding the repository's requests now, if any. */
  hostRateLimit?: (repo: OwnedRepoRef) => Promise<HostRateLimit | undefined>;
  /** Why a failed pull request failed (its failing tests, its log's end); absent: not said. */
  failures?: Pick<FailureExplainer, "explainEntry">;
  /** The mistakes in the configuration a submitted pull request's run will use (`config-check.ts`). */
  configWarnings?: (
    queue: MergeQueueRecord,
    repo: OwnedRepoRef,
    prNumber: number,
  ) => Promise<ConfigWarning[]>;
}

const ownedRepo = (principal: Principal, address: QueueAddress): OwnedRepoRef => ({
  ...address.repo,
  organizationId: principal.organizationId,
});

/** Whether a pull request in this state may wait for something `waitsOf` tells. */
const mayWait = (item: EnqueuedPullRequest) =>
  item.state === "pending" || item.state === "pending_failure";

function addWaits(items: EnqueuedPullRequest[], snapshot: QueueSnapshot | undefined): void {
  if (!items.some(mayWait)) return;
  const waits = waitsOf(snapshot);
  for (const item of items) {
    const waiting = waits.get(item.id);
    if (waiting) item.waitingFor = waiting;
  }
}

/** submitPullRequest … getMergeQueueMetrics. */
export class PullRequestService implements QueueContents {
  constructor(private readonly deps: PullRequestServiceDeps) {}

  /**
   * Submits a pull request, or updates the priority and noBatch of one already queued. Answers
   * the mistakes found in the configuration its run will use, as warnings: it is submitted all
   * the same (a push may fix them).
   */
  async submit(
    principal: Principal,
    address: QueueAddress,
    request: { prNumber: number; priority?: string | number | null; noBatch?: boolean },
    actor: Actor,
  ): Promise<{ warnings: ConfigWarning[] }> {
    const priority =
      request.priority === undefined || request.priority === null
        ? null
        : parsePriority(request.priority);
    if (priority === undefined) {
      throw ApiError.invalid(
        "priority",
        "must be urgent, high, medium, low or a whole number from 0 to 255",
      );
    }
    const queue = await this.require(principal, address);
    requireConnectedHost(this.deps.hostConnected, address.repo.host);
    const { state } = queue.configuration;
    if (state === "draining" || state === "switching_modes") {
      // A pull request already queued may still change its priority; new ones wait.
      const current = await this.deps.runtime.latestEntry(queue.id, request.prNumber);
      if (!current || current.concludedAt !== null) {
        const why = state === "draining" ? "is draining" : "is switching modes";
        throw new ApiError(
          "conflict",
          `The merge queue for ${describeQueue(address)} ${why}: it accepts no new pull requests until it has drained.`,
        );
      }
    }
    const command = {
      type: "submit" as const,
      prNumber: request.prNumber,
      priority,
      noBatch: request.noBatch ?? false,
      actor,
    };
    const { commands } = this.deps;
    const refused = commands.accept ? await commands.refusal?.(queue.id) : null;
    if (refused) throw apiErrorOf(refused);
    const repo = { organizationId: principal.organizationId, ...address.repo };
    const stored = this.deps.storedPullRequest?.(repo, request.prNumber);
    if (!commands.accept || !stored) {
      const warnings = this.configWarnings(queue, repo, request.prNumber);
      await this.execute(queue, command);
      return { warnings: await warnings };
    }
    // Checked against what the host stored, then answered once durable (ADR 0018): what the
    // driver finds later (conflicts, mergeability, a PR closed meanwhile) shows in its timeline.
    const pr = await stored.catch((error: unknown) => {
      if (error instanceof ApiError || isDatabaseUnavailable(error)) throw error;
      // Nothing stored: the host failed the read (GitHub's 5xx, no answer).
      const message = error instanceof Error ? error.message.replace(/\s+/g, " ") : String(error);
      throw new ApiError(
        "unavailable",
        `Pull request #${request.prNumber} could not be read from ${address.repo.host} (${message.slice(0, 200)}); nothing was changed, retry in a moment.`,
      );
    });
    const { owner, name } = address.repo;
    if (!pr) {
      throw new ApiError(
        "not_found",
        `Pull request #${request.prNumber} does not exist in ${owner}/${name}.`,
      );
    }
    if (pr.state !== "open") {
      throw new ApiError(
        "conflict",
        `Pull request #${request.prNumber} is ${pr.state}; only open pull requests can be queued.`,
      );
    }
    // Checked while the command is stored: it adds no wait of its own.
    const warnings = this.configWarnings(queue, repo, request.prNumber);
    await commands.accept(queue.id, command);
    return { warnings: await warnings };
  }

  /** Never fails: a submission is accepted whatever the check finds (or fails to find). */
  private configWarnings(
    queue: MergeQueueRecord,
    repo: OwnedRepoRef,
    prNumber: number,
  ): Promise<ConfigWarning[]> {
    const check = this.deps.configWarnings;
    if (!check) return Promise.resolve([]);
    return check(queue, repo, prNumber).catch(() => []);
  }

  async cancel(
    principal: Principal,
    address: QueueAddress,
    prNumber: number,
    actor: Actor,
  ): Promise<void> {
    const queue = await this.require(principal, address);
    await this.execute(queue, { type: "cancel", prNumber, actor });
  }

  /** Restarts a pull request's tests in place. */
  async restart(
    principal: Principal,
    address: QueueAddress,
    prNumber: number,
    actor: Actor,
  ): Promise<void> {
    const queue = await this.require(principal, address);
    await this.execute(queue, { type: "restart", prNumber, actor });
  }

  /**
   * Targets `"ALL"` (or legacy `"IMPACTS_ALL"`) or a list, for the PR at commit `sha`: answered
   * once stored, whether or not the queue's host answers now (the planner never refuses targets;
   * those of a pull request it does not hold yet are kept for its submission at that commit).
   */
  async setImpactedTargets(
    principal: Principal,
    address: QueueAddress,
    pr: { number: number; sha: string },
    targets: string | readonly string[],
  ): Promise<void> {
    const normalized = normalizeImpactedTargets(targets);
    const queue = await this.require(principal, address);
    const command = {
      type: "set_impacted_targets" as const,
      prNumber: pr.number,
      headSha: pr.sha,
      targets: normalized,
    };
    if (this.deps.commands.accept) await this.deps.commands.accept(queue.id, command);
    else await this.execute(queue, command);
  }

  /** The latest submission of a PR (by number, or by head branch: open ones first). */
  async get(
    principal: Principal,
    address: QueueAddress,
    pr: { number: number } | { branch: string },
    includeTimeline: boolean,
  ): Promise<PullRequestView> {
    const queue = await this.require(principal, address);
    const acknowledged = await this.acknowledgedForViews(queue);
    const recorded =
      "number" in pr
        ? await this.deps.runtime.latestEntry(queue.id, pr.number)
        : await this.deps.runtime.latestEntryByBranch(queue.id, pr.branch);
    const number = "number" in pr ? pr.number : recorded?.prNumber;
    const entry =
      number === undefined ? undefined : withAcknowledged(recorded, number, acknowledged);
    if (!entry) {
      const which =
        "number" in pr ? `Pull request #${pr.number}` : `No pull request from branch ${pr.branch}`;
      const never = "number" in pr ? "has never been" : "has ever been";
      throw new ApiError(
        "not_found",
        `${which} ${never} submitted to the merge queue for ${describeQueue(address)}.`,
      );
    }
    return this.view(entry, includeTimeline, acknowledged, ownedRepo(principal, address));
  }

  /** Several PRs at once; those never submitted are listed in `notFound`. */
  async getMany(
    principal: Principal,
    address: QueueAddress,
    numbers: readonly number[],
    includeTimeline: boolean,
  ): Promise<{ pullRequests: PullRequestView[]; notFound: { number: number }[] }> {
    const queue = await this.require(principal, address);
    const unique = [...new Set(numbers)];
    const acknowledged = await this.acknowledgedForViews(queue);
    const latest = (number: number) => this.deps.runtime.latestEntry(queue.id, number);
    const entries = await Promise.all(
      unique.map(async (number) => withAcknowledged(await latest(number), number, acknowledged)),
    );
    const pullRequests: PullRequestView[] = [];
    const notFound: { number: number }[] = [];
    for (const [i, entry] of entries.entries()) {
      if (entry) {
        const repo = ownedRepo(principal, address);
        pullRequests.push(await this.view(entry, includeTimeline, acknowledged, repo));
      } else notFound.push({ number: unique[i] as number });
    }
    return { pullRequests, notFound };
  }

  /**
   * Pull requests in submission order (of their latest submission), a page at a time; with
   * `history`, every submission.
   */
  async list(
    principal: Principal,
    address: QueueAddress,
    query: ListQuery,
  ): Promise<PullRequestPage> {
    const take = query.take ?? DEFAULT_TAKE;
    if (!Number.isInteger(take) || take < 1 || take > MAX_TAKE) {
      throw ApiError.invalid("take", `must be a whole number from 1 to ${MAX_TAKE}`);
    }
    let afterSeq: number | undefined;
    if (query.cursor !== undefined && query.cursor !== "") {
      afterSeq = decodeCursor(query.cursor);
      if (afterSeq === undefined) {
        throw ApiError.invalid("cursor", "is not a cursor this server handed out (nextCursor)");
      }
    }
    const queue = await this.require(principal, address);
    const listQuery: EntryListQuery = { take: take + 1, latestOnly: query.history !== true };
    if (query.state !== undefined) listQuery.state = query.state;
    if (query.since !== undefined) listQuery.concludedSince = query.since;
    if (afterSeq !== undefined) listQuery.afterSeq = afterSeq;
    const acknowledged = await this.acknowledged(queue);
    // Read before the page: a submission applied meanwhile is then on the page, and shown once.
    const active =
      acknowledged.submissions.size === 0 ? [] : await this.deps.runtime.activeSummaries(queue.id);
    const recorded = await this.deps.runtime.listEntries(queue.id, listQuery);
    const held = new Set(active.map((entry) => entry.prNumber));
    const rows =
      recorded.length > take
        ? recorded
        : pageWithAcknowledged(recorded, acknowledged, held, listQuery);
    const page = rows.slice(0, take);
    const last = page[page.length - 1];
    return {
      pullRequests: await this.withWaits(queue.id, page.map(toEnqueuedPullRequest)),
      ...(rows.length > take && last ? { nextCursor: encodeCursor(last.seq) } : {}),
    };
  }

  async testingDetails(
    principal: Principal,
    address: QueueAddress,
    testRunId: string,
  ): Promise<TestingDetails> {
    const queue = await this.require(principal, address);
    const run = await this.deps.runtime.run(queue.id, testRunId);
    if (!run) {
      throw new ApiError(
        "not_found",
        `No test run ${testRunId} in the merge queue for ${describeQueue(address)}.`,
      );
    }
    const unit = new Set(run.unit);
    const tested = run.prs.filter((pr) => unit.has(pr.entryId));
    const titles = await Promise.all(
      tested.map(async (pr) => (await this.deps.runtime.latestEntry(queue.id, pr.number))?.prTitle),
    );
    return {
      runId: run.id,
      status: RUN_STATUS[run.status],
      createdAt: run.startedAt,
      requiredStatuses: run.requiredStatuses,
      requiredStatusesSource: requiredStatusesSource(run.requiredStatusesSource),
      testBranch: run.testBranch,
      testBranchSha: run.testBranchSha,
      checks: run.checks,
      testedPullRequests: tested.map((pr, i) => ({
        prNumber: pr.number,
        prUrl: pullRequestUrl(address.repo, pr.number),
        title: titles[i] ?? "",
      })),
      dependentPrs: run.prs.filter((pr) => !unit.has(pr.entryId)).map((pr) => pr.number),
    };
  }

  /**
   * Prometheus text for the organization's queues, or one repository's. A repository without
   * a queue in the organization is a 404.
   */
  async metrics(principal: Principal, repo?: RepoRef): Promise<string> {
    const queues = await this.deps.queues.listForOrganization(principal.organizationId, repo);
    if (repo && queues.length === 0) {
      throw new ApiError("not_found", `No merge queue in ${repo.host}/${repo.owner}/${repo.name}.`);
    }
    const now = this.deps.clock.now();
    const windowStart = now - METRICS_WINDOW_MS;
    const series: QueueSeries[] = [];
    // One queue at a time: a scrape should not take every database connection.
    for (const queue of queues) {
      const [active, recent, stored] = await Promise.all([
        this.deps.runtime.activeEntries(queue.id),
        this.deps.runtime.transitionsSince(queue.id, windowStart),
        this.deps.runtime.loadSnapshot(queue.id),
      ]);
      const snapshot = stored ? upgradeSnapshot(stored.snapshot) : undefined;
      series.push({
        repo: `${queue.repo.owner}/${queue.repo.name}`,
        branch: queue.targetBranch,
        measures: measureQueue(
          active,
          await this.histories(recent),
          windowStart,
          now,
          snapshot?.verdicts,
        ),
      });
    }
    return renderQueueMetrics(series);
  }

  /** getQueue's enqueuedPullRequests: the entries that have not concluded, in queue order. */
  async enqueued(queueId: string): Promise<EnqueuedPullRequest[]> {
    const acknowledged = await this.acknowledged({ id: queueId });
    const active = await this.deps.runtime.activeSummaries(queueId);
    const entries = queueOrder(activeWithAcknowledged(active, acknowledged));
    return this.withWaits(queueId, entries.map(toEnqueuedPullRequest));
  }

  /**
   * Complete histories of the entries with a transition in the window: an entry whose
   * submission (the transition from nothing) is in the window has all of it there already.
   */
  private async histories(recent: readonly TransitionRecord[]): Promise<TransitionRecord[][]> {
    const byEntry = new Map<string, TransitionRecord[]>();
    for (const t of recent) {
      const list = byEntry.get(t.entryId);
      if (list) list.push(t);
      else byEntry.set(t.entryId, [t]);
    }
    return Promise.all(
      [...byEntry].map(([entryId, list]) =>
        list.some((t) => t.from === null)
          ? Promise.resolve(list)
          : this.deps.runtime.transitions(entryId),
      ),
    );
  }

  private async view(
    entry: EntryRecord,
    includeTimeline: boolean,
    acknowledged: Acknowledged,
    repo: OwnedRepoRef,
  ): Promise<PullRequestView> {
    const { readiness } = entry;
    const view: PullRequestView = {
      ...toEnqueuedPullRequest(entry),
      readiness: {
        hasImpactedTargets: readiness.impactedTargets !== null,
        requiresImpactedTargets: readiness.requiresImpactedTargets,
        doesBaseBranchMatch: readiness.baseBranchMatches,
        // It failed on a conflict: whatever git said when it was submitted, it does not merge.
        gitHubMergeability:
          entry.state === "failed" && entry.lastReason === "merge_conflict"
            ? "not_mergeable"
            : readiness.mergeability,
      },
      forceEnqueued: false,
      isCurrentlySubmittedToQueue: entry.concludedAt === null,
    };
    await this.withWaits(entry.queueId, [view]);
    if (includeTimeline) {
      // Every submission of the pull request, not only the last one.
      const history = await this.deps.runtime.pullRequestTransitions(entry.queueId, entry.prNumber);
      const submission = acknowledged.submissions.get(entry.prNumber);
      if (isAcknowledgedOnly(entry) && submission) {
        history.push(acknowledgedTransition(entry, submission.actor));
      }
      view.timeline = history.map(toTimelineItem);
    }
    const failure = await this.deps.failures?.explainEntry(repo, entry);
    if (failure) view.failure = failure;
    return view;
  }

  /**
   * getQueue's: the pull requests with what they wait for, the batch size in use and the
   * localizations in progress. The snapshot is read only when one of them needs it: batching is
   * on (the batch size rests on the queue's failure rate), or a pull request may wait (pending)
   * or be localized (`pending_failure`).
   */
  async activity(queue: MergeQueueRecord, repo?: OwnedRepoRef): Promise<QueueActivity> {
    const batching = queue.configuration.batch;
    const acknowledged = await this.acknowledged(queue);
    const [summaries, read, hostTrouble] = await Promise.all([
      this.deps.runtime.activeSummaries(queue.id),
      batching ? this.snapshot(queue.id) : Promise.resolve(undefined),
      this.deps.runtime.hostTrouble(queue.id),
    ]);
    const enqueued = queueOrder(activeWithAcknowledged(summaries, acknowledged)).map(
      toEnqueuedPullRequest,
    );
    const snapshot = batching || !enqueued.some(mayWait) ? read : await this.snapshot(queue.id);
    addWaits(enqueued, snapshot);
    return {
      enqueued,
      batchSize: batching
        ? batchSizeChoice(queue.configuration, snapshot?.verdicts ?? NO_VERDICTS)
        : null,
      localizations: snapshot ? localizationsOf(snapshot) : [],
      hostTrouble: hostTrouble ?? (repo ? await this.rateLimitNow(repo) : null),
    };
  }

  /**
   * A rate limit the host holds the queue's requests by now, as trouble: the queue's steps wait
   * it out (when it ends within a minute) and record nothing, but its state says so.
   */
  private async rateLimitNow(repo: OwnedRepoRef): Promise<HostTrouble | null> {
    const limit = await this.deps.hostRateLimit?.(repo).catch(() => undefined);
    if (!limit) return null;
    return {
      state: "rate_limited",
      code: "unavailable",
      since: limit.since,
      message: limit.message,
      retryAt: limit.until,
      failures: 0,
    };
  }

  /**
   * Adds what pull requests wait for (batch forming, a localization ahead or their own), read
   * from the queue's stored snapshot, which the planner keeps it in; nothing is read when none
   * may wait.
   */
  private async withWaits<T extends EnqueuedPullRequest>(
    queueId: string,
    items: T[],
  ): Promise<T[]> {
    if (items.some(mayWait)) addWaits(items, await this.snapshot(queueId));
    return items;
  }

  /** The stored snapshot, shared and never modified, in the current shape. */
  private async snapshot(queueId: string): Promise<QueueSnapshot | undefined> {
    const stored = await this.deps.runtime.sharedSnapshot(queueId);
    return stored === undefined ? undefined : upgradeSnapshot(stored);
  }

  /** The commands acknowledged and not applied: read before the records (none without `accept`). */
  private async acknowledged(queue: { id: string } & Partial<MergeQueueRecord>) {
    if (!this.deps.commands.accept) return nothingAcknowledged(queue.id);
    const pending = await this.deps.runtime.pendingCommands(queue.id, ACKNOWLEDGED_READ_LIMIT);
    const requiresImpactedTargets = queue.configuration?.mode === "parallel";
    return acknowledgedCommands({ queueId: queue.id, requiresImpactedTargets }, pending);
  }

  /** For a pull request's view: with the targets kept for those not yet submitted, too. */
  private async acknowledgedForViews(queue: MergeQueueRecord): Promise<Acknowledged> {
    const acknowledged = await this.acknowledged(queue);
    if (acknowledged.submissions.size === 0) return acknowledged;
    return withKeptTargets(acknowledged, (await this.snapshot(queue.id))?.uploadedTargets);
  }

  private async execute(queue: MergeQueueRecord, command: QueueCommand): Promise<void> {
    const result = await this.deps.commands.execute(queue.id, command);
    if (!result.ok) throw apiErrorOf(result);
  }

  private require(principal: Principal, address: QueueAddress): Promise<MergeQueueRecord> {
    return requireQueue(this.deps.queues, principal, address);
  }
}
