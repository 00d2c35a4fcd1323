import type { KeyObject } from "node:crypto";

/**
 * The fake's state: plain records in memory, beside one bare git repository per fake repository
 * (git holds commits, trees and refs; these records hold what GitHub keeps in its database).
 */

/** A repository permission as GitHub names it in the collaborator API. */
export type RepositoryRole = "admin" | "maintain" | "write" | "triage" | "read";

/** An installation's or token's permission set, as GitHub spells it (`contents: "write"`). */
export type PermissionSet = Record<string, "read" | "write" | "admin">;

export interface Account {
  id: number;
  login: string;
  nodeId: string;
  type: "User" | "Organization" | "Bot";
  name: string;
  email: string;
  createdAt: string;
  /** Organization members and their role (organizations only). */
  members: Map<string, "admin" | "member">;
}

export interface FakeApp {
  id: number;
  slug: string;
  name: string;
  clientId: string;
  /** Its OAuth client secret (user authorization). */
  clientSecret: string;
  nodeId: string;
  owner: Account;
  /** PEM (PKCS#1, as GitHub hands it out) and the key that verifies the App's JWTs. */
  privateKeyPem: string;
  publicKey: KeyObject | null;
  webhookSecret: string;
  hookId: number;
  webhookUrls: string[];
  permissions: PermissionSet;
  events: string[];
  /** The `<slug>[bot]` account its installation tokens act as. */
  bot: Account;
  createdAt: string;
}

export interface Installation {
  id: number;
  app: FakeApp;
  account: Account;
  permissions: PermissionSet;
  repositorySelection: "all" | "selected";
  repositoryIds: Set<number>;
  events: string[];
  createdAt: string;
  updatedAt: string;
  suspendedAt: string | null;
}

export interface InstallationToken {
  token: string;
  installation: Installation;
  createdAtMs: number;
  expiresAtMs: number;
  permissions: PermissionSet;
  /** null: every repository the installation can reach. */
  repositoryIds: Set<number> | null;
}

export interface Label {
  id: number;
  nodeId: string;
  name: string;
  color: string;
  description: string | null;
  default: boolean;
}

export interface Reaction {
  id: number;
  nodeId: string;
  user: Account;
  content: string;
  createdAt: string;
}

export interface IssueComment {
  id: number;
  nodeId: string;
  issueNumber: number;
  user: Account;
  /** The App that posted it, when an installation token did. */
  app: FakeApp | null;
  body: string;
  createdAt: string;
  updatedAt: string;
  reactions: Reaction[];
}

/** An issue that is not a pull request (pull requests are issues too; they live in `pulls`). */
export interface Issue {
  id: number;
  nodeId: string;
  number: number;
  repo: Repository;
  user: Account;
  /** The App that opened it, when an installation token did. */
  app: FakeApp | null;
  title: string;
  body: string | null;
  state: "open" | "closed";
  stateReason: "completed" | "not_planned" | "reopened" | null;
  labels: Label[];
  assignees: Account[];
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  closedBy: Account | null;
}

export interface Review {
  id: number;
  nodeId: string;
  user: Account;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED";
  body: string;
  commitId: string;
  submittedAt: string;
}

/** GitHub's answer about a pull request's mergeability, for one (base, head) pair. */
export interface Mergeability {
  baseSha: string;
  headSha: string;
  /** When GitHub would have finished computing (ms, server clock). */
  readyAtMs: number;
  result: {
    mergeable: boolean;
    /** The test merge commit (refs/pull/N/merge), when mergeable. */
    testMergeSha: string | null;
  } | null;
}

export interface PullRequest {
  id: number;
  nodeId: string;
  number: number;
  repo: Repository;
  headRepo: Repository;
  headRef: string;
  headSha: string;
  baseRef: string;
  /** The base branch tip when the PR was opened or last synchronized (GitHub's `base.sha`). */
  baseSha: string;
  user: Account;
  title: string;
  body: string | null;
  state: "open" | "closed";
  draft: boolean;
  locked: boolean;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  mergedAt: string | null;
  mergedBy: Account | null;
  mergeCommitSha: string | null;
  labels: Label[];
  reviews: Review[];
  mergeability: Mergeability | null;
  /** Extra time `mergeable` stays null after each move (the fault layer sets it). */
  extraMergeabilityDelayMs: number;
}

export interface CheckOutput {
  title: string | null;
  summary: string | null;
  text: string | null;
}

