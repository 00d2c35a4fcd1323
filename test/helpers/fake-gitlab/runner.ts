import { execFile, spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { jobWeb } from "./entities.js";
import type { Job, JobStatus, Outcome, Pipeline } from "./model.js";
import { atLeast, type World } from "./world.js";
import type { PipelineState } from "./pipeline-state.js";

/**
 * A shell runner: a pipeline's stages one after another, a stage's jobs one after another, each
 * in a fresh clone of the commit (`CI_PROJECT_DIR`), `before_script` + `script` in one bash with
 * `set -eo pipefail`, then `after_script` in another with `CI_JOB_STATUS` (its failure changes
 * nothing). A failed job (not allowed to fail) skips the later stages' `on_success` jobs. A
 * scripted outcome (`setJobOutcome`) replaces running the script.
 */

export class Runner {
  private readonly canceled = new Set<number>();
  private readonly wakers = new Map<number, (() => void)[]>();
  /** Pipelines waiting on a stuck job (not awaited by `settle`). */
  readonly stuck = new Set<number>();
  private closed = false;

  constructor(
    private readonly world: World,
    private readonly state: PipelineState,
  ) {}

  async run(pipeline: Pipeline): Promise<void> {
    let failed = false;
    for (const stage of pipeline.stages) {
      if (this.stopped(pipeline)) return;
      const jobs = pipeline.jobs.filter((j) => j.stage === stage && j.status === "created");
      const runnable: Job[] = [];
      for (const job of jobs) {
        const runs = job.when === "always" || (job.when === "on_failure" ? failed : !failed);
        if (runs) runnable.push(job);
        else this.state.setJob(job, "skipped");
      }
      for (const job of runnable) this.state.setJob(job, "pending");
      for (const job of runnable) {
        if (this.stopped(pipeline)) return;
        await this.runJob(job);
        if (job.status === "failed" && !job.allowFailure) failed = true;
      }
    }
    this.state.refresh(pipeline);
  }

  private stopped(pipeline: Pipeline): boolean {
    return this.closed || this.canceled.has(pipeline.id);
  }

  /** Cancels what has not finished: running processes are killed. */
  cancel(pipeline: Pipeline): void {
    this.canceled.add(pipeline.id);
    for (const job of pipeline.jobs) {
      if (job.status === "created" || job.status === "pending" || job.status === "running") {
        job.process?.kill("SIGKILL");
        if (job.process?.pid !== undefined) killGroup(job.process.pid);
        this.state.setJob(job, "canceled");
      }
    }
    for (const wake of this.wakers.get(pipeline.id) ?? []) wake();
    this.wakers.delete(pipeline.id);
  }

  close(): void {
    this.closed = true;
    for (const project of this.world.projects.values()) {
      for (const pipeline of project.pipelines) {
        for (const job of pipeline.jobs)
          if (job.process?.pid !== undefined) killGroup(job.process.pid);
        for (const wake of this.wakers.get(pipeline.id) ?? []) wake();
      }
    }
  }

  private async runJob(job: Job): Promise<void> {
    const project = job.pipeline.project;
    const outcome = project.jobOutcomes.get(job.name);
    await this.follow(job, outcome);
  }

  private async follow(job: Job, outcome: Outcome | undefined): Promise<void> {
    if (outcome === "stuck") {
      this.stuck.add(job.pipeline.id);
      await new Promise<void>((resolve) => {
        const list = this.wakers.get(job.pipeline.id) ?? [];
        list.push(resolve);
        this.wakers.set(job.pipeline.id, list);
      });
      return;
    }
    this.state.setJob(job, "running");
    if (typeof outcome === "object" && "slow" in outcome) {
      await sleep(outcome.slow);
      if (job.status !== "running") return;
      if (outcome.then === undefined) await this.execute(job);
      else await this.follow(job, outcome.then);
      return;
    }
    if (outcome === undefined) {
      await this.execute(job);
      return;
    }
    const fails =
      outcome === "fail" ||
      (typeof outcome === "object" &&
        "flaky" in outcome &&
        this.world.random.chance(outcome.flaky));
    job.trace += `fake runner: scripted outcome ${JSON.stringify(outcome)}\n`;
    this.state.setJob(job, fails ? "failed" : "success");
  }

  /** Runs the job's scripts in a fresh clone of its commit. */
  private async execute(job: Job): Promise<void> {
    const pipeline = job.pipeline;
    const project = pipeline.project;
    const dir = join(this.world.dataDir, "builds", `${job.id}`);
    mkdirSync(join(this.world.dataDir, "builds"), { recursive: true });
    try {
      await run("git", ["clone", "--quiet", "--shared", "--no-checkout", project.gitDir, dir]);
      await run("git", ["-C", dir, "checkout", "--quiet", "--detach", pipeline.sha]);
      const env: Record<string, string> = {
        ...job.variables,
        CI_JOB_ID: String(job.id),
        CI_JOB_NAME: job.name,
        CI_JOB_STAGE: job.stage,
        CI_JOB_URL: jobWeb(this.world, job),
        CI_JOB_STARTED_AT: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        CI_PROJECT_DIR: dir,
        CI_BUILDS_DIR: join(this.world.dataDir, "builds"),
      };
      if (statusOf(job) !== "running") return;
      const result = await this.shell(job, job.script, dir, env, job.timeoutMs);
      if (this.closed) return;
      if (statusOf(job) !== "running") {
        if (statusOf(job) === "canceled" && atLeast(this.world.profile.version, 17, 0)) {
          await this.shell(
            job,
            job.afterScript,
            dir,
            { ...env, CI_JOB_STATUS: "canceled" },
            300_000,
          );
        }
        return;
      }
      const status = result === 0 ? "success" : "failed";
      await this.shell(job, job.afterScript, dir, { ...env, CI_JOB_STATUS: status }, 300_000);
      if (statusOf(job) !== "running") return;
      this.state.setJob(job, status, result === null ? "job_execution_timeout" : "script_failure");
    } catch (error) {
      job.trace += `fake runner error: ${error instanceof Error ? error.message : String(error)}\n`;
      if (job.status === "running") this.state.setJob(job, "failed", "runner_system_failure");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Exit code, or null when the timeout killed it. */
  private shell(
    job: Job,
    lines: string[],
    cwd: string,
    env: Record<string, string>,
    timeoutMs: number,
  ): Promise<number | null> {
    if (lines.length === 0) return Promise.resolve(0);
    const script = ["set -eo pipefail", ...lines].join("\n");
    return new Promise((resolve) => {
      const child = spawn("bash", ["-c", script], {
        cwd,
        env: { ...cleanEnv(), ...env },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      job.process = child;
      const append = (chunk: Buffer): void => {
        job.trace = (job.trace + chunk.toString("utf8")).slice(-100_000);
      };
      child.stdout.on("data", append);
      child.stderr.on("data", append);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        if (child.pid !== undefined) killGroup(child.pid);
      }, timeoutMs);
      const done = (code: number | null): void => {
        clearTimeout(timer);
        job.process = null;
        resolve(timedOut ? null : (code ?? 1));
      };
      child.on("error", (error) => {
        job.trace += `fake runner: ${error.message}\n`;
        done(1);
      });
      child.on("close", done);
    });
  }
}

/** A job's status, read afresh (it changes while the runner awaits). */
function statusOf(job: Job): JobStatus {
  return job.status;
}

function cleanEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !k.startsWith("GIT_") &&
      !k.startsWith("VITEST") &&
      k !== "NODE_OPTIONS"
    ) {
      out[k] = v;
    }
  }
  return out;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...cleanEnv(), GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
    execFile(command, args, { env }, (error, _stdout, stderr) => {
      if (error === null) resolve();
      else reject(new Error(`${command} ${args.join(" ")}: ${stderr.trim() || error.message}`));
    });
  });
}
