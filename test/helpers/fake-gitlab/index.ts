import { withoutDraft } from "./mergeability.js";
import type { Hook, Job, MergeRequest, Note, Outcome, Pipeline } from "./model.js";
import { newHook } from "./routes-projects.js";
import { ProjectsSetup } from "./setup.js";
import type { FakeGitLabOptions } from "./instance.js";
import type { DeliveryAttempt, WebhookChaos } from "./webhooks.js";

/**
 * A faithful fake of GitLab's REST API v4, webhooks, git over HTTP and CI for a merge queue, on
 * real bare git repositories (test/helpers/fake-gitlab/README.md: how to use it, what it models).
 */

export { fault } from "./faults.js";
export type { FaultRule } from "./faults.js";
export type { FakeGitLabOptions } from "./instance.js";
export type { ProjectInit } from "./setup.js";
export type { DeliveryAttempt, WebhookChaos } from "./webhooks.js";
export type { LoggedRequest } from "./request-log.js";
export type { OAuthGrantRecord } from "./oauth-protocol.js";
export type { Hook, Job, MergeRequest, Note, Outcome, Pipeline, ProjectSettings } from "./model.js";

export type HookEventName = "push" | "merge_requests" | "note" | "pipeline" | "job" | "tag_push";

export class FakeGitLab extends ProjectsSetup {
  /** Starts a fake on 127.0.0.1 (ephemeral port). */
  static async start(options: FakeGitLabOptions = {}): Promise<FakeGitLab> {
    const fake = new FakeGitLab(options);
    fake.world.url = await fake.http.listen();
    return fake;
  }

  // ---- merge requests and notes ------------------------------------------------------------------

  async createMergeRequest(input: {
    project: string;
    sourceBranch: string;
    targetBranch?: string;
    title: string;
    author: string;
    draft?: boolean;
    labels?: string[];
    description?: string;
  }): Promise<{ iid: number }> {
    const project = this.world.project(input.project);
    const mr = await this.mrs.open(project, this.world.user(input.author), {
      sourceBranch: input.sourceBranch,
      targetBranch: input.targetBranch ?? project.defaultBranch,
      title: input.draft === true ? `Draft: ${withoutDraft(input.title)}` : input.title,
      description: input.description ?? "",
      labels: input.labels ?? [],
    });
    return { iid: mr.iid };
  }

  async updateMergeRequest(
    projectPath: string,
    iid: number,
    changes: {
      title?: string;
      description?: string;
      targetBranch?: string;
      draft?: boolean;
      labels?: string[];
      addLabels?: string[];
      removeLabels?: string[];
      by?: string;
    },
  ): Promise<void> {
    const mr = this.mergeRequest(projectPath, iid);
    const { by, draft, ...rest } = changes;
    const user = by === undefined ? mr.author : this.world.user(by);
    await this.mrs.update(mr, user, rest);
    if (draft !== undefined) await this.mrs.setDraft(mr, user, draft);
  }

  async closeMergeRequest(
    projectPath: string,
    iid: number,
    options: { by?: string } = {},
  ): Promise<void> {
    const mr = this.mergeRequest(projectPath, iid);
    await this.mrs.setState(
      mr,
      options.by === undefined ? mr.author : this.world.user(options.by),
      "close",
    );
  }

  async reopenMergeRequest(
    projectPath: string,
    iid: number,
    options: { by?: string } = {},
  ): Promise<void> {
    const mr = this.mergeRequest(projectPath, iid);
    await this.mrs.setState(
      mr,
      options.by === undefined ? mr.author : this.world.user(options.by),
      "reopen",
    );
  }

  /** A comment as `author`, quick actions carried out; its id, or null if it held only commands. */
  async addNote(
    projectPath: string,
    iid: number,
    author: string,
    body: string,
    options: { internal?: boolean } = {},
  ): Promise<number | null> {
    const result = await this.noteService.create(
      this.mergeRequest(projectPath, iid),
      this.world.user(author),
      body,
      options,
    );
    return result.note?.id ?? null;
  }

