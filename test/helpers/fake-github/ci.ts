import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Actions, WorkflowRun, WorkflowRunConclusion } from "./actions.js";
import type { Checks } from "./checks.js";
import { git } from "./git.js";
import type { Account, CheckConclusion, CheckRun, FakeApp, Repository } from "./model.js";
import { matchesGlob } from "./patterns.js";
import type { WebhookHub } from "./webhooks.js";
import type { Actor, RefUpdate, World } from "./world.js";

/**
 * An Actions-like CI: per repository, workflows triggered by pushes to matching branches (e.g.
 * `trunk-merge/**`) and/or by pull request events (draft-PR testing). Each check checks the
 * commit out in a real git worktree and runs a shell command or a function there, or follows a
 * scripted outcome (pass, fail, flaky under the seed, never starting, stuck, cancelled, skipped,
 * slow), and reports as GitHub Actions does: a check run queued → in_progress → completed. A
 * workflow may instead report commit statuses, as a third-party CI does. Each triggered workflow
 * is a workflow run (actions.ts): in progress until its checks have completed, then completed
 * with `failure` if one failed (`cancelled`, `timed_out` likewise), else `success`; one with a
 * stuck check stays in progress.
 */

export type Outcome =
  | "pass"
  | "fail"
  | "cancelled"
  | "skipped"
  /** No check run appears at all (CI not triggered). */
  | "never-start"
  /** Queued forever. */
  | "stuck"
  /** Fails with this probability, under the fake's seed. */
  | { flaky: number }
  /** Takes this long, then the inner outcome (default pass). */
  | { slow: number; then?: Outcome };

export interface Checkout {
  dir: string;
  sha: string;
  /** The branch for a push, `refs/pull/N/merge`-like for a pull request. */
  ref: string;
  pullRequest: number | null;
}

export interface CheckDefinition {
  name: string;
  /** A shell command run in the checkout (exit 0: success), or a function of it. */
  run?:
    | string
    | ((checkout: Checkout) => Promise<boolean | CheckConclusion> | boolean | CheckConclusion);
  /** Scripted outcome (ignored when `run` is given, unless it is a `never-start`/`stuck`/`slow` wrapper). */
  outcome?: Outcome | ((checkout: Omit<Checkout, "dir">) => Outcome);
  /** Extra time the check takes before completing. */
  durationMs?: number;
  /** Give up after this long (conclusion `timed_out`). */
  timeoutMs?: number;
}

export interface Workflow {
  name: string;
  on: {
    /** Branch patterns whose pushes trigger it (`trunk-merge/**`). */
    push?: { branches: string[] };
    /** Pull request events (opened, synchronize, reopened, ready_for_review) on these bases. */
    pullRequest?: { branches?: string[]; includeDrafts?: boolean };
  };
  checks: CheckDefinition[];
  /** Report as check runs of an App (default GitHub Actions), or as commit statuses by a login. */
  reportAs?: { checkRunsOf: number } | { statusesBy: string };
}

export interface CiRun {
  repo: string;
  workflow: string;
  /** The workflow run this check is a job of (`GET …/actions/runs/{id}`). */
  workflowRunId: number;
  check: string;
  sha: string;
  ref: string;
  pullRequest: number | null;
  conclusion: CheckConclusion | null;
  checkRunId: number | null;
  startedAtMs: number;
  completedAtMs: number | null;
  output: string;
}

