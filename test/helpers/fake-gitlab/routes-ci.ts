import * as entities from "./entities.js";
import {
  bool,
  GitLabError,
  int,
  list,
  notFound,
  paginate,
  requireStr,
  scalar,
  str,
  type HttpServer,
} from "./http.js";
import type { Pipelines } from "./pipelines.js";
import { optional } from "./routes-mrs.js";
import { projectWith, requireUser } from "./routes-projects.js";
import type { World } from "./world.js";

/**
 * CI routes: pipelines (list with GitLab's filters, single, jobs, cancel, create via the API),
 * job traces, and commit statuses (post with find-or-create semantics, list a commit's).
 */

export function registerCiRoutes(http: HttpServer, world: World, pipelines: Pipelines): void {
  http.add({
    method: "GET",
    path: "/projects/:id/pipelines",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 20);
      const sha = str(ctx, "sha");
      const ref = str(ctx, "ref");
      const source = str(ctx, "source");
      const status = str(ctx, "status");
      const updatedAfter = str(ctx, "updated_after");
      const after = updatedAfter === undefined ? null : Date.parse(updatedAfter);
      const key = str(ctx, "order_by") === "updated_at" ? "updatedAt" : "id";
      const sort = str(ctx, "sort") === "asc" ? 1 : -1;
      const found = project.pipelines
        .filter((p) => sha === undefined || p.sha === sha)
        .filter((p) => ref === undefined || p.ref === ref)
        .filter((p) => source === undefined || p.source === source)
        .filter((p) => status === undefined || p.status === status)
        .filter((p) => after === null || p.updatedAt > after)
        .sort((a, b) => sort * (a[key] - b[key] || a.id - b.id));
      return paginate(
        ctx,
        found.map((p) => entities.pipelineBasic(world, p)),
        world.url,
      );
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/pipelines/:pipeline_id",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 20);
      return {
        status: 200,
        body: entities.pipelineFull(world, world.pipeline(project, Number(ctx.params.pipeline_id))),
      };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/pipelines/:pipeline_id/jobs",
    scope: "read",
    handler: async (ctx) => {
      const project = projectWith(world, ctx, 20);
      const pipeline = world.pipeline(project, Number(ctx.params.pipeline_id));
      const commit = await world.repo(project).bare.readCommit(pipeline.sha);
      const scopes = list(ctx, "scope[]") ?? list(ctx, "scope");
      const retried = bool(ctx, "include_retried") === true;
      const jobs = pipeline.jobs
        .filter((j) => j.kind === "build" && (retried || !j.retried))
        .filter((j) => scopes === undefined || scopes.includes(j.status))
        .sort((a, b) => b.id - a.id);
      return paginate(
        ctx,
        jobs.map((j) => entities.job(world, j, commit)),
        world.url,
      );
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/pipelines/:pipeline_id/cancel",
    scope: "write",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 30);
      const pipeline = world.pipeline(project, Number(ctx.params.pipeline_id));
      pipelines.cancel(pipeline);
      return { status: 200, body: entities.pipelineFull(world, pipeline) };
    },
  });
  http.add({
    method: "POST",
    path: "/projects/:id/pipeline",
    scope: "write",
    handler: async (ctx) => {
      const project = projectWith(world, ctx, 30);
      const ref = requireStr(ctx, "ref");
      const sha = await world.repo(project).branchHead(ref);
      if (sha === null)
        throw new GitLabError(400, "ref", { message: { base: ["Reference not found"] } });
      const variables: Record<string, string> = {};
      const given = ctx.input.variables;
      if (Array.isArray(given)) {
        for (const v of given as { key?: unknown; value?: unknown }[]) {
          if (typeof v.key === "string") variables[v.key] = scalar(v.value);
        }
      }
      const created = await pipelines.create(project, {
        source: "api",
        ref,
        sha,
        beforeSha: "0".repeat(40),
        mr: null,
        user: requireUser(ctx),
        variables,
      });
      if ("none" in created)
        throw new GitLabError(400, created.message, { message: { base: [created.message] } });
      return { status: 201, body: entities.pipelineFull(world, created.pipeline) };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/jobs/:job_id/trace",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 20);
      const job = project.pipelines
        .flatMap((p) => p.jobs)
        .find((j) => j.id === Number(ctx.params.job_id) && j.kind === "build");
      if (job === undefined) throw notFound();
      return { status: 200, raw: { contentType: "text/plain", text: job.trace } };
    },
  });
  registerStatusRoutes(http, world, pipelines);
}

function registerStatusRoutes(http: HttpServer, world: World, pipelines: Pipelines): void {
  http.add({
    method: "POST",
    path: "/projects/:id/statuses/:sha",
    scope: "write",
    handler: async (ctx) => {
      const project = projectWith(world, ctx, 30);
      const status = await world.withLock(project, () =>
        pipelines.postStatus(project, requireUser(ctx), ctx.params.sha ?? "", {
          state: requireStr(ctx, "state"),
          name: str(ctx, "name") ?? str(ctx, "context") ?? "default",
          ...optional("ref", str(ctx, "ref")),
          ...optional("targetUrl", str(ctx, "target_url")),
          ...optional("description", str(ctx, "description")),
          ...optional("pipelineId", int(ctx, "pipeline_id")),
        }),
      );
      return { status: 201, body: entities.commitStatus(world, status) };
    },
  });
  http.add({
    method: "GET",
    path: "/projects/:id/repository/commits/:sha/statuses",
    scope: "read",
    handler: (ctx) => {
      const project = projectWith(world, ctx, 20);
      const sha = ctx.params.sha ?? "";
      const ref = str(ctx, "ref");
      const name = str(ctx, "name");
      const all = bool(ctx, "all") === true;
      const jobs = project.pipelines
        .filter((p) => p.sha === sha && (ref === undefined || p.ref === ref))
        .flatMap((p) => p.jobs)
        .filter((j) => name === undefined || j.name === name);
      // Without `all`, the latest status of each name only.
      const latest = new Map<string, (typeof jobs)[number]>();
      for (const j of jobs)
        if (!j.retried && (latest.get(j.name)?.id ?? 0) < j.id) latest.set(j.name, j);
      const statuses = (all ? jobs : [...latest.values()]).sort((a, b) => a.id - b.id);
      return paginate(
        ctx,
        statuses.map((j) => entities.commitStatus(world, j)),
        world.url,
      );
    },
  });
}
