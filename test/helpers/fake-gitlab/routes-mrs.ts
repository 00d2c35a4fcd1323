import * as entities from "./entities.js";
import {
  bool,
  forbidden,
  GitLabError,
  list,
  missing,
  notFound,
  paginate,
  requireStr,
  str,
  type HttpServer,
  type RequestContext,
} from "./http.js";
import type { Changes, MergeRequests } from "./merge-requests.js";
import type { Merges } from "./merge.js";
import type { MergeRequest, Project, User } from "./model.js";
import type { Notes } from "./notes.js";
import { projectWith, requireUser, userOf } from "./routes-projects.js";
import { iso, type World } from "./world.js";

/**
 * Merge request routes: list (no recheck), single read (the lazy check), create, update
 * (labels, title, state), merge, notes (list, create with quick actions, edit), award emoji on
 * notes, and threads (discussions) that can be resolved.
 */

export interface MrServices {
  world: World;
  mrs: MergeRequests;
  merges: Merges;
  notes: Notes;
}

function mrOf(
  world: World,
  ctx: RequestContext,
  level = 0,
): { project: Project; mr: MergeRequest } {
  const project = projectWith(world, ctx, level);
  return { project, mr: world.mergeRequest(project, Number(ctx.params.iid)) };
}

function mayUpdate(world: World, mr: MergeRequest, user: User): boolean {
  const level = world.effectiveLevel(mr.project, user);
  return level >= 30 || (mr.author.id === user.id && level >= 10);
}

export function registerMergeRequestRoutes(http: HttpServer, s: MrServices): void {
  const { world, mrs, merges } = s;
  http.add({
    method: "GET",
    path: "/projects/:id/merge_requests",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx);
      const state = str(ctx, "state") ?? "all";
      const target = str(ctx, "target_branch");
      const source = str(ctx, "source_branch");
      const updatedAfter = str(ctx, "updated_after");
      const after = updatedAfter === undefined ? null : Date.parse(updatedAfter);
      const labels = list(ctx, "labels");
      const iids = list(ctx, "iids[]") ?? list(ctx, "iids");
      const orderBy = str(ctx, "order_by") === "updated_at" ? "updatedAt" : "createdAt";
      const sort = str(ctx, "sort") === "asc" ? 1 : -1;
      const found = [...project.mergeRequests.values()]
        .filter((m) => state === "all" || m.state === state)
        .filter((m) => target === undefined || m.targetBranch === target)
        .filter((m) => source === undefined || m.sourceBranch === source)
        .filter((m) => after === null || m.updatedAt > after)
        .filter(
          (m) =>
            labels === undefined ||
            labels.every((l) => m.labels.some((t) => t.toLowerCase() === l.toLowerCase())),
        )
        .filter((m) => iids === undefined || iids.includes(String(m.iid)))
        .sort((a, b) => sort * (a[orderBy] - b[orderBy] || a.id - b.id));
      return paginate(
        ctx,
        found.map((m) => entities.mergeRequestBasic(world, m)),
        world.url,
      );
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/merge_requests/:iid",
    scope: "read",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx);
      await world.withLock(mr.project, () => mrs.read(mr));
      return { status: 200, body: entities.mergeRequest(world, mr, userOf(ctx)) };
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/merge_requests",
    scope: "write",
    handler: async (ctx) => {
      const project = projectWith(world, ctx, 30);
      const names = ["title", "source_branch", "target_branch"].filter(
        (n) => (str(ctx, n) ?? "") === "",
      );
      if (names.length > 0) throw missing(...names);
      const mr = await mrs.open(project, requireUser(ctx), {
        sourceBranch: requireStr(ctx, "source_branch"),
        targetBranch: requireStr(ctx, "target_branch"),
        title: requireStr(ctx, "title"),
        description: str(ctx, "description") ?? "",
        labels: list(ctx, "labels") ?? [],
        ...optional("squash", bool(ctx, "squash")),
        ...optional("removeSourceBranch", bool(ctx, "remove_source_branch")),
      });
      // Presenting a merge request starts GitLab's (asynchronous) check, as a read does.
      await world.withLock(project, () => mrs.read(mr));
      return { status: 201, body: entities.mergeRequest(world, mr, userOf(ctx)) };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/merge_requests/:iid",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx);
      const user = requireUser(ctx);
      if (!mayUpdate(world, mr, user)) throw forbidden();
      const changes: Changes = {
        ...optional("title", str(ctx, "title")),
        ...optional("description", str(ctx, "description")),
        ...optional("targetBranch", str(ctx, "target_branch")),
        ...optional("labels", list(ctx, "labels")),
        ...optional("addLabels", list(ctx, "add_labels")),
        ...optional("removeLabels", list(ctx, "remove_labels")),
        ...optional("squash", bool(ctx, "squash")),
        ...optional("removeSourceBranch", bool(ctx, "remove_source_branch")),
      };
      const stateEvent = str(ctx, "state_event");
      if (Object.keys(changes).length === 0 && stateEvent === undefined) {
        throw new GitLabError(400, "missing", {
          error:
            "assignee_id, assignee_ids, reviewer_ids, description, labels, add_labels, remove_labels, milestone_id, remove_source_branch, allow_collaboration, allow_maintainer_to_push, squash, target_branch, title, state_event, discussion_locked are missing, at least one parameter must be provided",
        });
      }
      await mrs.update(mr, user, changes);
      if (stateEvent === "close" || stateEvent === "reopen")
        await mrs.setState(mr, user, stateEvent);
      await world.withLock(mr.project, () => mrs.read(mr));
      return { status: 200, body: entities.mergeRequest(world, mr, user) };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/merge_requests/:iid/merge",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx);
      const user = requireUser(ctx);
      await merges.merge(mr, user, {
        ...optional("sha", str(ctx, "sha")),
        ...optional("squash", bool(ctx, "squash")),
        ...optional("shouldRemoveSourceBranch", bool(ctx, "should_remove_source_branch")),
        ...optional("mergeCommitMessage", str(ctx, "merge_commit_message")),
        ...optional("squashCommitMessage", str(ctx, "squash_commit_message")),
      });
      return { status: 200, body: entities.mergeRequest(world, mr, user) };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/merge_requests/:iid/rebase",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx);
      const user = requireUser(ctx);
      if (!world.canPush(mr.project, user, mr.sourceBranch)) throw forbidden();
      await merges.rebase(mr, user);
      return { status: 202, body: { rebase_in_progress: true } };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/merge_requests/:iid/pipelines",
    scope: "read",
    handler: (ctx) => {
      const { project, mr } = mrOf(world, ctx);
      const found = project.pipelines
        .filter(
          (p) => p.mergeRequest === mr || (p.ref === mr.sourceBranch && p.mergeRequest === null),
        )
        .sort((a, b) => b.id - a.id);
      return paginate(
        ctx,
        found.map((p) => entities.pipelineBasic(world, p)),
        world.url,
      );
    },
  });
  registerNoteRoutes(http, s);
}