export interface CheckSuite {
  id: number;
  nodeId: string;
  app: FakeApp;
  headSha: string;
  headBranch: string | null;
  before: string | null;
  after: string | null;
  createdAt: string;
  updatedAt: string;
  /** Whether `check_suite.completed` was already sent for the current runs. */
  completedSent: boolean;
}

export type CheckStatus =
  "queued" | "in_progress" | "completed" | "waiting" | "requested" | "pending";
export type CheckConclusion =
  | "success"
  | "failure"
  | "neutral"
  | "cancelled"
  | "skipped"
  | "timed_out"
  | "action_required"
  | "stale";

export interface CheckRun {
  id: number;
  nodeId: string;
  suite: CheckSuite;
  name: string;
  headSha: string;
  status: CheckStatus;
  conclusion: CheckConclusion | null;
  startedAt: string | null;
  completedAt: string | null;
  detailsUrl: string | null;
  externalId: string | null;
  output: CheckOutput;
}

export interface CommitStatus {
  id: number;
  nodeId: string;
  sha: string;
  state: "error" | "failure" | "pending" | "success";
  context: string;
  description: string | null;
  targetUrl: string | null;
  creator: Account;
  /** The App that posted it, for `app_id` pins (null for a user or a CI's own token). */
  app: FakeApp | null;
  createdAt: string;
  updatedAt: string;
}

/** Classic branch protection, one rule per name pattern (fnmatch-like, as GitHub's). */
export interface BranchProtection {
  pattern: string;
  requiredStatusChecks: {
    strict: boolean;
    checks: { context: string; appId: number | null }[];
  } | null;
  requiredPullRequestReviews: {
    requiredApprovingReviewCount: number;
    dismissStaleReviews: boolean;
    /** App slugs and user logins allowed to bypass the review requirement. */
    bypassApps: string[];
    bypassUsers: string[];
  } | null;
  enforceAdmins: boolean;
  /** Who may push at all (null: anyone with write). */
  restrictions: { users: string[]; apps: string[] } | null;
  allowForcePushes: boolean;
  allowDeletions: boolean;
  requiredLinearHistory: boolean;
}

/** A rule as GitHub's rulesets API spells it (`{type, parameters}`). */
export interface RulesetRule {
  type: string;
  parameters?: Record<string, unknown>;
}

export interface RulesetBypassActor {
  actorId: number | null;
  actorType: "Integration" | "OrganizationAdmin" | "RepositoryRole" | "Team" | "DeployKey";
  bypassMode: "always" | "pull_request" | "exempt";
}

export interface Ruleset {
  id: number;
  name: string;
  enforcement: "active" | "evaluate" | "disabled";
  /** Ref name patterns, GitHub style: `~DEFAULT_BRANCH`, `~ALL`, `refs/heads/trunk-merge/**`. */
  include: string[];
  exclude: string[];
  bypassActors: RulesetBypassActor[];
  rules: RulesetRule[];
  /** Where it was defined: the repository itself, or its organization. */
  sourceType: "Repository" | "Organization";
  createdAt: string;
}

export interface RepositorySettings {
  allowMergeCommit: boolean;
  allowSquashMerge: boolean;
  allowRebaseMerge: boolean;
  allowUpdateBranch: boolean;
  deleteBranchOnMerge: boolean;
  /** Draft pull requests (GitHub: only on public repositories or paid plans). */
  draftPullRequests: boolean;
  /** Issues turned on (off: the issues API answers 410 `Issues are disabled for this repo`). */
  hasIssues: boolean;
}

export interface Repository {
  id: number;
  nodeId: string;
  owner: Account;
  name: string;
  private: boolean;
  description: string | null;
  defaultBranch: string;
  gitDir: string;
  createdAt: string;
  updatedAt: string;
  pushedAt: string;
  settings: RepositorySettings;
  /** The repository this one is a fork of. */
  parent: Repository | null;
  collaborators: Map<string, RepositoryRole>;
  labels: Map<string, Label>;
  nextIssueNumber: number;
  pulls: Map<number, PullRequest>;
  /** Issues that are not pull requests; numbers are shared with `pulls`. */
  issues: Map<number, Issue>;
  comments: Map<number, IssueComment>;
  checkSuites: Map<number, CheckSuite>;
  checkRuns: Map<number, CheckRun>;
  statuses: CommitStatus[];
  protections: BranchProtection[];
  rulesets: Ruleset[];
}

export function fullName(repo: Repository): string {
  return `${repo.owner.login}/${repo.name}`;
}

export const ZERO_SHA = "0000000000000000000000000000000000000000";
