/**
 * The merge queue's CI on GitHub: the repository's own CI runs on the pushed test branch, and this
 * provider watches the tested commit (webhooks first, a leased poll for lost ones) until every
 * required check has a final result or one failed. A failure whose failed tests test health knows
 * as flaky or quarantined comes back `flakyOnly`. docs/github.md, "CI results and required checks",
 * says how required checks are chosen; `ci-judge.ts` how a commit's reports are judged.
 */
import type { Clock } from "../../lib/clock.js";
import { SECOND_MS } from "../../lib/time.js";
import type {
  CiProvider,
  CiResultListener,
  CiRunRequest,
  CiRunResult,
} from "../../mergequeue/providers.js";
import type { MergeQueueRecords } from "../../mergequeue/records.js";
import {
  consultsSource,
  readConfigSources,
  resolveRequiredStatuses,
} from "../../mergequeue/required-statuses.js";
import {
  newWatchedRun,
  type WatchedCiRun,
  type WatchedCiRunRecords,
  type WatchedRequired,
  type WatchedRunStatus,
} from "../../mergequeue/watched-ci-runs.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { GitHubApp, GitHubLogger } from "./client.js";
import { judgeObservations, passes } from "./ci-judge.js";
import { GitHubCommitChecks, type ReadCause } from "./commit-checks.js";
import { statusOf } from "./conditional.js";
import type { GitHubRepositories, GitHubRepositoryAccess } from "./repositories.js";
import { BoundedMap } from "../../lib/bounded-map.js";
import { requiredNames, type RequiredCheck } from "./required-checks.js";
import { GitHubRequiredSources, type PushFacts } from "./required-sources.js";
import type { WebhookHandlers } from "./webhooks/registry.js";

export {
  checkRunConclusion,
  judgeObservations,
  statusConclusion,
  type Verdict,
} from "./ci-judge.js";

/** How often every watched run is read again (webhooks may be lost). */
export const DEFAULT_CI_POLL_INTERVAL_MS = 15 * SECOND_MS;
/** How long a failed run waits for the repository's unprocessed uploads, at most. */
export const DEFAULT_FAILURE_UPLOAD_WAIT_MS = 2 * 60 * SECOND_MS;
/** Uploads created this long before a run was stored may still be its own. */
const UPLOAD_SLACK_MS = 60 * SECOND_MS;

export interface GitHubCiDeps {
  /** The host name of the provider's repositories: runs of other hosts are refused. */
  hostName: string;
  repositories: Pick<GitHubRepositories, "resolve">;
  app: Pick<GitHubApp, "conditionalGet">;
  runs: WatchedCiRunRecords;
  queues: Pick<MergeQueueRecords, "findById">;
  clock: Clock;
  logger: GitHubLogger;
  /** Default 15 s. */
  pollIntervalMs?: number;
  /** Test health's view of a failed run's commit; absent: no run is ever `flakyOnly`. */
  failures?: {
    ofCommit(question: {
      repo: OwnedRepoRef;
      sha: string;
      branch?: string;
      since: number;
    }): Promise<{
      flakyOnly: boolean;
      waiting: boolean;
    }>;
  };
  /** Default 2 min. */
  failureUploadWaitMs?: number;
  /** How long a read of the required checks' sources serves at most (default 5 min). */
  requiredSourcesTtlMs?: number;
  /** What a tested commit changes from its base, when its assembly here told it. */
  assembledChanges?: (sha: string) => Set<string> | undefined;
  /**
   * The target branch's required checks as the git host keeps them (its readiness reads the
   * protection and rulesets too, and forgets them on their webhooks).
   */
  branchChecks: (access: GitHubRepositoryAccess, branch: string) => Promise<RequiredCheck[]>;
  /**
   * The lease that lets one process at a time run the poll loop (processes sharing a database);
   * without it every process polls.
   */
  pollLease?: PollLease;
}

/** A lease over the poll loop, shared by the processes of one database. */
export interface PollLease {
  /** Takes or renews the lease until `until`; false while another process holds it. */
  claim(now: number, until: number): Promise<boolean>;
  /** Lets it go (a stopping process): another takes over at its next poll. */
  release(): Promise<void>;
}

