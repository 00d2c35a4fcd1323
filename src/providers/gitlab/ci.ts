/**
 * The merge queue's CI on GitLab: a run is the pipeline GitLab starts for the pushed test branch.
 * Its jobs (and any external commit statuses) are the run's checks, read from the commit's
 * statuses when a Pipeline Hook names the commit and every poll interval otherwise. The required
 * checks come from the queue's setting or the repository's config at the tested commit; with
 * none named, every job not allowed to fail is required, as GitLab's "pipelines must succeed"
 * reads a pipeline (docs/gitlab.md, "CI").
 */
import { BackgroundLoop } from "../../lib/background-loop.js";
import type { Clock } from "../../lib/clock.js";
import { MINUTE_MS, SECOND_MS } from "../../lib/time.js";
import { SerialPerKey } from "../../lib/serial-per-key.js";
import { BoundedMap } from "../../lib/bounded-map.js";
import {
  judgeChecks,
  type CheckConclusion,
  type CiProvider,
  type CiResultListener,
  type CiRunRequest,
  type CiRunResult,
} from "../../mergequeue/providers.js";
import { readConfigSources, resolveRequiredStatuses } from "../../mergequeue/required-statuses.js";
import {
  newWatchedRun,
  type WatchedCiRun,
  type WatchedCiRunRecords,
  type WatchedRequired,
  type WatchedRunStatus,
} from "../../mergequeue/watched-ci-runs.js";
import type { MergeQueueRecords } from "../../mergequeue/records.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { ProviderLogger } from "../host-provider.js";
import { projectId } from "./client.js";
import type { GitLabConnections } from "./connections.js";
import type { GitLabMirrors } from "./mirror.js";

export const DEFAULT_GITLAB_CI_POLL_INTERVAL_MS = 15 * SECOND_MS;

export interface GitLabCiDeps {
  hostName: string;
  connections: Pick<GitLabConnections, "access">;
  mirrors: Pick<GitLabMirrors, "repository">;
  runs: WatchedCiRunRecords;
  /** The queues' settings: `statusCheckEnabled` posts the queue's commit status. */
  queues: Pick<MergeQueueRecords, "findById">;
  clock: Clock;
  logger: ProviderLogger;
  pollIntervalMs?: number;
  /** How long a run waits for GitLab to start a pipeline on its commit (default 10 minutes). */
  noPipelineMs?: number;
  /** Test health's view of a failed run's commit; absent: no run is ever `flakyOnly`. */
  failures?: {
    ofCommit(question: {
      repo: OwnedRepoRef;
      sha: string;
      branch?: string;
      since: number;
    }): Promise<{ flakyOnly: boolean; waiting: boolean }>;
  };
  /** How long a failed run waits for its uploads to be processed (default 2 min). */
  failureUploadWaitMs?: number;
}

/** Uploads created this long before a run was stored may still be its own. */
const UPLOAD_SLACK_MS = 60 * SECOND_MS;

/** A commit status as `GET /projects/:id/repository/commits/:sha/statuses` lists it. */
interface CommitStatusJson {
  name: string;
  status: string;
  allow_failure?: boolean;
  target_url?: string | null;
  pipeline_id?: number;
}

/** The name the queue's own commit status goes by (never one of a run's checks). */
export const QUEUE_STATUS_PREFIX = "Mainline merge queue";

/** A pipeline's statuses once it has finished. */
const FINISHED = new Set(["success", "failed", "canceled", "skipped", "manual", "blocked"]);

const CONCLUSIONS: Record<string, CheckConclusion> = {
  success: "success",
  failed: "failure",
  canceled: "cancelled",
  canceling: "cancelled",
  skipped: "skipped",
};

export class GitLabCi implements CiProvider {
  private readonly listeners = new Set<CiResultListener>();
  /** Each run's reads, one at a time. */
  private readonly line = new SerialPerKey();
  private readonly loop: BackgroundLoop;
  /** Commits whose pipeline finished before any run watched them. */
  private readonly finishedEarly = new BoundedMap<string, true>(1024);
  /** Failed runs waiting for their uploads to be processed: since when. */
  private readonly uploadWaits = new Map<string, number>();

  constructor(private readonly deps: GitLabCiDeps) {
    this.loop = new BackgroundLoop({
      pass: () => this.pollAll(),
      intervalMs: deps.pollIntervalMs ?? DEFAULT_GITLAB_CI_POLL_INTERVAL_MS,
      onError: (error) => {
        deps.logger.error({ err: error }, "gitlab ci: could not read the watched runs");
      },
      firstPassAfterInterval: true,
    });
  }

