import type { AppAuth } from "./app-auth.js";
import { latestRuns, latestStatuses } from "./checks.js";
import { GitHubError, notAccessible, pageOf, type HttpServer } from "./http.js";
import type { BranchProtection, PullRequest, Repository, Ruleset, RulesetRule } from "./model.js";
import * as objects from "./objects.js";
import type { Schema, Urls } from "./objects.js";
import { matchesGlob } from "./patterns.js";
import type { RefCheck } from "./refs.js";
import { actorAccount, type Actor, type World } from "./world.js";

/**
 * Branch protection (classic rules per name pattern) and rulesets (only *active* ones count), as
 * the API reports them and as GitHub enforces them: on ref updates (force pushes, deletions,
 * creations, updates, required checks and "changes must be made through a pull request") and on
 * pull request merges (required checks with their App pins, `strict`, required approving reviews,
 * the merge queue rule), with bypass lists. Messages are GitHub's.
 */

// ---- which rules apply -------------------------------------------------------------------------

/** The classic rule protecting a branch: an exact pattern first, then the first wildcard one. */
export function matchingProtection(repo: Repository, branch: string): BranchProtection | null {
  return (
    repo.protections.find((p) => p.pattern === branch) ??
    repo.protections.find((p) => /[*?[]/.test(p.pattern) && matchesGlob(p.pattern, branch)) ??
    null
  );
}

function refMatches(repo: Repository, pattern: string, ref: string): boolean {
  if (pattern === "~ALL") return true;
  if (pattern === "~DEFAULT_BRANCH") return ref === `refs/heads/${repo.defaultBranch}`;
  return matchesGlob(pattern, ref);
}

/** Active rulesets whose conditions include the ref (full name). */
export function activeRulesets(repo: Repository, ref: string): Ruleset[] {
  return repo.rulesets.filter(
    (r) =>
      r.enforcement === "active" &&
      r.include.some((p) => refMatches(repo, p, ref)) &&
      !r.exclude.some((p) => refMatches(repo, p, ref)),
  );
}

const ROLE_IDS: Record<number, string[]> = {
  5: ["admin"],
  2: ["admin", "maintain"],
  4: ["admin", "maintain", "write"],
};

/**
 * Whether `actor` bypasses a ruleset. An App bypasses only as `exempt` (GitHub: "always" does not
 * cover an App's API updates); people by role or as organization admins, `pull_request` mode only
 * when merging a pull request.
 */
export function bypassesRuleset(
  world: World,
  repo: Repository,
  ruleset: Ruleset,
  actor: Actor,
  viaPullRequest: boolean,
): boolean {
  return ruleset.bypassActors.some((b) => {
    if (b.bypassMode === "pull_request" && !viaPullRequest) return false;
    if (actor.kind === "app")
      return (
        b.actorType === "Integration" && b.actorId === actor.app.id && b.bypassMode === "exempt"
      );
    const role = world.roleOf(repo, actor.account);
    if (b.actorType === "OrganizationAdmin")
      return (
        repo.owner.type === "Organization" &&
        repo.owner.members.get(actor.account.login) === "admin"
      );
    if (b.actorType === "RepositoryRole")
      return role !== undefined && (ROLE_IDS[b.actorId ?? 0] ?? []).includes(role);
    return false;
  });
}

function rule(ruleset: Ruleset, type: string): RulesetRule | undefined {
  return ruleset.rules.find((r) => r.type === type);
}

// ---- check and review evaluation ---------------------------------------------------------------

export interface RequiredCheck {
  context: string;
  /** The App the check must come from (classic `app_id`, ruleset `integration_id`); null: any. */
  appId: number | null;
}

const PASSING = new Set(["success", "neutral", "skipped"]);

/** Required checks that are not passing on `sha`: "expected" (missing or pending) or "failing". */
export function unmetChecks(
  repo: Repository,
  sha: string,
  required: RequiredCheck[],
): { context: string; state: "expected" | "failing" }[] {
  const runs = latestRuns(repo, sha);
  const statuses = latestStatuses(repo, sha);
  const out: { context: string; state: "expected" | "failing" }[] = [];
  for (const req of required) {
    const matchingRuns = runs.filter(
      (r) => r.name === req.context && (req.appId === null || r.suite.app.id === req.appId),
    );
    const matchingStatuses = statuses.filter(
      (s) => s.context === req.context && (req.appId === null || s.app?.id === req.appId),
    );
    if (matchingRuns.length === 0 && matchingStatuses.length === 0) {
      out.push({ context: req.context, state: "expected" });
      continue;
    }
    // A check and a status with the same name: both must pass.
    const failing =
      matchingRuns.some((r) => r.status === "completed" && !PASSING.has(r.conclusion ?? "")) ||
      matchingStatuses.some((s) => s.state === "failure" || s.state === "error");
    const pending =
      matchingRuns.some((r) => r.status !== "completed") ||
      matchingStatuses.some((s) => s.state === "pending");
    if (failing) out.push({ context: req.context, state: "failing" });
    else if (pending) out.push({ context: req.context, state: "expected" });
  }
  return out;
}

function checksMessage(
  unmet: { context: string; state: "expected" | "failing" }[],
  total: number,
): string {
  const first = unmet[0];
  if (first === undefined) return "";
  if (unmet.length === 1)
    return `Required status check "${first.context}" is ${first.state === "failing" ? "failing" : "expected"}.`;
  return `${unmet.length} of ${total} required status checks are ${unmet.every((u) => u.state === "failing") ? "failing" : "expected"}.`;
}

/** Distinct reviewers with write access whose latest review approves (`head` only, when stale reviews are dismissed). */
export function approvals(world: World, pr: PullRequest, headOnly: boolean): number {
  const latest = new Map<string, PullRequest["reviews"][number]>();
  for (const review of pr.reviews)
    if (review.state !== "COMMENTED") latest.set(review.user.login, review);
  let count = 0;
  for (const review of latest.values()) {
    if (review.state !== "APPROVED") continue;
    if (headOnly && review.commitId !== pr.headSha) continue;
    const role = world.roleOf(pr.repo, review.user);
    if (role === "admin" || role === "maintain" || role === "write") count++;
  }
  return count;
}

function reviewsMessage(required: number): string {
  return required === 1
    ? "At least 1 approving review is required by reviewers with write access."
    : `At least ${required} approving reviews are required by reviewers with write access.`;
}

function violations(lines: string[]): string {
  return `Repository rule violations found\n\n${lines.join("\n\n")}\n`;
}

/** What blocks merging `pr` now, for `actor` (null: nobody bypasses, as `mergeable_state` is computed). */
export async function mergeBlockers(
  world: World,
  pr: PullRequest,
  actor: Actor | null,
  method: "merge" | "squash" | "rebase" = "merge",
): Promise<{ message: string; kind: "checks" | "behind" | "reviews" | "rules" }[]> {
  const repo = pr.repo;
  const out: { message: string; kind: "checks" | "behind" | "reviews" | "rules" }[] = [];
  const git = world.gitOf(repo);
  const baseTip = await git.readRef(`refs/heads/${pr.baseRef}`);
  const behind = baseTip !== null && !(await git.isAncestor(baseTip, pr.headSha));
  const classic = matchingProtection(repo, pr.baseRef);
  if (classic !== null) {
    const account = actor === null ? null : actorAccount(actor);
    const adminBypass =
      actor?.kind === "user" &&
      !classic.enforceAdmins &&
      world.roleOf(repo, actor.account) === "admin";
    const checks = classic.requiredStatusChecks;
    if (checks !== null && !adminBypass) {
      const unmet = unmetChecks(repo, pr.headSha, checks.checks);
      if (unmet.length > 0)
        out.push({ kind: "checks", message: checksMessage(unmet, checks.checks.length) });
      else if (checks.strict && behind)
        out.push({
          kind: "behind",
          message: "Head branch is out of date. Review and try the merge again.",
        });
    }
    const reviews = classic.requiredPullRequestReviews;
    if (reviews !== null && reviews.requiredApprovingReviewCount > 0 && !adminBypass) {
      const bypass =
        (actor?.kind === "app" && reviews.bypassApps.includes(actor.app.slug)) ||
        (actor?.kind === "user" && account !== null && reviews.bypassUsers.includes(account.login));
      if (
        !bypass &&
        approvals(world, pr, reviews.dismissStaleReviews) < reviews.requiredApprovingReviewCount
      ) {
        out.push({
          kind: "reviews",
          message: reviewsMessage(reviews.requiredApprovingReviewCount),
        });
      }
    }
    if (classic.requiredLinearHistory && method === "merge") {
      out.push({ kind: "rules", message: "Merge commits are not allowed on this branch." });
    }
  }
  const lines: string[] = [];
  let rulesKind: "checks" | "behind" | "reviews" | "rules" = "rules";
  for (const ruleset of activeRulesets(repo, `refs/heads/${pr.baseRef}`)) {
    if (actor !== null && bypassesRuleset(world, repo, ruleset, actor, true)) continue;
    const checks = rule(ruleset, "required_status_checks");
    if (checks !== undefined) {
      const params = checks.parameters ?? {};
      const required = (
        (params.required_status_checks as
          { context: string; integration_id?: number }[] | undefined) ?? []
      ).map((c) => ({
        context: c.context,
        appId: c.integration_id ?? null,
      }));
      const unmet = unmetChecks(repo, pr.headSha, required);
      if (unmet.length > 0) {
        lines.push(checksMessage(unmet, required.length));
        rulesKind = "checks";
      } else if (params.strict_required_status_checks_policy === true && behind) {
        lines.push(
          "Required status checks must pass on the latest commit of the base branch. Update the branch and try again.",
        );
        rulesKind = "behind";
      }
    }
    const reviews = rule(ruleset, "pull_request");
    const count = Number(reviews?.parameters?.required_approving_review_count ?? 0);
    if (reviews !== undefined && count > 0) {
      const headOnly = reviews.parameters?.dismiss_stale_reviews_on_push === true;
      if (approvals(world, pr, headOnly) < count) {
        lines.push(reviewsMessage(count));
        if (rulesKind === "rules") rulesKind = "reviews";
      }
    }
    const allowed = reviews?.parameters?.allowed_merge_methods as string[] | undefined;
    if (allowed !== undefined && !allowed.includes(method))
      lines.push(`Merge method ${method} is not allowed for this branch.`);
    if (rule(ruleset, "merge_queue") !== undefined)
      lines.push("Changes must be made through the merge queue");
    if (rule(ruleset, "required_linear_history") !== undefined && method === "merge")
      lines.push("This branch must not contain merge commits.");
  }
  if (lines.length > 0) out.push({ kind: rulesKind, message: violations(lines) });
  return out;
}

/** Whether failing checks that are *not* required exist on the head (`mergeable_state: unstable`). */
export function hasFailingOptionalChecks(repo: Repository, pr: PullRequest): boolean {
  const failing = latestRuns(repo, pr.headSha).some(
    (r) => r.status === "completed" && !PASSING.has(r.conclusion ?? ""),
  );
  const failingStatus = latestStatuses(repo, pr.headSha).some(
    (s) => s.state === "failure" || s.state === "error",
  );
  return failing || failingStatus;
}

// ---- the ref guard ----------------------------------------------------------------------------

/**
 * Refuses a ref change protection forbids. Pushes an actor may not make at all answer 403; rule
 * violations 422, as the git refs API answers them.
 */
export function refGuard(world: World): (check: RefCheck) => Promise<void> {
  return async (check) => {
    if (!check.ref.startsWith("refs/heads/")) return;
    const { repo, actor } = check;
    const branch = check.ref.slice("refs/heads/".length);
    const viaPr = check.viaPullRequestMerge === true;
    const classic = matchingProtection(repo, branch);
    if (classic !== null) {
      const isAdmin = actor.kind === "user" && world.roleOf(repo, actor.account) === "admin";
      const adminBypass = isAdmin && !classic.enforceAdmins;
      if (classic.restrictions !== null) {
        const allowed =
          (actor.kind === "app" && classic.restrictions.apps.includes(actor.app.slug)) ||
          (actor.kind === "user" && classic.restrictions.users.includes(actor.account.login));
        if (!allowed && !adminBypass) {
          if (actor.kind === "app") throw notAccessible();
          throw new GitHubError(
            403,
            `You're not authorized to push to this branch. Visit ${world.urls.html}/${repo.owner.login}/${repo.name}/settings/branches for more information.`,
          );
        }
      }
      if (!adminBypass) {
        if (check.next === null && !classic.allowDeletions)
          throw new GitHubError(422, "Cannot delete this protected branch");
        if (check.forced && !classic.allowForcePushes)
          throw new GitHubError(422, "Cannot force-push to this protected branch");
        if (check.before !== null && check.next !== null && !viaPr) {
          const reviews = classic.requiredPullRequestReviews;
          const reviewBypass =
            (actor.kind === "app" && reviews?.bypassApps.includes(actor.app.slug) === true) ||
            (actor.kind === "user" && reviews?.bypassUsers.includes(actor.account.login) === true);
          if (reviews !== null && !reviewBypass)
            throw new GitHubError(422, "Changes must be made through a pull request.");
          const checks = classic.requiredStatusChecks;
          if (checks !== null) {
            const unmet = unmetChecks(repo, check.next, checks.checks);
            if (unmet.length > 0)
              throw new GitHubError(422, checksMessage(unmet, checks.checks.length));
          }
        }
      }
    }
    const lines: string[] = [];
    for (const ruleset of activeRulesets(repo, check.ref)) {
      if (bypassesRuleset(world, repo, ruleset, actor, viaPr)) continue;
      const creating = check.before === null;
      if (creating && rule(ruleset, "creation") !== undefined)
        lines.push("Cannot create ref due to creations being restricted.");
      if (check.next === null && rule(ruleset, "deletion") !== undefined)
        lines.push("Cannot delete this branch");
      if (!creating && check.next !== null && rule(ruleset, "update") !== undefined && !viaPr)
        lines.push("Cannot update this protected ref.");
      if (check.forced && rule(ruleset, "non_fast_forward") !== undefined)
        lines.push("Cannot force-push to this branch");
      if (!creating && check.next !== null && !viaPr) {
        if (rule(ruleset, "pull_request") !== undefined)
          lines.push("Changes must be made through a pull request.");
        if (rule(ruleset, "merge_queue") !== undefined)
          lines.push("Changes must be made through the merge queue");
        const checks = rule(ruleset, "required_status_checks");
        if (checks !== undefined) {
          const required = (
            (checks.parameters?.required_status_checks as
              { context: string; integration_id?: number }[] | undefined) ?? []
          ).map((c) => ({ context: c.context, appId: c.integration_id ?? null }));
          const unmet = unmetChecks(repo, check.next, required);
          if (unmet.length > 0) lines.push(checksMessage(unmet, required.length));
        }
      }
      if (check.next !== null && rule(ruleset, "required_linear_history") !== undefined) {
        const commit = await world.gitOf(repo).readCommit(check.next);
        if (commit.parents.length > 1) lines.push("This branch must not contain merge commits.");
      }
    }
    if (lines.length > 0) throw new GitHubError(422, violations(lines));
  };
}

// ---- representations --------------------------------------------------------------------------

export function branchProtectionSummary(p: BranchProtection | null): Schema<"branch-protection"> {
  const checks = p?.requiredStatusChecks ?? null;
  return {
    enabled: p !== null,
    required_status_checks: {
      enforcement_level: checks === null ? "off" : "non_admins",
      contexts: checks?.checks.map((c) => c.context) ?? [],
      checks: checks?.checks.map((c) => ({ context: c.context, app_id: c.appId })) ?? [],
    },
  };
}

function statusCheckPolicy(
  urls: Urls,
  repo: Repository,
  branch: string,
  p: BranchProtection,
): Schema<"status-check-policy"> {
  const base = `${urls.repo(repo)}/branches/${encodeURIComponent(branch)}/protection/required_status_checks`;
  const checks = p.requiredStatusChecks ?? { strict: false, checks: [] };
  return {
    url: base,
    strict: checks.strict,
    contexts: checks.checks.map((c) => c.context),
    checks: checks.checks.map((c) => ({ context: c.context, app_id: c.appId })),
    contexts_url: `${base}/contexts`,
  };
}

function protectionObject(
  world: World,
  repo: Repository,
  branch: string,
  p: BranchProtection,
): Schema<"branch-protection"> {
  const urls = world.urls;
  const base = `${urls.repo(repo)}/branches/${encodeURIComponent(branch)}/protection`;
  const reviews = p.requiredPullRequestReviews;
  const app = (slug: string): Schema<"integration"> | null => {
    const found = [...world.apps.values()].find((a) => a.slug === slug);
    return found === undefined ? null : objects.integration(world.urls, found);
  };
  return {
    url: base,
    enabled: true,
    ...(p.requiredStatusChecks !== null
      ? { required_status_checks: statusCheckPolicy(urls, repo, branch, p) }
      : {}),
    enforce_admins: { url: `${base}/enforce_admins`, enabled: p.enforceAdmins },
    ...(reviews !== null
      ? {
          required_pull_request_reviews: {
            url: `${base}/required_pull_request_reviews`,
            dismiss_stale_reviews: reviews.dismissStaleReviews,
            require_code_owner_reviews: false,
            required_approving_review_count: reviews.requiredApprovingReviewCount,
            require_last_push_approval: false,
            bypass_pull_request_allowances: {
              users: reviews.bypassUsers
                .map((l) => simpleUserOf(world, l))
                .filter((u) => u !== null),
              teams: [],
              apps: reviews.bypassApps.map(app).filter((a) => a !== null),
            },
          },
        }
      : {}),
    ...(p.restrictions !== null
      ? {
          restrictions: {
            url: `${base}/restrictions`,
            users_url: `${base}/restrictions/users`,
            teams_url: `${base}/restrictions/teams`,
            apps_url: `${base}/restrictions/apps`,
            users: p.restrictions.users
              .map((l) => simpleUserOf(world, l))
              .filter((u) => u !== null) as NonNullable<
              Schema<"branch-restriction-policy">["users"]
            >,
            teams: [],
            apps: p.restrictions.apps.map(app).filter((a) => a !== null) as unknown as NonNullable<
              Schema<"branch-restriction-policy">["apps"]
            >,
          },
        }
      : {}),
    required_linear_history: { enabled: p.requiredLinearHistory },
    allow_force_pushes: { enabled: p.allowForcePushes },
    allow_deletions: { enabled: p.allowDeletions },
    block_creations: { enabled: false },
    required_conversation_resolution: { enabled: false },
    required_signatures: { url: `${base}/required_signatures`, enabled: false },
    lock_branch: { enabled: false },
    allow_fork_syncing: { enabled: false },
  };
}

function simpleUserOf(world: World, login: string): Schema<"simple-user"> | null {
  const account = world.findAccount(login);
  return account === undefined ? null : objects.simpleUser(world.urls, account);
}

export function register(server: HttpServer, world: World, auth: AppAuth): void {
  const protectedBranch = (
    params: Record<string, string>,
  ): { repo: Repository; branch: string; p: BranchProtection } => {
    const repo = world.repoOf(params);
    const branch = params.branch ?? "";
    const p = matchingProtection(repo, branch);
    if (p === null) throw new GitHubError(404, "Branch not protected");
    return { repo, branch, p };
  };
  server.add({
    method: "GET",
    path: "/repos/{owner}/{repo}/branches/{branch+}/protection",
    operationId: "repos/get-branch-protection",
    auth: "token",
    handler: (ctx) => {
      auth.repoAccess(ctx, world.repoOf(ctx.params), ["administration", "read"]);
      const { repo, branch, p } = protectedBranch(ctx.params);
      return { status: 200, body: protectionObject(world, repo, branch, p) };
    },
  });
  server.add({
    method: "GET",
    path: "/repos/{owner}/{repo}/branches/{branch+}/protection/required_status_checks",
    operationId: "repos/get-status-checks-protection",
    auth: "token",
    handler: (ctx) => {
      auth.repoAccess(ctx, world.repoOf(ctx.params), ["administration", "read"]);
      const { repo, branch, p } = protectedBranch(ctx.params);
      if (p.requiredStatusChecks === null)
        throw new GitHubError(404, "Required status checks not enabled");
      return { status: 200, body: statusCheckPolicy(world.urls, repo, branch, p) };
    },
  });
  server.add({
    method: "GET",
    path: "/repos/{owner}/{repo}/rules/branches/{branch+}",
    operationId: "repos/get-branch-rules",
    auth: "token",
    handler: (ctx) => {
      const repo = world.repoOf(ctx.params);
      auth.repoAccess(ctx, repo, ["metadata", "read"]);
      const ref = `refs/heads/${ctx.params.branch ?? ""}`;
      const rules = activeRulesets(repo, ref).flatMap((ruleset) =>
        ruleset.rules.map((r) => ({
          ...r,
          ruleset_source_type: ruleset.sourceType,
          ruleset_source:
            ruleset.sourceType === "Organization"
              ? repo.owner.login
              : `${repo.owner.login}/${repo.name}`,
          ruleset_id: ruleset.id,
        })),
      );
      const page = pageOf(ctx, rules, world.urls.api);
      return { status: 200, headers: page.headers, body: page.items };
    },
  });
}

// ---- the webhooks of a change ------------------------------------------------------------------

/** Who changes a repository's settings: an administrator, else its owner account. */
function administrator(world: World, repo: Repository): Actor {
  const admin =
    repo.owner.type === "User"
      ? repo.owner.login
      : [...repo.owner.members].find(([, role]) => role === "admin")?.[0];
  return admin === undefined
    ? { kind: "user", account: repo.owner }
    : { kind: "user", account: world.account(admin) };
}

/** GitHub's `branch_protection_rule` webhook (its `rule` as GitHub describes it), and its sender. */
export function protectionRuleEvent(
  world: World,
  repo: Repository,
  action: string,
  pattern: string,
  rule: BranchProtection | undefined,
): { actor: Actor; payload: Record<string, unknown> } {
  const reviews = rule?.requiredPullRequestReviews ?? null;
  const level = rule?.enforceAdmins === true ? "everyone" : "non_admins";
  return {
    actor: administrator(world, repo),
    payload: {
      action,
      rule: {
        id: world.nextId("protectionRule"),
        repository_id: repo.id,
        name: pattern,
        created_at: world.nowIso(),
        updated_at: world.nowIso(),
        pull_request_reviews_enforcement_level: reviews ? level : "off",
        required_approving_review_count: reviews?.requiredApprovingReviewCount ?? 0,
        dismiss_stale_reviews_on_push: reviews?.dismissStaleReviews ?? false,
        require_code_owner_review: false,
        authorized_dismissal_actors_only: false,
        ignore_approvals_from_contributors: false,
        required_status_checks: (rule?.requiredStatusChecks?.checks ?? []).map((c) => c.context),
        required_status_checks_enforcement_level: rule?.requiredStatusChecks ? level : "off",
        strict_required_status_checks_policy: rule?.requiredStatusChecks?.strict ?? false,
        signature_requirement_enforcement_level: "off",
        linear_history_requirement_enforcement_level: rule?.requiredLinearHistory ? level : "off",
        lock_branch_enforcement_level: "off",
        admin_enforced: rule?.enforceAdmins ?? false,
        allow_force_pushes_enforcement_level: rule?.allowForcePushes ? "everyone" : "off",
        allow_deletions_enforcement_level: rule?.allowDeletions ? "everyone" : "off",
        merge_queue_enforcement_level: "off",
        required_deployments_enforcement_level: "off",
        required_conversation_resolution_level: "off",
        authorized_actors_only: rule?.restrictions != null,
        authorized_actor_names: rule?.restrictions?.users ?? [],
      },
    },
  };
}

/** GitHub's `repository_ruleset` webhook for a repository's ruleset, and its sender. */
export function rulesetEvent(
  world: World,
  repo: Repository,
  action: string,
  ruleset: Ruleset,
): { actor: Actor; payload: Record<string, unknown> } {
  return {
    actor: administrator(world, repo),
    payload: {
      action,
      repository_ruleset: {
        id: ruleset.id,
        name: ruleset.name,
        target: "branch",
        source_type: ruleset.sourceType,
        source: `${repo.owner.login}/${repo.name}`,
        enforcement: ruleset.enforcement,
      },
    },
  };
}
