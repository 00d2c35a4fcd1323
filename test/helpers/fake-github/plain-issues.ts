import type { AppAuth } from "./app-auth.js";
import {
  GitHubError,
  notFound,
  pageOf,
  validationFailed,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import type { Issues } from "./issues.js";
import type { Account, Issue, Label, PullRequest, Repository } from "./model.js";
import * as objects from "./objects.js";
import type { Schema } from "./objects.js";
import type { SchemaGuard } from "./openapi-guard.js";
import type { Pulls } from "./pulls.js";
import type { WebhookHub } from "./webhooks.js";
import { actorAccount, type Actor, type World } from "./world.js";

/**
 * Issues that are not pull requests, as a ticket tracker uses them: `POST /repos/{o}/{r}/issues`
 * (labels and assignees set only with push access and silently dropped without; an assignee who
 * cannot be assigned refuses the whole issue with 422, as GitHub does), the repository's issue
 * list (pull requests included, with their `pull_request` key, as GitHub lists them), `GET
 * …/issues/{n}` for both, and closing or reopening from the web page (`gh.closeIssue`). Numbers
 * are shared with pull requests. A repository with issues turned off answers 410. Requests are
 * checked against GitHub's description of the operation when the fake validates.
 */

const TITLE_MAX = 256;
const BODY_MAX = 65_536;
const ASSIGNABLE = new Set(["admin", "maintain", "write", "triage"]);
const DISABLED = "Issues are disabled for this repo";

export class PlainIssues {
  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
    private readonly pulls: Pulls,
    private readonly issues: Issues,
    private readonly hooks: WebhookHub,
    private readonly guard: SchemaGuard | null,
  ) {}

  issueObject(issue: Issue): Schema<"issue"> {
    return this.issues.issueObject(issue);
  }

  // ---- operations -------------------------------------------------------------------------------

  private emit(issue: Issue, action: string, actor: Actor): void {
    this.hooks.emitForRepo("issues", issue.repo, actor, {
      action,
      issue: this.issueObject(issue),
    });
  }

  /** Whether `actor` has push access (labels and assignees of a new issue need it). */
  private pushes(repo: Repository, actor: Actor): boolean {
    if (actor.kind === "app") return true;
    const role = this.world.roleOf(repo, actor.account);
    return role === "admin" || role === "maintain" || role === "write";
  }

  private assignable(repo: Repository, login: string): Account | undefined {
    const account = this.world.findAccount(login);
    if (account?.type !== "User") return undefined;
    const role = this.world.roleOf(repo, account);
    return role !== undefined && ASSIGNABLE.has(role) ? account : undefined;
  }

  private labelsOf(repo: Repository, actor: Actor, names: string[]): Label[] {
    const labels: Label[] = [];
    for (const name of names) {
      const label = this.issues.labelNamed(repo, name, actor);
      if (!labels.some((l) => l.id === label.id)) labels.push(label);
    }
    return labels;
  }

  create(
    repo: Repository,
    actor: Actor,
    input: { title: string; body: string | null; labels: string[]; assignees: string[] },
  ): Issue {
    if (!repo.settings.hasIssues) throw new GitHubError(410, DISABLED);
    if (input.title.trim() === "") {
      throw validationFailed("Validation Failed", [
        { resource: "Issue", field: "title", code: "missing_field" },
      ]);
    }
    if (input.title.length > TITLE_MAX) {
      throw validationFailed("Validation Failed", [
        {
          resource: "Issue",
          field: "title",
          code: "custom",
          message: `title is too long (maximum is ${TITLE_MAX} characters)`,
        },
      ]);
    }
    if (input.body !== null && input.body.length > BODY_MAX) {
      throw validationFailed("Validation Failed", [
        {
          resource: "Issue",
          field: "body",
          code: "custom",
          message: `body is too long (maximum is ${BODY_MAX} characters)`,
        },
      ]);
    }
    const pushes = this.pushes(repo, actor);
    const assignees: Account[] = [];
    if (pushes) {
      for (const login of input.assignees) {
        const account = this.assignable(repo, login);
        if (account === undefined) {
          throw new GitHubError(422, "Validation Failed", {
            errors: [{ value: login, resource: "Issue", field: "assignees", code: "invalid" }],
          });
        }
        if (!assignees.some((a) => a.id === account.id)) assignees.push(account);
      }
    }
    const id = this.world.nextId("issue");
    const now = this.world.nowIso();
    const issue: Issue = {
      id,
      nodeId: objects.nodeId("Issue", id),
      number: repo.nextIssueNumber++,
      repo,
      user: actorAccount(actor),
      app: actor.kind === "app" ? actor.app : null,
      title: input.title,
      body: input.body,
      state: "open",
      stateReason: null,
      labels: pushes ? this.labelsOf(repo, actor, input.labels) : [],
      assignees,
      createdAt: now,
      updatedAt: now,
      closedAt: null,
      closedBy: null,
    };
    repo.issues.set(issue.number, issue);
    this.emit(issue, "opened", actor);
    return issue;
  }

  close(issue: Issue, actor: Actor, reason: "completed" | "not_planned"): void {
    if (issue.state === "closed") return;
    const now = this.world.nowIso();
    issue.state = "closed";
    issue.stateReason = reason;
    issue.closedAt = now;
    issue.closedBy = actorAccount(actor);
    issue.updatedAt = now;
    this.emit(issue, "closed", actor);
  }

  reopen(issue: Issue, actor: Actor): void {
    if (issue.state === "open") return;
    issue.state = "open";
    issue.stateReason = "reopened";
    issue.closedAt = null;
    issue.closedBy = null;
    issue.updatedAt = this.world.nowIso();
    this.emit(issue, "reopened", actor);
  }

  issue(repo: Repository, number: number | string | undefined): Issue {
    const issue = repo.issues.get(Number(number));
    if (issue === undefined) throw notFound();
    return issue;
  }

  // ---- routes -----------------------------------------------------------------------------------

  /** 422 "Invalid request." with what GitHub's description refuses in the request. */
  private checkRequest(ctx: RequestContext, body: unknown): void {
    const problems = this.guard?.checkRequest(ctx.route.operationId, ctx.query, body) ?? [];
    if (problems.length > 0) {
      throw validationFailed(`Invalid request.\n\n${problems.join("\n")}`);
    }
  }

  register(server: HttpServer): void {
    const world = this.world;
    const access = (ctx: RequestContext, level: "read" | "write") => {
      const repo = world.repoOf(ctx.params);
      return { repo, actor: this.auth.repoAccess(ctx, repo, ["issues", level]) };
    };

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/issues",
      operationId: "issues/create",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = access(ctx, "write");
        this.checkRequest(ctx, ctx.body);
        const { title, body, labels, assignees } = ctx.body;
        const nameOf = (l: unknown): string => {
          if (typeof l === "string") return l;
          const name = typeof l === "object" && l !== null ? (l as { name?: unknown }).name : "";
          return typeof name === "string" ? name : "";
        };
        const names = Array.isArray(labels) ? labels.map(nameOf) : [];
        const issue = this.create(repo, actor, {
          title: typeof title === "number" ? String(title) : typeof title === "string" ? title : "",
          body: typeof body === "string" ? body : null,
          labels: names.filter((n) => n !== ""),
          assignees: Array.isArray(assignees) ? (assignees as string[]) : [],
        });
        return {
          status: 201,
          body: this.issueObject(issue),
          headers: { location: `${world.urls.repo(repo)}/issues/${issue.number}` },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/issues",
      operationId: "issues/list-for-repo",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        this.checkRequest(ctx, undefined);
        if (!repo.settings.hasIssues) throw new GitHubError(410, DISABLED);
        const items = this.list(repo, ctx.query);
        const page = pageOf(ctx, items, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((item) => this.issues.issueObject(item)),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/issues/{issue_number}",
      operationId: "issues/get",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        this.checkRequest(ctx, undefined);
        const plain = repo.issues.get(Number(ctx.params.issue_number));
        if (plain !== undefined) {
          if (!repo.settings.hasIssues) throw new GitHubError(410, DISABLED);
          return { status: 200, body: this.issueObject(plain) };
        }
        return {
          status: 200,
          body: this.issues.issueObject(this.pulls.pull(repo, ctx.params.issue_number)),
        };
      },
    });
  }

  /** Issues and pull requests as GitHub lists them: `state`, `labels` (all of them), `creator`, `since`, `sort`, `direction`. */
  private list(repo: Repository, query: URLSearchParams): (Issue | PullRequest)[] {
    const state = query.get("state") ?? "open";
    const wanted = (query.get("labels") ?? "")
      .split(",")
      .map((l) => l.trim().toLowerCase())
      .filter((l) => l !== "");
    const creator = query.get("creator")?.toLowerCase();
    const since = query.get("since");
    const sort = query.get("sort") ?? "created";
    const ascending = query.get("direction") === "asc";
    const all: (Issue | PullRequest)[] = [...repo.issues.values(), ...repo.pulls.values()];
    const chosen = all.filter(
      (item) =>
        (state === "all" || item.state === state) &&
        wanted.every((name) => item.labels.some((l) => l.name.toLowerCase() === name)) &&
        (creator === undefined || item.user.login.toLowerCase() === creator) &&
        (since === null || item.updatedAt >= since),
    );
    const key = (item: Issue | PullRequest): string =>
      sort === "updated" ? item.updatedAt : item.createdAt;
    chosen.sort((a, b) => {
      const order = key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.number - b.number;
      return ascending ? order : -order;
    });
    return chosen;
  }
}
