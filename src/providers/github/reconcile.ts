/**
 * The reconcile loop, which catches what webhooks missed: every `intervalMs` it reads each queued
 * GitHub repository's open pull requests and target branches with conditional requests (a 304 costs
 * no rate limit) and sends the differences from its last read as the changes a webhook would have
 * made (docs/github.md, "Reconciliation").
 */
import { redactSecrets } from "../../lib/redact.js";
import { SECOND_MS } from "../../lib/time.js";
import type { HostChange, HostChanges } from "../../mergequeue/host-changes.js";
import type { EntrySummary, MergeQueueRecords, RuntimeRecords } from "../../mergequeue/records.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { GitHubApp, GitHubLogger } from "./client.js";
import { ConditionalRequests, statusOf } from "./conditional.js";
import type { GitHubRepositories } from "./repositories.js";

export const DEFAULT_RECONCILE_INTERVAL_MS = 60 * SECOND_MS;
/** Pages of 100 open pull requests read per repository (10,000 pull requests). */
const DEFAULT_MAX_PAGES = 100;

/** What is kept of one open pull request. */
interface PullDigest {
  number: number;
  head: string;
  base: string;
  draft: boolean;
}

interface PullPage {
  pulls: PullDigest[];
  next: boolean;
}

interface RepoState {
  /** The open pull requests by number, as last read. */
  pulls: Map<number, PullDigest>;
  /** Each target branch's commit as last read (null: the branch does not exist). */
  branches: Map<string, string | null>;
  /** Queued pull requests already reported as not open, or open at another head or base. */
  reported: Map<number, string>;
}

/** What one pass did (for tests, the benchmark and the log). */
export interface ReconcileReport {
  repositories: number;
  /** GitHub requests made, and how many of them GitHub answered 304. */
  requests: number;
  notModified: number;
  changes: HostChange[];
  /** Repositories that could not be read (no installation grants them, GitHub failed…). */
  failed: number;
}

export interface ReconcilerDeps {
  host: string;
  app: Pick<GitHubApp, "installation">;
  repositories: Pick<GitHubRepositories, "resolve">;
  queues: Pick<MergeQueueRecords, "listForHost">;
  entries: Pick<RuntimeRecords, "activeSummaries">;
  changes: Pick<HostChanges, "apply">;
  logger: GitHubLogger;
  /** Between passes (default 60 s); 0: no timer, passes only when `pass()` is called. */
  intervalMs?: number;
  maxPages?: number;
}

