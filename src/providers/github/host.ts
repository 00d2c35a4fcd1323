/**
 * The merge queue's git host on GitHub (docs/github.md, "The queue on GitHub"): pull requests,
 * branches and files read through the REST API, test branches assembled with `POST /merges` on a
 * scratch ref CI ignores and then published under the prefix CI watches, and merges made with
 * `PUT /pulls/{n}/merge`. Every call acts through the installation that grants the repository to
 * its organization (`GitHubRepositories.resolve`).
 *
 * Safety rules, in the words of `GitHost`: every mutating call can be repeated (a test branch
 * already published is returned; a pull request already merged reports the commit it landed as,
 * never a second merge); answers GitHub gives to a merge that may have happened anyway ("merge
 * already in progress", "base branch was modified", 5xx, rate limits) are settled by reading the
 * pull request again before anything is retried; and a merge of a tested pull request is checked
 * to have landed the tree that was tested.
 */
import type { Mergeability, PullRequestInfo } from "../../mergequeue/model.js";
import type {
  GitHost,
  MergeRequest,
  PullRequestReadOptions,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../../mergequeue/providers.js";
import type { MergeMethod } from "../../mergequeue/settings.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import { SECOND_MS } from "../../lib/time.js";
import type { GitHubApp, GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import { BoundedMap } from "./token-cache.js";
import type { GitHubRepositories, GitHubRepositoryAccess } from "./repositories.js";
import {
  checkCounts,
  unionRequiredChecks,
  type BranchRule,
  type ClassicRequiredChecks,
  type RequiredCheck,
} from "./required-checks.js";
import { SerialPerKey } from "../../lib/serial-per-key.js";

/** Where CI looks for test branches, by default (Trunk's prefix: users' CI filters keep working). */
export const DEFAULT_TEST_BRANCH_PREFIX = "trunk-merge/";
/** Where test branches are assembled, out of CI's sight (CI must ignore it, as with Trunk). */
export const SCRATCH_BRANCH_PREFIX = "trunk-temp/";

export interface GitHubGitHostOptions {
  repositories: Pick<GitHubRepositories, "resolve">;
  app: Pick<GitHubApp, "conditionalGet">;
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
type Conflict = Extract<TestBranchResult, { ok: false }>;

interface PullPayload {
  number: number;
  title: string;
  state: string;
  draft?: boolean;
  merged: boolean;
  merge_commit_sha: string | null;
  mergeable: boolean | null;
  mergeable_state?: string;
  user: { login: string } | null;
  head: { sha: string; ref: string };
  base: { ref: string; sha: string };
}

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
interface BranchRequirements {
  approvals: number;
  dismissStale: boolean;
  /** GitHub's required checks, each with the App it is pinned to (if any). */
  checks: RequiredCheck[];
}

const GITHUB_MERGE_METHOD: Record<MergeMethod, "merge" | "squash" | "rebase"> = {
  merge_commit: "merge",
  squash: "squash",
  rebase: "rebase",
};

/** GitHub's message for a failed call, without anything of the request. */
function messageOf(error: unknown): string {
  const response = (error as { response?: { data?: unknown } } | null)?.response;
  const data = response?.data;
  if (data && typeof data === "object" && "message" in data) {
    const message = data.message;
    if (typeof message === "string") return message;
  }
  const status = statusOf(error);
  if (status !== undefined) return `HTTP ${String(status)}`;
  return error instanceof Error ? error.message : String(error);
}

/** Whether a failed merge call may succeed if repeated (GitHub's passing failures). */
function isPassing(status: number | undefined, message: string): boolean {
  if (status === undefined || status >= 500) return true;
  if (status === 429) return true;
  if (status === 403) return /rate limit/i.test(message);
  if (status === 405) return /base branch was modified|merge already in progress/i.test(message);
  if (status === 409) return /head branch was modified/i.test(message);
  return false;
}

const sleep = (ms: number) =>
  ms > 0 ? new Promise<void>((resolve) => setTimeout(resolve, ms)) : Promise.resolve();

/** A commit, as far as the queue needs it (commits never change: kept once seen). */
interface CommitFacts {
  tree: string;
  parents: string[];
}

/** `POST /merges`'s answer: the merge commit, with its tree and parents. */
interface MergeCommitPayload {
  sha: string;
  commit?: { tree?: { sha?: string } };
  parents?: { sha: string }[];
}

export class GitHubGitHost implements GitHost {
  /** Merges, one at a time per repository. */
  private readonly merges = new SerialPerKey();
  /** Scratch branches known to exist (made or moved here). */
  private readonly scratchKnown = new Set<string>();
  /** Slot branches published here, and the commit each was last put on. */
  private readonly slotHeads = new BoundedMap<string, string>(1024);
  /** Assemblies on a queue's scratch branch, one at a time per queue. */
  private readonly assemblies = new SerialPerKey();
  /** Commits seen (answers of `POST /merges` and reads): immutable, so never read twice. */
  private readonly commits = new BoundedMap<string, CommitFacts>(4096);
  /** Trees of commits branches were pushed to, from `push` webhooks. */
  private readonly pushedTrees = new BoundedMap<string, string>(1024);
  private readonly pushWaiters: (() => void)[] = [];
  /**
   * Pull requests read by `pullRequestState` (a submission's check), handed to the queue's own
   * read that follows it instead of a second read; forgotten on any webhook about them.
   */
  private readonly submittedReads = new BoundedMap<string, { at: number; pull: PullPayload }>(256);
  /** Each branch's requirements, read at `at` (see `requirementsTtlMs`). */
  private readonly requirementsRead = new Map<
    string,
    { at: number; requirements: Promise<BranchRequirements> }
  >();
  private readonly prefix: string;
  private readonly attempts: number;
  private readonly retryDelayMs: (retry: number) => number;

  constructor(private readonly options: GitHubGitHostOptions) {
    const prefix = options.testBranchPrefix ?? DEFAULT_TEST_BRANCH_PREFIX;
    this.prefix = prefix.endsWith("/") ? prefix : `${prefix}/`;
    this.attempts = Math.max(1, options.attempts ?? 5);
    this.retryDelayMs =
      options.retryDelayMs ?? ((retry) => Math.min(16, 2 ** (retry - 1)) * SECOND_MS);
  }

  /** The branch CI tests for a run. */
  testBranchName(targetBranch: string, runId: string): string {
    return `${this.prefix}${targetBranch}/${runId}`;
  }

  /** The branch CI tests for the runs of a slot (kept, moved by each run in it). */
  slotBranchName(targetBranch: string, slot: number): string {
    return `${this.prefix}${targetBranch}/${SLOT_BRANCH_LEAF}${String(slot)}`;
  }

  // ---- reading ---------------------------------------------------------------------------------

  async pullRequest(
    repo: OwnedRepoRef,
    number: number,
    options: PullRequestReadOptions = {},
  ): Promise<PullRequestInfo | undefined> {
    const access = await this.options.repositories.resolve(repo);
    let pull = this.takeSubmittedRead(access, number) ?? (await this.readPull(access, number));
    if (!pull) return undefined;
    // GitHub computes mergeability after a push, asked by a read: read again a few times.
    const reads = Math.max(1, this.options.mergeabilityReads ?? 3);
    for (let read = 1; read < reads && pull.mergeable === null && pull.state === "open"; read++) {
      await sleep(this.retryDelayMs(read) / 2);
      pull = (await this.readPull(access, number)) ?? pull;
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
    const requirements = await this.requirements(access, pull.base.ref);
    const approved = await this.approvalsMet(access, pull, requirements);
    // Up-to-dateness and the pull request's own checks serve a direct merge only: read when asked.
    const upToDate =
      options.readiness === true && (await this.upToDate(access, pull.base.ref, pull.head.sha));
    const checksPassed = upToDate && (await this.checksPassed(access, pull.head.sha, requirements));
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
    const pull = await this.readPull(access, number);
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

  async branchHead(repo: OwnedRepoRef, branch: string): Promise<string | undefined> {
    const access = await this.options.repositories.resolve(repo);
    return this.refHead(access, branch, true);
  }

  async readFile(repo: OwnedRepoRef, sha: string, path: string): Promise<string | undefined> {
    const access = await this.options.repositories.resolve(repo);
    const content = await this.get<
      { type?: string; encoding?: string; content?: string } | unknown[]
    >(access, "GET /repos/{owner}/{repo}/contents/{path}", { path, ref: sha });
    if (content === undefined || Array.isArray(content)) return undefined;
    if (content.type !== undefined && content.type !== "file") return undefined;
    if (content.encoding === "base64" && typeof content.content === "string") {
      return Buffer.from(content.content, "base64").toString("utf8");
    }
    // Over 1 MB GitHub leaves `content` empty: the raw media type gives the bytes.
    const response = await access.client.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...this.where(access),
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
    return `${SCRATCH_BRANCH_PREFIX}${targetBranch}/${SCRATCH_BRANCH_LEAF}`;
  }

  /**
   * Assembles base + each pull request's head, in order, on the queue's scratch branch
   * `trunk-temp/<target>/queue` (moved to the base with a forced update, never deleted) with
   * `POST /merges` (one merge commit each, whose answer names its tree and parents: kept, for the
   * merge's tested-tree check), then publishes the result as the branch CI tests: the slot's
   * branch when the request has a slot (kept, moved by each run in the slot: one request where a
   * branch per run costs two), else the run's own (create-only: a branch already published is the
   * answer of a repeated call). One assembly at a time per
   * scratch branch here; a merge whose first parent is not where this assembly had the branch
   * (another process moved it) fails the call rather than build on someone else's commit.
   */
  createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const key = `${request.repo.organizationId}/${request.repo.owner}/${request.repo.name}\u0000${request.targetBranch}`;
    return this.assemblies.run(key, () => this.assemble(request));
  }

  private async assemble(request: TestBranchRequest): Promise<TestBranchResult> {
    const access = await this.options.repositories.resolve(request.repo);
    const branch = this.testBranchName(request.targetBranch, request.runId);
    const scratch = this.scratchBranchName(request.targetBranch);
    // Known here to exist: moved; else created (moved when it exists after all).
    const known = `${access.owner}/${access.name}:${scratch}`.toLowerCase();
    if (this.scratchKnown.has(known)) await this.moveRef(access, scratch, request.baseSha);
    else await this.putRef(access, scratch, request.baseSha);
    this.scratchKnown.add(known);
    let current = request.baseSha;
    for (const [index, pr] of request.prs.entries()) {
      const message = `Merge #${String(pr.number)} into a test branch of ${request.targetBranch}`;
      const merged = await this.mergeOnto(access, scratch, current, pr.headSha, message);
      if (merged === null) {
        return await this.conflict(access, request, index, scratch);
      }
      current = merged;
    }
    if (request.slot !== undefined) {
      const slotBranch = this.slotBranchName(request.targetBranch, request.slot);
      const slotKey = `${access.owner}/${access.name}:${slotBranch}`.toLowerCase();
      const head = this.slotHeads.get(slotKey);
      // Moved to the commit it is on already, the branch would not be pushed and CI would not
      // run: that (rare) run gets a branch of its own.
      if (head !== current) {
        if (head === undefined) await this.putRef(access, slotBranch, current);
        else await this.moveRef(access, slotBranch, current);
        this.slotHeads.set(slotKey, current);
        return { ok: true, branch: slotBranch, sha: current };
      }
    }
    try {
      await access.client.request("POST /repos/{owner}/{repo}/git/refs", {
        ...this.where(access),
        ref: `refs/heads/${branch}`,
        sha: current,
      });
    } catch (error) {
      // Published already by an earlier (repeated) call: that one is the branch.
      const made = statusOf(error) === 422 ? await this.refHead(access, branch, false) : undefined;
      if (made === undefined) throw error;
      return { ok: true, branch, sha: made };
    }
    return { ok: true, branch, sha: current };
  }

  /**
   * Deletes a run's test branch (gone already is fine); a slot's branch is kept for the slot's
   * next run. Refuses any other branch, to be safe.
   */
  async deleteTestBranch(repo: OwnedRepoRef, branch: string): Promise<void> {
    if (!branch.startsWith(this.prefix) || branch.includes("..")) {
      throw new Error(`${branch} is not a test branch; only test branches are deleted`);
    }
    // A slot's branch (kept between runs) rather than one run's.
    if (SLOT_BRANCH_END.test(branch)) return;
    const access = await this.options.repositories.resolve(repo);
    await this.dropRef(access, branch);
  }

  /**
   * Merges `head` onto the scratch branch at `current`: its new head, or null on a conflict. A 409 that
   * is not a conflict (a passing permission glitch) and GitHub's own failures are retried, after
   * reading where the branch is (a merge answered with an error may have happened).
   */
  private async mergeOnto(
    access: GitHubRepositoryAccess,
    scratch: string,
    current: string,
    head: string,
    message: string,
  ): Promise<string | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await access.client.request("POST /repos/{owner}/{repo}/merges", {
          ...this.where(access),
          base: scratch,
          head,
          commit_message: message,
        });
        // 204: the head is in the branch already; nothing to merge.
        if ((response.status as number) === 204) return current;
        const made = response.data as MergeCommitPayload;
        const parents = (made.parents ?? []).map((parent) => parent.sha);
        if (parents.length > 0 && parents[0] !== current) {
          throw new Error(
            `${scratch} moved under a test branch being assembled (it was at ${current}; the merge of ${head} went onto ${parents[0] ?? ""})`,
          );
        }
        const tree = made.commit?.tree?.sha;
        if (tree !== undefined) this.commits.set(made.sha, { tree, parents });
        return made.sha;
      } catch (error) {
        const status = statusOf(error);
        const text = messageOf(error);
        if (status === 409 && /^merge conflict/i.test(text)) return null;
        const transient = status === undefined || status >= 500 || status === 409 || status === 429;
        if (!transient || attempt >= this.attempts) throw error;
        this.options.logger.warn(
          { status, attempt, message: text },
          "github: merging into a test branch failed; retrying",
        );
        await sleep(this.retryDelayMs(attempt));
        const now = await this.refHead(access, scratch, false);
        if (now !== undefined && now !== current) return now;
      }
    }
  }

  /**
   * The conflict at `prs[index]`: whom it conflicts with, found by merging it alone onto the
   * base, then onto each head ahead of it, on probe refs; the files are those both sides changed.
   */
  private async conflict(
    access: GitHubRepositoryAccess,
    request: TestBranchRequest,
    index: number,
    scratch: string,
  ): Promise<Conflict> {
    const pr = request.prs[index];
    if (!pr) throw new Error(`no pull request at ${String(index)}`);
    const ahead = request.prs.slice(0, index);
    const probe = `${scratch}-probe`;
    const mergesAlone = async (onto: string): Promise<boolean> => {
      await this.putRef(access, probe, onto);
      const merged = await this.mergeOnto(access, probe, onto, pr.headSha, "probe");
      return merged !== null;
    };
    let conflictsWith: number[] | undefined = [];
    let files: string[];
    try {
      if (index === 0 || !(await mergesAlone(request.baseSha))) {
        files = await this.touchedByBoth(access, request.baseSha, pr.headSha);
      } else if (ahead.length > MAX_PAIRWISE_PROBES) {
        conflictsWith = undefined;
        files = [];
      } else {
        for (const other of ahead) {
          if (!(await mergesAlone(other.headSha))) conflictsWith.push(other.number);
        }
        if (conflictsWith.length === 0) conflictsWith = ahead.map((other) => other.number);
        const set = new Set<string>();
        for (const other of ahead.filter((o) => conflictsWith?.includes(o.number))) {
          for (const file of await this.touchedByBoth(access, other.headSha, pr.headSha)) {
            set.add(file);
          }
        }
        files = [...set].sort();
      }
    } finally {
      await this.dropRef(access, probe);
    }
    const onto =
      conflictsWith?.length === 0 ? request.targetBranch : "the pull requests ahead of it";
    return {
      ok: false,
      reason: "merge_conflict",
      prNumber: pr.number,
      files,
      ...(conflictsWith === undefined ? {} : { conflictsWith }),
      message: `#${String(pr.number)} does not merge onto ${onto}${files.length > 0 ? `: ${files.join(", ")}` : ""}`,
    };
  }

  /** The files both `a` and `b` changed since they parted (where a conflict can be). */
  private async touchedByBoth(
    access: GitHubRepositoryAccess,
    a: string,
    b: string,
  ): Promise<string[]> {
    const changed = async (from: string, to: string) => {
      const compare = await this.get<{ files?: { filename: string }[] }>(
        access,
        "GET /repos/{owner}/{repo}/compare/{basehead}",
        { basehead: `${from}...${to}` },
      );
      return new Set((compare?.files ?? []).map((file) => file.filename));
    };
    const ours = await changed(a, b);
    const theirs = await changed(b, a);
    return [...ours].filter((file) => theirs.has(file)).sort();
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
      const base = await this.refHead(access, request.targetBranch, true);
      if (base === undefined) return refuse("rejected", `${request.targetBranch} does not exist`);
      if (base !== request.expectedBaseSha) {
        // Merged already (a repeated call, or a merge answered with an error) moves the base
        // too: the pull request says whether it did.
        const pull = await this.readPull(access, request.prNumber, false);
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
            ...this.where(access),
            pull_number: request.prNumber,
            sha: request.headSha,
            merge_method: GITHUB_MERGE_METHOD[request.method],
            commit_title: request.title,
          },
        );
        return await this.landed(access, request, response.data.sha, expectedTree);
      } catch (error) {
        const status = statusOf(error);
        const text = messageOf(error);
        // Refused, or failed in a way that may have merged anyway: what is the PR now?
        const pull = await this.readPull(access, request.prNumber, false);
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
      const commit = await this.commit(access, sha);
      if (!commit) break;
      const [first, second] = commit.parents;
      if (commit.parents.length === 2 && second === request.headSha && first !== undefined) {
        // Made onto the very commit the base is at: it holds that tree.
        if (first === request.expectedBaseSha) return { ok: true, tree: commit.tree };
        const on = await this.commit(access, first);
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

  /** A commit's tree: from a push webhook or a commit seen, else read. */
  private async treeOf(access: GitHubRepositoryAccess, sha: string): Promise<string | undefined> {
    const pushed = this.pushedTrees.get(`${access.owner}/${access.name}@${sha}`.toLowerCase());
    return pushed ?? (await this.commit(access, sha))?.tree;
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
    return (await this.commit(access, sha))?.tree;
  }

  // ---- requirements --------------------------------------------------------------------------

  /**
   * Forgets what the repository's branches require (a `branch_protection_rule` or
   * `repository_ruleset` webhook: protection or rulesets changed); the next read asks GitHub.
   */
  forgetRequirements(repo: { owner: string; name: string } | undefined): void {
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
   * rarely, so a read serves for `requirementsTtlMs` (or until a webhook says they changed).
   * GitHub enforces them on the merge itself whatever this read said.
   */
  private requirements(
    access: GitHubRepositoryAccess,
    branch: string,
  ): Promise<BranchRequirements> {
    const key = `${access.owner}/${access.name}\u0000${branch}`;
    const now = this.now();
    const ttl = this.options.requirementsTtlMs ?? DEFAULT_REQUIREMENTS_TTL_MS;
    const known = this.requirementsRead.get(key);
    if (known && now - known.at < ttl) return known.requirements;
    const requirements = this.readRequirements(access, branch);
    this.requirementsRead.set(key, { at: now, requirements });
    requirements.catch(() => {
      if (this.requirementsRead.get(key)?.requirements === requirements) {
        this.requirementsRead.delete(key);
      }
    });
    return requirements;
  }

  private async readRequirements(
    access: GitHubRepositoryAccess,
    branch: string,
  ): Promise<BranchRequirements> {
    const requirements: BranchRequirements = { approvals: 0, dismissStale: false, checks: [] };
    const protection = await this.get<ProtectionPayload>(
      access,
      "GET /repos/{owner}/{repo}/branches/{branch}/protection",
      { branch },
      [403],
    );
    const reviews = protection?.required_pull_request_reviews;
    if (reviews) {
      requirements.approvals = reviews.required_approving_review_count ?? 0;
      requirements.dismissStale = reviews.dismiss_stale_reviews === true;
    }
    const rules =
      (await this.get<RulePayload[]>(access, "GET /repos/{owner}/{repo}/rules/branches/{branch}", {
        branch,
        per_page: 100,
      })) ?? [];
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

  /** Whether enough distinct reviewers approved (each reviewer's latest verdict counts). */
  private async approvalsMet(
    access: GitHubRepositoryAccess,
    pull: PullPayload,
    requirements: BranchRequirements,
  ): Promise<boolean> {
    if (requirements.approvals <= 0) return true;
    const reviews =
      (await this.get<ReviewPayload[]>(
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
  private async upToDate(
    access: GitHubRepositoryAccess,
    base: string,
    head: string,
  ): Promise<boolean> {
    const compare = await this.get<{ behind_by: number }>(
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
  private async checksPassed(
    access: GitHubRepositoryAccess,
    sha: string,
    requirements: BranchRequirements,
  ): Promise<boolean> {
    const runs =
      (
        await this.get<{
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
        await this.get<{ statuses: { context: string; state: string }[] }>(
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

  // ---- GitHub calls ----------------------------------------------------------------------------

  private where(access: GitHubRepositoryAccess) {
    return { owner: access.owner, repo: access.name };
  }

  /**
   * A GET that repeats (ETag, a 304 costs nothing); undefined on 404 (and on the statuses in
   * `absentOn`: a permission the installation lacks reads as nothing to enforce; GitHub enforces).
   */
  private async get<T>(
    access: GitHubRepositoryAccess,
    route: string,
    parameters: Record<string, unknown>,
    absentOn: number[] = [],
  ): Promise<T | undefined> {
    try {
      const answer = await this.options.app.conditionalGet<T>(access.installationId, route, {
        ...this.where(access),
        ...parameters,
      });
      return answer.data;
    } catch (error) {
      const status = statusOf(error);
      if (status === 404 || (status !== undefined && absentOn.includes(status))) return undefined;
      throw error;
    }
  }

  /** A pull request, by a conditional GET or (`fresh`: before a merge) a plain one. */
  private async readPull(
    access: GitHubRepositoryAccess,
    number: number,
    conditional = true,
  ): Promise<PullPayload | undefined> {
    const route = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
    if (conditional) return this.get<PullPayload>(access, route, { pull_number: number });
    try {
      const response = await access.client.request(route, {
        ...this.where(access),
        pull_number: number,
      });
      return response.data;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  private async refHead(
    access: GitHubRepositoryAccess,
    branch: string,
    conditional: boolean,
  ): Promise<string | undefined> {
    const route = "GET /repos/{owner}/{repo}/git/ref/{ref}";
    const ref = `heads/${branch}`;
    if (conditional) {
      return (await this.get<{ object: { sha: string } }>(access, route, { ref }))?.object.sha;
    }
    try {
      const response = await access.client.request(route, { ...this.where(access), ref });
      return response.data.object.sha;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  private async commit(
    access: GitHubRepositoryAccess,
    sha: string,
  ): Promise<CommitFacts | undefined> {
    // A commit never changes: one seen (read, or made by `POST /merges`) is not read again.
    const known = this.commits.get(sha);
    if (known) return known;
    const commit = await this.get<{ tree: { sha: string }; parents: { sha: string }[] }>(
      access,
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { commit_sha: sha },
    );
    if (!commit) return undefined;
    const facts = { tree: commit.tree.sha, parents: commit.parents.map((p) => p.sha) };
    this.commits.set(sha, facts);
    return facts;
  }

  /** Moves a branch to `sha` (a forced update), creating it the first time. */
  private async moveRef(
    access: GitHubRepositoryAccess,
    branch: string,
    sha: string,
  ): Promise<void> {
    try {
      await access.client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...this.where(access),
        ref: `heads/${branch}`,
        sha,
        force: true,
      });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 422 && status !== 404) throw error;
      await this.putRef(access, branch, sha);
    }
  }

  /** Creates a branch at `sha`, or moves one left over from an earlier attempt there. */
  private async putRef(access: GitHubRepositoryAccess, branch: string, sha: string): Promise<void> {
    try {
      await access.client.request("POST /repos/{owner}/{repo}/git/refs", {
        ...this.where(access),
        ref: `refs/heads/${branch}`,
        sha,
      });
    } catch (error) {
      if (statusOf(error) !== 422 || !/already exists/i.test(messageOf(error))) throw error;
      await access.client.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...this.where(access),
        ref: `heads/${branch}`,
        sha,
        force: true,
      });
    }
  }

  /** Deletes a branch; one that is gone already is fine. */
  private async dropRef(access: GitHubRepositoryAccess, branch: string): Promise<void> {
    try {
      await access.client.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
        ...this.where(access),
        ref: `heads/${branch}`,
      });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404 && status !== 422) throw error;
    }
  }
}

/** How long a merge waits for its push webhook before reading the landed commit. */
const DEFAULT_PUSH_WAIT_MS = 3 * SECOND_MS;
/** How long a submission's read of a pull request serves the queue's read of it. */
const SUBMITTED_READ_TTL_MS = 30 * SECOND_MS;
/** The start of the last part of a slot's test branch name (`trunk-merge/<target>/slot-0`). */
const SLOT_BRANCH_LEAF = "slot-";
/** The end of a slot's test branch name (a run's ends with its numeric id). */
const SLOT_BRANCH_END = new RegExp(`/${SLOT_BRANCH_LEAF}\\d+$`);
/** The last part of a queue's scratch branch name (`trunk-temp/<target>/queue`). */
const SCRATCH_BRANCH_LEAF = "queue";
/** How long a branch's protection and rulesets read serve (webhooks forget them sooner). */
const DEFAULT_REQUIREMENTS_TTL_MS = 5 * 60 * SECOND_MS;
/** Beyond this many pull requests ahead, a conflict is not narrowed down pairwise. */
const MAX_PAIRWISE_PROBES = 8;
/** How far down a test branch's first-parent chain the merge of a pull request is looked for. */
const MAX_TEST_BRANCH_DEPTH = 256;

function mergeabilityOf(mergeable: boolean | null): Mergeability {
  if (mergeable === null) return "in_progress";
  return mergeable ? "mergeable" : "not_mergeable";
}

function refuse(reason: Refusal["reason"], message: string): Refusal {
  return { ok: false, reason, message };
}