/** `{key: value}` when the value is given, `{}` otherwise (exactOptionalPropertyTypes). */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function registerNoteRoutes(http: HttpServer, s: MrServices): void {
  const { world, notes } = s;
  const awardJson = (
    noteId: number,
    a: { id: number; name: string; user: User; createdAt: number },
  ): Record<string, unknown> => ({
    id: a.id,
    name: a.name,
    user: entities.userBasic(world, a.user),
    created_at: iso(a.createdAt),
    updated_at: iso(a.createdAt),
    awardable_id: noteId,
    awardable_type: "Note",
    url: null,
  });
  http.add({
    method: "GET",
    path: "/projects/:id/merge_requests/:iid/notes",
    scope: "read",
    handler: (ctx) => {
      const { mr } = mrOf(world, ctx);
      const key = str(ctx, "order_by") === "updated_at" ? "updatedAt" : "createdAt";
      const sort = str(ctx, "sort") === "asc" ? 1 : -1;
      const found = [...mr.notes].sort((a, b) => sort * (a[key] - b[key] || a.id - b.id));
      return paginate(
        ctx,
        found.map((n) => entities.note(world, mr, n)),
        world.url,
      );
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/merge_requests/:iid/notes",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx, 10);
      const body = requireStr(ctx, "body");
      const result = await notes.create(mr, requireUser(ctx), body, {
        ...optional("internal", bool(ctx, "internal")),
      });
      if (result.note === null) {
        return { status: 202, body: { commands_changes: {}, summary: result.summary } };
      }
      return { status: 201, body: entities.note(world, mr, result.note) };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/merge_requests/:iid/notes/:note_id",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx);
      const note = notes.note(mr, Number(ctx.params.note_id));
      const user = requireUser(ctx);
      if (note.author.id !== user.id && !user.admin) throw forbidden();
      await notes.edit(mr, note, requireStr(ctx, "body"));
      return { status: 200, body: entities.note(world, mr, note) };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/merge_requests/:iid/notes/:note_id/award_emoji",
    scope: "read",
    handler: (ctx) => {
      const { mr } = mrOf(world, ctx);
      const note = notes.note(mr, Number(ctx.params.note_id));
      return paginate(
        ctx,
        note.awards.map((a) => awardJson(note.id, a)),
        world.url,
      );
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/merge_requests/:iid/notes/:note_id/award_emoji",
    scope: "write",
    handler: (ctx) => {
      const { mr } = mrOf(world, ctx, 10);
      const note = notes.note(mr, Number(ctx.params.note_id));
      const award = notes.award(note, requireUser(ctx), requireStr(ctx, "name"));
      return { status: 201, body: awardJson(note.id, award) };
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/merge_requests/:iid/discussions",
    scope: "write",
    handler: async (ctx) => {
      const { mr } = mrOf(world, ctx, 10);
      const result = await notes.create(mr, requireUser(ctx), requireStr(ctx, "body"), {
        thread: true,
      });
      const note = result.note;
      if (note === null)
        return { status: 202, body: { commands_changes: {}, summary: result.summary } };
      return {
        status: 201,
        body: {
          id: note.discussionId,
          individual_note: false,
          notes: [entities.note(world, mr, note)],
        },
      };
    },
  });
  http.add({
    method: "PUT",
    path: "/projects/:id/merge_requests/:iid/discussions/:discussion_id",
    scope: "write",
    handler: (ctx) => {
      const { mr } = mrOf(world, ctx, 20);
      const resolved = bool(ctx, "resolved");
      if (resolved === undefined) throw missing("resolved");
      notes.resolve(mr, ctx.params.discussion_id ?? "", resolved);
      const thread = mr.notes.filter((n) => n.discussionId === ctx.params.discussion_id);
      if (thread.length === 0) throw notFound("Discussion");
      return {
        status: 200,
        body: {
          id: ctx.params.discussion_id,
          individual_note: false,
          notes: thread.map((n) => entities.note(world, mr, n)),
        },
      };
    },
  });
}