const repoKey = (repo: OwnedRepoRef) =>
  `${repo.organizationId}/${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

function pullPage({
  data,
  headers,
}: {
  data: unknown;
  headers: Record<string, unknown>;
}): PullPage {
  const items = Array.isArray(data) ? (data as unknown[]) : [];
  const pulls: PullDigest[] = [];
  for (const item of items) {
    const pull = item as {
      number?: unknown;
      draft?: unknown;
      head?: { sha?: unknown } | null;
      base?: { ref?: unknown } | null;
    };
    if (typeof pull.number !== "number") continue;
    pulls.push({
      number: pull.number,
      head: typeof pull.head?.sha === "string" ? pull.head.sha : "",
      base: typeof pull.base?.ref === "string" ? pull.base.ref : "",
      draft: pull.draft === true,
    });
  }
  const link = typeof headers.link === "string" ? headers.link : "";
  return { pulls, next: /\brel="next"/.test(link) && pulls.length > 0 };
}

const sameDigest = (a: PullDigest, b: PullDigest) =>
  a.head === b.head && a.base === b.base && a.draft === b.draft;

export class GitHubReconciler {
  private readonly conditional: ConditionalRequests;
  private readonly states = new Map<string, RepoState>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ReconcileReport> | undefined;
  private started = false;
  /** Passes made since this process started. */
  private passes = 0;
  /** The repositories the last pass watched. */
  private watchedBefore = new Set<string>();
  private stopping = false;

  constructor(private readonly deps: ReconcilerDeps) {
    // A page is kept as its 100 digests (some 20 KB): 2,000 pages and branches, at most 40 MB,
    // are 200 repositories of 1,000 open pull requests; beyond, the least recently read are read
    // in full again.
    this.conditional = new ConditionalRequests(2000);
  }

  get intervalMs(): number {
    return this.deps.intervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS;
  }

  /** Passes every `intervalMs`, the first one an interval after start. */
  start(): void {
    this.started = true;
    this.stopping = false;
    // The first pass at once: what happened while no process watched is caught up at start.
    this.schedule(0);
  }

  /** Stops the timer; resolves once the pass under way (if any) has ended. */
  async stop(): Promise<void> {
    this.started = false;
    this.stopping = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One pass now (or the one under way): reads, compares, hands out the differences. */
  pass(): Promise<ReconcileReport> {
    this.running ??= this.reconcile().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private schedule(delayMs = this.intervalMs): void {
    if (!this.started || this.intervalMs <= 0) return;
    this.timer = setTimeout(() => {
      this.pass()
        .catch((error: unknown) => {
          this.deps.logger.warn(
            { error: redactSecrets(error instanceof Error ? error.message : String(error)) },
            "github: the reconcile pass failed; will try again",
          );
        })
        .finally(() => {
          this.schedule();
        });
    }, delayMs);
    this.timer.unref();
  }

  private async reconcile(): Promise<ReconcileReport> {
    const report: ReconcileReport = {
      repositories: 0,
      requests: 0,
      notModified: 0,
      changes: [],
      failed: 0,
    };
    const queues = await this.deps.queues.listForHost(this.deps.host);
    const byRepo = new Map<string, { repo: OwnedRepoRef; queues: typeof queues }>();
    for (const queue of queues) {
      const key = repoKey(queue.repo);
      const known = byRepo.get(key);
      if (known) known.queues.push(queue);
      else byRepo.set(key, { repo: queue.repo, queues: [queue] });
    }
    // Repositories no longer watched are forgotten (their next first pass re-reads everything).
    for (const key of this.states.keys()) if (!byRepo.has(key)) this.states.delete(key);
    for (const [key, { repo, queues: repoQueues }] of byRepo) {
      // Stopping: the rest waits for the next start.
      if (this.stopping) break;
      report.repositories++;
      try {
        // Watched from a later pass on (its first queue made while this process ran): its
        // webhooks came here all along, nothing to catch up.
        const fresh = this.passes > 0 && !this.watchedBefore.has(key);
        const changes = await this.reconcileRepository(key, repo, repoQueues, report, fresh);
        for (const change of changes) {
          await this.deps.changes.apply(change);
          report.changes.push(change);
        }
      } catch (error) {
        report.failed++;
        // Read from scratch next time: a partial read must not look like "nothing changed".
        this.states.delete(key);
        this.deps.logger.warn(
          {
            repo: `${repo.owner}/${repo.name}`,
            status: statusOf(error),
            error: redactSecrets(error instanceof Error ? error.message : String(error)),
          },
          "github: could not reconcile a repository; will try again",
        );
      }
    }
    this.watchedBefore = new Set(byRepo.keys());
    this.passes++;
    return report;
  }

  private async reconcileRepository(
    key: string,
    repo: OwnedRepoRef,
    queues: { id: string; targetBranch: string }[],
    report: ReconcileReport,
    /** First watched in this pass, after the first: no state to catch up (see `reconcile`). */
    fresh = false,
  ): Promise<HostChange[]> {
    const access = await this.deps.repositories.resolve(repo);
    const client = this.deps.app.installation(access.installationId);
    const scope = `${access.installationId}`;
    const base = { owner: access.owner, repo: access.name };

    const open = new Map<number, PullDigest>();
    const maxPages = this.deps.maxPages ?? DEFAULT_MAX_PAGES;
    for (let page = 1; page <= maxPages; page++) {
      const answer = await this.conditional.getProjected(
        client,
        scope,
        "GET /repos/{owner}/{repo}/pulls",
        { ...base, state: "open", per_page: 100, page },
        pullPage,
      );
      report.requests++;
      if (!answer.changed) report.notModified++;
      for (const pull of answer.data.pulls) open.set(pull.number, pull);
      if (!answer.data.next) break;
    }

    const branches = new Map<string, string | null>();
    for (const branch of new Set(queues.map((q) => q.targetBranch))) {
      branches.set(branch, await this.branchHead(client, scope, base, branch, report));
    }

    const queued = new Map<number, EntrySummary>();
    const holding = new Set<string>();
    for (const queue of queues) {
      const entries = await this.deps.entries.activeSummaries(queue.id);
      if (entries.length > 0) holding.add(queue.targetBranch);
      for (const entry of entries) queued.set(entry.prNumber, entry);
    }

    const previous = this.states.get(key);
    const changedPulls = new Set<number>();
    const movedBranches = new Set<string>();
    const reported = new Map<number, string>();
    if (!previous) {
      // Nothing to compare with (the first pass, or after a failed read): what the queues hold
      // is worth one re-read; a repository watched only since this process ran just starts.
      if (!fresh) {
        for (const number of queued.keys()) changedPulls.add(number);
        for (const branch of holding) movedBranches.add(branch);
      }
    } else {
      for (const [number, pull] of open) {
        const before = previous.pulls.get(number);
        if (!before || !sameDigest(before, pull)) changedPulls.add(number);
      }
      // Closed or merged since.
      for (const number of previous.pulls.keys()) if (!open.has(number)) changedPulls.add(number);
      for (const [branch, sha] of branches) {
        if (!previous.branches.has(branch) || previous.branches.get(branch) !== sha) {
          movedBranches.add(branch);
        }
      }
    }
    // The queues' own view: a queued pull request that is not open (closed or merged while its
    // webhook was lost), or open at another head or base than it was queued at, once per state.
    for (const [number, entry] of queued) {
      const pull = open.get(number);
      const now = pull ? `${pull.head} ${pull.base}` : "closed";
      if (pull && pull.head === entry.prSha && pull.base === entry.prBaseBranch) continue;
      reported.set(number, now);
      if (previous?.reported.get(number) !== now) changedPulls.add(number);
    }
    this.states.set(key, { pulls: open, branches, reported });

    return [
      ...[...movedBranches].map((branch): HostChange => {
        const headSha = branches.get(branch) ?? undefined;
        return {
          type: "branch_moved",
          repo,
          branch,
          ...(headSha ? { headSha } : {}),
          pullRequests: [],
        };
      }),
      ...[...changedPulls]
        .sort((a, b) => a - b)
        .map((number): HostChange => ({ type: "pull_request_changed", repo, number })),
    ];
  }

  private async branchHead(
    client: ReturnType<GitHubApp["installation"]>,
    scope: string,
    base: { owner: string; repo: string },
    branch: string,
    report: ReconcileReport,
  ): Promise<string | null> {
    report.requests++;
    try {
      const answer = await this.conditional.getProjected(
        client,
        scope,
        "GET /repos/{owner}/{repo}/git/ref/{ref}",
        { ...base, ref: `heads/${branch}` },
        ({ data }) => {
          const sha = (data as { object?: { sha?: unknown } } | null)?.object?.sha;
          return typeof sha === "string" ? sha : null;
        },
      );
      if (!answer.changed) report.notModified++;
      return answer.data;
    } catch (error) {
      // The branch does not exist (deleted, or not yet created).
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }
}
