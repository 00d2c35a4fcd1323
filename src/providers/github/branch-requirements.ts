/**
 * What a target branch's protection and active rulesets ask of a pull request on GitHub
 * (approvals, required checks), read and kept for a while, and whether a pull request meets it.
 * GitHub enforces them on the merge itself whatever these reads said.
 */
import { SECOND_MS } from "../../lib/time.js";
import { statusOf } from "./conditional.js";
import type { GitHubGitApi, PullPayload } from "./git-api.js";
import type { GitHubRepositoryAccess } from "./repositories.js";
import {
  checkCounts,
  unionRequiredChecks,
  type BranchRule,
  type ClassicRequiredChecks,
  type RequiredCheck,
} from "./required-checks.js";

interface ReviewPayload {
  user: { login: string } | null;
  state: string;
  commit_id: string | null;
}

interface RulePayload extends BranchRule {
  parameters?: BranchRule["parameters"] & {
    required_approving_review_count?: number;
    dismiss_stale_reviews_on_push?: boolean;
  };
}

interface ProtectionPayload {
  required_pull_request_reviews?: {
    required_approving_review_count?: number;
    dismiss_stale_reviews?: boolean;
  };
  required_status_checks?: ClassicRequiredChecks | null;
}

/** What the target branch's protection and rulesets ask of a pull request. */
export interface BranchRequirements {
  approvals: number;
  dismissStale: boolean;
  /** GitHub's required checks, each with the App it is pinned to (if any). */
  checks: RequiredCheck[];
  /** GitHub refused the classic protection's read (403): its checks are not known. */
  protectionRefused: boolean;
}

/** How long a branch's protection and rulesets read serve (webhooks forget them sooner). */
const DEFAULT_REQUIREMENTS_TTL_MS = 5 * 60 * SECOND_MS;

export class GitHubBranchRequirements {
  /** Each branch's requirements, read at `at` (see `ttlMs`). */
  private readonly requirementsRead = new Map<
    string,
    { at: number; requirements: Promise<BranchRequirements> }
  >();

  constructor(
    private readonly api: GitHubGitApi,
    private readonly options: {
      /** How long a read serves (default 5 min). */
      ttlMs: number | undefined;
      now: () => number;
    },
  ) {}

  /**
   * Forgets what the repository's branches require (a `branch_protection_rule` or
   * `repository_ruleset` webhook: protection or rulesets changed); the next read asks GitHub.
   */
  forget(repo: { owner: string; name: string } | undefined): void {
    if (repo === undefined) {
      this.requirementsRead.clear();
      return;
    }
    const prefix = `${repo.owner}/${repo.name}\u0000`.toLowerCase();
    for (const key of [...this.requirementsRead.keys()]) {
      if (key.toLowerCase().startsWith(prefix)) this.requirementsRead.delete(key);
    }
  }

  /**
   * The approvals and checks the branch's protection and active rulesets ask for: they change
   * rarely, so a read serves for the TTL (or until a webhook says they changed).
   */
  of(access: GitHubRepositoryAccess, branch: string): Promise<BranchRequirements> {
    const key = `${access.owner}/${access.name}\u0000${branch}`;
    const now = this.options.now();
    const ttl = this.options.ttlMs ?? DEFAULT_REQUIREMENTS_TTL_MS;
    const known = this.requirementsRead.get(key);
    if (known && now - known.at < ttl) return known.requirements;
    const requirements = this.read(access, branch);
    this.requirementsRead.set(key, { at: now, requirements });
    requirements.catch(() => {
      if (this.requirementsRead.get(key)?.requirements === requirements) {
        this.requirementsRead.delete(key);
      }
    });
    return requirements;
  }

  private async read(access: GitHubRepositoryAccess, branch: string): Promise<BranchRequirements> {
    const requirements: BranchRequirements = {
      approvals: 0,
      dismissStale: false,
      checks: [],
      protectionRefused: false,
    };
    let protection: ProtectionPayload | undefined;
    try {
      protection = await this.api.get<ProtectionPayload>(
        access,
        "GET /repos/{owner}/{repo}/branches/{branch}/protection",
        { branch },
      );
    } catch (error) {
      if (statusOf(error) !== 403) throw error;
      requirements.protectionRefused = true;
    }
    const reviews = protection?.required_pull_request_reviews;
    if (reviews) {
      requirements.approvals = reviews.required_approving_review_count ?? 0;
      requirements.dismissStale = reviews.dismiss_stale_reviews === true;
    }
    const rules =
      (await this.api.get<RulePayload[]>(
        access,
        "GET /repos/{owner}/{repo}/rules/branches/{branch}",
        { branch, per_page: 100 },
      )) ?? [];
    for (const rule of rules) {
      if (rule.type === "pull_request") {
        const count = rule.parameters?.required_approving_review_count ?? 0;
        requirements.approvals = Math.max(requirements.approvals, count);
        if (rule.parameters?.dismiss_stale_reviews_on_push === true) {
          requirements.dismissStale = true;
        }
      }
    }
    requirements.checks = unionRequiredChecks(
      protection?.required_status_checks ?? undefined,
      rules,
    );
    return requirements;
  }

