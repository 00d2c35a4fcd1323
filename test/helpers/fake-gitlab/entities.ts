import type { CommitData } from "../fake-github/git.js";
import {
  blockingDiscussionsResolved,
  detailedMergeStatus,
  hasConflicts,
  headPipeline,
  isDraft,
  publicMergeStatus,
} from "./mergeability.js";
import type { Hook, Job, MergeRequest, Note, Pipeline, Project, User } from "./model.js";
import { iso, type World } from "./world.js";

/**
 * The REST API's JSON (GitLab's Grape entities), built from the model. Only what a merge queue
 * reads is complete; the rest carries GitLab's field names with plain values.
 */

export function userBasic(world: World, user: User): Record<string, unknown> {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    state: "active",
    locked: false,
    avatar_url: `https://www.gravatar.com/avatar/${user.id}?s=80&d=identicon`,
    web_url: `${world.url}/${user.username}`,
  };
}

/** `Entities::User` (a job's `user`): the basic fields and the public profile. */
export function user(world: World, u: User): Record<string, unknown> {
  return {
    ...userBasic(world, u),
    created_at: iso(u.createdAt),
    bio: "",
    location: null,
    public_email: null,
    skype: "",
    linkedin: "",
    twitter: "",
    discord: "",
    website_url: "",
    organization: "",
    job_title: "",
    pronouns: null,
    bot: u.bot,
    work_information: null,
    followers: 0,
    following: 0,
    is_followed: false,
    local_time: null,
  };
}

/** `GET /user`: `Entities::UserPublic` (and `is_admin`). */
export function userFull(world: World, u: User): Record<string, unknown> {
  return {
    ...user(world, u),
    last_sign_in_at: iso(u.createdAt),
    confirmed_at: iso(u.createdAt),
    last_activity_on: iso(u.createdAt)?.slice(0, 10) ?? null,
    email: u.email,
    theme_id: 3,
    color_scheme_id: 1,
    projects_limit: 100_000,
    current_sign_in_at: iso(u.createdAt),
    identities: [],
    can_create_group: true,
    can_create_project: true,
    two_factor_enabled: false,
    external: false,
    private_profile: false,
    commit_email: u.email,
    is_admin: u.admin,
  };
}

export function project(world: World, p: Project, viewer: User | null): Record<string, unknown> {
  const ns = p.namespace;
  const level = world.accessLevel(p, viewer);
  return {
    id: p.id,
    description: null,
    name: p.name,
    name_with_namespace: `${ns.fullPath.split("/").join(" / ")} / ${p.name}`,
    path: p.path,
    path_with_namespace: p.pathWithNamespace,
    created_at: iso(p.createdAt),
    default_branch: p.defaultBranch,
    tag_list: [],
    topics: [],
    ssh_url_to_repo: `git@127.0.0.1:${p.pathWithNamespace}.git`,
    http_url_to_repo: world.httpUrl(p),
    web_url: world.projectWeb(p),
    readme_url: null,
    avatar_url: null,
    namespace: {
      id: ns.id,
      name: ns.name,
      path: ns.path,
      kind: "group",
      full_path: ns.fullPath,
      parent_id: ns.parent?.id ?? null,
      avatar_url: null,
      web_url: `${world.url}/groups/${ns.fullPath}`,
    },
    visibility: p.visibility,
    archived: false,
    empty_repo: false,
    merge_requests_enabled: true,
    jobs_enabled: true,
    ci_config_path: null,
    ...p.settings,
    merge_commit_template: null,
    squash_commit_template: null,
    permissions: {
      project_access: level > 0 ? { access_level: level, notification_level: 3 } : null,
      group_access: null,
    },
  };
}

function references(mr: MergeRequest): Record<string, string> {
  return {
    short: `!${mr.iid}`,
    relative: `!${mr.iid}`,
    full: `${mr.project.pathWithNamespace}!${mr.iid}`,
  };
}

