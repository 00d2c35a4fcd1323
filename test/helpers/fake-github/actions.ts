import type { AppAuth } from "./app-auth.js";
import { notFound, type HttpServer } from "./http.js";
import type { Account, Repository } from "./model.js";
import * as objects from "./objects.js";
import type { Schema } from "./objects.js";
import type { World } from "./world.js";

/**
 * GitHub Actions' workflow runs: what `GET /repos/{o}/{r}/actions/runs/{run_id}` answers. A run
 * belongs to the repository whose workflow ran (for a pull request from a fork: the base
 * repository) and names the commit and repository it ran on (`head_sha`, `head_repository`: the
 * fork). As on GitHub, `pull_requests` lists only pull requests whose head is in the run's own
 * repository: it is empty for a pull request from a fork. Runs are made by the Actions-like CI
 * (one per triggered workflow) or directly by a test (`FakeGitHub.startWorkflowRun`).
 */

export type WorkflowRunStatus = "queued" | "in_progress" | "completed";
export type WorkflowRunConclusion =
  | "success"
  | "failure"
  | "cancelled"
  | "skipped"
  | "timed_out"
  | "neutral"
  | "action_required"
  | "stale";

export interface WorkflowRun {
  id: number;
  repo: Repository;
  /** The repository the commit comes from: the fork, for a pull request from one. */
  headRepo: Repository;
  headSha: string;
  headBranch: string | null;
  /** `push`, `pull_request`, `pull_request_target`, `workflow_dispatch`, … */
  event: string;
  workflowName: string;
  workflowId: number;
  runNumber: number;
  status: WorkflowRunStatus;
  conclusion: WorkflowRunConclusion | null;
  actor: Account;
  createdAt: string;
  updatedAt: string;
}

export interface WorkflowRunInput {
  headSha: string;
  /** Default: the run's repository. */
  headRepo?: Repository;
  headBranch?: string | null;
  event?: string;
  workflowName?: string;
  status?: WorkflowRunStatus;
  actor?: Account;
}