  /**
   * The checks the branch's protection and active rulesets require, from the same kept read.
   * Thrown when GitHub refused the protection's read: reading "no checks" from a refusal would let
   * untested code through.
   */
  async requiredChecks(access: GitHubRepositoryAccess, branch: string): Promise<RequiredCheck[]> {
    const requirements = await this.of(access, branch);
    if (requirements.protectionRefused) {
      throw new Error(
        `GitHub refused to show ${access.owner}/${access.name}'s protection of ${branch} (403): the App needs the "Administration: read" permission to know its required checks`,
      );
    }
    return requirements.checks;
  }

  /** Whether enough distinct reviewers approved (each reviewer's latest verdict counts). */
  async approvalsMet(
    access: GitHubRepositoryAccess,
    pull: PullPayload,
    requirements: BranchRequirements,
  ): Promise<boolean> {
    if (requirements.approvals <= 0) return true;
    const reviews =
      (await this.api.get<ReviewPayload[]>(
        access,
        "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        { pull_number: pull.number, per_page: 100 },
      )) ?? [];
    const latest = new Map<string, ReviewPayload>();
    for (const review of reviews) {
      const login = review.user?.login;
      // A comment is no verdict: it leaves the reviewer's approval or request as it was.
      if (login === undefined || review.state === "COMMENTED" || review.state === "PENDING") {
        continue;
      }
      latest.set(login.toLowerCase(), review);
    }
    let approvals = 0;
    for (const review of latest.values()) {
      if (review.state !== "APPROVED") continue;
      if (requirements.dismissStale && review.commit_id !== pull.head.sha) continue;
      approvals += 1;
    }
    return approvals >= requirements.approvals;
  }

  /** Whether the head contains the base's head (`behind_by` 0). */
  async upToDate(access: GitHubRepositoryAccess, base: string, head: string): Promise<boolean> {
    const compare = await this.api.get<{ behind_by: number }>(
      access,
      "GET /repos/{owner}/{repo}/compare/{basehead}",
      { basehead: `${base}...${head}`, per_page: 1 },
    );
    return compare?.behind_by === 0;
  }

  /**
   * Whether the head's required checks passed: each required context has a passing check run or
   * status (skipped and neutral pass, as on GitHub); with none required, every check and status
   * the head has passed and there is at least one.
   */
  async checksPassed(
    access: GitHubRepositoryAccess,
    sha: string,
    requirements: BranchRequirements,
  ): Promise<boolean> {
    const runs =
      (
        await this.api.get<{
          check_runs: {
            name: string;
            status: string;
            conclusion: string | null;
            app: { id: number } | null;
          }[];
        }>(access, "GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
          ref: sha,
          per_page: 100,
        })
      )?.check_runs ?? [];
    const statuses =
      (
        await this.api.get<{ statuses: { context: string; state: string }[] }>(
          access,
          "GET /repos/{owner}/{repo}/commits/{ref}/status",
          { ref: sha, per_page: 100 },
        )
      )?.statuses ?? [];
    const reports = [
      ...runs.map((run) => ({
        name: run.name,
        appId: run.app?.id ?? null,
        passed:
          run.status === "completed" &&
          ["success", "skipped", "neutral"].includes(run.conclusion ?? ""),
      })),
      ...statuses.map((status) => ({
        name: status.context,
        appId: null,
        passed: status.state === "success",
      })),
    ];
    if (requirements.checks.length === 0) {
      return reports.length > 0 && reports.every((report) => report.passed);
    }
    // Each required check needs a report (from its App, when pinned), and every report of it
    // must pass (a name both a check run and a status carry passes as both).
    return requirements.checks.every((required) => {
      const found = reports.filter((r) => checkCounts(required, r.name, r.appId));
      return found.length > 0 && found.every((r) => r.passed);
    });
  }
}