/** `MergeRequestBasic` (list entries): what is recorded, no check started. */
export function mergeRequestBasic(world: World, mr: MergeRequest): Record<string, unknown> {
  const draft = isDraft(mr.title);
  return {
    id: mr.id,
    iid: mr.iid,
    project_id: mr.project.id,
    title: mr.title,
    description: mr.description,
    state: mr.state,
    created_at: iso(mr.createdAt),
    updated_at: iso(mr.updatedAt),
    merged_by: mr.mergedBy === null ? null : userBasic(world, mr.mergedBy),
    merge_user: mr.mergedBy === null ? null : userBasic(world, mr.mergedBy),
    merged_at: iso(mr.mergedAt),
    closed_by: mr.closedBy === null ? null : userBasic(world, mr.closedBy),
    closed_at: iso(mr.closedAt),
    target_branch: mr.targetBranch,
    source_branch: mr.sourceBranch,
    user_notes_count: mr.notes.filter((n) => !n.system).length,
    upvotes: 0,
    downvotes: 0,
    author: userBasic(world, mr.author),
    assignees: [],
    assignee: null,
    reviewers: [],
    source_project_id: mr.project.id,
    target_project_id: mr.project.id,
    labels: [...mr.labels],
    draft,
    imported: false,
    imported_from: "none",
    work_in_progress: draft,
    milestone: null,
    merge_when_pipeline_succeeds: false,
    merge_status: publicMergeStatus(mr),
    detailed_merge_status: detailedMergeStatus(mr),
    sha: mr.sha,
    merge_commit_sha: mr.mergeCommitSha,
    squash_commit_sha: mr.squashCommitSha,
    discussion_locked: null,
    should_remove_source_branch: null,
    force_remove_source_branch: mr.forceRemoveSourceBranch,
    prepared_at: iso(mr.createdAt),
    reference: `!${mr.iid}`,
    references: references(mr),
    web_url: world.mrWeb(mr),
    time_stats: {
      time_estimate: 0,
      total_time_spent: 0,
      human_time_estimate: null,
      human_total_time_spent: null,
    },
    squash: mr.squash,
    squash_on_merge: squashOnMerge(mr),
    task_completion_status: { count: 0, completed_count: 0 },
    has_conflicts: hasConflicts(mr),
    blocking_discussions_resolved: blockingDiscussionsResolved(mr),
  };
}

export function squashOnMerge(mr: MergeRequest): boolean {
  const option = mr.project.settings.squash_option;
  if (option === "always") return true;
  if (option === "never") return false;
  return mr.squash;
}

/** `MergeRequest` (single reads and writes): the basic fields and the expensive ones. */
export function mergeRequest(
  world: World,
  mr: MergeRequest,
  viewer: User | null,
): Record<string, unknown> {
  const head = headPipeline(mr);
  return {
    ...mergeRequestBasic(world, mr),
    subscribed: false,
    changes_count: null,
    latest_build_started_at: iso(head?.startedAt ?? null),
    latest_build_finished_at: iso(head?.finishedAt ?? null),
    first_deployed_to_production_at: null,
    pipeline: head === null ? null : pipelineBasic(world, head),
    head_pipeline: head === null ? null : pipelineFull(world, head),
    diff_refs: mr.diffRefs === null ? null : { ...mr.diffRefs },
    merge_error: mr.mergeError,
    rebase_in_progress: false,
    first_contribution: false,
    user: { can_merge: viewer !== null && world.canMerge(mr.project, viewer, mr.targetBranch) },
  };
}

export function note(world: World, mr: MergeRequest, n: Note): Record<string, unknown> {
  return {
    id: n.id,
    type: n.resolvable ? "DiscussionNote" : null,
    body: n.body,
    attachment: null,
    author: userBasic(world, n.author),
    created_at: iso(n.createdAt),
    updated_at: iso(n.updatedAt),
    system: n.system,
    noteable_id: mr.id,
    noteable_type: "MergeRequest",
    project_id: mr.project.id,
    commit_id: null,
    resolvable: n.resolvable,
    ...(n.resolvable ? { resolved: n.resolved, resolved_by: null, resolved_at: null } : {}),
    confidential: n.internal,
    internal: n.internal,
    imported: false,
    imported_from: "none",
    noteable_iid: mr.iid,
    commands_changes: {},
  };
}

const STATUS_LABELS: Record<string, string> = {
  success: "passed",
  failed: "failed",
  running: "running",
  pending: "pending",
  canceled: "canceled",
  skipped: "skipped",
  created: "created",
  manual: "manual action",
};

export function pipelineBasic(world: World, p: Pipeline): Record<string, unknown> {
  return {
    id: p.id,
    iid: p.iid,
    project_id: p.project.id,
    sha: p.sha,
    ref: p.ref,
    status: p.status,
    source: p.source,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
    web_url: `${world.projectWeb(p.project)}/-/pipelines/${p.id}`,
    name: null,
  };
}

export function pipelineFull(world: World, p: Pipeline): Record<string, unknown> {
  const label = STATUS_LABELS[p.status] ?? p.status;
  const duration =
    p.startedAt !== null && p.finishedAt !== null
      ? Math.round((p.finishedAt - p.startedAt) / 1000)
      : null;
  return {
    ...pipelineBasic(world, p),
    before_sha: p.beforeSha,
    tag: false,
    yaml_errors: p.yamlErrors,
    user: p.user === null ? null : userBasic(world, p.user),
    started_at: iso(p.startedAt),
    finished_at: iso(p.finishedAt),
    committed_at: null,
    duration,
    queued_duration: null,
    coverage: null,
    detailed_status: {
      icon: `status_${p.status}`,
      text: label.charAt(0).toUpperCase() + label.slice(1),
      label,
      group: p.status,
      tooltip: label,
      has_details: true,
      details_path: `/${p.project.pathWithNamespace}/-/pipelines/${p.id}`,
      illustration: null,
      favicon: `/assets/ci_favicons/favicon_status_${p.status}.png`,
    },
  };
}

