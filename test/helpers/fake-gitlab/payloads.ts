import type { PushCommit, RefUpdate } from "./git.js";
import {
  blockingDiscussionsResolved,
  detailedMergeStatus,
  headPipeline,
  isDraft,
  publicMergeStatus,
} from "./mergeability.js";
import {
  ZERO_SHA,
  type Job,
  type Label,
  type MergeRequest,
  type Note,
  type Pipeline,
  type Project,
  type User,
} from "./model.js";
import { hookTime, type World } from "./world.js";

/**
 * Webhook payloads in GitLab's documented shapes
 * (docs.gitlab.com/user/project/integrations/webhook_events/). Times are the hooks' own format
 * (`2024-05-01 12:00:00 UTC`); emails are `[REDACTED]`, as for users without a public email.
 */

export function hookProject(world: World, p: Project): Record<string, unknown> {
  const ssh = `git@127.0.0.1:${p.pathWithNamespace}.git`;
  return {
    id: p.id,
    name: p.name,
    description: null,
    web_url: world.projectWeb(p),
    avatar_url: null,
    git_ssh_url: ssh,
    git_http_url: world.httpUrl(p),
    namespace: p.namespace.name,
    visibility_level: p.visibility === "public" ? 20 : p.visibility === "internal" ? 10 : 0,
    path_with_namespace: p.pathWithNamespace,
    default_branch: p.defaultBranch,
    ci_config_path: null,
    homepage: world.projectWeb(p),
    url: ssh,
    ssh_url: ssh,
    http_url: world.httpUrl(p),
  };
}

function repository(world: World, p: Project): Record<string, unknown> {
  return {
    name: p.name,
    url: `git@127.0.0.1:${p.pathWithNamespace}.git`,
    description: null,
    homepage: world.projectWeb(p),
    git_http_url: world.httpUrl(p),
    git_ssh_url: `git@127.0.0.1:${p.pathWithNamespace}.git`,
    visibility_level: p.visibility === "public" ? 20 : p.visibility === "internal" ? 10 : 0,
  };
}

export function hookUser(world: World, user: User): Record<string, unknown> {
  return {
    id: user.id,
    name: user.name,
    username: user.username,
    avatar_url: `https://www.gravatar.com/avatar/${user.id}?s=80&d=identicon`,
    email: "[REDACTED]",
  };
}

export function hookLabel(p: Project, label: Label): Record<string, unknown> {
  return {
    id: label.id,
    title: label.title,
    color: label.color,
    project_id: p.id,
    created_at: hookTime(label.createdAt),
    updated_at: hookTime(label.createdAt),
    template: false,
    description: label.description,
    type: "ProjectLabel",
    group_id: null,
  };
}

export function hookLabels(
  mr: MergeRequest,
  titles: string[] = mr.labels,
): Record<string, unknown>[] {
  return titles.flatMap((t) => {
    const label = mr.project.labels.get(t.toLowerCase());
    return label === undefined ? [] : [hookLabel(mr.project, label)];
  });
}

function hookCommit(world: World, p: Project, c: PushCommit): Record<string, unknown> {
  return {
    id: c.sha,
    message: c.message,
    title: c.title,
    timestamp: c.timestamp,
    url: `${world.projectWeb(p)}/-/commit/${c.sha}`,
    author: { name: c.author.name, email: "[REDACTED]" },
  };
}

