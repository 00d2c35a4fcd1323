/**
 * What GitHub reports on a tested commit: its check runs (latest of each), and its commit
 * statuses where they can change the verdict, remembering per repository whether it has shown
 * any statuses at all.
 */
import type { GitHubApp } from "./client.js";
import { checkRunConclusion, passes, statusConclusion, type Observation } from "./ci-judge.js";
import type { GitHubRepositoryAccess } from "./repositories.js";
import { checkCounts, type RequiredCheck } from "./required-checks.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/**
 * Why a run is read: its start (nothing has finished yet, unless a webhook came first), a check
 * run or suite that completed, a status that changed, or the poll.
 */
export type ReadCause = "start" | "checks" | "statuses" | "poll";

interface CheckRunsPage {
  total_count: number;
  check_runs: {
    name: string;
    status: string;
    conclusion: string | null;
    app?: { id: number } | null;
    details_url?: string | null;
    html_url?: string | null;
  }[];
}

interface CombinedStatus {
  total_count: number;
  statuses: { context: string; state: string; target_url?: string | null }[];
}

export class GitHubCommitChecks {
  /**
   * Per repository, whether it has shown commit statuses (a `status` webhook, or a read that
   * found some): true, or false once a read found none. Until it has, statuses are read only
   * where a required check has no check run.
   */
  private readonly statusesSeen = new BoundedMap<string, boolean>(4096);
  /**
   * Per commit, its statuses as last read (or, before any read, the `pending` ones its webhooks
   * named): every status that concludes comes with a webhook of its own, which reads them again,
   * so a read for another reason (a check run completed) takes these instead of asking GitHub.
   * The poll reads them whatever (a lost webhook).
   */
  private readonly statusesKnown = new BoundedMap<string, Observation[]>(1024);
  /** Per commit, the contexts a webhook said concluded (a late `pending` of one is no news). */
  private readonly concluded = new BoundedMap<string, Set<string>>(1024);
  /**
   * Per commit, its check runs as last read, brought up to date by `check_run.completed`
   * webhooks (GitHub's signed word): a completed check run is taken from its webhook, not read
   * again. The start of a run and the poll read them whatever (a lost webhook).
   */
  private readonly runsKnown = new BoundedMap<string, Observation[]>(1024);
  /** Commits whose `statusesKnown` came from a read (complete then), not only from webhooks. */
  private readonly statusesRead = new BoundedMap<string, true>(1024);

  constructor(private readonly app: Pick<GitHubApp, "conditionalGet">) {}

  /** A `status` webhook: the repository has shown commit statuses. */
  statusesShown(repo: { owner: string; name: string }): void {
    this.statusesSeen.set(repoKey(repo), true);
  }

  /**
   * A `pending` status webhook: until the commit's statuses are read, this one is known to be
   * running (a status read before it, or a context already known, is left as it is: the webhook
   * may come after the status concluded).
   */
  statusPending(
    repo: { owner: string; name: string },
    sha: string,
    status: { context: string; targetUrl: string | null },
  ): void {
    this.statusesShown(repo);
    const key = commitKey(repo, sha);
    if (this.concluded.get(key)?.has(status.context) === true) return;
    const known = this.statusesKnown.get(key) ?? [];
    if (known.some((o) => o.name === status.context)) return;
    this.statusesKnown.set(key, [
      ...known,
      {
        name: status.context,
        appId: null,
        kind: "status",
        conclusion: undefined,
        url: status.targetUrl ?? undefined,
      },
    ]);
  }

  /**
   * A status concluded on `sha` (a webhook): taken into the statuses read before, if they were;
   * else they are read at the next read.
   */
  statusConcluded(
    repo: { owner: string; name: string },
    sha: string,
    status: { context: string; state: string; targetUrl: string | null },
  ): void {
    this.statusesShown(repo);
    const key = commitKey(repo, sha);
    const known = this.statusesRead.get(key) ? this.statusesKnown.get(key) : undefined;
    if (known === undefined) this.statusesKnown.delete(key);
    else {
      this.statusesKnown.set(key, [
        ...known.filter((o) => o.name !== status.context),
        {
          name: status.context,
          appId: null,
          kind: "status",
          conclusion: statusConclusion(status.state),
          url: status.targetUrl ?? undefined,
        },
      ]);
    }
    const contexts = this.concluded.get(key) ?? new Set<string>();
    contexts.add(status.context);
    this.concluded.set(key, contexts);
  }

  /**
   * A commit just pushed, of which no webhook told anything yet: it has no completed check run
   * (each that completes comes with a webhook, taken in as it comes; the poll reads the commit,
   * should one be lost). Its statuses are read when they can decide: a status of a required name
   * must pass too, and its webhook may come after a check run's.
   */
  nothingYet(repo: { owner: string; name: string }, sha: string): void {
    const key = commitKey(repo, sha);
    if (this.runsKnown.get(key) === undefined) this.runsKnown.set(key, []);
  }

  /** A check run completed on `sha` (a webhook): taken into the check runs read before, if any. */
  checkRunCompleted(
    repo: { owner: string; name: string },
    sha: string,
    run: { name: string; appId: number | null; conclusion: string | null; url: string | null },
  ): void {
    const key = commitKey(repo, sha);
    const known = this.runsKnown.get(key);
    if (known === undefined) return;
    this.runsKnown.set(key, [
      ...known.filter((o) => !(o.name === run.name && o.appId === run.appId)),
      {
        name: run.name,
        appId: run.appId,
        kind: "check_run",
        conclusion: checkRunConclusion(run.conclusion ?? ""),
        url: run.url ?? undefined,
      },
    ]);
  }

