import type { ChildProcess } from "node:child_process";

/**
 * The fake GitLab's state, as plain records. Field names follow GitLab's own where a record is
 * shown by the API (`settings` is the project JSON's keys verbatim); times are epoch milliseconds.
 */

export const ZERO_SHA = "0".repeat(40);

/** GitLab's roles: Guest, Reporter, Developer, Maintainer, Owner. */
export type AccessLevel = 10 | 20 | 30 | 40 | 50;
export const GUEST = 10;
export const REPORTER = 20;
export const DEVELOPER = 30;
export const MAINTAINER = 40;

export interface User {
  id: number;
  username: string;
  name: string;
  email: string;
  admin: boolean;
  bot: boolean;
  createdAt: number;
}

export interface Token {
  id: number;
  token: string;
  name: string;
  user: User;
  scopes: string[];
  /** `YYYY-MM-DD`; GitLab's tokens expire at the start of that day (UTC). */
  expiresAt: string | null;
  revoked: boolean;
  createdAt: number;
  lastUsedAt: number | null;
  /**
   * `personal` (personal and project access tokens: `PRIVATE-TOKEN`, `Authorization: Bearer`,
   * `private_token`, `access_token`) or `oauth` (issued by `/oauth/token`: Bearer and
   * `access_token` only).
   */
  kind: "personal" | "oauth";
  /** An OAuth access token's end (epoch ms; `expiresAt` is null then); null for the others. */
  expiresAtMs: number | null;
  /**
   * OAuth with Doorkeeper's `previous_refresh_token`: revokes the pair this token's refresh
   * replaced, on the token's first use (then cleared).
   */
  onFirstUse?: (() => void) | undefined;
}

export interface Group {
  id: number;
  name: string;
  path: string;
  fullPath: string;
  parent: Group | null;
  members: Map<number, AccessLevel>;
  createdAt: number;
}

export interface ProjectSettings {
  merge_method: "merge" | "rebase_merge" | "ff";
  squash_option: "never" | "always" | "default_on" | "default_off";
  only_allow_merge_if_pipeline_succeeds: boolean;
  allow_merge_on_skipped_pipeline: boolean;
  only_allow_merge_if_all_discussions_are_resolved: boolean;
  merge_trains_enabled: boolean;
  remove_source_branch_after_merge: boolean;
  merge_pipelines_enabled: boolean;
}

export const DEFAULT_SETTINGS: ProjectSettings = {
  merge_method: "merge",
  squash_option: "default_off",
  only_allow_merge_if_pipeline_succeeds: false,
  allow_merge_on_skipped_pipeline: false,
  only_allow_merge_if_all_discussions_are_resolved: false,
  merge_trains_enabled: false,
  remove_source_branch_after_merge: true,
  merge_pipelines_enabled: false,
};

export interface ProtectedBranch {
  id: number;
  /** A name or a wildcard (`release/*`: `*` matches anything, slashes included). */
  name: string;
  /** Lowest role that may push (0: no one). */
  pushAccessLevel: 0 | 30 | 40;
  /** Lowest role that may merge (0: no one). */
  mergeAccessLevel: 0 | 30 | 40;
  allowForcePush: boolean;
}

export interface Label {
  id: number;
  title: string;
  color: string;
  description: string | null;
  createdAt: number;
}

export type Outcome =
  | "pass"
  | "fail"
  /** Fails with this probability, under the fake's seed. */
  | { flaky: number }
  /** Stays pending forever. */
  | "stuck"
  /** Waits, then the inner outcome (default: run the script). */
  | { slow: number; then?: Outcome };

export interface Project {
  id: number;
  name: string;
  path: string;
  pathWithNamespace: string;
  namespace: Group;
  defaultBranch: string;
  visibility: "private" | "internal" | "public";
  gitDir: string;
  createdAt: number;
  settings: ProjectSettings;
  members: Map<number, AccessLevel>;
  protectedBranches: ProtectedBranch[];
  labels: Map<string, Label>;
  mergeRequests: Map<number, MergeRequest>;
  nextMrIid: number;
  pipelines: Pipeline[];
  nextPipelineIid: number;
  hooks: Map<number, Hook>;
  variables: Record<string, string>;
  jobOutcomes: Map<string, Outcome>;
  /** Serializes merges and push processing on this project. */
  lock: Promise<unknown>;
}