export function jobWeb(world: World, job: Job): string {
  return `${world.projectWeb(job.pipeline.project)}/-/jobs/${job.id}`;
}

/** `Entities::Ci::Job`; `commit` is the pipeline's commit (`Entities::Commit`), when read. */
export function job(
  world: World,
  j: Job,
  commitData: CommitData | null = null,
): Record<string, unknown> {
  const duration =
    j.startedAt !== null ? ((j.finishedAt ?? Date.now()) - j.startedAt) / 1000 : null;
  return {
    id: j.id,
    status: j.status,
    stage: j.stage,
    name: j.name,
    ref: j.pipeline.ref,
    tag: false,
    coverage: null,
    allow_failure: j.allowFailure,
    created_at: iso(j.createdAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    erased_at: null,
    duration,
    queued_duration: null,
    user: j.user === null ? null : user(world, j.user),
    commit: commitData === null ? null : commit(world, j.pipeline.project, commitData),
    pipeline: pipelineBasic(world, j.pipeline),
    web_url: jobWeb(world, j),
    project: { ci_job_token_scope_enabled: false },
    artifacts: [],
    artifacts_expire_at: null,
    runner: null,
    tag_list: [],
    ...(j.status === "failed" ? { failure_reason: j.failureReason ?? "unknown_failure" } : {}),
  };
}

/** A commit status (`GET …/commits/:sha/statuses`, `POST …/statuses/:sha`): jobs are ones too. */
export function commitStatus(world: World, j: Job): Record<string, unknown> {
  return {
    id: j.id,
    sha: j.pipeline.sha,
    ref: j.pipeline.ref,
    status: j.status,
    name: j.name,
    target_url: j.targetUrl,
    description: j.description,
    created_at: iso(j.createdAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    allow_failure: j.allowFailure,
    coverage: null,
    pipeline_id: j.pipeline.id,
    author: j.user === null ? null : userBasic(world, j.user),
  };
}

export function commit(world: World, p: Project, c: CommitData): Record<string, unknown> {
  return {
    id: c.sha,
    short_id: c.sha.slice(0, 8),
    created_at: c.committer.date,
    parent_ids: [...c.parents],
    title: c.message.split("\n")[0] ?? "",
    message: c.message,
    author_name: c.author.name,
    author_email: c.author.email,
    authored_date: c.author.date,
    committer_name: c.committer.name,
    committer_email: c.committer.email,
    committed_date: c.committer.date,
    trailers: {},
    extended_trailers: {},
    web_url: `${world.projectWeb(p)}/-/commit/${c.sha}`,
  };
}

export function hook(h: Hook): Record<string, unknown> {
  return {
    id: h.id,
    url: h.url,
    name: null,
    description: null,
    project_id: h.project.id,
    created_at: iso(h.createdAt),
    push_events: h.events.push_events,
    push_events_branch_filter: h.pushEventsBranchFilter,
    branch_filter_strategy: h.branchFilterStrategy,
    tag_push_events: h.events.tag_push_events,
    merge_requests_events: h.events.merge_requests_events,
    note_events: h.events.note_events,
    confidential_note_events: false,
    pipeline_events: h.events.pipeline_events,
    job_events: h.events.job_events,
    issues_events: false,
    confidential_issues_events: false,
    wiki_page_events: false,
    deployment_events: false,
    releases_events: false,
    feature_flag_events: false,
    resource_access_token_events: false,
    repository_update_events: false,
    enable_ssl_verification: h.enableSslVerification,
    alert_status: h.alertStatus,
    disabled_until: iso(h.disabledUntil),
    url_variables: [],
    custom_webhook_template: "",
    custom_headers: [],
  };
}

/**
 * `Entities::CommitDetail` (`GET …/repository/commits/:sha`): the commit, its stats (`null`: not
 * asked for), the status of its newest pipeline, and that pipeline.
 */
export function commitDetail(
  world: World,
  p: Project,
  c: CommitData,
  stats: { additions: number; deletions: number } | null,
): Record<string, unknown> {
  const last = p.pipelines
    .filter((pipeline) => pipeline.sha === c.sha)
    .reduce<Pipeline | null>((a, b) => (a === null || b.id > a.id ? b : a), null);
  return {
    ...commit(world, p, c),
    ...(stats === null ? {} : { stats: { ...stats, total: stats.additions + stats.deletions } }),
    status: last?.status ?? null,
    project_id: p.id,
    last_pipeline: last === null ? null : pipelineBasic(world, last),
  };
}
