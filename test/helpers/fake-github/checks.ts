import type { AppAuth } from "./app-auth.js";
import {
  GitHubError,
  notFound,
  optionalString,
  pageOf,
  requireString,
  validationFailed,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import type {
  CheckConclusion,
  CheckOutput,
  CheckRun,
  CheckStatus,
  CheckSuite,
  CommitStatus,
  FakeApp,
  Repository,
} from "./model.js";
import * as objects from "./objects.js";
import type { Schema, Urls } from "./objects.js";
import type { WebhookHub } from "./webhooks.js";
import { actorAccount, type Actor, type World } from "./world.js";

/**
 * Checks and commit statuses: check runs in per-App check suites (`check_run` and
 * `check_suite.completed` webhooks), `commits/{ref}/check-runs` with `filter=latest`,
 * `check_name`, `app_id` and paging, commit statuses and the combined status as GitHub computes
 * it. The CI and the protection rules read the same records.
 */

const STATUSES: CheckStatus[] = [
  "queued",
  "in_progress",
  "completed",
  "waiting",
  "requested",
  "pending",
];
const CONCLUSIONS: CheckConclusion[] = [
  "success",
  "failure",
  "neutral",
  "cancelled",
  "skipped",
  "timed_out",
  "action_required",
  "stale",
];

export interface CheckRunInput {
  name: string;
  headSha: string;
  status?: CheckStatus;
  conclusion?: CheckConclusion | null;
  startedAt?: string | null;
  completedAt?: string | null;
  detailsUrl?: string | null;
  externalId?: string | null;
  output?: Partial<CheckOutput>;
  headBranch?: string | null;
}

/** The latest check run per (App, name) on a commit: what `filter=latest` and protection read. */
export function latestRuns(repo: Repository, sha: string): CheckRun[] {
  const latest = new Map<string, CheckRun>();
  for (const run of [...repo.checkRuns.values()].sort((a, b) => a.id - b.id)) {
    if (run.headSha !== sha) continue;
    latest.set(`${run.suite.app.id}\u0000${run.name}`, run);
  }
  return [...latest.values()];
}

/** The latest status per context on a commit, newest first (as GitHub lists them). */
export function latestStatuses(repo: Repository, sha: string): CommitStatus[] {
  const latest = new Map<string, CommitStatus>();
  for (const status of repo.statuses) if (status.sha === sha) latest.set(status.context, status);
  return [...latest.values()].sort((a, b) => b.id - a.id);
}

/** GitHub's combined state: failure on any error/failure, pending when none or any pending. */
export function combinedState(statuses: CommitStatus[]): "failure" | "pending" | "success" {
  if (statuses.some((s) => s.state === "error" || s.state === "failure")) return "failure";
  if (statuses.length === 0 || statuses.some((s) => s.state === "pending")) return "pending";
  return "success";
}

export class Checks {
  private emissions: Promise<void> = Promise.resolve();
  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
    private readonly hooks: WebhookHub,
  ) {}

  // ---- representations ------------------------------------------------------------------------

  private pullRequestsFor(repo: Repository, sha: string): Schema<"pull-request-minimal">[] {
    const urls = this.world.urls;
    return [...repo.pulls.values()]
      .filter((pr) => pr.state === "open" && pr.headSha === sha && pr.headRepo.id === repo.id)
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

  checkRunObject(repo: Repository, run: CheckRun): Schema<"check-run"> {
    const urls = this.world.urls;
    const api = urls.repo(repo);
    return {
      id: run.id,
      node_id: run.nodeId,
      head_sha: run.headSha,
      external_id: run.externalId ?? "",
      url: `${api}/check-runs/${run.id}`,
      html_url: `${urls.repoHtml(repo)}/runs/${run.id}`,
      details_url: run.detailsUrl ?? `${urls.repoHtml(repo)}/runs/${run.id}`,
      status: run.status,
      conclusion: run.conclusion as Schema<"check-run">["conclusion"],
      started_at: run.startedAt,
      completed_at: run.completedAt,
      output: {
        title: run.output.title,
        summary: run.output.summary,
        text: run.output.text,
        annotations_count: 0,
        annotations_url: `${api}/check-runs/${run.id}/annotations`,
      },
      name: run.name,
      check_suite: { id: run.suite.id },
      app: objects.integration(urls, run.suite.app),
      pull_requests: this.pullRequestsFor(repo, run.headSha),
    };
  }

  private suiteState(
    repo: Repository,
    suite: CheckSuite,
  ): { status: CheckStatus; conclusion: CheckConclusion | null; runs: number } {
    const runs = latestRuns(repo, suite.headSha).filter((r) => r.suite.id === suite.id);
    if (runs.length === 0) return { status: "queued", conclusion: null, runs: 0 };
    if (runs.some((r) => r.status !== "completed")) {
      return {
        status: runs.some((r) => r.status === "in_progress") ? "in_progress" : "queued",
        conclusion: null,
        runs: runs.length,
      };
    }
    // GitHub's precedence when rolling runs up into a suite.
    const order: CheckConclusion[] = [
      "action_required",
      "cancelled",
      "timed_out",
      "failure",
      "neutral",
      "success",
      "skipped",
      "stale",
    ];
    const worst = order.find((c) => runs.some((r) => r.conclusion === c)) ?? "success";
    const conclusion =
      worst === "skipped" || worst === "stale"
        ? runs.every((r) => r.conclusion === "skipped")
          ? "skipped"
          : "success"
        : worst;
    return { status: "completed", conclusion, runs: runs.length };
  }

  async checkSuiteObject(repo: Repository, suite: CheckSuite): Promise<Schema<"check-suite">> {
    const urls = this.world.urls;
    const api = urls.repo(repo);
    const state = this.suiteState(repo, suite);
    const commit = await this.world.gitOf(repo).readCommit(suite.headSha);
    return {
      id: suite.id,
      node_id: suite.nodeId,
      head_branch: suite.headBranch,
      head_sha: suite.headSha,
      status: state.status,
      conclusion: state.conclusion,
      url: `${api}/check-suites/${suite.id}`,
      before: suite.before,
      after: suite.after,
      pull_requests: this.pullRequestsFor(repo, suite.headSha),
      app: objects.integration(urls, suite.app),
      repository: objects.minimalRepository(urls, repo),
      created_at: suite.createdAt,
      updated_at: suite.updatedAt,
      head_commit: {
        id: commit.sha,
        tree_id: commit.tree,
        message: commit.message,
        timestamp: commit.committer.date,
        author: { name: commit.author.name, email: commit.author.email },
        committer: { name: commit.committer.name, email: commit.committer.email },
      },
      latest_check_runs_count: state.runs,
      check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
      rerequestable: true,
      runs_rerequestable: true,
    };
  }

  statusObject(repo: Repository, status: CommitStatus): Schema<"status"> {
    const urls = this.world.urls;
    return {
      url: `${urls.repo(repo)}/statuses/${status.sha}`,
      avatar_url: `${urls.html}/avatars/u/${status.creator.id}?v=4`,
      id: status.id,
      node_id: status.nodeId,
      state: status.state,
      description: status.description,
      target_url: status.targetUrl,
      context: status.context,
      created_at: status.createdAt,
      updated_at: status.updatedAt,
      creator: objects.simpleUser(urls, status.creator),
    };
  }

  // ---- operations (the API and the CI share them) ----------------------------------------------

  private suiteFor(
    repo: Repository,
    app: FakeApp,
    sha: string,
    headBranch: string | null,
  ): CheckSuite {
    const existing = [...repo.checkSuites.values()].find(
      (s) => s.app.id === app.id && s.headSha === sha,
    );
    if (existing !== undefined) return existing;
    const id = this.world.nextId("suite");
    const now = this.world.nowIso();
    const suite: CheckSuite = {
      id,
      nodeId: objects.nodeId("CheckSuite", id),
      app,
      headSha: sha,
      headBranch,
      before: null,
      after: sha,
      createdAt: now,
      updatedAt: now,
      completedSent: false,
    };
    repo.checkSuites.set(id, suite);
    return suite;
  }

  /** The branch GitHub reports for a commit: one whose tip it is (none for a fork's commit). */
  private async branchOf(repo: Repository, sha: string): Promise<string | null> {
    const refs = await this.world.gitOf(repo).listRefs("refs/heads/");
    const hit = refs.find(([, s]) => s === sha);
    return hit === undefined ? null : hit[0].slice("refs/heads/".length);
  }

  async createRun(
    repo: Repository,
    app: FakeApp,
    actor: Actor,
    input: CheckRunInput,
  ): Promise<CheckRun> {
    const headBranch =
      input.headBranch !== undefined ? input.headBranch : await this.branchOf(repo, input.headSha);
    const suite = this.suiteFor(repo, app, input.headSha, headBranch);
    const id = this.world.nextId("run");
    const now = this.world.nowIso();
    const conclusion = input.conclusion ?? null;
    const status: CheckStatus = conclusion !== null ? "completed" : (input.status ?? "queued");
    const run: CheckRun = {
      id,
      nodeId: objects.nodeId("CheckRun", id),
      suite,
      name: input.name,
      headSha: input.headSha,
      status,
      conclusion,
      startedAt: input.startedAt ?? (status === "queued" ? null : now),
      completedAt: status === "completed" ? (input.completedAt ?? now) : null,
      detailsUrl: input.detailsUrl ?? null,
      externalId: input.externalId ?? null,
      output: {
        title: input.output?.title ?? null,
        summary: input.output?.summary ?? null,
        text: input.output?.text ?? null,
      },
    };
    if (run.startedAt === null) run.startedAt = now;
    repo.checkRuns.set(id, run);
    suite.completedSent = false;
    suite.updatedAt = now;
    this.emitRun(repo, run, "created", actor);
    if (run.status === "completed") this.afterCompletion(repo, run, actor);
    return run;
  }

  async updateRun(
    repo: Repository,
    run: CheckRun,
    actor: Actor,
    input: Partial<CheckRunInput>,
  ): Promise<CheckRun> {
    const wasCompleted = run.status === "completed";
    const now = this.world.nowIso();
    if (input.name !== undefined) run.name = input.name;
    if (input.detailsUrl !== undefined) run.detailsUrl = input.detailsUrl;
    if (input.externalId !== undefined) run.externalId = input.externalId;
    if (input.startedAt !== undefined) run.startedAt = input.startedAt;
    if (input.output !== undefined) run.output = { ...run.output, ...input.output };
    if (input.status !== undefined) run.status = input.status;
    if (input.conclusion !== undefined && input.conclusion !== null) {
      run.conclusion = input.conclusion;
      run.status = "completed";
    }
    if (run.status === "completed") run.completedAt = input.completedAt ?? run.completedAt ?? now;
    run.suite.updatedAt = now;
    await Promise.resolve();
    if (run.status === "completed" && !wasCompleted) {
      run.suite.completedSent = false;
      this.afterCompletion(repo, run, actor);
    }
    return run;
  }

  private afterCompletion(repo: Repository, run: CheckRun, actor: Actor): void {
    this.emitRun(repo, run, "completed", actor);
    const suite = run.suite;
    const state = this.suiteState(repo, suite);
    if (state.status === "completed" && !suite.completedSent) {
      suite.completedSent = true;
      this.inOrder(async () => {
        const object = await this.checkSuiteObject(repo, suite);
        this.hooks.emitForRepo("check_suite", repo, actor, {
          action: "completed",
          check_suite: object,
        });
      });
    }
  }

  private emitRun(repo: Repository, run: CheckRun, action: string, actor: Actor): void {
    const object = this.checkRunObject(repo, run);
    this.hooks.emitForRepo("check_run", repo, actor, {
      action,
      check_run: {
        ...object,
        check_suite: {
          id: run.suite.id,
          node_id: run.suite.nodeId,
          head_branch: run.suite.headBranch,
          head_sha: run.suite.headSha,
          status: this.suiteState(repo, run.suite).status,
          conclusion: this.suiteState(repo, run.suite).conclusion,
          url: `${this.world.urls.repo(repo)}/check-suites/${run.suite.id}`,
          before: run.suite.before,
          after: run.suite.after,
          pull_requests: object.pull_requests,
          app: objects.integration(this.world.urls, run.suite.app),
          created_at: run.suite.createdAt,
          updated_at: run.suite.updatedAt,
        },
      },
    });
  }

  createStatus(
    repo: Repository,
    actor: Actor,
    input: {
      sha: string;
      state: CommitStatus["state"];
      context?: string;
      description?: string | null;
      targetUrl?: string | null;
    },
  ): CommitStatus {
    const id = this.world.nextId("status");
    const now = this.world.nowIso();
    const status: CommitStatus = {
      id,
      nodeId: objects.nodeId("StatusContext", id),
      sha: input.sha,
      state: input.state,
      context: input.context ?? "default",
      description: input.description ?? null,
      targetUrl: input.targetUrl ?? null,
      creator: actorAccount(actor),
      app: actor.kind === "app" ? actor.app : null,
      createdAt: now,
      updatedAt: now,
    };
    repo.statuses.push(status);
    this.inOrder(() => this.emitStatus(repo, status, actor));
    return status;
  }

  /** Webhooks whose payload takes git reads leave in the order their changes happened. */
  private inOrder(emit: () => Promise<void>): void {
    this.emissions = this.emissions.then(emit).catch(() => undefined);
  }

  private async emitStatus(repo: Repository, status: CommitStatus, actor: Actor): Promise<void> {
    const urls = this.world.urls;
    const git = this.world.gitOf(repo);
    const commit = await git.readCommit(status.sha);
    const refs = await git.listRefs("refs/heads/");
    const branches = [];
    for (const [name, sha] of refs) {
      if (branches.length >= 10) break;
      if (await git.isAncestor(status.sha, sha)) {
        branches.push({
          name: name.slice("refs/heads/".length),
          commit: { sha, url: `${urls.repo(repo)}/commits/${sha}` },
          protected: false,
        });
      }
    }
    const api = urls.repo(repo);
    this.hooks.emitForRepo("status", repo, actor, {
      id: status.id,
      sha: status.sha,
      name: `${repo.owner.login}/${repo.name}`,
      target_url: status.targetUrl,
      avatar_url: `${urls.html}/avatars/u/${status.creator.id}?v=4`,
      context: status.context,
      description: status.description,
      state: status.state,
      commit: {
        sha: status.sha,
        node_id: objects.nodeId("Commit", parseInt(status.sha.slice(0, 7), 16)),
        commit: {
          author: {
            name: commit.author.name,
            email: commit.author.email,
            date: commit.author.date,
          },
          committer: {
            name: commit.committer.name,
            email: commit.committer.email,
            date: commit.committer.date,
          },
          message: commit.message,
          tree: { sha: commit.tree, url: `${api}/git/trees/${commit.tree}` },
          url: `${api}/git/commits/${commit.sha}`,
          comment_count: 0,
          verification: {
            verified: false,
            reason: "unsigned",
            signature: null,
            payload: null,
            verified_at: null,
          },
        },
        url: `${api}/commits/${commit.sha}`,
        html_url: `${urls.repoHtml(repo)}/commit/${commit.sha}`,
        comments_url: `${api}/commits/${commit.sha}/comments`,
        author: null,
        committer: null,
        parents: commit.parents.map((p) => ({
          sha: p,
          url: `${api}/commits/${p}`,
          html_url: `${urls.repoHtml(repo)}/commit/${p}`,
        })),
      },
      branches,
      created_at: status.createdAt,
      updated_at: status.updatedAt,
    });
  }

  // ---- routes ---------------------------------------------------------------------------------

  register(server: HttpServer): void {
    const world = this.world;
    const urls = (): Urls => world.urls;
    const appOf = (actor: Actor): FakeApp => {
      if (actor.kind !== "app")
        throw new GitHubError(403, "You must authenticate via a GitHub App.");
      return actor.app;
    };
    const resolve = async (repo: Repository, spec: string): Promise<string> => {
      const sha = await world.gitOf(repo).resolveCommit(spec);
      if (sha === null) throw validationFailed(`No commit found for SHA: ${spec}`);
      return sha;
    };
    const runInput = (ctx: RequestContext, creating: boolean): Partial<CheckRunInput> => {
      const body = ctx.body;
      const status = optionalString(body, "status");
      const conclusion = optionalString(body, "conclusion");
      if (status !== undefined && !STATUSES.includes(status as CheckStatus)) {
        throw validationFailed('Invalid request.\n\nInvalid value for "status".');
      }
      if (conclusion !== undefined && !CONCLUSIONS.includes(conclusion as CheckConclusion)) {
        throw validationFailed('Invalid request.\n\nInvalid value for "conclusion".');
      }
      if (status === "completed" && conclusion === undefined && creating) {
        throw validationFailed('Invalid request.\n\n"conclusion" wasn\'t supplied.');
      }
      const outputRaw = body.output;
      const output =
        typeof outputRaw === "object" && outputRaw !== null
          ? (outputRaw as Record<string, unknown>)
          : undefined;
      if (
        output !== undefined &&
        (typeof output.title !== "string" || typeof output.summary !== "string")
      ) {
        throw validationFailed('Invalid request.\n\n"title", "summary" weren\'t supplied.');
      }
      const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
      return {
        ...(status !== undefined ? { status: status as CheckStatus } : {}),
        ...(conclusion !== undefined ? { conclusion: conclusion as CheckConclusion } : {}),
        ...(optionalString(body, "details_url") !== undefined
          ? { detailsUrl: str(body.details_url) }
          : {}),
        ...(optionalString(body, "external_id") !== undefined
          ? { externalId: str(body.external_id) }
          : {}),
        ...(optionalString(body, "started_at") !== undefined
          ? { startedAt: str(body.started_at) }
          : {}),
        ...(optionalString(body, "completed_at") !== undefined
          ? { completedAt: str(body.completed_at) }
          : {}),
        ...(output !== undefined
          ? {
              output: {
                title: str(output.title),
                summary: str(output.summary),
                text: str(output.text),
              },
            }
          : {}),
        ...(optionalString(body, "name") !== undefined ? { name: str(body.name) ?? "" } : {}),
      };
    };
    const runOf = (repo: Repository, id: string | undefined): CheckRun => {
      const run = repo.checkRuns.get(Number(id));
      if (run === undefined) throw notFound();
      return run;
    };

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/check-runs",
      operationId: "checks/create",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        const actor = this.auth.repoAccess(ctx, repo, ["checks", "write"]);
        const app = appOf(actor);
        const name = requireString(ctx.body, "name", "CheckRun");
        const headSha = await resolve(repo, requireString(ctx.body, "head_sha", "CheckRun"));
        const run = await this.createRun(repo, app, actor, {
          ...runInput(ctx, true),
          name,
          headSha,
        });
        return { status: 201, body: this.checkRunObject(repo, run) };
      },
    });

    server.add({
      method: "PATCH",
      path: "/repos/{owner}/{repo}/check-runs/{check_run_id}",
      operationId: "checks/update",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        const actor = this.auth.repoAccess(ctx, repo, ["checks", "write"]);
        const app = appOf(actor);
        const run = runOf(repo, ctx.params.check_run_id);
        if (run.suite.app.id !== app.id)
          throw new GitHubError(
            403,
            "Invalid app_id `" +
              String(app.id) +
              "` - check run can only be modified by its creator.",
          );
        await this.updateRun(repo, run, actor, runInput(ctx, false));
        return { status: 200, body: this.checkRunObject(repo, run) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/check-runs/{check_run_id}",
      operationId: "checks/get",
      auth: "token",
      handler: (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["checks", "read"]);
        return {
          status: 200,
          body: this.checkRunObject(repo, runOf(repo, ctx.params.check_run_id)),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{ref+}/check-runs",
      operationId: "checks/list-for-ref",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["checks", "read"]);
        const sha = await resolve(repo, ctx.params.ref ?? "");
        const filter = ctx.query.get("filter") ?? "latest";
        let runs =
          filter === "all"
            ? [...repo.checkRuns.values()].filter((r) => r.headSha === sha)
            : latestRuns(repo, sha);
        const name = ctx.query.get("check_name");
        const status = ctx.query.get("status");
        const appId = ctx.query.get("app_id");
        if (name !== null) runs = runs.filter((r) => r.name === name);
        if (status !== null) runs = runs.filter((r) => r.status === status);
        if (appId !== null) runs = runs.filter((r) => String(r.suite.app.id) === appId);
        runs.sort((a, b) => b.id - a.id);
        const page = pageOf(ctx, runs, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: {
            total_count: runs.length,
            check_runs: page.items.map((r) => this.checkRunObject(repo, r)),
          },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{ref+}/check-suites",
      operationId: "checks/list-suites-for-ref",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["checks", "read"]);
        const sha = await resolve(repo, ctx.params.ref ?? "");
        let suites = [...repo.checkSuites.values()].filter((s) => s.headSha === sha);
        const appId = ctx.query.get("app_id");
        const name = ctx.query.get("check_name");
        if (appId !== null) suites = suites.filter((s) => String(s.app.id) === appId);
        if (name !== null)
          suites = suites.filter((s) =>
            [...repo.checkRuns.values()].some((r) => r.suite.id === s.id && r.name === name),
          );
        const page = pageOf(ctx, suites, world.urls.api);
        const items = [];
        for (const s of page.items) items.push(await this.checkSuiteObject(repo, s));
        return {
          status: 200,
          headers: page.headers,
          body: { total_count: suites.length, check_suites: items },
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/statuses/{sha}",
      operationId: "repos/create-commit-status",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        const actor = this.auth.repoAccess(ctx, repo, ["statuses", "write"]);
        const state = requireString(ctx.body, "state", "Status");
        if (!["error", "failure", "pending", "success"].includes(state)) {
          throw validationFailed("Validation Failed", [
            {
              resource: "Status",
              field: "state",
              code: "custom",
              message: "state is not included in the list",
            },
          ]);
        }
        const spec = ctx.params.sha ?? "";
        const sha = await world.gitOf(repo).resolveCommit(spec);
        if (sha === null) throw validationFailed(`No commit found for SHA: ${spec}`);
        const context = optionalString(ctx.body, "context") ?? "default";
        const same = repo.statuses.filter((s) => s.sha === sha && s.context === context).length;
        if (same >= 1000) {
          throw validationFailed("Validation Failed", [
            {
              resource: "Status",
              code: "custom",
              message: "This SHA and context has reached the maximum number of statuses.",
            },
          ]);
        }
        const status = this.createStatus(repo, actor, {
          sha,
          state: state as CommitStatus["state"],
          context,
          description: optionalString(ctx.body, "description") ?? null,
          targetUrl: optionalString(ctx.body, "target_url") ?? null,
        });
        return { status: 201, body: this.statusObject(repo, status) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{ref+}/status",
      operationId: "repos/get-combined-status-for-ref",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["statuses", "read"]);
        const spec = ctx.params.ref ?? "";
        const sha = await world.gitOf(repo).resolveCommit(spec);
        if (sha === null) throw new GitHubError(404, `No commit found for SHA: ${spec}`);
        const statuses = latestStatuses(repo, sha);
        const page = pageOf(ctx, statuses, world.urls.api, 100);
        const api = urls().repo(repo);
        return {
          status: 200,
          headers: page.headers,
          body: {
            state: combinedState(statuses),
            statuses: page.items.map((s) => {
              const simple: Partial<Schema<"status">> = this.statusObject(repo, s);
              delete simple.creator;
              return simple;
            }),
            sha,
            total_count: statuses.length,
            repository: objects.minimalRepository(urls(), repo),
            commit_url: `${api}/commits/${sha}`,
            url: `${api}/commits/${sha}/status`,
          },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{ref+}/statuses",
      operationId: "repos/list-commit-statuses-for-ref",
      auth: "token",
      handler: async (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["statuses", "read"]);
        const sha = await world.gitOf(repo).resolveCommit(ctx.params.ref ?? "");
        if (sha === null) throw notFound();
        const all = repo.statuses.filter((s) => s.sha === sha).sort((a, b) => b.id - a.id);
        const page = pageOf(ctx, all, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((s) => this.statusObject(repo, s)),
        };
      },
    });
  }
}