  async editNote(projectPath: string, iid: number, noteId: number, body: string): Promise<void> {
    const mr = this.mergeRequest(projectPath, iid);
    await this.noteService.edit(mr, this.noteService.note(mr, noteId), body);
  }

  /** A resolvable thread (it blocks merging under "all threads must be resolved" until resolved). */
  async addThread(
    projectPath: string,
    iid: number,
    author: string,
    body: string,
  ): Promise<{ discussionId: string; noteId: number }> {
    const result = await this.noteService.create(
      this.mergeRequest(projectPath, iid),
      this.world.user(author),
      body,
      { thread: true },
    );
    if (result.note === null) throw new Error("a thread needs text");
    return { discussionId: result.note.discussionId, noteId: result.note.id };
  }

  resolveThread(projectPath: string, iid: number, discussionId: string, resolved = true): void {
    this.noteService.resolve(this.mergeRequest(projectPath, iid), discussionId, resolved);
  }

  /** The merge request's record (for assertions; do not mutate). */
  mergeRequest(projectPath: string, iid: number): MergeRequest {
    const found = this.world.project(projectPath).mergeRequests.get(iid);
    if (found === undefined) throw new Error(`no merge request !${iid}`);
    return found;
  }

  notes(projectPath: string, iid: number): Note[] {
    return this.mergeRequest(projectPath, iid).notes;
  }

  // ---- CI ------------------------------------------------------------------------------------------

  /** Every commit status of the sha: CI jobs and external statuses, in every pipeline. */
  commitStatuses(projectPath: string, sha: string): Job[] {
    return this.world
      .project(projectPath)
      .pipelines.filter((p) => p.sha === sha)
      .flatMap((p) => p.jobs);
  }

  pipelines(projectPath: string): Pipeline[] {
    return this.world.project(projectPath).pipelines;
  }

  /** A scripted outcome for every job of that name (null: run its script again). */
  setJobOutcome(projectPath: string, jobName: string, outcome: Outcome | null): void {
    const outcomes = this.world.project(projectPath).jobOutcomes;
    if (outcome === null) outcomes.delete(jobName);
    else outcomes.set(jobName, outcome);
  }

  /** CI/CD variables given to every job (and to rules). */
  setVariables(projectPath: string, variables: Record<string, string>): void {
    this.world.project(projectPath).variables = { ...variables };
  }

  // ---- webhooks ------------------------------------------------------------------------------------

  /** A project hook (events default: push, merge requests, notes, pipelines, jobs). */
  addHook(
    projectPath: string,
    options: {
      url: string;
      token?: string;
      events?: HookEventName[];
      pushEventsBranchFilter?: string;
    },
  ): number {
    const project = this.world.project(projectPath);
    const hook = newHook(this.world, project, options.url);
    hook.token = options.token ?? null;
    const events = options.events ?? ["push", "merge_requests", "note", "pipeline", "job"];
    for (const flag of Object.keys(hook.events) as (keyof Hook["events"])[]) {
      hook.events[flag] = events.includes(flag.replace(/_events$/, "") as HookEventName);
    }
    if (options.pushEventsBranchFilter !== undefined)
      hook.pushEventsBranchFilter = options.pushEventsBranchFilter;
    project.hooks.set(hook.id, hook);
    return hook.id;
  }

  hook(projectPath: string, hookId: number): Hook {
    const found = this.world.project(projectPath).hooks.get(hookId);
    if (found === undefined) throw new Error(`no hook ${hookId}`);
    return found;
  }

  /** Re-enables a disabled hook (GitLab: a successful test delivery from the UI). */
  enableHook(projectPath: string, hookId: number): void {
    const hook = this.hook(projectPath, hookId);
    hook.alertStatus = "executable";
    hook.disabledUntil = null;
    hook.failures = 0;
    hook.backoffCount = 0;
  }

  /** Sends a logged delivery again, as GitLab's resend: same body, same `Idempotency-Key`. */
  resendDelivery(attemptId: number): Promise<DeliveryAttempt> {
    return this.webhooks.resend(attemptId);
  }

  setWebhookChaos(chaos: WebhookChaos): void {
    this.webhooks.setChaos(chaos);
  }
}