/**
 * GitLab's merge-status state machine: a move of the head or target marks a checked merge request
 * `unchecked` (or `cannot_be_merged_recheck`); the next read starts a check (`checking`).
 */
export type MergeStatus =
  | "unchecked"
  | "checking"
  | "can_be_merged"
  | "cannot_be_merged"
  | "cannot_be_merged_recheck"
  | "cannot_be_merged_rechecking";

export interface MergeRequest {
  id: number;
  iid: number;
  project: Project;
  title: string;
  description: string;
  state: "opened" | "closed" | "merged" | "locked";
  author: User;
  sourceBranch: string;
  targetBranch: string;
  /** The head GitLab knows (its diff's head): moves when a push to the source is processed. */
  sha: string;
  /** The source branch was deleted (GitLab keeps the merge request open). */
  sourceMissing: boolean;
  mergeStatus: MergeStatus;
  /** Reads left that answer `checking` before the check completes. */
  checkingReadsLeft: number;
  /** What the last check found (null: never checked). */
  git: { targetSha: string; conflict: boolean; ffPossible: boolean } | null;
  diffRefs: { base_sha: string; head_sha: string; start_sha: string } | null;
  labels: string[];
  squash: boolean;
  forceRemoveSourceBranch: boolean;
  mergeCommitSha: string | null;
  squashCommitSha: string | null;
  mergeError: string | null;
  mergedBy: User | null;
  mergedAt: number | null;
  closedBy: User | null;
  closedAt: number | null;
  /** The last edit of the title or description (GitLab's `last_edited_at`, `last_edited_by`). */
  lastEditedAt: number | null;
  lastEditedBy: User | null;
  createdAt: number;
  updatedAt: number;
  notes: Note[];
}

export interface Award {
  id: number;
  name: string;
  user: User;
  createdAt: number;
}

export interface Note {
  id: number;
  body: string;
  author: User;
  system: boolean;
  internal: boolean;
  /** A thread's notes are resolvable (`DiscussionNote`); plain comments are not. */
  resolvable: boolean;
  resolved: boolean;
  discussionId: string;
  createdAt: number;
  updatedAt: number;
  awards: Award[];
}

export type JobStatus =
  "created" | "pending" | "running" | "success" | "failed" | "canceled" | "skipped" | "manual";

export type PipelineStatus = JobStatus;

export type PipelineSource = "push" | "api" | "merge_request_event" | "external";

/** A CI job or an external commit status (both are commit statuses of the pipeline's sha). */
export interface Job {
  id: number;
  kind: "build" | "external";
  pipeline: Pipeline;
  name: string;
  stage: string;
  status: JobStatus;
  allowFailure: boolean;
  when: "on_success" | "always" | "manual" | "on_failure";
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  failureReason: string | null;
  targetUrl: string | null;
  description: string | null;
  user: User | null;
  /** A status replaced by a newer one of the same name. */
  retried: boolean;
  script: string[];
  afterScript: string[];
  variables: Record<string, string>;
  timeoutMs: number;
  trace: string;
  process: ChildProcess | null;
}

export interface Pipeline {
  id: number;
  iid: number;
  project: Project;
  sha: string;
  beforeSha: string;
  ref: string;
  source: PipelineSource;
  status: PipelineStatus;
  user: User | null;
  mergeRequest: MergeRequest | null;
  stages: string[];
  jobs: Job[];
  yamlErrors: string | null;
  variables: Record<string, string>;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export type HookEventFlag =
  | "push_events"
  | "merge_requests_events"
  | "note_events"
  | "pipeline_events"
  | "job_events"
  | "tag_push_events";

export interface Hook {
  id: number;
  uuid: string;
  project: Project;
  url: string;
  token: string | null;
  events: Record<HookEventFlag, boolean>;
  pushEventsBranchFilter: string;
  branchFilterStrategy: "wildcard" | "regex" | "all_branches";
  enableSslVerification: boolean;
  createdAt: number;
  /** Consecutive failed deliveries. */
  failures: number;
  backoffCount: number;
  alertStatus: "executable" | "disabled" | "temporarily_disabled";
  disabledUntil: number | null;
}
