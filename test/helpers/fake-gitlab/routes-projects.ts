import * as entities from "./entities.js";
import {
  bool,
  forbidden,
  GitLabError,
  int,
  notFound,
  paginate,
  requireStr,
  str,
  unauthorized,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import { ZERO_SHA, type Hook, type Project, type User } from "./model.js";
import type { Pushes } from "./pushes.js";
import type { Webhooks } from "./webhooks.js";
import { iso, type World } from "./world.js";

/**
 * Instance, user, project, repository and hook routes: `/version`, `/metadata`, `/user`,
 * `/personal_access_tokens/self`, `/projects/:id`, members, branches, raw files, commits,
 * protected branches, and project webhooks (with the hook events log and resend of 17.3/17.4).
 */

export function userOf(ctx: RequestContext): User | null {
  return ctx.credential.kind === "token" ? ctx.credential.user : null;
}

export function requireUser(ctx: RequestContext): User {
  const user = userOf(ctx);
  if (user === null) throw unauthorized();
  return user;
}

/** The project of the route's `:id`, and that the caller has at least `level` on it. */
export function projectWith(world: World, ctx: RequestContext, level = 0): Project {
  const project = world.projectFor(ctx.params.id ?? "", ctx.credential);
  if (level > 0 && world.effectiveLevel(project, userOf(ctx)) < level) {
    if (userOf(ctx) === null) throw unauthorized();
    throw forbidden();
  }
  return project;
}

export function registerProjectRoutes(
  http: HttpServer,
  world: World,
  webhooks: Webhooks,
  pushes: Pushes,
): void {
  const add = http.add.bind(http);
  add({
    method: "GET",
    path: "/version",
    scope: "user",
    handler: (ctx) => {
      requireUser(ctx);
      return {
        status: 200,
        body: { version: world.profile.version, revision: world.profile.revision },
      };
    },
  });
  add({
    method: "GET",
    path: "/metadata",
    scope: "user",
    handler: (ctx) => {
      requireUser(ctx);
      const { version, revision } = world.profile;
      const kas = { enabled: false, externalUrl: null, externalK8sProxyUrl: null, version: null };
      return { status: 200, body: { version, revision, kas, enterprise: false } };
    },
  });
  add({
    method: "GET",
    path: "/user",
    scope: "user",
    handler: (ctx) => ({ status: 200, body: entities.userFull(world, requireUser(ctx)) }),
  });
  add({
    method: "GET",
    path: "/personal_access_tokens/self",
    scope: "none",
    handler: (ctx) => {
      if (ctx.credential.kind !== "token") throw unauthorized();
      const t = ctx.credential.token;
      // An OAuth access token is not a personal access token.
      if (t.kind === "oauth") throw new GitLabError(404, "404 Not Found");
      const body = {
        id: t.id,
        name: t.name,
        revoked: t.revoked,
        created_at: iso(t.createdAt),
        description: null,
        scopes: t.scopes,
        user_id: t.user.id,
        last_used_at: iso(t.lastUsedAt),
        active: true,
        expires_at: t.expiresAt,
      };
      return { status: 200, body };
    },
  });
  add({
    method: "GET",
    path: "/projects/:id",
    scope: "read",
    handler: (ctx) => ({
      status: 200,
      body: entities.project(world, projectWith(world, ctx), userOf(ctx)),
    }),
  });
  add({
    method: "GET",
    path: "/projects/:id/members/all/:user_id",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx);
      const member = world.userById(Number(ctx.params.user_id));
      const level = member === undefined ? 0 : world.accessLevel(project, member);
      if (member === undefined || level === 0) throw notFound("Member");
      const body = {
        ...entities.userBasic(world, member),
        access_level: level,
        created_at: iso(member.createdAt),
        expires_at: null,
        membership_state: "active",
      };
      return { status: 200, body };
    },
  });
  registerRepositoryRoutes(http, world, pushes);
  registerHookRoutes(http, world, webhooks);
}

