import { expandAll, predefinedVariables } from "./ci-variables.js";
import {
  CiConfigError,
  firstMatch,
  parseCiConfig,
  type CiConfig,
  type CiJob,
} from "./ci-config.js";
import { GitLabError, notFound } from "./http.js";
import {
  ZERO_SHA,
  type Job,
  type JobStatus,
  type MergeRequest,
  type Pipeline,
  type PipelineSource,
  type Project,
  type User,
} from "./model.js";
import { PipelineState } from "./pipeline-state.js";
import { Runner } from "./runner.js";
import type { Webhooks } from "./webhooks.js";
import type { World } from "./world.js";

/**
 * Pipelines: created from `.gitlab-ci.yml` at the commit (for a push, a merge request, or the
 * API) with GitLab's predefined variables, `workflow:rules` and job `rules`; commit statuses
 * posted through the API (find-or-create: attached to the newest pipeline of the sha and ref, or
 * an `external` one); cancellation. The runner runs them.
 */

export interface Trigger {
  source: PipelineSource;
  /** The pipeline's ref: a branch, or `refs/merge-requests/:iid/head`. */
  ref: string;
  sha: string;
  beforeSha: string;
  mr: MergeRequest | null;
  user: User;
  variables?: Record<string, string>;
}

export type Creation =
  | { pipeline: Pipeline }
  | { none: "no-config" | "workflow" | "no-jobs" | "invalid"; message: string };

const NO_JOBS =
  "Pipeline will not run for the selected trigger. The rules configuration prevented any jobs from being added to the pipeline.";

/** GitLab's state events for a commit status, and where each may start. */
const EVENTS: Record<string, { event: string; from: JobStatus[] }> = {
  pending: { event: "enqueue", from: ["created"] },
  running: { event: "run", from: ["created", "pending"] },
  success: { event: "success", from: ["created", "pending", "running"] },
  failed: { event: "drop", from: ["created", "pending", "running"] },
  canceled: { event: "cancel", from: ["created", "pending", "running"] },
  skipped: { event: "skip", from: ["created", "pending"] },
};

export class Pipelines {
  readonly state: PipelineState;
  readonly runner: Runner;
  private readonly runs = new Map<number, Promise<void>>();

  constructor(
    private readonly world: World,
    webhooks: Webhooks,
  ) {
    this.state = new PipelineState(world, webhooks);
    this.runner = new Runner(world, this.state);
  }

  /** A pipeline from the commit's `.gitlab-ci.yml`, started; or why there is none. */
  async create(project: Project, t: Trigger): Promise<Creation> {
    const repo = this.world.repo(project);
    const text = await repo.readFile(t.sha, ".gitlab-ci.yml");
    if (text === null) return { none: "no-config", message: "Missing CI config file" };
    const commit = await repo.bare.readCommit(t.sha);
    const id = this.world.nextId("pipeline");
    const iid = project.nextPipelineIid;
    const predefined = predefinedVariables(this.world, project, t, id, iid, commit.message);
    if (t.source === "push" && /\[(ci[ _-]skip|skip[ _-]ci)\]/i.test(commit.message)) {
      return { pipeline: await this.persist(project, t, id, [], [], "skipped", null) };
    }
    let config: CiConfig;
    try {
      config = parseCiConfig(text);
    } catch (error) {
      if (!(error instanceof CiConfigError)) throw error;
      if (t.source === "api") return { none: "invalid", message: error.message };
      return { pipeline: await this.persist(project, t, id, [], [], "failed", error.message) };
    }
    const yaml = expandAll(config.variables, predefined);
    let vars = { ...predefined, ...yaml, ...project.variables, ...t.variables };
    if (config.workflowRules !== null) {
      const rule = firstMatch(config.workflowRules, vars);
      if (rule === null || rule.when === "never") {
        return { none: "workflow", message: "Pipeline filtered out by workflow rules." };
      }
      vars = {
        ...predefined,
        ...yaml,
        ...expandAll(rule.variables, predefined),
        ...project.variables,
        ...t.variables,
      };
    }
    const jobs: Job[] = [];
    for (const ci of config.jobs) {
      const job = this.admit(ci, vars, t, project);
      if (job !== null) jobs.push(job);
    }
    if (jobs.length === 0) return { none: "no-jobs", message: NO_JOBS };
    const stages = config.stages.filter((s) => jobs.some((j) => j.stage === s));
    const pipeline = await this.persist(project, t, id, stages, jobs, "created", null);
    const run = this.runner.run(pipeline).finally(() => this.runs.delete(pipeline.id));
    this.runs.set(pipeline.id, run);
    return { pipeline };
  }

  /** A job of the config if its rules admit it for this pipeline (a Job whose pipeline is set later). */
  private admit(
    ci: CiJob,
    pipelineVars: Record<string, string>,
    t: Trigger,
    project: Project,
  ): Job | null {
    const own = expandAll(ci.variables, pipelineVars);
    const vars = { ...pipelineVars, ...own, ...project.variables, ...t.variables };
    let when = ci.when;
    let allowFailure = ci.allowFailure ?? ci.when === "manual";
    if (ci.rules === null) {
      // Jobs without rules default to `only: [branches, tags]`: never in merge request pipelines.
      if (t.source === "merge_request_event" || when === "never") return null;
    } else {
      const rule = firstMatch(ci.rules, vars);
      if (rule === null || rule.when === "never") return null;
      when = rule.when ?? (ci.when === "never" ? "on_success" : ci.when);
      allowFailure = rule.allowFailure ?? ci.allowFailure ?? false;
      Object.assign(vars, expandAll(rule.variables, vars), project.variables, t.variables);
    }
    return {
      id: 0,
      kind: "build",
      pipeline: null as unknown as Pipeline,
      name: ci.name,
      stage: ci.stage,
      status: when === "manual" ? "manual" : "created",
      allowFailure,
      when,
      createdAt: Date.now(),
      startedAt: null,
      finishedAt: null,
      failureReason: null,
      targetUrl: null,
      description: null,
      user: t.user,
      retried: false,
      script: [...ci.beforeScript, ...ci.script],
      afterScript: ci.afterScript,
      variables: vars,
      timeoutMs: ci.timeoutMs,
      trace: "",
      process: null,
    };
  }

