import type { AppAuth } from "./app-auth.js";
import {
  GitHubError,
  notFound,
  optionalBoolean,
  optionalString,
  pageOf,
  requireString,
  validationFailed,
  type FakeResponse,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import {
  fullName,
  ZERO_SHA,
  type Account,
  type PullRequest,
  type Repository,
  type Review,
} from "./model.js";
import * as objects from "./objects.js";
import type { Schema } from "./objects.js";
import { hasFailingOptionalChecks, mergeBlockers } from "./protection.js";
import type { RefService } from "./refs.js";
import { commitObject, diffEntry } from "./repos.js";
import type { WebhookHub } from "./webhooks.js";
import { actorAccount, type Actor, type RefUpdate, type World } from "./world.js";

/**
 * Pull requests: list, get, create (drafts, and GitHub's 422s), update (close, reopen, base
 * change), merge with `sha` pinned and merge/squash/rebase as real commits (405 not mergeable,
 * 409 head modified, protection's 405s, a lost race's 405 "Base branch was modified"), commits,
 * files, `commits/{sha}/pulls`, reviews; `refs/pull/N/head` for every PR (forks included), the
 * test merge `refs/pull/N/merge`, and mergeability computed asynchronously as GitHub does.
 */

export type MergeMethod = "merge" | "squash" | "rebase";

export interface MergeabilityView {
  mergeable: boolean | null;
  state: "clean" | "dirty" | "draft" | "blocked" | "behind" | "unstable" | "unknown";
  rebaseable: boolean | null;
}

export class Pulls {
  /** PRs whose merge is being written (their base moves because of them, not past them). */
  private readonly merging = new Set<number>();

  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
    private readonly refs: RefService,
    private readonly hooks: WebhookHub,
  ) {
    world.onRefUpdate((update) => this.onRefUpdate(update));
  }

  // ---- lookups ------------------------------------------------------------------------------

  pull(repo: Repository, number: number | string | undefined): PullRequest {
    const pr = repo.pulls.get(Number(number));
    if (pr === undefined) throw notFound();
    return pr;
  }

  private headLabel(pr: PullRequest): string {
    return `${pr.headRepo.owner.login}:${pr.headRef}`;
  }

  authorAssociation(repo: Repository, account: Account): Schema<"author-association"> {
    if (repo.owner.id === account.id) return "OWNER";
    if (repo.owner.type === "Organization" && repo.owner.members.has(account.login))
      return "MEMBER";
    if (repo.collaborators.has(account.login.toLowerCase())) return "COLLABORATOR";
    const contributed = [...repo.pulls.values()].some(
      (p) => p.user.id === account.id && p.mergedAt !== null,
    );
    return contributed ? "CONTRIBUTOR" : "NONE";
  }

  // ---- mergeability -------------------------------------------------------------------------

  /**
   * GitHub's answer now. After a base or head move it is `null`/`unknown` until the configured
   * delay passes; then git decides (conflict: `dirty`), then protection (`blocked`, `behind`),
   * then optional checks (`unstable`). `compute: false` reads without starting a computation.
   */
  async mergeability(pr: PullRequest, compute = true): Promise<MergeabilityView> {
    if (pr.state === "closed") return { mergeable: null, state: "unknown", rebaseable: null };
    const git = this.world.gitOf(pr.repo);
    const baseTip = await git.readRef(`refs/heads/${pr.baseRef}`);
    if (baseTip === null) return { mergeable: null, state: "unknown", rebaseable: null };
    const now = this.world.now();
    let m = pr.mergeability;
    if (m?.baseSha !== baseTip || m.headSha !== pr.headSha) {
      if (!compute) return { mergeable: null, state: "unknown", rebaseable: null };
      m = {
        baseSha: baseTip,
        headSha: pr.headSha,
        readyAtMs: now + this.world.options.mergeabilityDelayMs + pr.extraMergeabilityDelayMs,
        result: null,
      };
      pr.mergeability = m;
    }
    if (m.readyAtMs > now) return { mergeable: null, state: "unknown", rebaseable: null };
    if (m.result === null) {
      const merged = await git.mergeTree(baseTip, pr.headSha);
      if ("conflicts" in merged) m.result = { mergeable: false, testMergeSha: null };
      else {
        const when = new Date(m.readyAtMs).toISOString();
        const who = { name: "GitHub", email: "noreply@github.com", date: when };
        const sha = await git.commitTree(
          merged.tree,
          [pr.headSha, baseTip],
          `Merge ${pr.headSha} into ${baseTip}`,
          who,
          who,
        );
        const ref = `refs/pull/${pr.number}/merge`;
        await git.casRef(ref, sha, (await git.readRef(ref)) ?? ZERO_SHA);
        m.result = { mergeable: true, testMergeSha: sha };
      }
    }
    if (!m.result.mergeable) return { mergeable: false, state: "dirty", rebaseable: false };
    if (pr.draft) return { mergeable: true, state: "draft", rebaseable: true };
    const blockers = await mergeBlockers(this.world, pr, null);
    if (blockers.some((b) => b.kind !== "behind"))
      return { mergeable: true, state: "blocked", rebaseable: true };
    if (blockers.length > 0) return { mergeable: true, state: "behind", rebaseable: true };
    if (hasFailingOptionalChecks(pr.repo, pr))
      return { mergeable: true, state: "unstable", rebaseable: true };
    return { mergeable: true, state: "clean", rebaseable: true };
  }

  /** Makes `mergeable` stay null `ms` longer after each move of this PR (the fault layer's knob). */
  holdMergeability(pr: PullRequest, ms: number): void {
    pr.extraMergeabilityDelayMs = ms;
    if (pr.mergeability !== null)
      pr.mergeability.readyAtMs = Math.max(pr.mergeability.readyAtMs, this.world.now() + ms);
  }

  private invalidate(pr: PullRequest, baseTip: string | null): void {
    if (baseTip === null) return;
    pr.mergeability = {
      baseSha: baseTip,
      headSha: pr.headSha,
      readyAtMs:
        this.world.now() + this.world.options.mergeabilityDelayMs + pr.extraMergeabilityDelayMs,
      result: null,
    };
  }

  // ---- representations ----------------------------------------------------------------------

  private branchSide(
    pr: PullRequest,
    side: "head" | "base",
    sha: string,
  ): Schema<"pull-request">["head"] {
    const urls = this.world.urls;
    const repo = side === "head" ? pr.headRepo : pr.repo;
    const ref = side === "head" ? pr.headRef : pr.baseRef;
    return {
      label: `${repo.owner.login}:${ref}`,
      ref,
      sha,
      user: objects.simpleUser(urls, repo.owner),
      repo: objects.repositoryShort(urls, repo),
    };
  }

  private labelObjects(pr: PullRequest): Schema<"pull-request-simple">["labels"] {
    const api = this.world.urls.repo(pr.repo);
    return pr.labels.map((l) => ({
      id: l.id,
      node_id: l.nodeId,
      url: `${api}/labels/${encodeURIComponent(l.name)}`,
      name: l.name,
      // pull-request-simple's schema has no null description (the full PR's has).
      description: l.description ?? "",
      color: l.color,
      default: l.default,
    }));
  }

  pullSimple(pr: PullRequest): Schema<"pull-request-simple"> {
    const urls = this.world.urls;
    const api = `${urls.repo(pr.repo)}/pulls/${pr.number}`;
    const issue = `${urls.repo(pr.repo)}/issues/${pr.number}`;
    const html = `${urls.repoHtml(pr.repo)}/pull/${pr.number}`;
    return {
      url: api,
      id: pr.id,
      node_id: pr.nodeId,
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      issue_url: issue,
      commits_url: `${api}/commits`,
      review_comments_url: `${api}/comments`,
      review_comment_url: `${urls.repo(pr.repo)}/pulls/comments{/number}`,
      comments_url: `${issue}/comments`,
      statuses_url: `${urls.repo(pr.repo)}/statuses/${pr.headSha}`,
      number: pr.number,
      state: pr.state,
      locked: pr.locked,
      title: pr.title,
      user: objects.simpleUser(urls, pr.user),
      body: pr.body,
      labels: this.labelObjects(pr),
      milestone: null,
      active_lock_reason: null,
      created_at: pr.createdAt,
      updated_at: pr.updatedAt,
      closed_at: pr.closedAt,
      merged_at: pr.mergedAt,
      merge_commit_sha: pr.mergeCommitSha ?? pr.mergeability?.result?.testMergeSha ?? null,
      assignee: null,
      assignees: [],
      requested_reviewers: [],
      requested_teams: [],
      head: this.branchSide(pr, "head", pr.headSha),
      base: this.branchSide(pr, "base", pr.baseSha),
      _links: {
        self: { href: api },
        html: { href: html },
        issue: { href: issue },
        comments: { href: `${issue}/comments` },
        review_comments: { href: `${api}/comments` },
        review_comment: { href: `${urls.repo(pr.repo)}/pulls/comments{/number}` },
        commits: { href: `${api}/commits` },
        statuses: { href: `${urls.repo(pr.repo)}/statuses/${pr.headSha}` },
      },
      author_association: this.authorAssociation(pr.repo, pr.user),
      auto_merge: null,
      draft: pr.draft,
    };
  }

  async pullObject(pr: PullRequest, computeMergeability = true): Promise<Schema<"pull-request">> {
    const git = this.world.gitOf(pr.repo);
    const view = await this.mergeability(pr, computeMergeability);
    const baseTip = (await git.readRef(`refs/heads/${pr.baseRef}`)) ?? pr.baseSha;
    const from =
      pr.mergedAt !== null
        ? pr.baseSha
        : ((await git.mergeBase(baseTip, pr.headSha)) ?? pr.baseSha);
    const changes = await git.diff(from, pr.headSha);
    const commits = await git.countBetween(from, pr.headSha);
    const simple = this.pullSimple(pr) as unknown as Omit<Schema<"pull-request">, "merged">;
    return {
      ...simple,
      state: pr.state,
      merge_commit_sha: pr.mergeCommitSha ?? pr.mergeability?.result?.testMergeSha ?? null,
      merged: pr.mergedAt !== null,
      mergeable: view.mergeable,
      rebaseable: view.rebaseable,
      mergeable_state: view.state,
      merged_by: pr.mergedBy === null ? null : objects.simpleUser(this.world.urls, pr.mergedBy),
      comments: [...pr.repo.comments.values()].filter((c) => c.issueNumber === pr.number).length,
      review_comments: 0,
      maintainer_can_modify: false,
      commits,
      additions: changes.reduce((n, c) => n + c.additions, 0),
      deletions: changes.reduce((n, c) => n + c.deletions, 0),
      changed_files: changes.length,
    };
  }

  /** A `pull_request` webhook, with the PR as it is now (mergeability as last computed). */
  async emit(
    pr: PullRequest,
    action: string,
    actor: Actor,
    extra: Record<string, unknown> = {},
  ): Promise<void> {
    const object = await this.pullObject(pr, false);
    const repo = pr.repo;
    this.hooks.emitForRepo("pull_request", repo, actor, {
      action,
      number: pr.number,
      pull_request: {
        ...object,
        allow_auto_merge: false,
        allow_update_branch: repo.settings.allowUpdateBranch,
        delete_branch_on_merge: repo.settings.deleteBranchOnMerge,
        use_squash_pr_title_as_default: false,
      },
      ...extra,
    });
  }

  private reviewObject(pr: PullRequest, review: Review): Schema<"pull-request-review"> {
    const urls = this.world.urls;
    const html = `${urls.repoHtml(pr.repo)}/pull/${pr.number}#pullrequestreview-${review.id}`;
    const prUrl = `${urls.repo(pr.repo)}/pulls/${pr.number}`;
    return {
      id: review.id,
      node_id: review.nodeId,
      user: objects.simpleUser(urls, review.user),
      body: review.body,
      state: review.state,
      html_url: html,
      pull_request_url: prUrl,
      _links: { html: { href: html }, pull_request: { href: prUrl } },
      submitted_at: review.submittedAt,
      commit_id: review.commitId,
      author_association: this.authorAssociation(pr.repo, review.user),
    };
  }

  // ---- operations (the API and the test helpers share them) ---------------------------------

  /** Records the head commit in the base repository (`refs/pull/N/head`), fetching from a fork. */
  private async recordHead(pr: PullRequest): Promise<void> {
    const git = this.world.gitOf(pr.repo);
    const ref = `refs/pull/${pr.number}/head`;
    if (pr.headRepo.id !== pr.repo.id) {
      await git.fetchFrom(this.world.gitOf(pr.headRepo), pr.headSha, ref);
      return;
    }
    await git.casRef(ref, pr.headSha, (await git.readRef(ref)) ?? ZERO_SHA);
  }

  async open(
    repo: Repository,
    actor: Actor,
    input: {
      head: string;
      base: string;
      title: string;
      body?: string | null;
      draft?: boolean;
      headRepo?: Repository;
    },
  ): Promise<PullRequest> {
    const git = this.world.gitOf(repo);
    let headRepo = input.headRepo ?? repo;
    let headRef = input.head;
    const colon = input.head.indexOf(":");
    if (colon >= 0 && input.headRepo === undefined) {
      const owner = input.head.slice(0, colon);
      headRef = input.head.slice(colon + 1);
      if (owner.toLowerCase() !== repo.owner.login.toLowerCase()) {
        const fork = [...this.world.repos.values()].find(
          (r) => r.owner.login.toLowerCase() === owner.toLowerCase() && r.parent?.id === repo.id,
        );
        if (fork === undefined)
          throw validationFailed("Validation Failed", [
            { resource: "PullRequest", field: "head", code: "invalid" },
          ]);
        headRepo = fork;
      }
    }
    const baseSha = await git.readRef(`refs/heads/${input.base}`);
    if (baseSha === null)
      throw validationFailed("Validation Failed", [
        { resource: "PullRequest", field: "base", code: "invalid" },
      ]);
    const headSha = await this.world.gitOf(headRepo).readRef(`refs/heads/${headRef}`);
    if (headSha === null)
      throw validationFailed("Validation Failed", [
        { resource: "PullRequest", field: "head", code: "invalid" },
      ]);
    const existing = [...repo.pulls.values()].find(
      (p) =>
        p.state === "open" &&
        p.headRepo.id === headRepo.id &&
        p.headRef === headRef &&
        p.baseRef === input.base,
    );
    if (existing !== undefined) {
      throw validationFailed("Validation Failed", [
        {
          resource: "PullRequest",
          code: "custom",
          message: `A pull request already exists for ${headRepo.owner.login}:${headRef}.`,
        },
      ]);
    }
    const incoming = `refs/fake-incoming/pr-head-${headSha}`;
    if (headRepo.id !== repo.id) await git.fetchFrom(this.world.gitOf(headRepo), headSha, incoming);
    const nothingToMerge = await git.isAncestor(headSha, baseSha);
    if (headRepo.id !== repo.id) await git.casRef(incoming, ZERO_SHA, headSha);
    if (nothingToMerge) {
      throw validationFailed("Validation Failed", [
        {
          resource: "PullRequest",
          code: "custom",
          message: `No commits between ${input.base} and ${headRef}`,
        },
      ]);
    }
    if (input.draft === true && !repo.settings.draftPullRequests) {
      throw validationFailed("Draft pull requests are not supported in this repository.");
    }
    const id = this.world.nextId("pull");
    const now = this.world.nowIso();
    const pr: PullRequest = {
      id,
      nodeId: objects.nodeId("PullRequest", id),
      number: repo.nextIssueNumber++,
      repo,
      headRepo,
      headRef,
      headSha,
      baseRef: input.base,
      baseSha,
      user: actorAccount(actor),
      title: input.title,
      body: input.body ?? null,
      state: "open",
      draft: input.draft ?? false,
      locked: false,
      createdAt: now,
      updatedAt: now,
      closedAt: null,
      mergedAt: null,
      mergedBy: null,
      mergeCommitSha: null,
      labels: [],
      reviews: [],
      mergeability: null,
      extraMergeabilityDelayMs: 0,
    };
    repo.pulls.set(pr.number, pr);
    await this.recordHead(pr);
    this.invalidate(pr, baseSha);
    await this.emit(pr, "opened", actor);
    return pr;
  }

  async close(pr: PullRequest, actor: Actor): Promise<void> {
    if (pr.state === "closed") return;
    pr.state = "closed";
    pr.closedAt = this.world.nowIso();
    pr.updatedAt = pr.closedAt;
    await this.emit(pr, "closed", actor);
  }

  async reopen(pr: PullRequest, actor: Actor): Promise<void> {
    if (pr.state === "open") return;
    if (pr.mergedAt !== null)
      throw validationFailed("Validation Failed", [
        {
          resource: "PullRequest",
          code: "custom",
          message: "state cannot be changed. The pull request has been merged.",
        },
      ]);
    const head = await this.world.gitOf(pr.headRepo).readRef(`refs/heads/${pr.headRef}`);
    if (head === null)
      throw validationFailed("Validation Failed", [
        {
          resource: "PullRequest",
          code: "custom",
          message: "state cannot be changed. The head branch was deleted.",
        },
      ]);
    pr.state = "open";
    pr.closedAt = null;
    pr.updatedAt = this.world.nowIso();
    if (head !== pr.headSha) {
      pr.headSha = head;
      await this.recordHead(pr);
    }
    await this.emit(pr, "reopened", actor);
  }

  async changeBase(pr: PullRequest, base: string, actor: Actor): Promise<void> {
    if (base === pr.baseRef) return;
    const git = this.world.gitOf(pr.repo);
    const tip = await git.readRef(`refs/heads/${base}`);
    if (tip === null)
      throw validationFailed("Validation Failed", [
        { resource: "PullRequest", field: "base", code: "invalid" },
      ]);
    const from = { ref: { from: pr.baseRef }, sha: { from: pr.baseSha } };
    pr.baseRef = base;
    pr.baseSha = tip;
    pr.updatedAt = this.world.nowIso();
    this.invalidate(pr, tip);
    await this.emit(pr, "edited", actor, { changes: { base: from } });
  }

  async edit(
    pr: PullRequest,
    actor: Actor,
    input: { title?: string; body?: string | null },
  ): Promise<void> {
    const changes: Record<string, unknown> = {};
    if (input.title !== undefined && input.title !== pr.title) {
      changes.title = { from: pr.title };
      pr.title = input.title;
    }
    if (input.body !== undefined && input.body !== pr.body) {
      changes.body = { from: pr.body ?? "" };
      pr.body = input.body;
    }
    if (Object.keys(changes).length === 0) return;
    pr.updatedAt = this.world.nowIso();
    await this.emit(pr, "edited", actor, { changes });
  }

  async setDraft(pr: PullRequest, draft: boolean, actor: Actor): Promise<void> {
    if (pr.draft === draft) return;
    pr.draft = draft;
    pr.updatedAt = this.world.nowIso();
    await this.emit(pr, draft ? "converted_to_draft" : "ready_for_review", actor);
  }

  async review(pr: PullRequest, user: Account, state: Review["state"], body = ""): Promise<Review> {
    if (state === "APPROVED" && user.id === pr.user.id)
      throw validationFailed("Unprocessable Entity", [
        {
          resource: "PullRequestReview",
          code: "custom",
          message: "Can not approve your own pull request",
        },
      ]);
    const id = this.world.nextId("review");
    const review: Review = {
      id,
      nodeId: objects.nodeId("PullRequestReview", id),
      user,
      state,
      body,
      commitId: pr.headSha,
      submittedAt: this.world.nowIso(),
    };
    pr.reviews.push(review);
    pr.updatedAt = review.submittedAt;
    const object = await this.pullObject(pr, false);
    this.hooks.emitForRepo(
      "pull_request_review",
      pr.repo,
      { kind: "user", account: user },
      {
        action: "submitted",
        review: this.reviewObject(pr, review),
        pull_request: object,
      },
    );
    return review;
  }

  /** The merge itself: GitHub's checks in GitHub's order, then real commits and a CAS on the base. */
  async merge(
    pr: PullRequest,
    actor: Actor,
    input: {
      sha?: string;
      method?: string;
      title?: string;
      message?: string;
      ctx?: RequestContext;
    },
  ): Promise<{ sha: string }> {
    const repo = pr.repo;
    const git = this.world.gitOf(repo);
    if (pr.state !== "open") throw new GitHubError(405, "Pull Request is not mergeable");
    if (input.sha !== undefined && input.sha !== pr.headSha)
      throw new GitHubError(409, "Head branch was modified. Review and try the merge again.");
    const method = (input.method ?? "merge") as MergeMethod;
    if (!["merge", "squash", "rebase"].includes(method)) {
      throw validationFailed("Validation Failed", [
        { resource: "PullRequest", field: "merge_method", code: "invalid" },
      ]);
    }
    const allowed = {
      merge: repo.settings.allowMergeCommit,
      squash: repo.settings.allowSquashMerge,
      rebase: repo.settings.allowRebaseMerge,
    };
    if (!allowed[method]) {
      const names = { merge: "Merge commits", squash: "Squash merges", rebase: "Rebase merges" };
      throw new GitHubError(405, `${names[method]} are not allowed on this repository.`);
    }
    if (pr.draft) throw new GitHubError(405, "Pull Request is still a draft");
    const view = await this.mergeability(pr);
    if (view.mergeable !== true) throw new GitHubError(405, "Pull Request is not mergeable");
    const blockers = await mergeBlockers(this.world, pr, actor, method);
    const first = blockers[0];
    if (first !== undefined) throw new GitHubError(405, first.message);
    const baseTip = await git.readRef(`refs/heads/${pr.baseRef}`);
    if (baseTip === null) throw new GitHubError(405, "Pull Request is not mergeable");
    if (input.ctx !== undefined && !this.auth.canWriteWorkflows(input.ctx)) {
      const paths = await git.changedPaths(baseTip, pr.headSha);
      if (paths.some((p) => p.startsWith(".github/workflows/")))
        throw new GitHubError(403, "Resource not accessible by integration");
    }
    const sha = await this.writeMerge(pr, actor, method, baseTip, input);
    this.merging.add(pr.id);
    try {
      const result = await this.refs.update(
        {
          repo,
          ref: `refs/heads/${pr.baseRef}`,
          next: sha,
          actor,
          enforce: true,
          viaPullRequestMerge: true,
          ...(input.ctx !== undefined ? { ctx: input.ctx } : {}),
        },
        baseTip,
      );
      if (!result.ok)
        throw new GitHubError(405, "Base branch was modified. Review and try the merge again.");
    } finally {
      this.merging.delete(pr.id);
    }
    await this.markMerged(pr, actor, sha, baseTip);
    return { sha };
  }

  private async writeMerge(
    pr: PullRequest,
    actor: Actor,
    method: MergeMethod,
    baseTip: string,
    input: { title?: string; message?: string },
  ): Promise<string> {
    const git = this.world.gitOf(pr.repo);
    const when = this.world.nowIso();
    const committer = { name: "GitHub", email: "noreply@github.com", date: when };
    const merger = actorAccount(actor);
    if (method === "rebase") {
      const base = (await git.mergeBase(baseTip, pr.headSha)) ?? baseTip;
      let current = baseTip;
      for (const sha of await git.commitsBetween(base, pr.headSha)) {
        const commit = await git.readCommit(sha);
        if (commit.parents.length > 1) throw new GitHubError(405, "This branch can't be rebased");
        const picked = await git.cherryPickTree(sha, current);
        if ("conflicts" in picked) throw new GitHubError(405, "This branch can't be rebased");
        current = await git.commitTree(
          picked.tree,
          [current],
          commit.message,
          commit.author,
          committer,
        );
      }
      return current;
    }
    const merged = await git.mergeTree(baseTip, pr.headSha);
    if ("conflicts" in merged) throw new GitHubError(405, "Pull Request is not mergeable");
    if (method === "merge") {
      const title =
        input.title ??
        `Merge pull request #${pr.number} from ${pr.headRepo.owner.login}/${pr.headRef}`;
      const message = input.message ?? pr.title;
      return git.commitTree(
        merged.tree,
        [baseTip, pr.headSha],
        `${title}\n\n${message}`,
        { name: merger.login, email: merger.email, date: when },
        committer,
      );
    }
    const base = (await git.mergeBase(baseTip, pr.headSha)) ?? baseTip;
    const messages = [];
    for (const sha of await git.commitsBetween(base, pr.headSha))
      messages.push(`* ${(await git.readCommit(sha)).message}`);
    const title = input.title ?? `${pr.title} (#${pr.number})`;
    const message = input.message ?? messages.join("\n\n");
    return git.commitTree(
      merged.tree,
      [baseTip],
      message === "" ? title : `${title}\n\n${message}`,
      { name: pr.user.login, email: pr.user.email, date: when },
      committer,
    );
  }

  private async markMerged(
    pr: PullRequest,
    actor: Actor,
    sha: string,
    baseBefore: string,
  ): Promise<void> {
    const now = this.world.nowIso();
    pr.state = "closed";
    pr.mergedAt = now;
    pr.closedAt = now;
    pr.updatedAt = now;
    pr.mergedBy = actorAccount(actor);
    pr.mergeCommitSha = sha;
    pr.baseSha = baseBefore;
    await this.emit(pr, "closed", actor);
    if (
      pr.repo.settings.deleteBranchOnMerge &&
      pr.headRepo.id === pr.repo.id &&
      pr.headRef !== pr.repo.defaultBranch
    ) {
      const head = await this.world.gitOf(pr.repo).readRef(`refs/heads/${pr.headRef}`);
      if (head === pr.headSha)
        await this.refs.update(
          { repo: pr.repo, ref: `refs/heads/${pr.headRef}`, next: null, actor, enforce: false },
          head,
        );
    }
  }

  /** Head pushes resynchronize PRs; base moves reset mergeability, and a base that now contains a head merges that PR. */
  private async onRefUpdate(update: RefUpdate): Promise<void> {
    if (!update.ref.startsWith("refs/heads/")) return;
    const branch = update.ref.slice("refs/heads/".length);
    for (const repo of this.world.repos.values()) {
      for (const pr of repo.pulls.values()) {
        if (pr.state !== "open") continue;
        if (
          pr.headRepo.id === update.repo.id &&
          pr.headRef === branch &&
          update.after !== null &&
          update.after !== pr.headSha
        ) {
          const before = pr.headSha;
          pr.headSha = update.after;
          pr.updatedAt = this.world.nowIso();
          pr.baseSha =
            (await this.world.gitOf(pr.repo).readRef(`refs/heads/${pr.baseRef}`)) ?? pr.baseSha;
          await this.recordHead(pr);
          this.invalidate(pr, pr.baseSha);
          await this.emit(pr, "synchronize", update.actor, { before, after: update.after });
        }
        if (
          pr.repo.id === update.repo.id &&
          pr.baseRef === branch &&
          update.after !== null &&
          !this.merging.has(pr.id)
        ) {
          this.invalidate(pr, update.after);
          // Someone pushed the PR's commits to its base (a fast-forward merge): GitHub marks it merged.
          if (await this.world.gitOf(repo).isAncestor(pr.headSha, update.after)) {
            await this.markMerged(pr, update.actor, update.after, update.before ?? pr.baseSha);
          }
        }
      }
    }
  }

  // ---- routes -------------------------------------------------------------------------------

  register(server: HttpServer): void {
    const world = this.world;
    const access = (
      ctx: RequestContext,
      level: "read" | "write",
    ): { repo: Repository; actor: Actor } => {
      const repo = world.repoOf(ctx.params);
      return { repo, actor: this.auth.repoAccess(ctx, repo, ["pull_requests", level]) };
    };

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls",
      operationId: "pulls/list",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        const state = ctx.query.get("state") ?? "open";
        if (!["open", "closed", "all"].includes(state))
          throw validationFailed("Validation Failed", [
            { resource: "Search", field: "state", code: "invalid" },
          ]);
        const head = ctx.query.get("head");
        const base = ctx.query.get("base");
        let pulls = [...repo.pulls.values()].filter((p) => state === "all" || p.state === state);
        if (head !== null)
          pulls = pulls.filter(
            (p) =>
              this.headLabel(p).toLowerCase() ===
              (head.includes(":") ? head : `${repo.owner.login}:${head}`).toLowerCase(),
          );
        if (base !== null) pulls = pulls.filter((p) => p.baseRef === base);
        const sort = ctx.query.get("sort") ?? "created";
        const direction = ctx.query.get("direction") ?? (sort === "created" ? "desc" : "desc");
        const key = (p: PullRequest): string =>
          (sort === "updated" ? p.updatedAt : p.createdAt) + String(p.number).padStart(10, "0");
        pulls.sort((a, b) =>
          direction === "asc" ? key(a).localeCompare(key(b)) : key(b).localeCompare(key(a)),
        );
        const page = pageOf(ctx, pulls, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((p) => this.pullSimple(p)),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}",
      operationId: "pulls/get",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = access(ctx, "read");
        return {
          status: 200,
          body: await this.pullObject(this.pull(repo, ctx.params.pull_number)),
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/pulls",
      operationId: "pulls/create",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const title = requireString(ctx.body, "title", "PullRequest");
        const head = requireString(ctx.body, "head", "PullRequest");
        const base = requireString(ctx.body, "base", "PullRequest");
        const draft = optionalBoolean(ctx.body, "draft");
        const body = optionalString(ctx.body, "body");
        const pr = await this.open(repo, actor, {
          title,
          head,
          base,
          ...(draft !== undefined ? { draft } : {}),
          ...(body !== undefined ? { body } : {}),
        });
        return {
          status: 201,
          body: await this.pullObject(pr),
          headers: { location: `${world.urls.repo(repo)}/pulls/${pr.number}` },
        };
      },
    });

    server.add({
      method: "PATCH",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}",
      operationId: "pulls/update",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const pr = this.pull(repo, ctx.params.pull_number);
        const state = optionalString(ctx.body, "state");
        const base = optionalString(ctx.body, "base");
        const title = optionalString(ctx.body, "title");
        const body = optionalString(ctx.body, "body");
        if (state !== undefined && state !== "open" && state !== "closed") {
          throw validationFailed("Validation Failed", [
            { resource: "PullRequest", field: "state", code: "invalid" },
          ]);
        }
        if (base !== undefined && pr.state === "closed") {
          throw validationFailed("Validation Failed", [
            {
              resource: "PullRequest",
              code: "custom",
              message: "Cannot change the base branch of a closed pull request.",
            },
          ]);
        }
        await this.edit(pr, actor, {
          ...(title !== undefined ? { title } : {}),
          ...(body !== undefined ? { body } : {}),
        });
        if (base !== undefined) await this.changeBase(pr, base, actor);
        if (state === "closed") await this.close(pr, actor);
        if (state === "open") await this.reopen(pr, actor);
        return { status: 200, body: await this.pullObject(pr) };
      },
    });

    server.add({
      method: "PUT",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
      operationId: "pulls/merge",
      auth: "token",
      handler: async (ctx): Promise<FakeResponse> => {
        const repo = world.repoOf(ctx.params);
        this.auth.repoAccess(ctx, repo, ["contents", "write"]);
        const actor = this.auth.repoAccess(ctx, repo, ["pull_requests", "write"]);
        const pr = this.pull(repo, ctx.params.pull_number);
        const title = optionalString(ctx.body, "commit_title");
        const message = optionalString(ctx.body, "commit_message");
        const sha = optionalString(ctx.body, "sha");
        const method = optionalString(ctx.body, "merge_method");
        const result = await this.merge(pr, actor, {
          ctx,
          ...(title !== undefined ? { title } : {}),
          ...(message !== undefined ? { message } : {}),
          ...(sha !== undefined ? { sha } : {}),
          ...(method !== undefined ? { method } : {}),
        });
        return {
          status: 200,
          body: { sha: result.sha, merged: true, message: "Pull Request successfully merged" },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
      operationId: "pulls/check-if-merged",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pull(repo, ctx.params.pull_number);
        if (pr.mergedAt === null) throw notFound();
        return { status: 204 };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/commits",
      operationId: "pulls/list-commits",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pull(repo, ctx.params.pull_number);
        const git = world.gitOf(repo);
        const baseTip =
          pr.mergedAt !== null
            ? pr.baseSha
            : ((await git.readRef(`refs/heads/${pr.baseRef}`)) ?? pr.baseSha);
        const from = (await git.mergeBase(baseTip, pr.headSha)) ?? baseTip;
        const shas = (await git.commitsBetween(from, pr.headSha)).slice(0, 250);
        const page = pageOf(ctx, shas, world.urls.api);
        const body = [];
        for (const sha of page.items)
          body.push(await commitObject(world, repo, sha, { files: false }));
        return { status: 200, headers: page.headers, body };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/files",
      operationId: "pulls/list-files",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pull(repo, ctx.params.pull_number);
        const git = world.gitOf(repo);
        const baseTip =
          pr.mergedAt !== null
            ? pr.baseSha
            : ((await git.readRef(`refs/heads/${pr.baseRef}`)) ?? pr.baseSha);
        const from = (await git.mergeBase(baseTip, pr.headSha)) ?? baseTip;
        const files = (await git.diff(from, pr.headSha)).slice(0, 3000);
        const page = pageOf(ctx, files, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((f) => diffEntry(world.urls, repo, pr.headSha, f)),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{commit_sha}/pulls",
      operationId: "repos/list-pull-requests-associated-with-commit",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = access(ctx, "read");
        const git = world.gitOf(repo);
        const sha = await git.resolveCommit(ctx.params.commit_sha ?? "");
        if (sha === null)
          throw validationFailed(`No commit found for SHA: ${ctx.params.commit_sha ?? ""}`);
        const found: PullRequest[] = [];
        for (const pr of [...repo.pulls.values()].sort((a, b) => b.number - a.number)) {
          if (pr.headSha === sha || pr.mergeCommitSha === sha) found.push(pr);
          else if (pr.state === "open" && (await git.isAncestor(sha, pr.headSha))) {
            const baseTip = await git.readRef(`refs/heads/${pr.baseRef}`);
            if (baseTip === null || !(await git.isAncestor(sha, baseTip))) found.push(pr);
          }
        }
        const page = pageOf(ctx, found, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((p) => this.pullSimple(p)),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
      operationId: "pulls/list-reviews",
      auth: "token",
      handler: (ctx) => {
        const { repo } = access(ctx, "read");
        const pr = this.pull(repo, ctx.params.pull_number);
        const page = pageOf(ctx, pr.reviews, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((r) => this.reviewObject(pr, r)),
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
      operationId: "pulls/create-review",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = access(ctx, "write");
        const pr = this.pull(repo, ctx.params.pull_number);
        const event = optionalString(ctx.body, "event") ?? "COMMENT";
        const states: Record<string, Review["state"]> = {
          APPROVE: "APPROVED",
          REQUEST_CHANGES: "CHANGES_REQUESTED",
          COMMENT: "COMMENTED",
        };
        const state = states[event];
        if (state === undefined)
          throw validationFailed("Validation Failed", [
            { resource: "PullRequestReview", field: "event", code: "invalid" },
          ]);
        const review = await this.review(
          pr,
          actorAccount(actor),
          state,
          optionalString(ctx.body, "body") ?? "",
        );
        return { status: 200, body: this.reviewObject(pr, review) };
      },
    });
  }

  static fullName = fullName;
}