export class GitHubCi implements CiProvider {
  private readonly listeners = new Set<CiResultListener>();
  /** Commits a check webhook named before any run watched them (a run may start on them). */
  private readonly unwatchedNews = new BoundedMap<string, true>(1024);
  /** When each run was last read (the poll reads only runs with no news since). */
  private readonly lastRead = new Map<string, number>();
  /** Each run's evaluations, one at a time. */
  private readonly work = new Map<string, Promise<void>>();
  /**
   * Each run's evaluation waiting for the one before it to end: news that comes meanwhile joins
   * it (it reads GitHub after all of it happened) instead of queueing a read of its own.
   */
  private readonly waiting = new Map<string, { cause: ReadCause; done: Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private watching = false;
  /** Failed runs waiting for uploads to be processed: since when, and their next read. */
  private readonly uploadWaits = new Map<string, { since: number; timer?: NodeJS.Timeout }>();

  private readonly commitChecks: GitHubCommitChecks;
  private readonly sources: GitHubRequiredSources;

  constructor(private readonly deps: GitHubCiDeps) {
    this.commitChecks = new GitHubCommitChecks(deps.app);
    this.sources = new GitHubRequiredSources({
      now: () => deps.clock.now(),
      ttlMs: deps.requiredSourcesTtlMs,
      assembledChanges: deps.assembledChanges,
      branchChecks: deps.branchChecks,
    });
  }

  /** A `push`: a kept `.mainline.yml` or `.trunk/trunk.yaml` of the branch it touched is read again. */
  pushed(repo: { owner: string; name: string }, push: PushFacts): void {
    this.sources.pushed(repo, push);
  }

  /**
   * A commit status went `pending` on `sha`: nothing concluded, so nothing is read (the status's
   * conclusion comes with a webhook of its own, and the poll reads a run whose webhooks were lost);
   * until the commit's statuses are read, this one is known to be running.
   */
  statusPending(
    repo: OwnedRepoRef,
    sha: string,
    status: { context: string; targetUrl: string | null },
  ): void {
    this.commitChecks.statusPending(repo, sha, status);
  }

  onResult(listener: CiResultListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private ours(repo: OwnedRepoRef): boolean {
    return repo.host.toLowerCase() === this.deps.hostName.toLowerCase();
  }

  async start(request: CiRunRequest): Promise<void> {
    if (!this.ours(request.repo)) {
      throw new Error(
        `the GitHub CI cannot test ${request.repo.host}/${request.repo.owner}/${request.repo.name}: not a repository of ${this.deps.hostName}`,
      );
    }
    await this.deps.runs.create(newWatchedRun(request, this.deps.clock.now()));
    // Resolving and the first read may fail (GitHub away): the run is stored, the poll retries.
    await this.schedule(request.queueId, request.runId, "start").catch((error: unknown) => {
      this.deps.logger.warn(
        { err: error, queueId: request.queueId, runId: request.runId },
        "github ci: could not read the run's checks yet; will retry",
      );
    });
  }

  async cancel(queueId: string, runId: string): Promise<void> {
    const run = await this.deps.runs.get(queueId, runId);
    if (!run || run.status !== "watching") return;
    await this.deps.runs.finish(queueId, runId, "cancelled", null, this.deps.clock.now());
    await this.closeTestPr(run);
  }

  /**
   * A check run or suite completed (`checks`) or a status changed (`statuses`) on `sha` of
   * `repo` (a webhook): read it again.
   */
  async commitChanged(
    repo: OwnedRepoRef,
    sha: string,
    what: "checks" | "statuses" = "checks",
  ): Promise<void> {
    if (what === "statuses") this.commitChecks.statusesShown(repo);
    const runs = (await this.deps.runs.watchingSha(sha)).filter((run) =>
      sameRepo(run.request.repo, repo),
    );
    // Before its run is stored (CI faster than the queue): the run's start reads it.
    if (runs.length === 0) this.unwatchedNews.set(sha, true);
    for (const run of runs) await this.schedule(run.queueId, run.runId, what);
  }

  /** A commit status concluded on `sha` (a webhook): the run is judged again with it. */
  async statusConcluded(
    repo: OwnedRepoRef,
    sha: string,
    status: { context: string; state: string; targetUrl: string | null },
  ): Promise<void> {
    this.commitChecks.statusConcluded(repo, sha, status);
    await this.commitChanged(repo, sha, "statuses");
  }

  /** A check run completed on `sha` (a webhook): the run is judged again with it. */
  async checkRunCompleted(
    repo: OwnedRepoRef,
    sha: string,
    run: { name: string; appId: number | null; conclusion: string | null; url: string | null },
  ): Promise<void> {
    this.commitChecks.checkRunCompleted(repo, sha, run);
    await this.commitChanged(repo, sha, "checks");
  }

  /** Watches every stored run still watched (at once: crash safety), then polls them. */
  startWatching(): void {
    if (this.watching) return;
    this.watching = true;
    const interval = this.deps.pollIntervalMs ?? DEFAULT_CI_POLL_INTERVAL_MS;
    void this.pollAll({ leased: true });
    this.timer = setInterval(() => void this.pollAll({ quietOnly: true, leased: true }), interval);
    this.timer.unref();
  }

  async stopWatching(): Promise<void> {
    this.watching = false;
    clearInterval(this.timer);
    this.timer = undefined;
    for (const wait of this.uploadWaits.values()) clearTimeout(wait.timer);
    this.uploadWaits.clear();
    await this.polling;
    await Promise.allSettled([...this.work.values()]);
    await this.deps.pollLease?.release().catch((error: unknown) => {
      this.deps.logger.warn({ err: error }, "github ci: could not let the poll's lease go");
    });
  }

  /**
   * Reads every watched run again (the poll loop; tests call it to skip the wait); `quietOnly`
   * (the loop): only the runs no webhook made it read in the last half interval; `leased` (the
   * loop): only while this process holds the poll's lease (one process polls at a time; another
   * takes over within two intervals of its end).
   */
  pollAll(options: { quietOnly?: boolean; leased?: boolean } = {}): Promise<void> {
    this.polling ??= (async () => {
      try {
        const interval = this.deps.pollIntervalMs ?? DEFAULT_CI_POLL_INTERVAL_MS;
        const now = this.deps.clock.now();
        const lease = options.leased === true ? this.deps.pollLease : undefined;
        if (lease && !(await lease.claim(now, now + 2 * interval))) return;
        for (const run of await this.deps.runs.watching()) {
          if (!this.ours(run.request.repo)) continue;
          // Read by a webhook within the interval: it has news enough.
          const read = this.lastRead.get(runKey(run.queueId, run.runId));
          if (options.quietOnly === true && read !== undefined && now - read < interval / 2) {
            continue;
          }
          await this.schedule(run.queueId, run.runId, "poll").catch((error: unknown) => {
            this.deps.logger.warn(
              { err: error, queueId: run.queueId, runId: run.runId },
              "github ci: could not read the run's checks; will retry",
            );
          });
        }
      } catch (error) {
        this.deps.logger.error({ err: error }, "github ci: could not list the watched runs");
      } finally {
        this.polling = undefined;
      }
    })();
    return this.polling;
  }

  private schedule(queueId: string, runId: string, cause: ReadCause): Promise<void> {
    const key = runKey(queueId, runId);
    const joined = this.waiting.get(key);
    if (joined) {
      joined.cause = strongerCause(joined.cause, cause);
      return joined.done;
    }
    const previous = this.work.get(key) ?? Promise.resolve();
    const slot: { cause: ReadCause; done: Promise<void> } = { cause, done: Promise.resolve() };
    this.waiting.set(key, slot);
    const next = previous
      .catch(() => undefined)
      .then(() => {
        if (this.waiting.get(key) === slot) this.waiting.delete(key);
        return this.evaluate(queueId, runId, slot.cause);
      });
    slot.done = next;
    this.work.set(key, next);
    const forget = () => {
      if (this.work.get(key) === next) this.work.delete(key);
    };
    next.then(forget, forget);
    return next;
  }

  private async evaluate(queueId: string, runId: string, cause: ReadCause): Promise<void> {
    const run = await this.deps.runs.get(queueId, runId);
    if (!run || run.status !== "watching" || !this.ours(run.request.repo)) {
      this.lastRead.delete(runKey(queueId, runId));
      return;
    }
    // A repository no installation grants any more throws (`host_not_connected`): the run stays
    // watched (the installation may come back) until the queue's testing timeout ends it.
    const access = await this.deps.repositories.resolve(run.request.repo);
    let prepared = run;
    if (run.required === null) {
      const ready = await this.prepare(run, access);
      if (!ready) return;
      prepared = ready;
    }
    const required = prepared.required as WatchedRequired;
    // Nothing has finished on a commit just pushed, unless a webhook said so already: webhooks
    // (and the poll, for one lost) read it when something did.
    if (cause === "start" && this.unwatchedNews.get(run.request.sha) === undefined) {
      this.commitChecks.nothingYet(access, run.request.sha);
      return;
    }
    this.lastRead.set(runKey(queueId, runId), this.deps.clock.now());
    const observed = await this.commitChecks.observe(
      access,
      run.request.sha,
      required.checks,
      cause,
    );
    const verdict = judgeObservations(required.checks, observed);
    if (verdict.state === "pending") return;
    const flakyOnly =
      verdict.state === "failed" && (await this.flakyOnly(prepared, verdict.checks));
    if (flakyOnly === undefined) return;
    this.lastRead.delete(runKey(queueId, runId));
    await this.conclude(prepared, verdict.state, {
      queueId,
      runId,
      checks: verdict.checks,
      ...(flakyOnly ? { flakyOnly } : {}),
      ...(required.source === "merge_instance"
        ? {}
        : {
            requiredStatuses: { statuses: requiredNames(required.checks), source: required.source },
          }),
    });
  }

  /**
   * Whether a failed run failed only on known flaky or quarantined tests (test health, from the
   * tested commit's uploads); undefined while the repository's uploads since the run started are
   * still being processed (the run is read again in a second, for `failureUploadWaitMs` at most).
   */
  private async flakyOnly(
    run: WatchedCiRun,
    checks: CiRunResult["checks"],
  ): Promise<boolean | undefined> {
    const { failures, clock } = this.deps;
    if (!failures) return false;
    // Failed tests explain failed checks only, not cancelled or timed-out ones.
    const required = new Set(requiredNames((run.required as WatchedRequired).checks));
    const other = checks.some(
      (c) => required.has(c.name) && !passes(c.conclusion) && c.conclusion !== "failure",
    );
    if (other) return false;
    const key = runKey(run.queueId, run.runId);
    const answer = await failures.ofCommit({
      repo: run.request.repo,
      sha: run.request.sha,
      ...(run.testPrNumber !== null ? { branch: run.request.testBranch } : {}),
      since: run.createdAt - UPLOAD_SLACK_MS,
    });
    const wait = this.uploadWaits.get(key) ?? { since: clock.now() };
    const limit = this.deps.failureUploadWaitMs ?? DEFAULT_FAILURE_UPLOAD_WAIT_MS;
    if (answer.waiting && this.watching && clock.now() - wait.since < limit) {
      clearTimeout(wait.timer);
      const timer = setTimeout(() => {
        void this.schedule(run.queueId, run.runId, "checks")
          .catch((error: unknown) => {
            this.deps.logger.warn(
              { err: error, queueId: run.queueId, runId: run.runId },
              "github ci: could not read the run's checks; will retry",
            );
          })
          .finally(() => {
            // Not waiting again (ended here or elsewhere, or the read failed): forgotten.
            if (this.uploadWaits.get(key)?.timer === timer) this.uploadWaits.delete(key);
          });
      }, SECOND_MS);
      timer.unref();
      wait.timer = timer;
      this.uploadWaits.set(key, wait);
      return undefined;
    }
    clearTimeout(wait.timer);
    this.uploadWaits.delete(key);
    return answer.flakyOnly;
  }

  /**
   * Resolves the run's required checks and opens its testing pull request when asked; stores
   * both. Undefined when the run ended instead (its configuration is broken or names nothing).
   */
  private async prepare(
    run: WatchedCiRun,
    access: GitHubRepositoryAccess,
  ): Promise<WatchedCiRun | undefined> {
    const { request } = run;
    const override = request.requiredStatuses;
    const fail = async (
      reason: "config_parsing_failure" | "no_required_statuses",
      message: string,
    ) => {
      await this.conclude(run, "error", {
        queueId: run.queueId,
        runId: run.runId,
        checks: [],
        error: { reason, message },
      });
      return undefined;
    };
    // The sources are the target branch's, kept until they change, unless the run's pull
    // requests change a file: then it is read at the tested commit (required-sources.ts).
    const sources = await readConfigSources(override, (file) =>
      this.sources.fileAt(access, request.targetBranch, request.sha, file),
    );
    if (!sources.ok) return fail(sources.reason, sources.message);
    const { mainline, trunk } = sources;
    let protection: RequiredCheck[] | undefined;
    if (consultsSource({ override, mainline, trunk }, "branch_protection")) {
      const union = await this.sources.requiredChecks(access, request.targetBranch);
      protection = union.length > 0 ? union : undefined;
    }
    const resolved = resolveRequiredStatuses({
      override,
      mainline,
      trunk,
      ...(protection ? { branchProtection: requiredNames(protection) } : {}),
    });
    if (!resolved.ok) return fail(resolved.reason, resolved.message);
    if (resolved.source === "mainline_checks") {
      // The checks of .mainline.yml are the built-in runner's: nothing runs them on GitHub.
      return fail(
        "no_required_statuses",
        "no required statuses: none in the queue's settings, merge.required_statuses of .mainline.yml or .trunk/trunk.yaml, or GitHub's branch protection and rulesets (the checks .mainline.yml defines run on the built-in runner only)",
      );
    }
    const required: WatchedRequired = {
      source: resolved.source,
      checks:
        resolved.source === "branch_protection" && protection
          ? protection
          : resolved.statuses.map((context) => ({ context, appId: null })),
    };
    const testPrNumber = await this.openTestPr(run, access);
    await this.deps.runs.prepared(run.queueId, run.runId, { required, testPrNumber });
    return { ...run, required, testPrNumber };
  }

  /**
   * Hands the result to the listeners (each resolves once it is stored), then ends the run and
   * closes its testing pull request. A listener's failure leaves the run watched: the next read
   * emits it again.
   */
  private async conclude(
    run: WatchedCiRun,
    status: Exclude<WatchedRunStatus, "watching" | "cancelled">,
    result: CiRunResult,
  ): Promise<void> {
    for (const listener of [...this.listeners]) await listener(result);
    await this.deps.runs.finish(run.queueId, run.runId, status, result, this.deps.clock.now());
    await this.closeTestPr(run);
  }

  /** The draft pull request of the test branch, when the queue asks for one: found, or opened. */
  private async openTestPr(
    run: WatchedCiRun,
    access: GitHubRepositoryAccess,
  ): Promise<number | null> {
    if (run.testPrNumber !== null) return run.testPrNumber;
    const queue = await this.deps.queues.findById(run.queueId);
    if (!queue?.configuration.createPrsForTestingBranches) return null;
    const { request } = run;
    const where = { owner: access.owner, repo: access.name };
    const open = await access.client.request("GET /repos/{owner}/{repo}/pulls", {
      ...where,
      state: "open",
      head: `${access.owner}:${request.testBranch}`,
      base: request.targetBranch,
      per_page: 1,
    });
    const existing = (open.data as { number: number }[])[0];
    if (existing) return existing.number;
    const prs = request.prNumbers.map((n) => `#${String(n)}`).join(", ");
    try {
      const created = await access.client.request("POST /repos/{owner}/{repo}/pulls", {
        ...where,
        title: `Mainline test run ${request.runId}: ${prs}`,
        head: request.testBranch,
        base: request.targetBranch,
        draft: true,
        body: `Mainline's merge queue tests ${prs} on \`${request.targetBranch}\` here, so that CI triggered by pull requests runs. It is closed when the run ends; do not merge it.`,
      });
      return (created.data as { number: number }).number;
    } catch (error) {
      if (statusOf(error) !== 422) throw error;
      // Drafts not supported here (a private repository on GitHub Free), or the branch is gone:
      // the run goes on with the CI that pushes to the test branch trigger.
      this.deps.logger.warn(
        { queueId: run.queueId, runId: run.runId, err: error },
        "github ci: could not open the draft testing pull request; watching the pushed branch only",
      );
      return null;
    }
  }

  private async closeTestPr(run: WatchedCiRun): Promise<void> {
    const stored = await this.deps.runs.get(run.queueId, run.runId);
    const number = stored?.testPrNumber ?? run.testPrNumber;
    if (number === null) return;
    try {
      const access = await this.deps.repositories.resolve(run.request.repo);
      await access.client.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
        owner: access.owner,
        repo: access.name,
        pull_number: number,
        state: "closed",
      });
    } catch (error) {
      this.deps.logger.warn(
        { queueId: run.queueId, runId: run.runId, number, err: error },
        "github ci: could not close the testing pull request",
      );
    }
  }
}

