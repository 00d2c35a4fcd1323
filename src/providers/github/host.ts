/**
 * The merge queue's git host on GitHub (docs/github.md, "The queue on GitHub"), acting through the
 * installation that grants the repository. Every mutating call can be repeated; an answer to a
 * merge that may have happened anyway (in progress, base modified, 5xx, rate limit) is settled by
 * reading the pull request again before any retry; a merge must land the tree that was tested.
 */
import type { Mergeability, PullRequestInfo } from "../../mergequeue/model.js";
import type {
  GitHost,
  HostRateLimit,
  MergeRequest,
  PullRequestReadOptions,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../../mergequeue/providers.js";
import type { MergeMethod } from "../../mergequeue/settings.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import { SECOND_MS } from "../../lib/time.js";
import { GitHubBranchRequirements } from "./branch-requirements.js";
import type { RequiredCheck } from "./required-checks.js";
import type { GitHubApp, GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import { GitHubGitApi, messageOf, sleep, where, type PullPayload } from "./git-api.js";
import { BoundedMap } from "../../lib/bounded-map.js";
import type { GitHubRepositories, GitHubRepositoryAccess } from "./repositories.js";
import { DEFAULT_TEST_BRANCH_PREFIX, GitHubTestBranches } from "./test-branches.js";
import { SerialPerKey } from "../../lib/serial-per-key.js";

export { DEFAULT_TEST_BRANCH_PREFIX, SCRATCH_BRANCH_PREFIX } from "./test-branches.js";

export interface GitHubGitHostOptions {
  repositories: Pick<GitHubRepositories, "resolve">;
  app: Pick<GitHubApp, "conditionalGet" | "rateLimit">;
  logger: GitHubLogger;
  /** The prefix of the branches CI tests (default `trunk-merge/`); ends with `/`. */
  testBranchPrefix?: string;
  /** Attempts at a merge or a `/merges` call GitHub answered with a passing failure (default 5). */
  attempts?: number;
  /** The wait before the n-th retry (n from 1; default 1 s, 2 s, 4 s… up to 16 s). */
  retryDelayMs?: (retry: number) => number;
  /** Reads of a pull request whose mergeability GitHub is still computing (default 3). */
  mergeabilityReads?: number;
  /**
   * How long a branch's protection and rulesets are taken as read (default 5 min); a
   * `branch_protection_rule` or `repository_ruleset` webhook forgets them at once.
   */
  requirementsTtlMs?: number;
  /** The clock of that cache (default `Date.now`). */
  now?: () => number;
  /**
   * How long a merge waits for the `push` webhook of the commit it landed (whose tree it checks)
   * before it reads the commit instead (default 3 s).
   */
  pushWaitMs?: number;
}

type Refusal = Extract<MergeResult, { ok: false }>;

const GITHUB_MERGE_METHOD: Record<MergeMethod, "merge" | "squash" | "rebase"> = {
  merge_commit: "merge",
  squash: "squash",
  rebase: "rebase",
};

/** Whether a failed merge call may succeed if repeated (GitHub's passing failures). */
function isPassing(status: number | undefined, message: string): boolean {
  if (status === undefined || status >= 500) return true;
  if (status === 429) return true;
  if (status === 403) return /rate limit/i.test(message);
  if (status === 405) return /base branch was modified|merge already in progress/i.test(message);
  if (status === 409) return /head branch was modified/i.test(message);
  return false;
}

export class GitHubGitHost implements GitHost {
  /** Merges, one at a time per repository. */
  private readonly merges = new SerialPerKey();
  /** Trees of commits branches were pushed to, from `push` webhooks. */
  private readonly pushedTrees = new BoundedMap<string, string>(1024);
  private readonly pushWaiters: (() => void)[] = [];
  /** Per repository, when a webhook of it last came; per branch, the last push one told of. */
  private readonly heardAt = new BoundedMap<string, number>(1024);
  private readonly lastPush = new BoundedMap<string, string>(1024);
  /**
   * Pull requests read by `pullRequestState` (a submission's check), handed to the queue's own
   * read that follows it instead of a second read; forgotten on any webhook about them.
   */
  private readonly submittedReads = new BoundedMap<string, { at: number; pull: PullPayload }>(256);
  private readonly api: GitHubGitApi;
  private readonly testBranches: GitHubTestBranches;
  private readonly branchRequirements: GitHubBranchRequirements;
  private readonly attempts: number;
  private readonly retryDelayMs: (retry: number) => number;

  constructor(private readonly options: GitHubGitHostOptions) {
    const prefix = options.testBranchPrefix ?? DEFAULT_TEST_BRANCH_PREFIX;
    this.attempts = Math.max(1, options.attempts ?? 5);
    this.retryDelayMs =
      options.retryDelayMs ?? ((retry) => Math.min(16, 2 ** (retry - 1)) * SECOND_MS);
    this.api = new GitHubGitApi(options.app);
    this.testBranches = new GitHubTestBranches({
      repositories: options.repositories,
      api: this.api,
      logger: options.logger,
      prefix: prefix.endsWith("/") ? prefix : `${prefix}/`,
      attempts: this.attempts,
      retryDelayMs: this.retryDelayMs,
    });
    this.branchRequirements = new GitHubBranchRequirements(this.api, {
      ttlMs: options.requirementsTtlMs,
      now: () => this.now(),
    });
  }

  /**
   * The files a test branch's commit changes from the base it was assembled on, when this process
   * assembled it (undefined otherwise): what the run's pull requests change, without a compare.
   */
  assembledChanges(sha: string): Set<string> | undefined {
    return this.api.assembledChanges(sha);
  }

  /** The branch CI tests for a run. */
  testBranchName(targetBranch: string, runId: string): string {
    return this.testBranches.testBranchName(targetBranch, runId);
  }

  /** The branch CI tests for the runs of a slot (kept, moved by each run in it). */
  slotBranchName(targetBranch: string, slot: number): string {
    return this.testBranches.slotBranchName(targetBranch, slot);
  }

  // ---- reading ---------------------------------------------------------------------------------

  async pullRequest(
    repo: OwnedRepoRef,
    number: number,
    options: PullRequestReadOptions = {},
  ): Promise<PullRequestInfo | undefined> {
    const access = await this.options.repositories.resolve(repo);
    let pull = this.takeSubmittedRead(access, number) ?? (await this.api.readPull(access, number));
    if (!pull) return undefined;
    // GitHub computes mergeability after a push, asked by a read: read again a few times.
    const reads = Math.max(1, this.options.mergeabilityReads ?? 3);
    for (let read = 1; read < reads && pull.mergeable === null && pull.state === "open"; read++) {
      await sleep(this.retryDelayMs(read) / 2);
      pull = (await this.api.readPull(access, number)) ?? pull;
    }
    const state = pull.merged ? "merged" : pull.state === "closed" ? "closed" : "open";
    const info: PullRequestInfo = {
      number: pull.number,
      title: pull.title,
      author: pull.user?.login ?? "ghost",
      headSha: pull.head.sha,
      headBranch: pull.head.ref,
      baseBranch: pull.base.ref,
      mergeability: "unspecified",
      upToDate: false,
      checksPassed: false,
      state,
      draft: pull.draft === true,
    };
    if (state !== "open") return info;
    const requirements = await this.branchRequirements.of(access, pull.base.ref);
    const approved = await this.branchRequirements.approvalsMet(access, pull, requirements);
    // Up-to-dateness and the pull request's own checks serve a direct merge only: read when asked.
    const upToDate =
      options.readiness === true &&
      (await this.branchRequirements.upToDate(access, pull.base.ref, pull.head.sha));
    const checksPassed =
      upToDate && (await this.branchRequirements.checksPassed(access, pull.head.sha, requirements));
    return {
      ...info,
      mergeability: approved ? mergeabilityOf(pull.mergeable) : "not_mergeable",
      upToDate,
      checksPassed,
      ...(approved ? {} : { reviewRequired: true }),
    };
  }

  /**
   * Whether a pull request exists and is open, in one read (a submission is checked with it and
   * answered once stored). A repository no linked installation grants is refused with the
   * reason (`not_found`, `host_not_connected`).
   */
  async pullRequestState(
    repo: OwnedRepoRef,
    number: number,
  ): Promise<{ state: "open" | "closed" | "merged" } | undefined> {
    const access = await this.options.repositories.resolve(repo);
    const pull = await this.api.readPull(access, number);
    if (!pull) return undefined;
    this.submittedReads.set(this.pullKey(access, number), { at: this.now(), pull });
    return { state: pull.merged ? "merged" : pull.state === "closed" ? "closed" : "open" };
  }

  /** A `pull_request` or review webhook: a read kept from a submission's check is out of date. */
  forgetPullRequest(repo: { owner: string; name: string }, number: number): void {
    this.submittedReads.delete(`${repo.owner}/${repo.name}#${String(number)}`.toLowerCase());
  }

  private pullKey(access: GitHubRepositoryAccess, number: number): string {
    return `${access.owner}/${access.name}#${String(number)}`.toLowerCase();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private takeSubmittedRead(
    access: GitHubRepositoryAccess,
    number: number,
  ): PullPayload | undefined {
    const key = this.pullKey(access, number);
    const kept = this.submittedReads.get(key);
    if (!kept) return undefined;
    this.submittedReads.delete(key);
    return this.now() - kept.at < SUBMITTED_READ_TTL_MS ? kept.pull : undefined;
  }

  /** The rate limit the installation granting the repository is held by, if any. */
  async rateLimit(repo: OwnedRepoRef): Promise<HostRateLimit | undefined> {
    const access = await this.options.repositories.resolve(repo).catch(() => undefined);
    const pause = access && this.options.app.rateLimit(access.installationId);
    if (!pause) return undefined;
    const which =
      pause.kind === "primary" ? "its requests for the hour are spent" : "its secondary rate limit";
    return {
      since: pause.since,
      until: pause.until,
      message: `GitHub holds this installation's requests: ${which}`,
    };
  }

  async branchHead(repo: OwnedRepoRef, branch: string): Promise<string | undefined> {
    const access = await this.options.repositories.resolve(repo);
    return this.api.refHead(access, branch, true);
  }

  async readFile(repo: OwnedRepoRef, sha: string, path: string): Promise<string | undefined> {
    const access = await this.options.repositories.resolve(repo);
    const content = await this.api.get<
      { type?: string; encoding?: string; content?: string } | unknown[]
    >(access, "GET /repos/{owner}/{repo}/contents/{path}", { path, ref: sha });
    if (content === undefined || Array.isArray(content)) return undefined;
    if (content.type !== undefined && content.type !== "file") return undefined;
    if (content.encoding === "base64" && typeof content.content === "string") {
      return Buffer.from(content.content, "base64").toString("utf8");
    }
    // Over 1 MB GitHub leaves `content` empty: the raw media type gives the bytes.
    const response = await access.client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...where(access),
      path,
      ref: sha,
      mediaType: { format: "raw" },
    });
    const raw: unknown = response.data;
    if (typeof raw === "string") return raw;
    return raw instanceof ArrayBuffer ? Buffer.from(raw).toString("utf8") : undefined;
  }

  // ---- test branches ---------------------------------------------------------------------------

  /** The queue's scratch branch, where its test branches are assembled (one per queue). */
  scratchBranchName(targetBranch: string): string {
    return this.testBranches.scratchBranchName(targetBranch);
  }

  /** Assembles a run's test branch and publishes it where CI tests it (`test-branches.ts`). */
  createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    return this.testBranches.create(request);
  }

  /** Deletes a run's test branch (a slot's is kept); refuses any other branch. */
  deleteTestBranch(repo: OwnedRepoRef, branch: string): Promise<void> {
    return this.testBranches.delete(repo, branch);
  }

  // ---- merging ---------------------------------------------------------------------------------

  merge(request: MergeRequest): Promise<MergeResult> {
    const key = `${request.repo.organizationId}/${request.repo.owner}/${request.repo.name}`;
    return this.merges.run(key, () => this.mergeNow(request));
  }

  /**
   * One merge: the base checked where the engine expects it (a conditional read: free when it
   * has not moved since it was last read), the tested tree found (known from the test branch's
   * assembly, else read), then `PUT /pulls/{n}/merge` pinned to the tested head. The pull
   * request is not read first: the pinned `sha` makes GitHub refuse a moved head (409) and an
   * unmergeable one (405), and any refusal is settled by reading it then.
   */
  private async mergeNow(request: MergeRequest): Promise<MergeResult> {
    const access = await this.options.repositories.resolve(request.repo);
    const pr = `#${String(request.prNumber)}`;
    let expectedTree: string | undefined;
    for (let attempt = 1; ; attempt++) {
      const base =
        attempt === 1 && this.baseConfirmed(access, request)
          ? request.expectedBaseSha
          : await this.api.refHead(access, request.targetBranch, true);
      if (base === undefined) return refuse("rejected", `${request.targetBranch} does not exist`);
      if (base !== request.expectedBaseSha) {
        // Merged already (a repeated call, or a merge answered with an error) moves the base
        // too: the pull request says whether it did.
        const pull = await this.api.readPull(access, request.prNumber, false);
        if (pull?.merged) return this.landed(access, request, pull.merge_commit_sha, expectedTree);
        return refuse(
          "base_moved",
          `${request.targetBranch} is at ${base}, not ${request.expectedBaseSha}`,
        );
      }
      if (request.testedSha !== undefined && expectedTree === undefined) {
        const tested = await this.testedTree(access, request);
        if (!tested.ok) return tested;
        expectedTree = tested.tree;
      }
      try {
        const response = await access.client.request(
          "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
          {
            ...where(access),
            pull_number: request.prNumber,
            sha: request.headSha,
            merge_method: GITHUB_MERGE_METHOD[request.method],
            commit_title: request.title,
          },
        );
        const result = await this.landed(access, request, response.data.sha, expectedTree);
        if (result.ok && expectedTree !== undefined && request.method !== "rebase") {
          // GitHub's merge commit, or its squash: on the base it was asked to merge onto (checked
          // just before; the tree check says nothing moved in between), with the pinned head as a
          // second parent for a merge commit. Kept, so that the next test branch can tell it
          // holds the same merge.
          this.api.rememberCommit(result.sha, {
            tree: expectedTree,
            parents:
              request.method === "merge_commit"
                ? [request.expectedBaseSha, request.headSha]
                : [request.expectedBaseSha],
          });
        }
        return result;
      } catch (error) {
        const status = statusOf(error);
        const text = messageOf(error);
        // Refused, or failed in a way that may have merged anyway: what is the PR now?
        const pull = await this.api.readPull(access, request.prNumber, false);
        if (!pull) return refuse("rejected", `pull request ${pr} does not exist`);
        if (pull.merged) return this.landed(access, request, pull.merge_commit_sha, expectedTree);
        if (pull.state !== "open") return refuse("rejected", `${pr} is ${pull.state}`);
        if (pull.base.ref !== request.targetBranch) {
          return refuse("rejected", `${pr} targets ${pull.base.ref}, not ${request.targetBranch}`);
        }
        if (pull.head.sha !== request.headSha) {
          return refuse("head_moved", `${pr} is at ${pull.head.sha}, not ${request.headSha}`);
        }
        if (status === 405 && /not mergeable/i.test(text)) {
          if (pull.mergeable === false) return refuse("merge_conflict", `${pr}: ${text}`);
        } else if (!isPassing(status, text)) {
          return refuse("rejected", `GitHub refused to merge ${pr}: ${text}`);
        }
        if (attempt >= this.attempts) {
          // Still open after every attempt: the engine reads the base and the PR again.
          const moved = status === 409 ? "head_moved" : "base_moved";
          return refuse(
            moved,
            `GitHub did not merge ${pr} after ${String(attempt)} attempts: ${text}`,
          );
        }
        this.options.logger.warn(
          { pr: request.prNumber, status, attempt, message: text },
          "github: merge failed; retrying",
        );
        await sleep(this.retryDelayMs(attempt));
      }
    }
  }

  /**
   * The tree the pull request passed with: the merge of its head on the test branch that cleared
   * it, found on that branch's first-parent chain. The base must hold the tree that merge was made
   * onto (the pull requests ahead landed as tested), or the test does not hold for it.
   */
  private async testedTree(
    access: GitHubRepositoryAccess,
    request: MergeRequest,
  ): Promise<{ ok: true; tree: string } | Refusal> {
    const pr = `#${String(request.prNumber)}`;
    let sha = request.testedSha;
    for (let step = 0; sha !== undefined && step < MAX_TEST_BRANCH_DEPTH; step++) {
      const commit = await this.api.commit(access, sha);
      if (!commit) break;
      const [first, second] = commit.parents;
      if (commit.parents.length === 2 && second === request.headSha && first !== undefined) {
        // Made onto the very commit the base is at: it holds that tree.
        if (first === request.expectedBaseSha) return { ok: true, tree: commit.tree };
        const on = await this.api.commit(access, first);
        const base = await this.treeOf(access, request.expectedBaseSha);
        if (on?.tree !== base) {
          return refuse(
            "base_moved",
            `${request.targetBranch} at ${request.expectedBaseSha} does not hold what ${pr} was tested on`,
          );
        }
        return { ok: true, tree: commit.tree };
      }
      sha = first;
    }
    return refuse(
      "rejected",
      `${pr} at ${request.headSha} is not on the test branch ${request.testedSha ?? ""} that cleared it`,
    );
  }

  /**
   * The answer for a pull request that landed as `sha`: when it was tested, the landed tree must
   * be the tested one. If it is not, what landed was never tested: the answer says so (the queue
   * stops) and it is logged as an error.
   */
  private async landed(
    access: GitHubRepositoryAccess,
    request: MergeRequest,
    sha: string | null,
    expectedTree: string | undefined,
  ): Promise<MergeResult> {
    const pr = `#${String(request.prNumber)}`;
    if (sha === null) return refuse("rejected", `${pr} is merged but GitHub names no commit`);
    let expected = expectedTree;
    if (request.testedSha !== undefined && expected === undefined) {
      // Merged before this call looked (a repeated call): compare with the tested merge anyway.
      const tested = await this.testedTree(access, request);
      expected = tested.ok ? tested.tree : undefined;
    }
    if (expected === undefined) return { ok: true, sha };
    const landedTree = await this.landedTree(access, sha);
    if (landedTree === expected) return { ok: true, sha };
    const message = `landed tree differs from tested tree: ${pr} landed on ${request.targetBranch} as ${sha} (tree ${landedTree ?? "unknown"}), but the test branch ${request.testedSha ?? ""} passed with tree ${expected}; what landed was not tested. The queue stops until someone looks.`;
    this.options.logger.error(
      {
        repository: `${access.owner}/${access.name}`,
        pr: request.prNumber,
        sha,
        testedSha: request.testedSha,
      },
      `github: ${message}`,
    );
    return { ...refuse("rejected", message), pauseQueue: true };
  }

  /**
   * A `push` webhook (signed by GitHub): the commit a branch moved to, with its tree. The tree of
   * a commit a merge landed is taken from it rather than read.
   */
  pushed(repo: { owner: string; name: string }, sha: string, tree: string): void {
    this.pushedTrees.set(`${repo.owner}/${repo.name}@${sha}`.toLowerCase(), tree);
    for (const wake of this.pushWaiters.splice(0)) wake();
  }

  /**
   * A webhook of the repository came (any event): its webhooks are flowing. A push names the
   * branch it moved and where.
   */
  heard(repo: { owner: string; name: string }, push?: { branch: string; sha: string }): void {
    const key = `${repo.owner}/${repo.name}`.toLowerCase();
    this.heardAt.set(key, this.now());
    if (push) this.lastPush.set(`${key}:${push.branch}`, push.sha);
  }

  /**
   * Whether the base a merge expects is where the webhooks say it is, so that it need not be
   * read: the last push they told of on the branch went there, and they are flowing (one came
   * within WEBHOOKS_FLOWING_MS, as the CI conclusion that led to the merge does). A push since
   * would have come the same way; the tree check after the merge stands behind the rest.
   */
  private baseConfirmed(access: GitHubRepositoryAccess, request: MergeRequest): boolean {
    const key = `${access.owner}/${access.name}`.toLowerCase();
    const heard = this.heardAt.get(key);
    return (
      heard !== undefined &&
      this.now() - heard <= WEBHOOKS_FLOWING_MS &&
      this.lastPush.get(`${key}:${request.targetBranch}`) === request.expectedBaseSha
    );
  }

  /** A commit's tree: from a push webhook or a commit seen, else read. */
  private async treeOf(access: GitHubRepositoryAccess, sha: string): Promise<string | undefined> {
    const pushed = this.pushedTrees.get(`${access.owner}/${access.name}@${sha}`.toLowerCase());
    return pushed ?? (await this.api.commit(access, sha))?.tree;
  }

  /**
   * The tree of the commit a merge landed: from its push webhook when it comes within
   * `pushWaitMs` (default 3 s), else read. The merge waits for it, and so does the next one.
   */
  private async landedTree(
    access: GitHubRepositoryAccess,
    sha: string,
  ): Promise<string | undefined> {
    const key = `${access.owner}/${access.name}@${sha}`.toLowerCase();
    const deadline = this.now() + (this.options.pushWaitMs ?? DEFAULT_PUSH_WAIT_MS);
    for (;;) {
      const tree = this.pushedTrees.get(key);
      if (tree !== undefined) return tree;
      const left = deadline - this.now();
      if (left <= 0) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.pushWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return (await this.api.commit(access, sha))?.tree;
  }

  // ---- requirements --------------------------------------------------------------------------

  /** The checks a branch's protection and rulesets require (the readiness read, kept). */
  requiredChecks(access: GitHubRepositoryAccess, branch: string): Promise<RequiredCheck[]> {
    return this.branchRequirements.requiredChecks(access, branch);
  }

  /** A protection or ruleset webhook: the repository's branch requirements are read again. */
  forgetRequirements(repo: { owner: string; name: string } | undefined): void {
    this.branchRequirements.forget(repo);
  }
}

/** How recent a webhook must be for the webhooks to count as flowing (`baseConfirmed`). */
const WEBHOOKS_FLOWING_MS = 60 * SECOND_MS;
/** How long a merge waits for its push webhook before reading the landed commit. */
const DEFAULT_PUSH_WAIT_MS = 3 * SECOND_MS;
/** How long a submission's read of a pull request serves the queue's read of it. */
const SUBMITTED_READ_TTL_MS = 30 * SECOND_MS;
/** How far down a test branch's first-parent chain the merge of a pull request is looked for. */
const MAX_TEST_BRANCH_DEPTH = 256;

function mergeabilityOf(mergeable: boolean | null): Mergeability {
  if (mergeable === null) return "in_progress";
  return mergeable ? "mergeable" : "not_mergeable";
}

function refuse(reason: Refusal["reason"], message: string): Refusal {
  return { ok: false, reason, message };
}