  /**
   * The commit's check runs, and its statuses when they can matter: on a status webhook and the
   * poll, and whenever the check runs alone leave no required check running or failed (a status
   * of a required name must pass too, and a required check may be a status only). While a
   * required check run is still running, or one failed, the statuses cannot decide.
   */
  async observe(
    access: GitHubRepositoryAccess,
    sha: string,
    required: readonly RequiredCheck[],
    cause: ReadCause,
  ): Promise<Observation[]> {
    const commit = commitKey(access, sha);
    // Check runs change with a webhook of theirs, which brings the change; the poll reads anyway.
    const runsKnown =
      cause === "start" || cause === "poll" ? undefined : this.runsKnown.get(commit);
    const runs = runsKnown ?? (await this.readCheckRuns(access, sha));
    if (runsKnown === undefined) this.runsKnown.set(commit, runs);
    const key = repoKey(access);
    if (!this.statusesMatter(required, runs, cause, this.statusesSeen.get(key))) return runs;
    const known = this.statusesKnown.get(commit);
    // Statuses change with a webhook of theirs: a concluded one is taken into those read before
    // (a `pending` one read or not, changes nothing); the poll reads anyway.
    if (
      known !== undefined &&
      cause !== "poll" &&
      (cause !== "statuses" || this.statusesRead.get(commit) === true)
    ) {
      return [...runs, ...known];
    }
    const statuses = await this.readStatuses(access, sha);
    this.statusesKnown.set(commit, statuses);
    this.statusesRead.set(commit, true);
    if (statuses.length > 0) this.statusesSeen.set(key, true);
    else if (this.statusesSeen.get(key) === undefined) this.statusesSeen.set(key, false);
    return [...runs, ...statuses];
  }

  /**
   * Whether the commit's statuses can change the verdict: a status never meets a check pinned
   * to an App; while a required check run runs, or after one failed, they cannot decide; when
   * every required check has its check runs, they matter only in a repository that has shown
   * statuses (or not been read yet: the first read learns it). A status webhook and the poll
   * read them whatever.
   */
  private statusesMatter(
    required: readonly RequiredCheck[],
    runs: readonly Observation[],
    cause: ReadCause,
    seen: boolean | undefined,
  ): boolean {
    if (!required.some((r) => r.appId === null)) return false;
    if (cause === "statuses" || cause === "poll") return true;
    let running = false;
    let uncovered = false;
    for (const requirement of required) {
      const matching = runs.filter((run) => checkCounts(requirement, run.name, run.appId));
      if (matching.length === 0) uncovered = true;
      for (const run of matching) {
        if (run.conclusion === undefined) running = true;
        else if (!passes(run.conclusion)) return false;
      }
    }
    if (running) return false;
    return uncovered || seen !== false;
  }

  private async readCheckRuns(access: GitHubRepositoryAccess, sha: string): Promise<Observation[]> {
    const where = { owner: access.owner, repo: access.name, ref: sha };
    const runsRoute = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs";
    const first = await this.app.conditionalGet<CheckRunsPage>(access.installationId, runsRoute, {
      ...where,
      filter: "latest",
      per_page: 100,
    });
    const checkRuns = [...first.data.check_runs];
    for (let page = 2; checkRuns.length < first.data.total_count && page <= 10; page++) {
      const more = await access.client.request(runsRoute, {
        ...where,
        filter: "latest",
        per_page: 100,
        page,
      });
      const found = (more.data as CheckRunsPage).check_runs;
      if (found.length === 0) break;
      checkRuns.push(...found);
    }
    return checkRuns.map((run): Observation => ({
      name: run.name,
      appId: run.app?.id ?? null,
      kind: "check_run",
      conclusion: run.status === "completed" ? checkRunConclusion(run.conclusion ?? "") : undefined,
      url: run.details_url ?? run.html_url ?? undefined,
    }));
  }

  private async readStatuses(access: GitHubRepositoryAccess, sha: string): Promise<Observation[]> {
    const where = { owner: access.owner, repo: access.name, ref: sha };
    const statusRoute = "GET /repos/{owner}/{repo}/commits/{ref}/status";
    const combined = await this.app.conditionalGet<CombinedStatus>(
      access.installationId,
      statusRoute,
      { ...where, per_page: 100 },
    );
    const statuses = [...combined.data.statuses];
    for (let page = 2; statuses.length < combined.data.total_count && page <= 10; page++) {
      const more = await access.client.request(statusRoute, { ...where, per_page: 100, page });
      const found = (more.data as CombinedStatus).statuses;
      if (found.length === 0) break;
      statuses.push(...found);
    }
    return statuses.map((status): Observation => ({
      name: status.context,
      appId: null,
      kind: "status",
      conclusion: statusConclusion(status.state),
      url: status.target_url ?? undefined,
    }));
  }
}

function repoKey(repo: { owner: string; name: string }): string {
  return `${repo.owner}/${repo.name}`.toLowerCase();
}

function commitKey(repo: { owner: string; name: string }, sha: string): string {
  return `${repoKey(repo)}@${sha}`;
}
