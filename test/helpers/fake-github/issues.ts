import type { AppAuth } from "./app-auth.js";
import {
  GitHubError,
  notFound,
  pageOf,
  requireString,
  validationFailed,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import type {
  Account,
  Issue,
  IssueComment,
  Label,
  PullRequest,
  Reaction,
  Repository,
} from "./model.js";
import * as objects from "./objects.js";
import type { Schema } from "./objects.js";
import type { Pulls } from "./pulls.js";
import type { WebhookHub } from "./webhooks.js";
import { actorAccount, type Actor, type World } from "./world.js";

/**
 * The issues side of pull requests: comments (list, create, edit, delete) with their
 * `issue_comment` webhooks, reactions on comments, labels (unknown ones created, as GitHub does)
 * with `pull_request.labeled|unlabeled`, and the collaborator permission a queue checks before
 * obeying a comment command.
 */

const REACTIONS = ["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"];

export class Issues {
  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
    private readonly pulls: Pulls,
    private readonly hooks: WebhookHub,
  ) {}

  // ---- representations ------------------------------------------------------------------------

  labelObject(repo: Repository, label: Label): Schema<"label"> {
    return {
      id: label.id,
      node_id: label.nodeId,
      url: `${this.world.urls.repo(repo)}/labels/${encodeURIComponent(label.name)}`,
      name: label.name,
      description: label.description,
      color: label.color,
      default: label.default,
    };
  }

  private reactionRollup(repo: Repository, comment: IssueComment): Schema<"reaction-rollup"> {
    const count = (c: string): number => comment.reactions.filter((r) => r.content === c).length;
    return {
      url: `${this.world.urls.repo(repo)}/issues/comments/${comment.id}/reactions`,
      total_count: comment.reactions.length,
      "+1": count("+1"),
      "-1": count("-1"),
      laugh: count("laugh"),
      confused: count("confused"),
      heart: count("heart"),
      hooray: count("hooray"),
      eyes: count("eyes"),
      rocket: count("rocket"),
    };
  }

  commentObject(repo: Repository, comment: IssueComment): Schema<"issue-comment"> {
    const urls = this.world.urls;
    return {
      id: comment.id,
      node_id: comment.nodeId,
      url: `${urls.repo(repo)}/issues/comments/${comment.id}`,
      html_url: `${urls.repoHtml(repo)}/pull/${comment.issueNumber}#issuecomment-${comment.id}`,
      body: comment.body,
      user: objects.simpleUser(urls, comment.user),
      created_at: comment.createdAt,
      updated_at: comment.updatedAt,
      issue_url: `${urls.repo(repo)}/issues/${comment.issueNumber}`,
      author_association: this.pulls.authorAssociation(repo, comment.user),
      performed_via_github_app:
        comment.app === null ? null : objects.integration(urls, comment.app),
      reactions: this.reactionRollup(repo, comment),
    };
  }

  /**
   * An issue, or a pull request as an issue (what `issue_comment` payloads, `issues/{n}` and the
   * issue list carry): a pull request has `pull_request` and `draft`, an issue neither.
   */
  issueObject(item: PullRequest | Issue): Schema<"issue"> {
    const urls = this.world.urls;
    const repo = item.repo;
    const pull = "headRef" in item ? item : null;
    const api = `${urls.repo(repo)}/issues/${item.number}`;
    const html = `${urls.repoHtml(repo)}/${pull === null ? "issues" : "pull"}/${item.number}`;
    const comments = [...repo.comments.values()].filter(
      (c) => c.issueNumber === item.number,
    ).length;
    const assignees = pull === null ? (item as Issue).assignees : [];
    const plain = pull === null ? (item as Issue) : null;
    return {
      id: pull === null ? item.id : pull.id + 1,
      node_id: pull === null ? item.nodeId : objects.nodeId("Issue", pull.id + 1),
      url: api,
      repository_url: urls.repo(repo),
      labels_url: `${api}/labels{/name}`,
      comments_url: `${api}/comments`,
      events_url: `${api}/events`,
      html_url: html,
      number: item.number,
      state: item.state,
      state_reason: plain?.stateReason ?? null,
      title: item.title,
      body: item.body,
      user: objects.simpleUser(urls, item.user),
      labels: item.labels.map((l) => this.labelObject(repo, l)),
      assignee: assignees[0] === undefined ? null : objects.simpleUser(urls, assignees[0]),
      assignees: assignees.map((a) => objects.simpleUser(urls, a)),
      milestone: null,
      locked: pull?.locked ?? false,
      active_lock_reason: null,
      comments,
      ...(pull === null
        ? {}
        : {
            pull_request: {
              url: `${urls.repo(repo)}/pulls/${pull.number}`,
              html_url: html,
              diff_url: `${html}.diff`,
              patch_url: `${html}.patch`,
              merged_at: pull.mergedAt,
            },
            draft: pull.draft,
          }),
      closed_at: item.closedAt,
      created_at: item.createdAt,
      updated_at: item.updatedAt,
      closed_by: plain?.closedBy == null ? null : objects.simpleUser(urls, plain.closedBy),
      author_association: this.pulls.authorAssociation(repo, item.user),
      reactions: {
        url: `${api}/reactions`,
        total_count: 0,
        "+1": 0,
        "-1": 0,
        laugh: 0,
        confused: 0,
        heart: 0,
        hooray: 0,
        eyes: 0,
        rocket: 0,
      },
      timeline_url: `${api}/timeline`,
      performed_via_github_app: plain?.app == null ? null : objects.integration(urls, plain.app),
    };
  }

  // ---- operations -------------------------------------------------------------------------------

  private emitComment(
    pr: PullRequest,
    comment: IssueComment,
    action: string,
    actor: Actor,
    extra: Record<string, unknown> = {},
  ): void {
    this.hooks.emitForRepo("issue_comment", pr.repo, actor, {
      action,
      issue: this.issueObject(pr),
      comment: this.commentObject(pr.repo, comment),
      ...extra,
    });
  }

  comment(pr: PullRequest, actor: Actor, body: string): IssueComment {
    const id = this.world.nextId("comment");
    const now = this.world.nowIso();
    const comment: IssueComment = {
      id,
      nodeId: objects.nodeId("IssueComment", id),
      issueNumber: pr.number,
      user: actorAccount(actor),
      app: actor.kind === "app" ? actor.app : null,
      body,
      createdAt: now,
      updatedAt: now,
      reactions: [],
    };
    pr.repo.comments.set(id, comment);
    this.emitComment(pr, comment, "created", actor);
    return comment;
  }

  editComment(repo: Repository, comment: IssueComment, actor: Actor, body: string): void {
    const from = comment.body;
    comment.body = body;
    comment.updatedAt = this.world.nowIso();
    this.emitComment(this.pulls.pull(repo, comment.issueNumber), comment, "edited", actor, {
      changes: { body: { from } },
    });
  }

  deleteComment(repo: Repository, comment: IssueComment, actor: Actor): void {
    repo.comments.delete(comment.id);
    this.emitComment(this.pulls.pull(repo, comment.issueNumber), comment, "deleted", actor);
  }

  react(
    comment: IssueComment,
    user: Account,
    content: string,
  ): { reaction: Reaction; created: boolean } {
    const existing = comment.reactions.find((r) => r.user.id === user.id && r.content === content);
    if (existing !== undefined) return { reaction: existing, created: false };
    const id = this.world.nextId("reaction");
    const reaction: Reaction = {
      id,
      nodeId: objects.nodeId("Reaction", id),
      user,
      content,
      createdAt: this.world.nowIso(),
    };
    comment.reactions.push(reaction);
    return { reaction, created: true };
  }

  /** The repository's label of that name (any letter case), created when missing (GitHub does). */
  labelNamed(repo: Repository, name: string, actor: Actor): Label {
    const found = repo.labels.get(name.toLowerCase());
    if (found !== undefined) return found;
    const id = this.world.nextId("label");
    const label: Label = {
      id,
      nodeId: objects.nodeId("Label", id),
      name,
      color: this.world.random.hex(6),
      description: null,
      default: false,
    };
    repo.labels.set(name.toLowerCase(), label);
    this.hooks.emitForRepo("label", repo, actor, {
      action: "created",
      label: this.labelObject(repo, label),
    });
    return label;
  }

  async addLabels(pr: PullRequest, actor: Actor, names: string[]): Promise<void> {
    for (const name of names) {
      const label = this.labelNamed(pr.repo, name, actor);
      if (pr.labels.some((l) => l.id === label.id)) continue;
      pr.labels.push(label);
      pr.updatedAt = this.world.nowIso();
      await this.pulls.emit(pr, "labeled", actor, { label: this.labelObject(pr.repo, label) });
    }
  }

  async removeLabel(pr: PullRequest, actor: Actor, name: string): Promise<void> {
    const label = pr.labels.find((l) => l.name.toLowerCase() === name.toLowerCase());
    if (label === undefined) throw new GitHubError(404, "Label does not exist");
    pr.labels = pr.labels.filter((l) => l.id !== label.id);
    pr.updatedAt = this.world.nowIso();
    await this.pulls.emit(pr, "unlabeled", actor, { label: this.labelObject(pr.repo, label) });
  }

  /** GitHub's permission for a user on a repository (maintain reads as write, triage as read). */
  permissionOf(repo: Repository, account: Account): { permission: string; roleName: string } {
    const role = this.world.roleOf(repo, account);
    if (role === undefined) {
      const member = repo.owner.type === "Organization" && repo.owner.members.has(account.login);
      return member || !repo.private
        ? { permission: "read", roleName: "read" }
        : { permission: "none", roleName: "none" };
    }
    const permission = role === "maintain" ? "write" : role === "triage" ? "read" : role;
    return { permission, roleName: role };
  }

  // ---- routes -----------------------------------------------------------------------------------

  register(server: HttpServer): void {
    const world = this.world;
    const access = (
      ctx: RequestContext,
      level: "read" | "write",
    ): { repo: Repository; actor: Actor } => {
      const repo = world.repoOf(ctx.params);
      return { repo, actor: this.auth.repoAccess(ctx, repo, ["issues", level]) };
    };
    const commentOf = (repo: Repository, id: string | undefined): IssueComment => {
      const comment = repo.comments.get(Number(id));
      if (comment === undefined) throw notFound();
      return comment;
    };
    const ownsComment = (comment: IssueComment, actor: Actor): void => {
      if (actor.kind === "app" && comment.app?.id !== actor.app.id)
        throw new GitHubError(403, "Resource not accessible by integration");
    };

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/issues/{issue_number}/comments",
      operationId: "issues/list-comments",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pulls.pull(repo, ctx.params.issue_number);
        const since = ctx.query.get("since");
        const all = [...repo.comments.values()]
          .filter((c) => c.issueNumber === pr.number && (since === null || c.updatedAt >= since))
          .sort((a, b) => a.id - b.id);
        const page = pageOf(ctx, all, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((c) => this.commentObject(repo, c)),
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/issues/{issue_number}/comments",
      operationId: "issues/create-comment",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const pr = this.pulls.pull(repo, ctx.params.issue_number);
        const body = requireString(ctx.body, "body", "IssueComment");
        if (body.length > 65536) {
          throw validationFailed("Validation Failed", [
            {
              resource: "IssueComment",
              field: "data",
              code: "unprocessable",
              message: "Body is too long (maximum is 65536 characters)",
            },
          ]);
        }
        const comment = this.comment(pr, actor, body);
        return {
          status: 201,
          body: this.commentObject(repo, comment),
          headers: { location: `${world.urls.repo(repo)}/issues/comments/${comment.id}` },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/issues/comments/{comment_id}",
      operationId: "issues/get-comment",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        return {
          status: 200,
          body: this.commentObject(repo, commentOf(repo, ctx.params.comment_id)),
        };
      },
    });

    server.add({
      method: "PATCH",
      path: "/repos/{owner}/{repo}/issues/comments/{comment_id}",
      operationId: "issues/update-comment",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const comment = commentOf(repo, ctx.params.comment_id);
        ownsComment(comment, actor);
        this.editComment(repo, comment, actor, requireString(ctx.body, "body", "IssueComment"));
        return { status: 200, body: this.commentObject(repo, comment) };
      },
    });

    server.add({
      method: "DELETE",
      path: "/repos/{owner}/{repo}/issues/comments/{comment_id}",
      operationId: "issues/delete-comment",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const comment = commentOf(repo, ctx.params.comment_id);
        ownsComment(comment, actor);
        this.deleteComment(repo, comment, actor);
        return { status: 204 };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
      operationId: "reactions/create-for-issue-comment",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const comment = commentOf(repo, ctx.params.comment_id);
        const content = requireString(ctx.body, "content", "Reaction");
        if (!REACTIONS.includes(content)) {
          throw validationFailed("Validation Failed", [
            { resource: "Reaction", field: "content", code: "invalid" },
          ]);
        }
        const { reaction, created } = this.react(comment, actorAccount(actor), content);
        return {
          status: created ? 201 : 200,
          body: {
            id: reaction.id,
            node_id: reaction.nodeId,
            user: objects.simpleUser(world.urls, reaction.user),
            content: reaction.content,
            created_at: reaction.createdAt,
          },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/issues/{issue_number}/labels",
      operationId: "issues/list-labels-on-issue",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pulls.pull(repo, ctx.params.issue_number);
        const page = pageOf(ctx, pr.labels, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((l) => this.labelObject(repo, l)),
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/issues/{issue_number}/labels",
      operationId: "issues/add-labels",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const pr = this.pulls.pull(repo, ctx.params.issue_number);
        const raw = ctx.body.labels;
        // `labels` is a list of names, or of `{ name }` objects.
        const nameOf = (l: unknown): string => {
          if (typeof l === "string") return l;
          const name =
            typeof l === "object" && l !== null ? (l as { name?: unknown }).name : undefined;
          return typeof name === "string" ? name : "";
        };
        const names = Array.isArray(raw) ? raw.map(nameOf) : null;
        if (names === null || names.some((n) => n === "")) {
          throw validationFailed("Invalid request.\n\nFor 'links/0/schema', nil is not an array.");
        }
        await this.addLabels(pr, actor, names);
        return { status: 200, body: pr.labels.map((l) => this.labelObject(repo, l)) };
      },
    });

    server.add({
      method: "DELETE",
      path: "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
      operationId: "issues/remove-label",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const pr = this.pulls.pull(repo, ctx.params.issue_number);
        await this.removeLabel(pr, actor, ctx.params.name ?? "");
        return { status: 200, body: pr.labels.map((l) => this.labelObject(repo, l)) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/collaborators/{username}/permission",
      operationId: "repos/get-collaborator-permission-level",
      auth: "token",
      handler: (ctx) => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["metadata", "read"]);
        const account = world.findAccount(ctx.params.username ?? "");
        if (account === undefined || account.type === "Organization") throw notFound();
        const { permission, roleName } = this.permissionOf(repo, account);
        const role = world.roleOf(repo, account);
        return {
          status: 200,
          body: {
            permission,
            role_name: roleName,
            user: {
              ...objects.simpleUser(world.urls, account),
              permissions: objects.viewerPermissions(
                role ?? (permission === "none" ? undefined : "read"),
              ),
              role_name: roleName,
            },
          },
        };
      },
    });
  }
}
