/**
 * `x-forked-workflow-run-id`: a pull request from a fork names its GitHub Actions run instead of
 * sending an API token. The id proves nothing by itself: the repository's grant, the run (this
 * repository's, in progress, from a pull request event, for the claimed commit, from a fork) and
 * the open pull request's head are all checked with GitHub before anything changes
 * (docs/github.md, "Pull requests from forks"). Verified claims are kept a minute; claims GitHub
 * must be asked about are limited per repository.
 */
import { ApiError } from "../../lib/errors.js";
import type { Clock } from "../../lib/clock.js";
import { MINUTE_MS } from "../../lib/time.js";
import type {
  ForkedWorkflowRunClaim,
  ForkedWorkflowRuns,
} from "../../organizations/forked-workflow-runs.js";
import type {
  GitHubInstallationRecords,
  ResolvedGitHubRepository,
} from "../../organizations/github-installations.js";
import type { OrganizationRecords } from "../../organizations/records.js";
import type { Principal } from "../../organizations/service.js";
import type { GitHubApp, GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/** How long a verified claim is trusted without asking GitHub again. */
export const VERIFIED_CLAIM_TTL_MS = MINUTE_MS;
/** Claims GitHub is asked about, per repository and minute, at most. */
export const VERIFICATIONS_PER_MINUTE = 60;
const RUN_EVENTS = new Set(["pull_request", "pull_request_target"]);
const RUNNING = new Set(["queued", "in_progress"]);
/** One answer for an unknown repository, one of no linked installation, and an unknown run. */
const NO_SUCH_RUN = "no such workflow run of this repository was found.";

interface RunAnswer {
  id: number;
  status: string | null;
  event: string;
  head_sha: string;
  repository: { id: number };
  head_repository: { id: number; full_name: string } | null;
}

interface PullAnswer {
  state: string;
  head: { sha: string; repo: { id: number; full_name: string } | null };
  base: { repo: { id: number } };
}

export interface ForkedRunsDeps {
  host: string;
  store: Pick<GitHubInstallationRecords, "list" | "resolve">;
  organizations: Pick<OrganizationRecords, "findById">;
  app: Pick<GitHubApp, "installation">;
  clock: Clock;
  logger: GitHubLogger;
}

export class GitHubForkedRuns implements ForkedWorkflowRuns {
  private readonly verified = new BoundedMap<string, { principal: Principal; until: number }>(
    10_000,
  );
  private readonly budgets = new BoundedMap<number, { windowStart: number; used: number }>(10_000);

  constructor(private readonly deps: ForkedRunsDeps) {}

  async verify(claim: ForkedWorkflowRunClaim): Promise<Principal> {
    const { repo, runId, prNumber, sha } = claim;
    const full = `${repo.host}/${repo.owner}/${repo.name}`;
    const unverified = (why: string) =>
      new ApiError(
        "unauthorized",
        `The workflow run ${runId} named by x-forked-workflow-run-id was not accepted for ${full} pull request #${prNumber}: ${why}`,
      );
    const resolved =
      repo.host.toLowerCase() === this.deps.host.toLowerCase()
        ? await this.findGrant(claim)
        : undefined;
    if (!resolved) {
      // The same answer whether the repository is unknown, of no linked installation, or the
      // run is not GitHub's: nothing is learnt of other organizations.
      throw unverified(NO_SUCH_RUN);
    }
    const { installation, repository } = resolved;
    const organizationId = installation.organizationId;
    if (organizationId === null) throw unverified(NO_SUCH_RUN);
    const key = [organizationId, installation.id, repository.githubId, runId, prNumber, sha].join(
      "|",
    );
    const now = this.deps.clock.now();
    const cached = this.verified.get(key);
    if (cached && cached.until > now) return cached.principal;

    this.spend(repository.githubId, now, full);
    const client = this.deps.app.installation(installation.id);
    const location = { owner: repository.owner, repo: repository.name };
    const run = await this.ask<RunAnswer>(
      () =>
        client.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
          ...location,
          run_id: Number(runId),
        }),
      full,
      unverified,
    );
    if (!run || run.repository.id !== repository.githubId) {
      throw unverified(NO_SUCH_RUN);
    }
    if (run.status === null || !RUNNING.has(run.status)) {
      throw unverified(
        `the run is ${run.status ?? "in no known state"}; only a run that is queued or in progress may upload targets.`,
      );
    }
    if (!RUN_EVENTS.has(run.event)) {
      throw unverified(
        `the run was started by "${run.event}", not by a pull_request or pull_request_target event.`,
      );
    }
    if (run.head_sha !== sha) {
      throw unverified(`the run is for commit ${run.head_sha}, not ${sha}.`);
    }
    const fork = run.head_repository;
    if (fork === null || fork.id === repository.githubId) {
      throw unverified(
        "the run is not for a pull request from a fork; send the repository's API token in x-api-token instead.",
      );
    }
    const pull = await this.ask<PullAnswer>(
      () =>
        client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
          ...location,
          pull_number: prNumber,
        }),
      full,
      unverified,
    );
    if (!pull || pull.base.repo.id !== repository.githubId) {
      throw unverified(`GitHub has no pull request #${prNumber} in this repository.`);
    }
    if (pull.state !== "open") throw unverified(`pull request #${prNumber} is ${pull.state}.`);
    if (pull.head.sha !== sha) {
      throw unverified(`the head of pull request #${prNumber} is ${pull.head.sha}, not ${sha}.`);
    }
    if (pull.head.repo?.id !== fork.id) {
      throw unverified(
        `pull request #${prNumber} does not come from ${fork.full_name}, the repository the run is for.`,
      );
    }
    const organization = await this.deps.organizations.findById(organizationId);
    if (!organization) throw unverified(NO_SUCH_RUN);
    const principal: Principal = {
      organizationId,
      organizationSlug: organization.slug,
      tokenId: `github-actions:${runId}`,
    };
    this.verified.set(key, { principal, until: now + VERIFIED_CLAIM_TTL_MS });
    this.deps.logger.info(
      { repository: full, runId, prNumber, sha, fork: fork.full_name },
      "github: accepted a fork's workflow run in place of an API token",
    );
    return principal;
  }

  /**
   * The active grant of the repository by an installation linked to an organization: the one
   * organization it belongs to, or nothing (none, or, against the rule, more than one).
   */
  private async findGrant(
    claim: ForkedWorkflowRunClaim,
  ): Promise<ResolvedGitHubRepository | undefined> {
    const organizations = new Set<string>();
    for (const installation of await this.deps.store.list()) {
      if (installation.organizationId !== null) organizations.add(installation.organizationId);
    }
    const grants: ResolvedGitHubRepository[] = [];
    for (const organizationId of organizations) {
      const resolved = await this.deps.store.resolve({ organizationId, ...claim.repo });
      if (
        resolved &&
        resolved.repository.removedAt === null &&
        resolved.installation.deletedAt === null &&
        resolved.installation.suspendedAt === null &&
        resolved.installation.organizationId === organizationId
      ) {
        grants.push(resolved);
      }
    }
    return grants.length === 1 ? grants[0] : undefined;
  }

  /** One more claim GitHub is asked about for this repository, or 429 when it had its share. */
  private spend(githubId: number, now: number, full: string): void {
    const budget = this.budgets.get(githubId);
    if (!budget || now - budget.windowStart >= MINUTE_MS) {
      this.budgets.set(githubId, { windowStart: now, used: 1 });
      return;
    }
    if (budget.used >= VERIFICATIONS_PER_MINUTE) {
      throw new ApiError(
        "rate_limited",
        `Too many workflow runs to verify for ${full} (at most ${VERIFICATIONS_PER_MINUTE} a minute); retry in a minute.`,
      );
    }
    budget.used++;
  }

  /**
   * GitHub's answer, undefined for a 404; a 403 (the installation may not read it) is a refusal
   * that says so; GitHub's own trouble is 503, never the caller's fault.
   */
  private async ask<T>(
    request: () => Promise<{ data: unknown }>,
    full: string,
    unverified: (why: string) => ApiError,
  ): Promise<T | undefined> {
    try {
      return (await request()).data as T;
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) return undefined;
      if (status === 403) {
        throw unverified(
          "the GitHub App's installation may not read it (it needs the actions and pull_requests read permissions).",
        );
      }
      this.deps.logger.warn(
        { repository: full, status, err: error },
        "github: could not verify a fork's workflow run",
      );
      throw new ApiError(
        "unavailable",
        `GitHub could not be asked about the workflow run of ${full} (${status === undefined ? "no answer" : `HTTP ${status}`}); retry shortly.`,
      );
    }
  }
}