export class Actions {
  readonly runs = new Map<number, WorkflowRun>();
  private readonly workflowIds = new Map<string, number>();
  private readonly runNumbers = new Map<number, number>();

  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
  ) {}

  start(repo: Repository, input: WorkflowRunInput): WorkflowRun {
    const workflowName = input.workflowName ?? "CI";
    const key = `${repo.id}/${workflowName}`;
    let workflowId = this.workflowIds.get(key);
    if (workflowId === undefined) {
      workflowId = this.world.nextId("workflow");
      this.workflowIds.set(key, workflowId);
    }
    const runNumber = (this.runNumbers.get(workflowId) ?? 0) + 1;
    this.runNumbers.set(workflowId, runNumber);
    const now = this.world.nowIso();
    const run: WorkflowRun = {
      id: this.world.nextId("workflowRun"),
      repo,
      headRepo: input.headRepo ?? repo,
      headSha: input.headSha,
      headBranch: input.headBranch === undefined ? null : input.headBranch,
      event: input.event ?? "push",
      workflowName,
      workflowId,
      runNumber,
      status: input.status ?? "in_progress",
      conclusion: null,
      actor: input.actor ?? repo.owner,
      createdAt: now,
      updatedAt: now,
    };
    this.runs.set(run.id, run);
    return run;
  }

  run(id: number): WorkflowRun {
    const run = this.runs.get(id);
    if (run === undefined) throw new Error(`no workflow run ${id}`);
    return run;
  }

  /** Moves a run on: `in_progress`, or `completed` with its conclusion. */
  update(
    run: WorkflowRun,
    status: WorkflowRunStatus,
    conclusion: WorkflowRunConclusion | null = null,
  ): void {
    if (status === "completed" && conclusion === null) {
      throw new Error("a completed workflow run needs a conclusion");
    }
    run.status = status;
    run.conclusion = status === "completed" ? conclusion : null;
    run.updatedAt = this.world.nowIso();
  }

  async workflowRunObject(run: WorkflowRun): Promise<Schema<"workflow-run">> {
    const urls = this.world.urls;
    const api = `${urls.repo(run.repo)}/actions/runs/${run.id}`;
    const commit = await this.headCommit(run);
    const actor = objects.simpleUser(urls, run.actor);
    return {
      id: run.id,
      name: run.workflowName,
      node_id: Buffer.from(`010:WorkflowRun${run.id}`).toString("base64"),
      check_suite_id: run.id,
      check_suite_node_id: Buffer.from(`010:CheckSuite${run.id}`).toString("base64"),
      head_branch: run.headBranch,
      head_sha: run.headSha,
      path: `.github/workflows/${run.workflowName.toLowerCase().replace(/[^a-z0-9]+/g, "-")}.yml`,
      display_title: run.workflowName,
      run_number: run.runNumber,
      run_attempt: 1,
      referenced_workflows: [],
      event: run.event,
      status: run.status,
      conclusion: run.conclusion,
      workflow_id: run.workflowId,
      url: api,
      html_url: `${urls.repoHtml(run.repo)}/actions/runs/${run.id}`,
      pull_requests: this.pullRequestsOf(run),
      created_at: run.createdAt,
      updated_at: run.updatedAt,
      actor,
      triggering_actor: actor,
      run_started_at: run.createdAt,
      jobs_url: `${api}/jobs`,
      logs_url: `${api}/logs`,
      check_suite_url: `${urls.repo(run.repo)}/check-suites/${run.id}`,
      artifacts_url: `${api}/artifacts`,
      cancel_url: `${api}/cancel`,
      rerun_url: `${api}/rerun`,
      previous_attempt_url: null,
      workflow_url: `${urls.repo(run.repo)}/actions/workflows/${run.workflowId}`,
      head_commit: commit,
      repository: objects.minimalRepository(urls, run.repo),
      head_repository: objects.minimalRepository(urls, run.headRepo),
      head_repository_id: run.headRepo.id,
    };
  }

  /** The head commit as the run names it (null when neither repository has it). */
  private async headCommit(run: WorkflowRun): Promise<Schema<"nullable-simple-commit">> {
    for (const repo of [run.headRepo, run.repo]) {
      const git = this.world.gitOf(repo);
      if ((await git.resolveCommit(run.headSha)) !== run.headSha) continue;
      const c = await git.readCommit(run.headSha);
      return {
        id: c.sha,
        tree_id: c.tree,
        message: c.message.replace(/\n$/, ""),
        timestamp: c.committer.date,
        author: { name: c.author.name, email: c.author.email },
        committer: { name: c.committer.name, email: c.committer.email },
      };
    }
    return null;
  }

  /** Open pull requests of the run's repository whose head is this run's commit in that same
   * repository (GitHub leaves pull requests from forks out). */
  private pullRequestsOf(run: WorkflowRun): Schema<"pull-request-minimal">[] {
    const urls = this.world.urls;
    const repo = run.repo;
    return [...repo.pulls.values()]
      .filter(
        (pr) => pr.state === "open" && pr.headSha === run.headSha && pr.headRepo.id === repo.id,
      )
      .map((pr) => ({
        id: pr.id,
        number: pr.number,
        url: `${urls.repo(repo)}/pulls/${pr.number}`,
        head: {
          ref: pr.headRef,
          sha: pr.headSha,
          repo: { id: pr.headRepo.id, url: urls.repo(pr.headRepo), name: pr.headRepo.name },
        },
        base: {
          ref: pr.baseRef,
          sha: pr.baseSha,
          repo: { id: repo.id, url: urls.repo(repo), name: repo.name },
        },
      }));
  }

  register(server: HttpServer): void {
    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/actions/runs/{run_id}",
      operationId: "actions/get-workflow-run",
      auth: "token",
      handler: async (ctx) => {
        const repo = this.world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["actions", "read"]);
        const id = ctx.params.run_id ?? "";
        const run = /^\d+$/.test(id) ? this.runs.get(Number(id)) : undefined;
        if (run === undefined || run.repo.id !== repo.id) throw notFound();
        return { status: 200, body: await this.workflowRunObject(run) };
      },
    });
  }
}