  onResult(listener: CiResultListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(request: CiRunRequest): Promise<void> {
    if (!this.ours(request.repo)) {
      throw new Error(
        `the GitLab CI cannot test ${request.repo.host}/${request.repo.owner}/${request.repo.name}: not a repository of ${this.deps.hostName}`,
      );
    }
    await this.deps.runs.create(newWatchedRun(request, this.deps.clock.now()));
    // GitLab has not finished a pipeline on the commit yet: its Pipeline Hook (or the poll) reads.
    if (!this.finishedEarly.delete(request.sha)) return;
    await this.read(request.queueId, request.runId).catch((error: unknown) => {
      this.deps.logger.warn(
        { err: error, queueId: request.queueId, runId: request.runId },
        "gitlab ci: could not read a new run's pipeline; will retry",
      );
    });
  }

  async cancel(queueId: string, runId: string): Promise<void> {
    await this.deps.runs.finish(queueId, runId, "cancelled", null, this.deps.clock.now());
  }

  /**
   * A Pipeline Hook: once the pipeline has finished, the runs testing its commit are read (a
   * pipeline still under way has nothing to decide yet). One that finished before its run was
   * watched (a fast pipeline) is remembered, for the run's start to read it.
   */
  async pipelineChanged(sha: string, status: string | undefined): Promise<void> {
    if (status !== undefined && !FINISHED.has(status)) return;
    const runs = (await this.deps.runs.watchingSha(sha)).filter((run) =>
      this.ours(run.request.repo),
    );
    if (runs.length === 0) this.finishedEarly.set(sha, true);
    for (const run of runs) await this.read(run.queueId, run.runId);
  }

  /** Reads every run still watched (the loop's pass; tests call it). */
  async pollAll(): Promise<void> {
    for (const run of await this.deps.runs.watching()) {
      if (!this.ours(run.request.repo)) continue;
      await this.read(run.queueId, run.runId).catch((error: unknown) => {
        this.deps.logger.warn(
          { err: error, queueId: run.queueId, runId: run.runId },
          "gitlab ci: could not read a run's pipeline; will retry",
        );
      });
    }
  }

  startPolling(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  private read(queueId: string, runId: string): Promise<void> {
    return this.line.run(`${queueId}/${runId}`, async () => {
      const found = await this.deps.runs.get(queueId, runId);
      if (!found || found.status !== "watching") return;
      const run = found.required ? found : await this.prepare(found);
      if (run) await this.evaluate(run);
    });
  }

  /** The run's required checks, from the queue or the config at the tested commit. */
  private async prepare(run: WatchedCiRun): Promise<WatchedCiRun | undefined> {
    const { request } = run;
    const override = request.requiredStatuses;
    const git = this.deps.mirrors.repository(request.repo);
    const fail = async (
      reason: "config_parsing_failure" | "no_required_statuses",
      message: string,
    ) => {
      await this.conclude(run, "error", {
        queueId: run.queueId,
        runId: run.runId,
        checks: [],
        error: { reason, message },
      });
      return undefined;
    };
    const sources = await readConfigSources(override, (file) => git.readFile(request.sha, file));
    if (!sources.ok) return fail(sources.reason, sources.message);
    const { mainline, trunk } = sources;
    const resolved = resolveRequiredStatuses({ override, mainline, trunk });
    let required: WatchedRequired;
    if (resolved.ok && resolved.source !== "mainline_checks") {
      required = {
        source: resolved.source,
        checks: resolved.statuses.map((context) => ({ context, appId: null })),
      };
    } else if (!resolved.ok && resolved.message.endsWith("an empty list")) {
      return fail(resolved.reason, resolved.message);
    } else {
      // None named: the pipeline's jobs that may not fail, as GitLab's own merge check reads them.
      required = { source: "branch_protection", checks: [] };
    }
    await this.deps.runs.prepared(run.queueId, run.runId, { required });
    return { ...run, required };
  }

  private async evaluate(run: WatchedCiRun): Promise<void> {
    const { request } = run;
    const { client } = await this.deps.connections.access(request.repo.organizationId);
    const statuses = (
      await client.get<CommitStatusJson[]>(
        `/projects/${projectId(request.repo.owner, request.repo.name)}/repository/commits/${request.sha}/statuses`,
        { ref: request.testBranch, per_page: 100 },
      )
    ).data.filter((status) => !status.name.startsWith(QUEUE_STATUS_PREFIX));
    const checks = statuses.map((status) => ({
      name: status.name,
      conclusion: CONCLUSIONS[status.status] ?? ("pending" as const),
      ...(status.target_url ? { url: status.target_url } : {}),
    }));
    const wholePipeline = run.required?.checks.length === 0;
    const required = wholePipeline
      ? statuses.filter((status) => status.allow_failure !== true).map((status) => status.name)
      : (run.required?.checks.map((check) => check.context) ?? []);
    if (wholePipeline && statuses.length === 0) {
      const waited = this.deps.clock.now() - run.createdAt;
      if (waited < (this.deps.noPipelineMs ?? 10 * MINUTE_MS)) return;
      await this.conclude(run, "error", {
        queueId: run.queueId,
        runId: run.runId,
        checks: [],
        error: {
          reason: "no_required_statuses",
          message: `GitLab ran no pipeline for ${request.testBranch} in ${String(Math.round(waited / SECOND_MS))} s: its .gitlab-ci.yml must run on the queue's test branches (docs/gitlab.md, "CI")`,
        },
      });
      return;
    }
    const finished = checks.filter((check) => check.conclusion !== "pending");
    const judged = judgeChecks(required, finished as CiRunResult["checks"]);
    const anyFailed = required.some((name) =>
      finished.some(
        (check) =>
          check.name === name &&
          (check.conclusion === "failure" || check.conclusion === "timed_out"),
      ),
    );
    const allDone = required.every((name) => finished.some((check) => check.name === name));
    if (!anyFailed && !allDone) return;
    const flakyOnly = judged.passed
      ? false
      : await this.flakyOnly(run, required, finished as CiRunResult["checks"]);
    if (flakyOnly === undefined) return;
    await this.conclude(run, judged.passed ? "passed" : "failed", {
      queueId: run.queueId,
      runId: run.runId,
      checks: finished as CiRunResult["checks"],
      ...(flakyOnly ? { flakyOnly } : {}),
      ...(run.required
        ? {
            requiredStatuses: {
              statuses: required,
              source: run.required.source,
            },
          }
        : {}),
    });
  }

  /**
   * Whether a failed run failed only on known flaky or quarantined tests (test health, from the
   * uploads of the commit it tested, the CI job's); undefined while those uploads are still being
   * processed (read again at the next Pipeline Hook or poll, for `failureUploadWaitMs` at most).
   */
  private async flakyOnly(
    run: WatchedCiRun,
    required: readonly string[],
    checks: CiRunResult["checks"],
  ): Promise<boolean | undefined> {
    const { failures, clock } = this.deps;
    if (!failures) return false;
    // Failed tests explain failed jobs only, not cancelled ones.
    if (checks.some((c) => required.includes(c.name) && c.conclusion === "cancelled")) return false;
    const key = `${run.queueId}/${run.runId}`;
    // By commit alone: a slot's branch carries every run of the slot.
    const answer = await failures.ofCommit({
      repo: run.request.repo,
      sha: run.request.sha,
      since: run.createdAt - UPLOAD_SLACK_MS,
    });
    const since = this.uploadWaits.get(key) ?? clock.now();
    const limit = this.deps.failureUploadWaitMs ?? 2 * MINUTE_MS;
    if (answer.waiting && clock.now() - since < limit) {
      this.uploadWaits.set(key, since);
      return undefined;
    }
    this.uploadWaits.delete(key);
    return answer.flakyOnly;
  }

  private async conclude(
    run: WatchedCiRun,
    status: Exclude<WatchedRunStatus, "watching" | "cancelled">,
    result: CiRunResult,
  ): Promise<void> {
    for (const listener of [...this.listeners]) await listener(result);
    if (
      await this.deps.runs.finish(run.queueId, run.runId, status, result, this.deps.clock.now())
    ) {
      await this.postStatus(run, status, result).catch((error: unknown) => {
        this.deps.logger.warn(
          { err: error, queueId: run.queueId, runId: run.runId },
          "gitlab ci: could not post the queue's commit status",
        );
      });
    }
  }

  /**
   * The queue's verdict on the commit it tested, as a commit status on its test branch, where the
   * queue's settings ask for one. Never on the merge request's head: GitLab folds statuses into
   * the head's pipeline, and one still running there would stop GitLab merging it.
   */
  private async postStatus(
    run: WatchedCiRun,
    status: Exclude<WatchedRunStatus, "watching" | "cancelled">,
    result: CiRunResult,
  ): Promise<void> {
    const { request } = run;
    const queue = await this.deps.queues.findById(run.queueId);
    if (!queue?.configuration.statusCheckEnabled) return;
    const failing = result.checks
      .filter((check) => check.conclusion === "failure" || check.conclusion === "timed_out")
      .map((check) => check.name);
    const description =
      status === "passed"
        ? "Passed: the merge requests tested here may merge"
        : (result.error?.message ?? `Failed: ${failing.join(", ") || "a required check"}`);
    const { client } = await this.deps.connections.access(request.repo.organizationId);
    await client.request(
      "POST",
      `/projects/${projectId(request.repo.owner, request.repo.name)}/statuses/${request.sha}`,
      {
        body: {
          state: status === "passed" ? "success" : "failed",
          name: `${QUEUE_STATUS_PREFIX} (${request.targetBranch})`,
          ref: request.testBranch,
          description: description.slice(0, 255),
        },
      },
    );
  }

  private ours(repo: OwnedRepoRef): boolean {
    return repo.host.toLowerCase() === this.deps.hostName.toLowerCase();
  }
}