function registerRepositoryRoutes(http: HttpServer, world: World, pushes: Pushes): void {
  const branch = async (project: Project, name: string): Promise<Record<string, unknown>> => {
    const repo = world.repo(project);
    const sha = await repo.branchHead(name);
    if (sha === null) throw notFound("Branch");
    const data = await repo.bare.readCommit(sha);
    const defaultHead = await repo.branchHead(project.defaultBranch);
    const rule = world.protectionOf(project, name);
    return {
      name,
      commit: entities.commit(world, project, data),
      merged:
        name !== project.defaultBranch &&
        defaultHead !== null &&
        (await repo.bare.isAncestor(sha, defaultHead)),
      protected: rule !== null,
      developers_can_push: rule === null || rule.pushAccessLevel === 30,
      developers_can_merge: rule === null || rule.mergeAccessLevel === 30,
      can_push: true,
      default: name === project.defaultBranch,
      web_url: `${world.projectWeb(project)}/-/tree/${name}`,
    };
  };
  http.add({
    method: "GET",
    path: "/projects/:id/repository/branches/:branch+",
    scope: "read",
    handler: async (ctx) => ({
      status: 200,
      body: await branch(projectWith(world, ctx), ctx.params.branch ?? ""),
    }),
  });
  http.add({
    method: "DELETE",
    path: "/projects/:id/repository/branches/:branch+",
    scope: "write",
    handler: async (ctx) => {
      const project = projectWith(world, ctx, 30);
      const name = ctx.params.branch ?? "";
      const repo = world.repo(project);
      const sha = await repo.branchHead(name);
      if (sha === null) throw new GitLabError(404, "404 Branch Not Found");
      if (name === project.defaultBranch || world.protectionOf(project, name) !== null) {
        throw new GitLabError(405, "Protected branch cant be removed");
      }
      if (!(await repo.updateRef(`refs/heads/${name}`, ZERO_SHA, sha)))
        throw new GitLabError(409, "409 Conflict");
      await world.withLock(project, () =>
        pushes.process(project, requireUser(ctx), [
          { ref: `refs/heads/${name}`, before: sha, after: ZERO_SHA },
        ]),
      );
      return { status: 204 };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/repository/files/:file_path+/raw",
    scope: "read",
    handler: async (ctx) => {
      const project = projectWith(world, ctx);
      const repo = world.repo(project);
      const commit = await repo.resolve(str(ctx, "ref") ?? project.defaultBranch);
      const text = commit === null ? null : await repo.readFile(commit, ctx.params.file_path ?? "");
      if (text === null) throw notFound("File");
      return { status: 200, raw: { contentType: "text/plain; charset=utf-8", text } };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/repository/commits/:sha",
    scope: "read",
    handler: async (ctx) => {
      const project = projectWith(world, ctx);
      const repo = world.repo(project);
      const sha = await repo.resolve(ctx.params.sha ?? "");
      if (sha === null) throw notFound("Commit");
      const data = await repo.bare.readCommit(sha);
      let stats: { additions: number; deletions: number } | null = null;
      if (bool(ctx, "stats") !== false) {
        const files = await repo.bare.diff(data.parents[0] ?? (await repo.bare.emptyTree()), sha);
        stats = {
          additions: files.reduce((n, f) => n + f.additions, 0),
          deletions: files.reduce((n, f) => n + f.deletions, 0),
        };
      }
      return { status: 200, body: entities.commitDetail(world, project, data, stats) };
    },
  });
  // Compare two refs or commits; `straight=true` diffs `from` against `to` directly (else against
  // their merge base). What GitLab lists of the commits between is left out (`commits: []`).
  http.add({
    method: "GET",
    path: "/projects/:id/repository/compare",
    scope: "read",
    handler: async (ctx) => {
      const project = projectWith(world, ctx);
      const repo = world.repo(project);
      const from = await repo.resolve(str(ctx, "from") ?? "");
      const to = await repo.resolve(str(ctx, "to") ?? "");
      if (from === null || to === null) throw notFound("Ref");
      const base =
        bool(ctx, "straight") === true ? from : ((await repo.bare.mergeBase(from, to)) ?? from);
      const files = await repo.bare.diff(base, to);
      const data = await repo.bare.readCommit(to);
      return {
        status: 200,
        body: {
          commit: entities.commitDetail(world, project, data, null),
          commits: [],
          diffs: files.map((file) => ({
            old_path: file.previousFilename ?? file.filename,
            new_path: file.filename,
            a_mode: "100644",
            b_mode: "100644",
            diff: file.patch,
            new_file: file.status === "added",
            renamed_file: file.status === "renamed",
            deleted_file: file.status === "removed",
            generated_file: false,
          })),
          compare_timeout: false,
          compare_same_ref: from === to,
          web_url: `${world.url}/${project.pathWithNamespace}/-/compare/${from}...${to}`,
        },
      };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/protected_branches",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 40);
      const levels = (level: number): Record<string, unknown>[] => [
        {
          id: level,
          access_level: level,
          access_level_description:
            { 0: "No one", 30: "Developers + Maintainers", 40: "Maintainers" }[level] ?? "",
          user_id: null,
          group_id: null,
        },
      ];
      const body = project.protectedBranches.map((p) => ({
        id: p.id,
        name: p.name,
        push_access_levels: levels(p.pushAccessLevel),
        merge_access_levels: levels(p.mergeAccessLevel),
        allow_force_push: p.allowForcePush,
        code_owner_approval_required: false,
      }));
      return paginate(ctx, body, world.url);
    },
  });
}

function hookInput(ctx: RequestContext, hook: Partial<Hook>): void {
  const flags = [
    "push_events",
    "merge_requests_events",
    "note_events",
    "pipeline_events",
    "job_events",
    "tag_push_events",
  ] as const;
  for (const flag of flags) {
    const value = bool(ctx, flag);
    if (value !== undefined && hook.events !== undefined) hook.events[flag] = value;
  }
  const filter = str(ctx, "push_events_branch_filter");
  if (filter !== undefined) hook.pushEventsBranchFilter = filter;
  const strategy = str(ctx, "branch_filter_strategy");
  if (strategy === "wildcard" || strategy === "regex" || strategy === "all_branches")
    hook.branchFilterStrategy = strategy;
  const ssl = bool(ctx, "enable_ssl_verification");
  if (ssl !== undefined) hook.enableSslVerification = ssl;
  const token = str(ctx, "token");
  if (token !== undefined) hook.token = token;
}

export function newHook(world: World, project: Project, url: string): Hook {
  return {
    id: world.nextId("hook"),
    uuid: world.random.guid(),
    project,
    url,
    token: null,
    events: {
      push_events: true,
      merge_requests_events: false,
      note_events: false,
      pipeline_events: false,
      job_events: false,
      tag_push_events: false,
    },
    pushEventsBranchFilter: "",
    branchFilterStrategy: "wildcard",
    enableSslVerification: true,
    createdAt: Date.now(),
    failures: 0,
    backoffCount: 0,
    alertStatus: "executable",
    disabledUntil: null,
  };
}

function registerHookRoutes(http: HttpServer, world: World, webhooks: Webhooks): void {
  const hookOf = (ctx: RequestContext): { project: Project; hook: Hook } => {
    const project = projectWith(world, ctx, 40);
    const hook = project.hooks.get(Number(ctx.params.hook_id));
    if (hook === undefined) throw notFound();
    return { project, hook };
  };
  http.add({
    method: "GET",
    path: "/projects/:id/hooks",
    scope: "read",
    handler: (ctx) =>
      paginate(ctx, [...projectWith(world, ctx, 40).hooks.values()].map(entities.hook), world.url),
  });
  http.add({
    method: "GET",
    path: "/projects/:id/hooks/:hook_id",
    scope: "read",
    handler: (ctx) => ({ status: 200, body: entities.hook(hookOf(ctx).hook) }),
  });
  http.add({
    method: "POST",
    path: "/projects/:id/hooks",
    scope: "write",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 40);
      const url = requireStr(ctx, "url");
      if (!/^https?:\/\/[^/]+/.test(url))
        throw new GitLabError(422, "url", {
          message: { url: ["is blocked: Only allowed schemes are http, https"] },
        });
      const hook = newHook(world, project, url);
      hookInput(ctx, hook);
      project.hooks.set(hook.id, hook);
      return { status: 201, body: entities.hook(hook) };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/hooks/:hook_id",
    scope: "write",
    handler: (ctx) => {
      const { hook } = hookOf(ctx);
      const url = str(ctx, "url");
      if (url !== undefined) hook.url = url;
      hookInput(ctx, hook);
      return { status: 200, body: entities.hook(hook) };
    },
  });
  http.add({
    method: "DELETE",
    path: "/projects/:id/hooks/:hook_id",
    scope: "write",
    handler: (ctx) => {
      const { project, hook } = hookOf(ctx);
      project.hooks.delete(hook.id);
      return { status: 204 };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/hooks/:hook_id/events",
    scope: "read",
    handler: (ctx) => {
      const { hook } = hookOf(ctx);
      const status = int(ctx, "status");
      const log = webhooks
        .log(hook)
        .filter((e) => status === undefined || e.response_status === String(status));
      return paginate(ctx, log.reverse(), world.url);
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/hooks/:hook_id/events/:event_id/resend",
    scope: "write",
    handler: async (ctx) => {
      const { hook } = hookOf(ctx);
      const attempt = webhooks.deliveries.find(
        (a) => a.id === Number(ctx.params.event_id) && a.hookId === hook.id,
      );
      if (attempt === undefined) throw notFound();
      const sent = await webhooks.resend(attempt.id);
      return { status: 201, body: { response_status: sent.status } };
    },
  });
}