  private async persist(
    project: Project,
    t: Trigger,
    id: number,
    stages: string[],
    jobs: Job[],
    status: Pipeline["status"],
    yamlErrors: string | null,
  ): Promise<Pipeline> {
    const now = Date.now();
    const pipeline: Pipeline = {
      id,
      iid: project.nextPipelineIid++,
      project,
      sha: t.sha,
      beforeSha: t.beforeSha,
      ref: t.ref,
      source: t.source,
      status,
      user: t.user,
      mergeRequest: t.mr,
      stages,
      jobs: [],
      yamlErrors,
      variables: t.variables ?? {},
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: status === "created" ? null : now,
    };
    for (const job of jobs) {
      job.id = this.world.nextId("job");
      job.pipeline = pipeline;
      pipeline.jobs.push(job);
    }
    project.pipelines.push(pipeline);
    await this.state.loadCommit(project, t.sha);
    if (status !== "created") this.state.emitPipeline(pipeline);
    return pipeline;
  }

  /** `POST /projects/:id/statuses/:sha`: find-or-create, as `Ci::CreateCommitStatusService`. */
  async postStatus(
    project: Project,
    user: User,
    sha: string,
    input: {
      state: string;
      name: string;
      ref?: string;
      targetUrl?: string;
      description?: string;
      pipelineId?: number;
    },
  ): Promise<Job> {
    const repo = this.world.repo(project);
    if ((await repo.bare.objectType(sha)) !== "commit") throw notFound("Commit");
    const transition = EVENTS[input.state];
    if (transition === undefined) {
      throw new GitLabError(400, "state", { error: "state does not have a valid value" });
    }
    // GitLab's first matching pipeline: the newest of the sha (of the ref and id, when given).
    const pipelines = [...project.pipelines].reverse().filter((p) => p.sha === sha);
    const matching = pipelines.find(
      (p) =>
        (input.ref === undefined || p.ref === input.ref) &&
        (input.pipelineId === undefined || p.id === input.pipelineId),
    );
    if (input.pipelineId !== undefined && matching === undefined) {
      throw new GitLabError(404, "404 Pipeline for pipeline_id, sha and ref Not Found");
    }
    const ref = input.ref ?? matching?.ref ?? (await this.branchContaining(project, sha));
    if (ref === null) throw new GitLabError(404, "404 References for commit Not Found");
    let pipeline = matching;
    if (pipeline === undefined) {
      const id = this.world.nextId("pipeline");
      const t: Trigger = { source: "external", ref, sha, beforeSha: ZERO_SHA, mr: null, user };
      pipeline = await this.persist(project, t, id, ["external"], [], "created", null);
    }
    // Only an external status of this name, user and ref that is pending or running is updated.
    let job = pipeline.jobs.find(
      (j) =>
        j.kind === "external" &&
        j.name === input.name &&
        j.user?.id === user.id &&
        !j.retried &&
        (j.status === "pending" || j.status === "running"),
    );
    if (job !== undefined && !transition.from.includes(job.status)) {
      const message = `Cannot transition status via :${transition.event} from :${job.status} (Reason(s): Status cannot transition via "${transition.event}")`;
      throw new GitLabError(400, message);
    }
    if (job === undefined) {
      for (const old of pipeline.jobs) if (old.name === input.name) old.retried = true;
      job = this.externalJob(pipeline, user, input.name);
      pipeline.jobs.push(job);
    }
    if (input.targetUrl !== undefined) job.targetUrl = input.targetUrl;
    if (input.description !== undefined) job.description = input.description;
    if (input.state === "running" && job.status === "created") this.state.setJob(job, "pending");
    this.state.setJob(job, input.state as JobStatus, "api_failure");
    this.state.refresh(pipeline);
    return job;
  }

  private async branchContaining(project: Project, sha: string): Promise<string | null> {
    const { stdout } = await this.world
      .repo(project)
      .run(["for-each-ref", "--contains", sha, "--format=%(refname:lstrip=2)", "refs/heads/"]);
    const branches = stdout.split("\n").filter((b) => b !== "");
    return branches.includes(project.defaultBranch) ? project.defaultBranch : (branches[0] ?? null);
  }

  private externalJob(pipeline: Pipeline, user: User, name: string): Job {
    return {
      id: this.world.nextId("job"),
      kind: "external",
      pipeline,
      name,
      stage: "external",
      status: "created",
      allowFailure: false,
      when: "on_success",
      createdAt: Date.now(),
      startedAt: null,
      finishedAt: null,
      failureReason: null,
      targetUrl: null,
      description: null,
      user,
      retried: false,
      script: [],
      afterScript: [],
      variables: {},
      timeoutMs: 0,
      trace: "",
      process: null,
    };
  }

  cancel(pipeline: Pipeline): void {
    this.runner.cancel(pipeline);
    this.state.refresh(pipeline);
  }

  /** Waits for every started pipeline to finish (those waiting on a stuck job excepted). */
  async settle(): Promise<void> {
    for (;;) {
      const waiting = [...this.runs].filter(([id]) => !this.runner.stuck.has(id)).map(([, p]) => p);
      if (waiting.length === 0) return;
      await Promise.all(waiting);
    }
  }

  close(): void {
    this.runner.close();
  }
}
