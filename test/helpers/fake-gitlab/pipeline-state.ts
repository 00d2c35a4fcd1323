import type { PushCommit } from "./git.js";
import type { Job, JobStatus, Pipeline, PipelineStatus, Project } from "./model.js";
import * as payloads from "./payloads.js";
import type { Webhooks } from "./webhooks.js";
import type { World } from "./world.js";

/**
 * Job and pipeline statuses as GitLab moves them: every job change may change the pipeline's
 * status, which is GitLab's composite of its latest statuses (`Gitlab::Ci::Status::Composite`:
 * allowed failures count as success with warnings). Each job change of a CI job sends a Job Hook;
 * each change of the pipeline's status a Pipeline Hook.
 */

const TERMINAL: readonly JobStatus[] = ["success", "failed", "canceled", "skipped"];

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL.includes(status);
}

/** The pipeline's status from its jobs' (retried statuses excluded). */
export function composite(jobs: readonly Job[]): PipelineStatus {
  const statuses = jobs
    .filter((j) => !j.retried)
    .map((j) => {
      if (j.allowFailure && j.status === "failed") return "warning";
      if (j.allowFailure && j.status === "manual") return "ignored";
      return j.status;
    });
  const only = (...allowed: string[]): boolean => statuses.every((s) => allowed.includes(s));
  const any = (...wanted: string[]): boolean => statuses.some((s) => wanted.includes(s));
  if (statuses.length === 0 || only("skipped", "ignored")) return "skipped";
  if (only("success", "skipped", "warning", "ignored")) return "success";
  if (only("created", "warning", "ignored")) return "created";
  if (only("canceled", "success", "skipped", "warning", "ignored")) return "canceled";
  if (only("pending", "created", "skipped", "warning", "ignored")) return "pending";
  if (any("running", "pending")) return "running";
  if (any("manual")) return "manual";
  if (any("created")) return "running";
  return "failed";
}

export class PipelineState {
  private readonly commits = new Map<string, PushCommit>();

  constructor(
    private readonly world: World,
    private readonly webhooks: Webhooks,
  ) {}

  /** The commit's details for hook payloads, read once per sha. */
  async loadCommit(project: Project, sha: string): Promise<void> {
    const key = `${project.id}:${sha}`;
    if (this.commits.has(key)) return;
    const data = await this.world.repo(project).bare.readCommit(sha);
    this.commits.set(key, {
      sha,
      message: data.message,
      title: data.message.split("\n")[0] ?? "",
      timestamp: data.author.date.replace(/Z$/, "+00:00"),
      author: { name: data.author.name, email: data.author.email },
      added: [],
      modified: [],
      removed: [],
    });
  }

  commitOf(pipeline: Pipeline): PushCommit | null {
    return this.commits.get(`${pipeline.project.id}:${pipeline.sha}`) ?? null;
  }

  /** Moves a job; sends its Job Hook, then the pipeline's if its status changed. */
  setJob(job: Job, status: JobStatus, failureReason: string | null = null): void {
    if (job.status === status) return;
    const now = Date.now();
    job.status = status;
    if (status === "running" && job.startedAt === null) job.startedAt = now;
    if (isTerminal(status)) job.finishedAt = now;
    job.failureReason = status === "failed" ? (failureReason ?? "script_failure") : null;
    if (job.kind === "build") {
      this.webhooks.emit(
        job.pipeline.project,
        "Job Hook",
        payloads.job(this.world, job, this.commitOf(job.pipeline)),
      );
    }
    this.refresh(job.pipeline);
  }

  /** Recomputes the pipeline's status; a change is stamped and sent as a Pipeline Hook. */
  refresh(pipeline: Pipeline): void {
    const next = composite(pipeline.jobs);
    if (next === pipeline.status) return;
    const now = Date.now();
    pipeline.status = next;
    pipeline.updatedAt = now;
    if (next === "running" && pipeline.startedAt === null) pipeline.startedAt = now;
    if (isTerminal(next)) pipeline.finishedAt = now;
    else pipeline.finishedAt = null;
    this.emitPipeline(pipeline);
  }

  emitPipeline(pipeline: Pipeline): void {
    this.webhooks.emit(
      pipeline.project,
      "Pipeline Hook",
      payloads.pipeline(this.world, pipeline, this.commitOf(pipeline)),
    );
  }
}