function runKey(queueId: string, runId: string): string {
  return `${queueId}\u0000${runId}`;
}

function sameRepo(a: OwnedRepoRef, b: OwnedRepoRef): boolean {
  return (
    a.organizationId === b.organizationId &&
    a.host.toLowerCase() === b.host.toLowerCase() &&
    a.owner.toLowerCase() === b.owner.toLowerCase() &&
    a.name.toLowerCase() === b.name.toLowerCase()
  );
}

/** Of two reasons to read a run, the one that reads more (statuses and the poll read statuses). */
function strongerCause(a: ReadCause, b: ReadCause): ReadCause {
  const rank: Record<ReadCause, number> = { start: 0, checks: 1, statuses: 2, poll: 2 };
  return rank[b] > rank[a] ? b : a;
}

/** The webhooks that make a watched commit's checks be read again. */
export function registerCiHandlers(
  handlers: WebhookHandlers,
  ci: Pick<
    GitHubCi,
    "commitChanged" | "checkRunCompleted" | "statusConcluded" | "statusPending" | "pushed"
  >,
): void {
  handlers.forOrganization("check_run.completed", async (delivery) => {
    if (!delivery.repository) return;
    const run = delivery.payload.check_run;
    await ci.checkRunCompleted(delivery.repository, run.head_sha, {
      name: run.name,
      appId: run.app?.id ?? null,
      conclusion: run.conclusion,
      url: run.details_url !== "" ? run.details_url : run.html_url,
    });
  });
  handlers.forOrganization("check_suite.completed", async (delivery) => {
    if (!delivery.repository) return;
    await ci.commitChanged(delivery.repository, delivery.payload.check_suite.head_sha);
  });
  handlers.forOrganization("status", async (delivery) => {
    if (!delivery.repository) return;
    // `pending` concludes nothing: only a status that did (success, failure, error) is read.
    if (delivery.payload.state === "pending") {
      ci.statusPending(delivery.repository, delivery.payload.sha, {
        context: delivery.payload.context,
        targetUrl: delivery.payload.target_url,
      });
      return;
    }
    await ci.statusConcluded(delivery.repository, delivery.payload.sha, {
      context: delivery.payload.context,
      state: delivery.payload.state,
      targetUrl: delivery.payload.target_url,
    });
  });
  handlers.forOrganization("push", (delivery) => {
    const { payload } = delivery;
    const owner = payload.repository.owner?.login;
    if (owner === undefined) return Promise.resolve();
    ci.pushed(
      { owner, name: payload.repository.name },
      {
        ref: payload.ref,
        forced: payload.forced,
        created: payload.created,
        deleted: payload.deleted,
        commits: payload.commits,
      },
    );
    return Promise.resolve();
  });
}