export function push(
  world: World,
  p: Project,
  user: User,
  update: RefUpdate,
  commits: PushCommit[],
  total: number,
): Record<string, unknown> {
  return {
    object_kind: "push",
    event_name: "push",
    before: update.before,
    after: update.after,
    ref: update.ref,
    ref_protected: world.protectionOf(p, update.ref.replace(/^refs\/heads\//, "")) !== null,
    checkout_sha: update.after === ZERO_SHA ? null : update.after,
    message: null,
    user_id: user.id,
    user_name: user.name,
    user_username: user.username,
    user_email: "[REDACTED]",
    user_avatar: `https://www.gravatar.com/avatar/${user.id}?s=80&d=identicon`,
    project_id: p.id,
    project: hookProject(world, p),
    commits: commits.map((c) => ({
      ...hookCommit(world, p, c),
      added: c.added,
      modified: c.modified,
      removed: c.removed,
    })),
    total_commits_count: total,
    push_options: {},
    repository: repository(world, p),
  };
}

/** A merge request as hooks show it (`object_attributes`, a Note Hook's `merge_request`). */
export function mrAttrs(
  world: World,
  mr: MergeRequest,
  last: PushCommit | null,
): Record<string, unknown> {
  const draft = isDraft(mr.title);
  const p = mr.project;
  return {
    id: mr.id,
    iid: mr.iid,
    target_branch: mr.targetBranch,
    source_branch: mr.sourceBranch,
    source_project_id: p.id,
    author_id: mr.author.id,
    assignee_ids: [],
    assignee_id: null,
    reviewer_ids: [],
    title: mr.title,
    created_at: hookTime(mr.createdAt),
    updated_at: hookTime(mr.updatedAt),
    last_edited_at: hookTime(mr.lastEditedAt),
    last_edited_by_id: mr.lastEditedBy?.id ?? null,
    milestone_id: null,
    state_id: { opened: 1, closed: 2, merged: 3, locked: 4 }[mr.state],
    state: mr.state,
    blocking_discussions_resolved: blockingDiscussionsResolved(mr),
    work_in_progress: draft,
    draft,
    first_contribution: false,
    merge_status: publicMergeStatus(mr),
    detailed_merge_status: detailedMergeStatus(mr),
    target_project_id: p.id,
    description: mr.description,
    prepared_at: hookTime(mr.createdAt),
    head_pipeline_id: headPipeline(mr)?.id ?? null,
    merge_commit_sha: mr.mergeCommitSha,
    merge_error: mr.mergeError,
    merge_user_id: mr.mergedBy?.id ?? null,
    merge_when_pipeline_succeeds: false,
    url: world.mrWeb(mr),
    source: hookProject(world, p),
    target: hookProject(world, p),
    last_commit: last === null ? null : hookCommit(world, p, last),
    labels: hookLabels(mr),
    time_estimate: 0,
    total_time_spent: 0,
    time_change: 0,
    human_total_time_spent: null,
    human_time_change: null,
    human_time_estimate: null,
  };
}

export function mergeRequest(
  world: World,
  mr: MergeRequest,
  user: User,
  action: string,
  last: PushCommit | null,
  extra: {
    oldrev?: string;
    changes?: Record<string, { previous: unknown; current: unknown }>;
  } = {},
): Record<string, unknown> {
  return {
    object_kind: "merge_request",
    event_type: "merge_request",
    user: hookUser(world, user),
    project: hookProject(world, mr.project),
    repository: repository(world, mr.project),
    object_attributes: {
      ...mrAttrs(world, mr, last),
      action,
      ...(extra.oldrev !== undefined ? { oldrev: extra.oldrev } : {}),
    },
    labels: hookLabels(mr),
    changes: extra.changes ?? {},
    assignees: [],
    reviewers: [],
  };
}

export function note(
  world: World,
  mr: MergeRequest,
  n: Note,
  action: "create" | "update",
  last: PushCommit | null,
): Record<string, unknown> {
  return {
    object_kind: "note",
    event_type: n.internal ? "confidential_note" : "note",
    user: hookUser(world, n.author),
    project_id: mr.project.id,
    project: hookProject(world, mr.project),
    repository: repository(world, mr.project),
    object_attributes: {
      id: n.id,
      note: n.body,
      noteable_type: "MergeRequest",
      author_id: n.author.id,
      created_at: hookTime(n.createdAt),
      updated_at: hookTime(n.updatedAt),
      project_id: mr.project.id,
      attachment: null,
      line_code: null,
      commit_id: "",
      noteable_id: mr.id,
      system: n.system,
      st_diff: null,
      type: n.resolvable ? "DiscussionNote" : null,
      discussion_id: n.discussionId,
      internal: n.internal,
      confidential: n.internal,
      ...(world.profile.noteActions ? { action } : {}),
      url: `${world.mrWeb(mr)}#note_${n.id}`,
    },
    merge_request: mrAttrs(world, mr, last),
  };
}

/** The Job Hook's `…_iso` times: ISO 8601 to the second (`2021-02-23T02:41:37Z`). */
function isoSeconds(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

function durationSec(start: number | null, end: number | null): number | null {
  return start === null || end === null ? null : Math.round((end - start) / 1000);
}

function build(world: World, j: Job): Record<string, unknown> {
  return {
    id: j.id,
    stage: j.stage,
    name: j.name,
    status: j.status,
    created_at: hookTime(j.createdAt),
    started_at: hookTime(j.startedAt),
    finished_at: hookTime(j.finishedAt),
    duration: durationSec(j.startedAt, j.finishedAt),
    queued_duration: null,
    failure_reason: j.status === "failed" ? j.failureReason : null,
    when: j.when,
    manual: j.when === "manual",
    allow_failure: j.allowFailure,
    user: j.user === null ? null : hookUser(world, j.user),
    runner: null,
    artifacts_file: { filename: null, size: null },
    environment: null,
  };
}

export function pipeline(
  world: World,
  p: Pipeline,
  commit: PushCommit | null,
): Record<string, unknown> {
  const mr = p.mergeRequest;
  return {
    object_kind: "pipeline",
    object_attributes: {
      id: p.id,
      iid: p.iid,
      name: null,
      ref: p.ref,
      tag: false,
      sha: p.sha,
      before_sha: p.beforeSha,
      source: p.source,
      status: p.status,
      detailed_status:
        { success: "passed", manual: "manual action" }[p.status as string] ?? p.status,
      stages: p.stages,
      created_at: hookTime(p.createdAt),
      finished_at: hookTime(p.finishedAt),
      duration: durationSec(p.startedAt, p.finishedAt),
      queued_duration: null,
      variables: [],
      url: `${world.projectWeb(p.project)}/-/pipelines/${p.id}`,
    },
    merge_request:
      mr === null
        ? null
        : {
            id: mr.id,
            iid: mr.iid,
            title: mr.title,
            source_branch: mr.sourceBranch,
            source_project_id: mr.project.id,
            target_branch: mr.targetBranch,
            target_project_id: mr.project.id,
            state: mr.state,
            merge_status: publicMergeStatus(mr),
            detailed_merge_status: detailedMergeStatus(mr),
            url: world.mrWeb(mr),
          },
    user: p.user === null ? null : hookUser(world, p.user),
    project: hookProject(world, p.project),
    commit: commit === null ? null : hookCommit(world, p.project, commit),
    builds: p.jobs.filter((j) => j.kind === "build" && !j.retried).map((j) => build(world, j)),
  };
}

export function job(world: World, j: Job, commit: PushCommit | null): Record<string, unknown> {
  const p = j.pipeline;
  return {
    object_kind: "build",
    ref: p.ref,
    tag: false,
    before_sha: p.beforeSha,
    sha: p.sha,
    build_id: j.id,
    build_name: j.name,
    build_stage: j.stage,
    build_status: j.status,
    build_created_at: hookTime(j.createdAt),
    build_started_at: hookTime(j.startedAt),
    build_finished_at: hookTime(j.finishedAt),
    build_created_at_iso: isoSeconds(j.createdAt),
    build_started_at_iso: isoSeconds(j.startedAt),
    build_finished_at_iso: isoSeconds(j.finishedAt),
    build_duration: durationSec(j.startedAt, j.finishedAt),
    build_queued_duration: null,
    build_allow_failure: j.allowFailure,
    build_failure_reason: j.failureReason ?? "unknown_failure",
    retries_count: 0,
    pipeline_id: p.id,
    project_id: p.project.id,
    project_name: p.project.namespace.name + " / " + p.project.name,
    user: j.user === null ? null : hookUser(world, j.user),
    commit: {
      id: p.id,
      name: null,
      sha: p.sha,
      message: commit?.message ?? "",
      author_name: commit?.author.name ?? "",
      author_email: "[REDACTED]",
      status: p.status,
      duration: durationSec(p.startedAt, p.finishedAt),
      started_at: hookTime(p.startedAt),
      started_at_iso: isoSeconds(p.startedAt),
      finished_at: hookTime(p.finishedAt),
      finished_at_iso: isoSeconds(p.finishedAt),
    },
    repository: repository(world, p.project),
    project: hookProject(world, p.project),
    runner: null,
    environment: null,
  };
}
