import { join } from "node:path";
import type { AppAuth } from "./app-auth.js";
import type { BareRepository, CommitData, FileChange } from "./git.js";
import {
  GitHubError,
  notFound,
  optionalBoolean,
  optionalString,
  pageOf,
  requireString,
  validationFailed,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import { fullName, ZERO_SHA, type Repository } from "./model.js";
import * as objects from "./objects.js";
import type { Schema, Urls } from "./objects.js";
import { branchProtectionSummary, matchingProtection } from "./protection.js";
import type { RefService } from "./refs.js";
import type { WebhookHub } from "./webhooks.js";
import { actorAccount, type Actor, type RefUpdate, type World } from "./world.js";

/**
 * Repositories and git data: the repository, branches, refs (GitHub's 422s, fast-forward rule,
 * `force`), `POST /merges` (201, 204 nothing to merge, 409 conflict), git commits, commits,
 * compare, contents; `push` webhooks for every branch or tag move; and the helpers a test uses
 * to push commits as a developer would.
 */

// ---- representations -------------------------------------------------------------------------

function gitUser(urls: Urls, world: World, email: string): Schema<"simple-user"> | null {
  const account = [...world.accounts.values()].find((a) => a.email === email);
  return account === undefined ? null : objects.simpleUser(urls, account);
}

const UNSIGNED: Schema<"verification"> = {
  verified: false,
  reason: "unsigned",
  signature: null,
  payload: null,
  verified_at: null,
};

export function gitCommitObject(urls: Urls, repo: Repository, c: CommitData): Schema<"git-commit"> {
  const api = urls.repo(repo);
  return {
    sha: c.sha,
    node_id: objects.nodeId("Commit", parseInt(c.sha.slice(0, 7), 16)),
    url: `${api}/git/commits/${c.sha}`,
    html_url: `${urls.repoHtml(repo)}/commit/${c.sha}`,
    author: { name: c.author.name, email: c.author.email, date: c.author.date },
    committer: { name: c.committer.name, email: c.committer.email, date: c.committer.date },
    message: c.message,
    tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
    parents: c.parents.map((p) => ({
      sha: p,
      url: `${api}/git/commits/${p}`,
      html_url: `${urls.repoHtml(repo)}/commit/${p}`,
    })),
    verification: UNSIGNED,
  };
}

export function diffEntry(
  urls: Urls,
  repo: Repository,
  head: string,
  f: FileChange,
): Schema<"diff-entry"> {
  const path = f.filename.split("/").map(encodeURIComponent).join("/");
  return {
    sha: f.sha,
    filename: f.filename,
    status: f.status,
    additions: f.additions,
    deletions: f.deletions,
    changes: f.additions + f.deletions,
    blob_url: `${urls.repoHtml(repo)}/blob/${head}/${path}`,
    raw_url: `${urls.repoHtml(repo)}/raw/${head}/${path}`,
    contents_url: `${urls.repo(repo)}/contents/${path}?ref=${head}`,
    ...(f.patch !== "" ? { patch: f.patch } : {}),
    ...(f.previousFilename !== undefined ? { previous_filename: f.previousFilename } : {}),
  };
}

export async function commitObject(
  world: World,
  repo: Repository,
  sha: string,
  options: { files: boolean } = { files: true },
): Promise<Schema<"commit">> {
  const urls = world.urls;
  const git = world.gitOf(repo);
  const c = await git.readCommit(sha);
  const api = urls.repo(repo);
  const html = urls.repoHtml(repo);
  let files: FileChange[] = [];
  if (options.files) {
    const parent = c.parents[0] ?? (await git.emptyTree());
    files = await git.diff(parent, sha);
  }
  const additions = files.reduce((n, f) => n + f.additions, 0);
  const deletions = files.reduce((n, f) => n + f.deletions, 0);
  return {
    url: `${api}/commits/${sha}`,
    sha,
    node_id: objects.nodeId("Commit", parseInt(sha.slice(0, 7), 16)),
    html_url: `${html}/commit/${sha}`,
    comments_url: `${api}/commits/${sha}/comments`,
    commit: {
      url: `${api}/git/commits/${sha}`,
      author: { name: c.author.name, email: c.author.email, date: c.author.date },
      committer: { name: c.committer.name, email: c.committer.email, date: c.committer.date },
      message: c.message,
      comment_count: 0,
      tree: { sha: c.tree, url: `${api}/git/trees/${c.tree}` },
      verification: UNSIGNED,
    },
    author: gitUser(urls, world, c.author.email),
    committer: gitUser(urls, world, c.committer.email),
    parents: c.parents.map((p) => ({
      sha: p,
      url: `${api}/commits/${p}`,
      html_url: `${html}/commit/${p}`,
    })),
    ...(options.files
      ? {
          stats: { additions, deletions, total: additions + deletions },
          files: files.map((f) => diffEntry(urls, repo, sha, f)),
        }
      : {}),
  };
}

export function gitRefObject(
  urls: Urls,
  repo: Repository,
  ref: string,
  sha: string,
  type = "commit",
): Schema<"git-ref"> {
  const api = urls.repo(repo);
  return {
    ref,
    node_id: Buffer.from(`05:Ref${repo.id}:${ref}`).toString("base64"),
    url: `${api}/git/${ref}`,
    object: { type, sha, url: `${api}/git/${type === "tag" ? "tags" : "commits"}/${sha}` },
  };
}

/** A ref name as the git/refs routes take it (`heads/x`, or with `refs/`), made full. */
function fullRef(name: string): string {
  return name.startsWith("refs/") ? name : `refs/${name}`;
}

function checkRefName(ref: string): void {
  const bad =
    !ref.startsWith("refs/") ||
    ref.split("/").length < 3 ||
    /(^|\/)\.|\.\.|[\s~^:?*[\\]|\/$|\.lock$|@\{/.test(ref);
  if (bad) throw validationFailed(`${ref} is not a valid ref name.`);
}

// ---- the area -------------------------------------------------------------------------------

export class Repos {
  constructor(
    private readonly world: World,
    private readonly auth: AppAuth,
    private readonly refs: RefService,
    private readonly hooks: WebhookHub,
  ) {
    world.onRefUpdate((update) => this.emitPush(update));
  }

  private git(repo: Repository): BareRepository {
    return this.world.gitOf(repo);
  }

  /** Resolves a ref, branch or SHA in a route, or answers 404/422 as GitHub does. */
  private async resolve(repo: Repository, spec: string, missing = 404): Promise<string> {
    const sha = await this.git(repo).resolveCommit(spec);
    if (sha === null) {
      throw missing === 422
        ? validationFailed(`No commit found for SHA: ${spec}`)
        : new GitHubError(404, `No commit found for SHA: ${spec}`);
    }
    return sha;
  }

  // ---- push webhooks --------------------------------------------------------------------------

  private async emitPush(update: RefUpdate): Promise<void> {
    if (!update.ref.startsWith("refs/heads/") && !update.ref.startsWith("refs/tags/")) return;
    const { repo, before, after } = update;
    const urls = this.world.urls;
    const git = this.git(repo);
    const created = before === null;
    const deleted = after === null;
    let commitShas: string[] = [];
    if (after !== null) {
      if (before !== null) commitShas = await git.commitsBetween(before, after);
      else {
        const others = (await git.listRefs("refs/heads/"))
          .filter(([name]) => name !== update.ref)
          .map(([, sha]) => sha);
        const { stdout } = await git.run([
          "rev-list",
          "--reverse",
          "--topo-order",
          after,
          ...others.map((s) => `^${s}`),
        ]);
        commitShas = stdout.split("\n").filter((l) => l !== "");
      }
    }
    const commits = [];
    for (const sha of commitShas.slice(-20)) commits.push(await this.pushCommit(repo, sha));
    const account = actorAccount(update.actor);
    const short = (s: string | null): string => (s ?? ZERO_SHA).slice(0, 12);
    const head =
      after === null
        ? null
        : (commits.find((c) => c.id === after) ?? (await this.pushCommit(repo, after)));
    this.hooks.emitForRepo("push", repo, update.actor, {
      // A push's repository names its organization by login (other events carry an object).
      ...(repo.owner.type === "Organization"
        ? { repository: { ...objects.repository(urls, repo), organization: repo.owner.login } }
        : {}),
      ref: update.ref,
      before: before ?? ZERO_SHA,
      after: after ?? ZERO_SHA,
      created,
      deleted,
      forced: update.forced,
      base_ref: null,
      compare: created
        ? `${urls.repoHtml(repo)}/commit/${short(after)}`
        : `${urls.repoHtml(repo)}/compare/${short(before)}...${short(after)}`,
      commits,
      head_commit: head,
      pusher: { name: account.login, email: account.type === "Bot" ? null : account.email },
    });
    if (update.ref.startsWith("refs/heads/") && (created || deleted)) {
      const refName = update.ref.slice("refs/heads/".length);
      this.hooks.emitForRepo(created ? "create" : "delete", repo, update.actor, {
        ref: refName,
        ref_type: "branch",
        pusher_type: account.type === "Bot" ? "bot" : "user",
        ...(created ? { master_branch: repo.defaultBranch, description: repo.description } : {}),
      });
    }
  }

  private async pushCommit(repo: Repository, sha: string): Promise<Record<string, unknown>> {
    const git = this.git(repo);
    const c = await git.readCommit(sha);
    const parent = c.parents[0] ?? (await git.emptyTree());
    const changes = await git.diff(parent, sha);
    const person = (p: { name: string; email: string; date: string }): Record<string, unknown> => {
      const account = [...this.world.accounts.values()].find((a) => a.email === p.email);
      return {
        name: p.name,
        email: p.email,
        date: p.date,
        ...(account !== undefined ? { username: account.login } : {}),
      };
    };
    return {
      id: sha,
      tree_id: c.tree,
      distinct: true,
      message: c.message,
      timestamp: c.committer.date,
      url: `${this.world.urls.repoHtml(repo)}/commit/${sha}`,
      author: person(c.author),
      committer: person(c.committer),
      added: changes.filter((f) => f.status === "added").map((f) => f.filename),
      removed: changes.filter((f) => f.status === "removed").map((f) => f.filename),
      modified: changes
        .filter((f) => f.status !== "added" && f.status !== "removed")
        .map((f) => f.filename),
    };
  }

  // ---- helpers for tests acting as a developer -------------------------------------------------

  /**
   * Commits `files` (null deletes one) on `branch` (from its tip, or from `from` when the branch
   * is new or `from` is given) and pushes it as `by` would: protection applies unless
   * `force`-setup, webhooks and pull request updates follow. Returns the new commit.
   */
  async commit(
    repo: Repository,
    change: {
      branch: string;
      files: Record<string, string | null>;
      from?: string;
      message?: string;
      author?: { name: string; email: string };
      by: Actor;
      /** Push even where protection would refuse (test setup). */
      bypassProtection?: boolean;
      /** Allow a non-fast-forward move of an existing branch (a developer's `push --force`). */
      force?: boolean;
    },
  ): Promise<string> {
    const git = this.git(repo);
    const ref = `refs/heads/${change.branch}`;
    const current = await git.readRef(ref);
    const parent =
      change.from !== undefined
        ? await git.resolveCommit(change.from)
        : (current ?? (await git.resolveCommit(repo.defaultBranch)));
    if (change.from !== undefined && parent === null) throw new Error(`no commit ${change.from}`);
    const tree = await git.treeWith(
      parent,
      change.files,
      join(this.world.dataDir, `index-${repo.id}-${this.world.random.hex(8)}`),
    );
    const actorAccountValue = actorAccount(change.by);
    const author = change.author ?? {
      name: actorAccountValue.name,
      email: actorAccountValue.email,
    };
    const when = this.world.nowIso();
    const sha = await git.commitTree(
      tree,
      parent === null ? [] : [parent],
      change.message ?? "change",
      { ...author, date: when },
      { ...author, date: when },
    );
    await this.pushRef(repo, change.branch, sha, change.by, {
      bypassProtection: change.bypassProtection ?? false,
      force: change.force ?? false,
    });
    return sha;
  }

  /** Moves a branch to `sha` as a developer's push (fast-forward unless `force`). */
  async pushRef(
    repo: Repository,
    branch: string,
    sha: string | null,
    by: Actor,
    options: { bypassProtection?: boolean; force?: boolean } = {},
  ): Promise<void> {
    const git = this.git(repo);
    const ref = `refs/heads/${branch}`;
    const before = await git.readRef(ref);
    if (
      before !== null &&
      sha !== null &&
      options.force !== true &&
      !(await git.isAncestor(before, sha))
    ) {
      throw new Error(`push to ${branch} is not a fast forward (use force)`);
    }
    const result = await this.refs.update(
      { repo, ref, next: sha, actor: by, enforce: options.bypassProtection !== true },
      before,
    );
    if (!result.ok) throw new Error(`push to ${branch} lost a race`);
  }

  // ---- routes ---------------------------------------------------------------------------------

  register(server: HttpServer): void {
    const world = this.world;
    const urls = (): Urls => world.urls;
    const read = (ctx: RequestContext): { repo: Repository; actor: Actor } => {
      const repo = world.repoOf(ctx.params);
      return { repo, actor: this.auth.repoAccess(ctx, repo, ["metadata", "read"]) };
    };
    const contents = (
      ctx: RequestContext,
      level: "read" | "write",
    ): { repo: Repository; actor: Actor } => {
      const repo = world.repoOf(ctx.params);
      return { repo, actor: this.auth.repoAccess(ctx, repo, ["contents", level]) };
    };

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}",
      operationId: "repos/get",
      auth: "token",
      handler: (ctx) => {
        const { repo, actor } = read(ctx);
        let role: string | undefined;
        if (actor.kind === "user") role = world.roleOf(repo, actor.account);
        else {
          const cred = ctx.credential;
          const perms =
            cred.kind === "installation" ? world.tokens.get(cred.token)?.permissions : undefined;
          role =
            perms?.administration === "write"
              ? "admin"
              : perms?.contents === "write"
                ? "write"
                : "read";
        }
        return { status: 200, body: objects.repository(urls(), repo, role) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/branches",
      operationId: "repos/list-branches",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = read(ctx);
        const refs = await this.git(repo).listRefs("refs/heads/");
        let branches = refs.map(([name, sha]) => ({ name: name.slice("refs/heads/".length), sha }));
        const protectedOnly = ctx.query.get("protected");
        if (protectedOnly === "true")
          branches = branches.filter((b) => matchingProtection(repo, b.name) !== null);
        const page = pageOf(ctx, branches, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map((b) => ({
            name: b.name,
            commit: { sha: b.sha, url: `${urls().repo(repo)}/commits/${b.sha}` },
            protected: matchingProtection(repo, b.name) !== null,
          })),
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/branches/{branch+}",
      operationId: "repos/get-branch",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = read(ctx);
        const name = ctx.params.branch ?? "";
        const sha = await this.git(repo).readRef(`refs/heads/${name}`);
        if (sha === null) throw new GitHubError(404, "Branch not found");
        const api = urls().repo(repo);
        const protection = matchingProtection(repo, name);
        return {
          status: 200,
          body: {
            name,
            commit: await commitObject(world, repo, sha, { files: false }),
            _links: {
              self: `${api}/branches/${encodeURIComponent(name)}`,
              html: `${urls().repoHtml(repo)}/tree/${name}`,
            },
            protected: protection !== null,
            protection: branchProtectionSummary(protection),
            protection_url: `${api}/branches/${encodeURIComponent(name)}/protection`,
          },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/git/ref/{ref+}",
      operationId: "git/get-ref",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = contents(ctx, "read");
        const ref = fullRef(ctx.params.ref ?? "");
        const sha = await this.git(repo).readRef(ref);
        if (sha === null) throw notFound();
        return { status: 200, body: gitRefObject(urls(), repo, ref, sha) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/git/matching-refs/{ref+}",
      operationId: "git/list-matching-refs",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = contents(ctx, "read");
        const prefix = fullRef(ctx.params.ref ?? "");
        const all = await this.git(repo).listRefs("refs/");
        const matching = all.filter(([name]) => name.startsWith(prefix));
        const page = pageOf(ctx, matching, world.urls.api);
        return {
          status: 200,
          headers: page.headers,
          body: page.items.map(([name, sha]) => gitRefObject(urls(), repo, name, sha)),
        };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/git/refs",
      operationId: "git/create-ref",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = contents(ctx, "write");
        const ref = requireString(ctx.body, "ref", "Reference");
        const sha = requireString(ctx.body, "sha", "Reference");
        checkRefName(ref);
        const type = await this.git(repo).objectType(sha);
        if (type === null || !/^[0-9a-f]{40}$/.test(sha))
          throw validationFailed("Object does not exist");
        const result = await this.refs.update(
          { repo, ref, next: sha, actor, ctx, enforce: true },
          null,
        );
        if (!result.ok) throw validationFailed("Reference already exists");
        return {
          status: 201,
          body: gitRefObject(urls(), repo, ref, sha, type),
          headers: { location: `${urls().repo(repo)}/git/${ref}` },
        };
      },
    });

    server.add({
      method: "PATCH",
      path: "/repos/{owner}/{repo}/git/refs/{ref+}",
      operationId: "git/update-ref",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = contents(ctx, "write");
        const ref = fullRef(ctx.params.ref ?? "");
        const sha = requireString(ctx.body, "sha", "Reference");
        const force = optionalBoolean(ctx.body, "force") ?? false;
        const git = this.git(repo);
        if (!/^[0-9a-f]{40}$/.test(sha) || (await git.objectType(sha)) === null)
          throw validationFailed("Object does not exist");
        for (;;) {
          const before = await git.readRef(ref);
          if (before === null) throw validationFailed("Reference does not exist");
          if (!force && !(await git.isAncestor(before, sha)))
            throw validationFailed("Update is not a fast forward");
          const result = await this.refs.update(
            { repo, ref, next: sha, actor, ctx, enforce: true },
            before,
          );
          if (result.ok) return { status: 200, body: gitRefObject(urls(), repo, ref, sha) };
        }
      },
    });

    server.add({
      method: "DELETE",
      path: "/repos/{owner}/{repo}/git/refs/{ref+}",
      operationId: "git/delete-ref",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = contents(ctx, "write");
        const ref = fullRef(ctx.params.ref ?? "");
        const before = await this.git(repo).readRef(ref);
        if (before === null) throw validationFailed("Reference does not exist");
        const result = await this.refs.update(
          { repo, ref, next: null, actor, ctx, enforce: true },
          before,
        );
        if (!result.ok) throw validationFailed("Reference does not exist");
        return { status: 204 };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/merges",
      operationId: "repos/merge",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = contents(ctx, "write");
        const base = requireString(ctx.body, "base", "Merge");
        const headSpec = requireString(ctx.body, "head", "Merge");
        const message = optionalString(ctx.body, "commit_message");
        const git = this.git(repo);
        const ref = `refs/heads/${base}`;
        const baseSha = await git.readRef(ref);
        if (baseSha === null) throw new GitHubError(404, "Base does not exist");
        const headSha = await git.resolveCommit(headSpec);
        if (headSha === null) throw new GitHubError(404, "Head does not exist");
        if (await git.isAncestor(headSha, baseSha)) return { status: 204 };
        const merged = await git.mergeTree(baseSha, headSha);
        if ("conflicts" in merged) throw new GitHubError(409, "Merge conflict");
        const who = actorAccount(actor);
        const when = world.nowIso();
        const sha = await git.commitTree(
          merged.tree,
          [baseSha, headSha],
          message ?? `Merge ${headSpec} into ${base}`,
          { name: who.login, email: who.email, date: when },
          { name: "GitHub", email: "noreply@github.com", date: when },
        );
        const result = await this.refs.update(
          { repo, ref, next: sha, actor, ctx, enforce: true },
          baseSha,
        );
        if (!result.ok)
          throw new GitHubError(409, "Base branch was modified. Review and try the merge again.");
        return { status: 201, body: await commitObject(world, repo, sha) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/git/commits/{commit_sha}",
      operationId: "git/get-commit",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = contents(ctx, "read");
        const sha = ctx.params.commit_sha ?? "";
        const git = this.git(repo);
        if (!/^[0-9a-f]{4,40}$/.test(sha) || (await git.objectType(sha)) !== "commit")
          throw notFound();
        const full = (await git.resolveCommit(sha)) ?? sha;
        return { status: 200, body: gitCommitObject(urls(), repo, await git.readCommit(full)) };
      },
    });

    server.add({
      method: "POST",
      path: "/repos/{owner}/{repo}/git/commits",
      operationId: "git/create-commit",
      auth: "token",
      handler: async (ctx) => {
        const { repo, actor } = contents(ctx, "write");
        const message = requireString(ctx.body, "message", "Commit");
        const tree = requireString(ctx.body, "tree", "Commit");
        const parentsRaw = ctx.body.parents ?? [];
        if (!Array.isArray(parentsRaw) || parentsRaw.some((p) => typeof p !== "string")) {
          throw validationFailed(
            "Invalid request.\n\nFor 'properties/parents', must be an array of strings.",
          );
        }
        const parents = parentsRaw as string[];
        const git = this.git(repo);
        if ((await git.objectType(tree)) !== "tree")
          throw validationFailed("Tree SHA does not exist");
        for (const p of parents) {
          if ((await git.objectType(p)) !== "commit")
            throw validationFailed("Parent SHA does not exist or is not a commit object");
        }
        const who = actorAccount(actor);
        const person = (field: string): { name: string; email: string; date: string } => {
          const raw = ctx.body[field];
          const value =
            typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>) : {};
          return {
            name: typeof value.name === "string" ? value.name : who.login,
            email: typeof value.email === "string" ? value.email : who.email,
            date: typeof value.date === "string" ? value.date : world.nowIso(),
          };
        };
        const author = person("author");
        const committer = ctx.body.committer === undefined ? author : person("committer");
        const sha = await git.commitTree(tree, parents, message, author, committer);
        return {
          status: 201,
          body: gitCommitObject(urls(), repo, await git.readCommit(sha)),
          headers: { location: `${urls().repo(repo)}/git/commits/${sha}` },
        };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/commits/{ref+}",
      operationId: "repos/get-commit",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = contents(ctx, "read");
        const sha = await this.resolve(repo, ctx.params.ref ?? "", 422);
        return { status: 200, body: await commitObject(world, repo, sha) };
      },
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/compare/{basehead+}",
      operationId: "repos/compare-commits-with-basehead",
      auth: "token",
      handler: async (ctx) => {
        const { repo } = contents(ctx, "read");
        const basehead = ctx.params.basehead ?? "";
        const split = basehead.indexOf("...");
        if (split < 0) throw notFound();
        const git = this.git(repo);
        const base = await git.resolveCommit(basehead.slice(0, split));
        const head = await git.resolveCommit(basehead.slice(split + 3));
        if (base === null || head === null) throw notFound();
        const mergeBase = (await git.mergeBase(base, head)) ?? base;
        const ahead = await git.countBetween(base, head);
        const behind = await git.countBetween(head, base);
        const status =
          ahead === 0 && behind === 0
            ? "identical"
            : behind === 0
              ? "ahead"
              : ahead === 0
                ? "behind"
                : "diverged";
        const shas = await git.commitsBetween(mergeBase, head);
        const commits = [];
        for (const sha of shas.slice(0, 250))
          commits.push(await commitObject(world, repo, sha, { files: false }));
        const files = await git.diff(mergeBase, head);
        const html = urls().repoHtml(repo);
        return {
          status: 200,
          body: {
            url: `${urls().repo(repo)}/compare/${basehead}`,
            html_url: `${html}/compare/${basehead}`,
            permalink_url: `${html}/compare/${base}...${head}`,
            diff_url: `${html}/compare/${basehead}.diff`,
            patch_url: `${html}/compare/${basehead}.patch`,
            base_commit: await commitObject(world, repo, base, { files: false }),
            merge_base_commit: await commitObject(world, repo, mergeBase, { files: false }),
            status,
            ahead_by: ahead,
            behind_by: behind,
            total_commits: ahead,
            commits,
            files: files.map((f) => diffEntry(urls(), repo, head, f)),
          },
        };
      },
    });

    // The root directory: `contents/` (Octokit sends the empty path so).
    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/contents",
      operationId: "repos/get-content",
      auth: "token",
      handler: async (ctx) => this.getContent(ctx, contents(ctx, "read").repo),
    });

    server.add({
      method: "GET",
      path: "/repos/{owner}/{repo}/contents/{path+}",
      operationId: "repos/get-content",
      auth: "token",
      handler: async (ctx) => this.getContent(ctx, contents(ctx, "read").repo),
    });
  }

  private async getContent(
    ctx: RequestContext,
    repo: Repository,
  ): Promise<{
    status: number;
    body?: unknown;
    raw?: { contentType: string; text: string };
    headers?: Record<string, string>;
  }> {
    const urls = this.world.urls;
    const git = this.git(repo);
    const refSpec = ctx.query.get("ref") ?? repo.defaultBranch;
    const commit = await git.resolveCommit(refSpec);
    if (commit === null) throw new GitHubError(404, `No commit found for the ref ${refSpec}`);
    const path = (ctx.params.path ?? "").replace(/^\/+|\/+$/g, "");
    const api = urls.repo(repo);
    const html = urls.repoHtml(repo);
    const encoded = path.split("/").map(encodeURIComponent).join("/");
    const file = await git.readFile(commit, path);
    const accept = ctx.headers.accept ?? "";
    if (file !== null) {
      if (/application\/vnd\.github(\.v3)?\.raw/.test(accept)) {
        return {
          status: 200,
          raw: { contentType: "text/plain; charset=utf-8", text: file.content.toString("utf8") },
          headers: { "x-github-media-type": "github.v3; param=raw" },
        };
      }
      const self = `${api}/contents/${encoded}?ref=${encodeURIComponent(refSpec)}`;
      return {
        status: 200,
        body: {
          type: "file",
          encoding: "base64",
          size: file.size,
          name: path.split("/").pop() ?? path,
          path,
          content: (file.content.toString("base64").match(/.{1,60}/g) ?? []).join("\n") + "\n",
          sha: file.sha,
          url: self,
          git_url: `${api}/git/blobs/${file.sha}`,
          html_url: `${html}/blob/${refSpec}/${encoded}`,
          download_url: `${html}/raw/${refSpec}/${encoded}`,
          _links: {
            git: `${api}/git/blobs/${file.sha}`,
            self,
            html: `${html}/blob/${refSpec}/${encoded}`,
          },
        },
      };
    }
    const entries = await git.listTree(commit, path);
    if (entries === null) throw notFound();
    return {
      status: 200,
      body: entries.map((e) => {
        const entryPath = path === "" ? e.name : `${path}/${e.name}`;
        const enc = entryPath.split("/").map(encodeURIComponent).join("/");
        const type =
          e.type === "tree"
            ? "dir"
            : e.type === "commit"
              ? "submodule"
              : e.mode === "120000"
                ? "symlink"
                : "file";
        const self = `${api}/contents/${enc}?ref=${encodeURIComponent(refSpec)}`;
        const gitUrl = `${api}/git/${e.type === "tree" ? "trees" : "blobs"}/${e.sha}`;
        return {
          type,
          size: 0,
          name: e.name,
          path: entryPath,
          sha: e.sha,
          url: self,
          git_url: gitUrl,
          html_url: `${html}/${e.type === "tree" ? "tree" : "blob"}/${refSpec}/${enc}`,
          download_url: type === "file" ? `${html}/raw/${refSpec}/${enc}` : null,
          _links: {
            self,
            git: gitUrl,
            html: `${html}/${e.type === "tree" ? "tree" : "blob"}/${refSpec}/${enc}`,
          },
        };
      }),
    };
  }
}

export { fullName };