export class Ci {
  private readonly workflows = new Map<number, Workflow[]>();
  readonly runs: CiRun[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private readonly worktreeLock = new Map<number, Promise<unknown>>();
  private sequence = 0;

  constructor(
    private readonly world: World,
    private readonly checks: Checks,
    hooks: WebhookHub,
    private readonly actionsAppId: number,
    private readonly actions: Actions,
  ) {
    world.onRefUpdate((update) => {
      this.onPush(update);
    });
    hooks.onRepoEvent((event, repo, payload) => {
      if (event === "pull_request") this.onPullRequest(repo, payload);
    });
  }

  configure(repo: Repository, workflows: Workflow[]): void {
    this.workflows.set(repo.id, workflows);
  }

  /** Waits until every started check has completed (stuck ones excepted). */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private onPush(update: RefUpdate): void {
    if (!update.ref.startsWith("refs/heads/") || update.after === null) return;
    const branch = update.ref.slice("refs/heads/".length);
    for (const workflow of this.workflows.get(update.repo.id) ?? []) {
      const patterns = workflow.on.push?.branches;
      if (patterns === undefined || !patterns.some((p) => matchesGlob(p, branch))) continue;
      this.start(update.repo, workflow, update.after, branch, null, {
        headRepo: update.repo,
        headBranch: branch,
        event: "push",
      });
    }
  }

  private onPullRequest(repo: Repository, payload: Record<string, unknown>): void {
    const action = payload.action;
    if (!["opened", "synchronize", "reopened", "ready_for_review"].includes(String(action))) return;
    const pr = repo.pulls.get(Number(payload.number));
    if (pr === undefined || pr.state !== "open") return;
    for (const workflow of this.workflows.get(repo.id) ?? []) {
      const trigger = workflow.on.pullRequest;
      if (trigger === undefined) continue;
      if (pr.draft && trigger.includeDrafts === false) continue;
      if (
        trigger.branches !== undefined &&
        !trigger.branches.some((p) => matchesGlob(p, pr.baseRef))
      )
        continue;
      this.start(repo, workflow, pr.headSha, `refs/pull/${pr.number}/merge`, pr.number, {
        headRepo: pr.headRepo,
        headBranch: pr.headRef,
        event: "pull_request",
        actor: pr.user,
      });
    }
  }

  private start(
    repo: Repository,
    workflow: Workflow,
    sha: string,
    ref: string,
    pullRequest: number | null,
    trigger: Pick<WorkflowRun, "headRepo" | "headBranch" | "event"> & { actor?: Account },
  ): void {
    const workflowRun = this.actions.start(repo, {
      headSha: sha,
      headRepo: trigger.headRepo,
      headBranch: trigger.headBranch,
      event: trigger.event,
      workflowName: workflow.name,
      ...(trigger.actor !== undefined ? { actor: trigger.actor } : {}),
    });
    const runId = workflowRun.id;
    const jobs: Promise<CheckConclusion | "none" | "stuck">[] = [];
    for (const check of workflow.checks) {
      const promise = this.runCheck(repo, workflow, check, sha, ref, pullRequest, runId).catch(
        (error: unknown): "failure" => {
          this.runs.push({
            repo: `${repo.owner.login}/${repo.name}`,
            workflow: workflow.name,
            workflowRunId: runId,
            check: check.name,
            sha,
            ref,
            pullRequest,
            conclusion: null,
            checkRunId: null,
            startedAtMs: this.world.now(),
            completedAtMs: null,
            output: `fake CI error: ${error instanceof Error ? error.message : String(error)}`,
          });
          return "failure";
        },
      );
      jobs.push(promise);
      const tracked = promise.then(() => undefined);
      this.inFlight.add(tracked);
      void tracked.finally(() => this.inFlight.delete(tracked));
    }
    const finished = Promise.all(jobs).then((outcomes) => {
      if (outcomes.includes("stuck")) return;
      const done = outcomes.filter((o): o is CheckConclusion | "none" => o !== "stuck");
      this.actions.update(workflowRun, "completed", workflowConclusion(done));
    });
    this.inFlight.add(finished);
    void finished.finally(() => this.inFlight.delete(finished));
  }

  private reporter(
    repo: Repository,
    workflow: Workflow,
  ): { app: FakeApp; actor: Actor } | { statusesBy: Actor } {
    const report = workflow.reportAs;
    if (report !== undefined && "statusesBy" in report) {
      return { statusesBy: { kind: "user", account: this.world.account(report.statusesBy) } };
    }
    const app = this.world.app(report?.checkRunsOf ?? this.actionsAppId);
    const installation =
      [...this.world.installations.values()].find(
        (i) => i.app.id === app.id && i.account.id === repo.owner.id,
      ) ?? null;
    return { app, actor: { kind: "app", app, installation } };
  }

  private async runCheck(
    repo: Repository,
    workflow: Workflow,
    check: CheckDefinition,
    sha: string,
    ref: string,
    pullRequest: number | null,
    runId: number,
  ): Promise<CheckConclusion | "none" | "stuck"> {
    const outcome =
      typeof check.outcome === "function"
        ? check.outcome({ sha, ref, pullRequest })
        : check.outcome;
    if (outcome === "never-start") return "none";
    const record: CiRun = {
      repo: `${repo.owner.login}/${repo.name}`,
      workflow: workflow.name,
      workflowRunId: runId,
      check: check.name,
      sha,
      ref,
      pullRequest,
      conclusion: null,
      checkRunId: null,
      startedAtMs: this.world.now(),
      completedAtMs: null,
      output: "",
    };
    this.runs.push(record);
    const reporter = this.reporter(repo, workflow);
    const detailsUrl = `${this.world.urls.repoHtml(repo)}/actions/runs/${runId}/job/${this.runs.length}`;
    let run: CheckRun | null = null;
    if ("app" in reporter) {
      run = await this.checks.createRun(repo, reporter.app, reporter.actor, {
        name: check.name,
        headSha: sha,
        status: "queued",
        detailsUrl,
        externalId: `${workflow.name}/${runId}`,
      });
      record.checkRunId = run.id;
    } else {
      this.checks.createStatus(repo, reporter.statusesBy, {
        sha,
        state: "pending",
        context: check.name,
        description: "Running",
        targetUrl: detailsUrl,
      });
    }
    if (outcome === "stuck") return "stuck";
    if (run !== null && "app" in reporter) {
      await this.checks.updateRun(repo, run, reporter.actor, {
        status: "in_progress",
        startedAt: this.world.nowIso(),
      });
    }
    let conclusion = await this.decide(repo, check, outcome, sha, ref, pullRequest, record);
    if (check.durationMs !== undefined) await sleep(check.durationMs);
    if (check.timeoutMs !== undefined && this.world.now() - record.startedAtMs > check.timeoutMs)
      conclusion = "timed_out";
    record.conclusion = conclusion;
    record.completedAtMs = this.world.now();
    if (run !== null && "app" in reporter) {
      await this.checks.updateRun(repo, run, reporter.actor, {
        conclusion,
        output: {
          title: `${check.name}: ${conclusion}`,
          summary: record.output.slice(-2000) || conclusion,
          text: null,
        },
      });
    } else if ("statusesBy" in reporter) {
      const state =
        conclusion === "success" || conclusion === "skipped" || conclusion === "neutral"
          ? "success"
          : conclusion === "failure"
            ? "failure"
            : "error";
      this.checks.createStatus(repo, reporter.statusesBy, {
        sha,
        state,
        context: check.name,
        description: conclusion,
        targetUrl: detailsUrl,
      });
    }
    return conclusion;
  }

  private async decide(
    repo: Repository,
    check: CheckDefinition,
    outcome: Outcome | undefined,
    sha: string,
    ref: string,
    pullRequest: number | null,
    record: CiRun,
  ): Promise<CheckConclusion> {
    if (typeof outcome === "object" && "slow" in outcome) {
      await sleep(outcome.slow);
      return this.decide(
        repo,
        check,
        outcome.then ?? (check.run === undefined ? "pass" : undefined),
        sha,
        ref,
        pullRequest,
        record,
      );
    }
    if (check.run !== undefined) {
      return this.inCheckout(repo, sha, async (dir) => {
        const checkout = { dir, sha, ref, pullRequest };
        if (typeof check.run === "function") {
          const result = await check.run(checkout);
          return typeof result === "boolean" ? (result ? "success" : "failure") : result;
        }
        const { code, output } = await shell(
          check.run ?? "true",
          dir,
          {
            GITHUB_SHA: sha,
            GITHUB_REF: ref.startsWith("refs/") ? ref : `refs/heads/${ref}`,
            GITHUB_REPOSITORY: `${repo.owner.login}/${repo.name}`,
          },
          check.timeoutMs,
        );
        record.output = output;
        if (code === null) return "timed_out";
        return code === 0 ? "success" : "failure";
      });
    }
    if (outcome === undefined || outcome === "pass") return "success";
    if (outcome === "fail") return "failure";
    if (outcome === "cancelled" || outcome === "skipped") return outcome;
    if (typeof outcome === "object" && "flaky" in outcome)
      return this.world.random.chance(outcome.flaky) ? "failure" : "success";
    return "success";
  }

  /** A real git worktree of the commit for the duration of `body` (worktree changes are serialized per repository). */
  private async inCheckout<T>(
    repo: Repository,
    sha: string,
    body: (dir: string) => Promise<T>,
  ): Promise<T> {
    const dir = join(
      this.world.dataDir,
      "ci",
      `${repo.id}-${sha.slice(0, 12)}-${this.world.random.hex(8)}`,
    );
    mkdirSync(join(this.world.dataDir, "ci"), { recursive: true });
    await this.locked(repo, () =>
      git(repo.gitDir, ["worktree", "add", "--quiet", "--detach", dir, sha]),
    );
    try {
      return await body(dir);
    } finally {
      await this.locked(repo, () =>
        git(repo.gitDir, ["worktree", "remove", "--force", dir]).catch(() => undefined),
      );
      rmSync(dir, { recursive: true, force: true });
    }
  }

  private locked<T>(repo: Repository, action: () => Promise<T>): Promise<T> {
    const previous = this.worktreeLock.get(repo.id) ?? Promise.resolve();
    const next = previous.then(action, action);
    this.worktreeLock.set(
      repo.id,
      next.catch(() => undefined),
    );
    return next;
  }
}

/** A workflow run's conclusion from its jobs': the first failing kind, else success. */
function workflowConclusion(outcomes: (CheckConclusion | "none")[]): WorkflowRunConclusion {
  for (const bad of ["failure", "timed_out", "cancelled"] as const) {
    if (outcomes.includes(bad)) return bad;
  }
  return "success";
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

function shell(
  command: string,
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], {
      cwd,
      env: { ...process.env, CI: "true", GITHUB_ACTIONS: "true", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const append = (chunk: Buffer): void => {
      output = (output + chunk.toString("utf8")).slice(-20_000);
    };
    child.stdout.on("data", append);
    child.stderr.on("data", append);
    const timer =
      timeoutMs === undefined ? null : setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      resolve({ code: signal !== null ? null : code, output });
    });
  });
}
