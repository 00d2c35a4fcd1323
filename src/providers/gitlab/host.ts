/**
 * The merge queue's git host on GitLab: merge requests read over REST, test branches assembled
 * in the project's local mirror and pushed, merges pinned to the tested head (`sha`) and checked
 * after the fact against the tested tree. A merge whose answer was lost is read back before
 * anything depends on it (docs/gitlab.md, "Merging").
 */
import { BoundedMap } from "../../lib/bounded-map.js";
import type { Clock } from "../../lib/clock.js";
import type { PullRequestInfo } from "../../mergequeue/model.js";
import type {
  GitHost,
  MergeRequest,
  MergeResult,
  PullRequestReadOptions,
  TestBranchRequest,
  TestBranchResult,
} from "../../mergequeue/providers.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import type { ProviderLogger } from "../host-provider.js";
import { assertObjectId } from "../local/git/repository-git.js";
import { GitLabError, projectId, type GitLabClient } from "./client.js";
import type { GitLabConnections } from "./connections.js";
import { mergeabilityPending, pullRequestInfo, type MergeRequestJson } from "./merge-requests.js";
import { GitLabMirrors, mergeRequestRef, remoteBranchRef } from "./mirror.js";
import { REBASING_METHODS, rebasedHead } from "./rebase.js";
import { buildTestCommit, testedTree } from "./test-commits.js";

export interface GitLabGitHostOptions {
  connections: Pick<GitLabConnections, "access">;
  mirrors: GitLabMirrors;
  clock: Clock;
  logger: ProviderLogger;
  /** The prefix of the branches CI tests (`trunk-merge/`). */
  testBranchPrefix: string;
  /** Reads of a merge request GitLab is still checking, before the queue is told so (3). */
  mergeabilityReads?: number;
  /** Between them (250 ms). */
  mergeabilityWaitMs?: number;
  /** Tries of a merge whose answer was lost or a failure GitLab may get past (3). */
  mergeAttempts?: number;
  retryDelayMs?: number;
}

type Refusal = Extract<MergeResult, { ok: false }>;

/** The commit a merge request passed in, and its tree. */
interface Tested {
  tree: string;
  sha: string;
}

/** What `GET /projects/:id/repository/compare` answers that the landed check reads. */
interface CompareJson {
  diffs: { new_path: string }[];
  compare_timeout?: boolean;
}

interface Access {
  client: GitLabClient;
  token: string;
  project: string;
}

/** How long a project's merge method is taken as read. */
const METHOD_TTL_MS = 5 * 60_000;

/** How long a branch's known head spares reading it before a merge. */
const CONFIRMED_MS = 60_000;

function headKey(repo: OwnedRepoRef, branch: string): string {
  return `${repo.organizationId}/${repo.owner}/${repo.name}#${branch}`.toLowerCase();
}

export class GitLabGitHost implements GitHost {
  /** Each project's merge method as last read, and when. */
  private readonly methods = new BoundedMap<string, { method: string; at: number }>(1024);
  /** Each target branch's head as last known, and when. */
  private readonly heads = new BoundedMap<string, { sha: string; at: number }>(1024);

  constructor(private readonly options: GitLabGitHostOptions) {}

  async pullRequest(
    repo: OwnedRepoRef,
    number: number,
    options: PullRequestReadOptions = {},
  ): Promise<PullRequestInfo | undefined> {
    const access = await this.access(repo);
    let mr = await this.readMergeRequest(access, number);
    const reads = this.options.mergeabilityReads ?? 3;
    for (let read = 1; mr && read < reads && mergeabilityPending(mr); read++) {
      await sleep(this.options.mergeabilityWaitMs ?? 250);
      mr = await this.readMergeRequest(access, number);
    }
    if (!mr) return undefined;
    const info = pullRequestInfo(mr);
    if (options.readiness === true && mr.diff_refs) {
      info.upToDate = mr.diff_refs.base_sha === (await this.branchHead(repo, mr.target_branch));
    }
    return info;
  }

  /** One read: whether the merge request exists and is open (a submission's check). */
  async mergeRequestState(
    repo: OwnedRepoRef,
    number: number,
  ): Promise<{ state: "open" | "closed" | "merged" } | undefined> {
    const mr = await this.readMergeRequest(await this.access(repo), number);
    return mr && { state: pullRequestInfo(mr).state };
  }

  async branchHead(repo: OwnedRepoRef, branch: string): Promise<string | undefined> {
    const { client, project } = await this.access(repo);
    const found = await client.find<{ commit: { id: string } }>(
      `/projects/${project}/repository/branches/${encodeURIComponent(branch)}`,
    );
    this.noteHead(repo, branch, found?.commit.id);
    return found?.commit.id;
  }

  /** A Push Hook moved a branch (or deleted it: `sha` undefined). */
  branchMoved(repo: OwnedRepoRef, branch: string, sha: string | undefined): void {
    this.noteHead(repo, branch, sha);
  }

  /**
   * Whether the branch is known to be at `sha` now: read, pushed (its hook) or merged into by the
   * queue itself within `CONFIRMED_MS`. A merge then skips reading it again; a push whose hook
   * was lost meanwhile is caught after the merge, by the landed tree's check.
   */
  private confirmed(repo: OwnedRepoRef, branch: string, sha: string): boolean {
    const known = this.heads.get(headKey(repo, branch));
    return known?.sha === sha && this.options.clock.now() - known.at < CONFIRMED_MS;
  }

  private noteHead(repo: OwnedRepoRef, branch: string, sha: string | undefined): void {
    if (sha === undefined) this.heads.delete(headKey(repo, branch));
    else this.heads.set(headKey(repo, branch), { sha, at: this.options.clock.now() });
  }

  async createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const access = await this.access(request.repo);
    const branch = this.testBranchName(request);
    assertObjectId(request.baseSha, "baseSha");
    const { mirrors } = this.options;
    const built = await mirrors.exclusive(request.repo, async (git) => {
      const wanted = [request.baseSha, ...request.prs.map((pr) => pr.headSha)];
      let missing = await mirrors.missingCommits(git, wanted);
      if (missing.length > 0 && (await mirrors.fetchCommits(request.repo, access.token, missing))) {
        missing = await mirrors.missingCommits(git, missing);
      }
      if (missing.length > 0) {
        await mirrors.fetch(request.repo, access.token, [
          {
            source: `refs/heads/${request.targetBranch}`,
            target: remoteBranchRef(request.targetBranch),
          },
          ...request.prs.map((pr) => ({
            source: `refs/merge-requests/${String(pr.number)}/head`,
            target: mergeRequestRef(pr.number),
          })),
        ]);
        const still = await mirrors.missingCommits(git, missing);
        if (still.length > 0) {
          throw new Error(
            `${still.join(", ")} not on GitLab's ${request.targetBranch} or the merge requests' heads any more (they moved); the queue reads them again`,
          );
        }
      }
      return buildTestCommit(git, request);
    });
    if (!built.ok) return built;
    await mirrors.push(request.repo, access.token, built.sha, branch);
    return { ok: true, branch, sha: built.sha };
  }

  async deleteTestBranch(repo: OwnedRepoRef, branch: string): Promise<void> {
    if (!branch.startsWith(this.options.testBranchPrefix)) {
      throw new Error(`${branch} is not a test branch; only test branches are deleted`);
    }
    // A slot's branch stays: the next run in the slot moves it.
    if (/\/slot-\d+$/.test(branch)) return;
    const { client, project } = await this.access(repo);
    try {
      await client.request(
        "DELETE",
        `/projects/${project}/repository/branches/${encodeURIComponent(branch)}`,
      );
    } catch (error) {
      if (!(error instanceof GitLabError && error.status === 404)) throw error;
    }
  }

  async readFile(repo: OwnedRepoRef, sha: string, path: string): Promise<string | undefined> {
    const { client, project } = await this.access(repo);
    const text = await client.find<unknown>(
      `/projects/${project}/repository/files/${encodeURIComponent(path)}/raw`,
      { ref: sha },
    );
    if (text === undefined) return undefined;
    return typeof text === "string" ? text : JSON.stringify(text);
  }

  async merge(request: MergeRequest): Promise<MergeResult> {
    const access = await this.access(request.repo);
    const mr = `!${String(request.prNumber)}`;
    if (request.method === "rebase") {
      return refuse(
        "rejected",
        `GitLab merges ${mr} with the project's own merge method; the queue's merge method must be merge_commit or squash on GitLab (docs/gitlab.md)`,
      );
    }
    let expected: Tested | undefined;
    if (request.testedSha !== undefined) {
      const { mirrors } = this.options;
      const tested = await mirrors.exclusive(request.repo, async (git) => {
        const needed = [request.expectedBaseSha, request.testedSha ?? ""];
        if ((await mirrors.missingCommits(git, needed)).length > 0) {
          await mirrors.fetch(request.repo, access.token, [
            {
              source: `refs/heads/${request.targetBranch}`,
              target: remoteBranchRef(request.targetBranch),
            },
          ]);
        }
        return testedTree(git, request);
      });
      if (!tested.ok) return tested;
      expected = { tree: tested.tree, sha: tested.sha };
    }
    const attempts = this.options.mergeAttempts ?? 3;
    // The head GitLab merges: the tested one, or GitLab's rebase of it (semi-linear, fast-forward).
    let head = request.headSha;
    for (let attempt = 1; ; attempt++) {
      const base =
        attempt === 1 && this.confirmed(request.repo, request.targetBranch, request.expectedBaseSha)
          ? request.expectedBaseSha
          : await this.branchHead(request.repo, request.targetBranch);
      if (base === undefined) return refuse("rejected", `${request.targetBranch} does not exist`);
      if (base !== request.expectedBaseSha) {
        // A merge done before (its answer lost) moved the base too: the merge request says.
        const now = await this.readMergeRequest(access, request.prNumber);
        if (now?.state === "merged") return this.landed(access, request, now, expected);
        return refuse(
          "base_moved",
          `${request.targetBranch} is at ${base}, not ${request.expectedBaseSha}`,
        );
      }
      if (attempt === 1 && (await this.rebasing(access, request.repo))) {
        const rebased = await rebasedHead(
          access.client,
          `/projects/${access.project}/merge_requests/${String(request.prNumber)}`,
          request,
          { intervalMs: this.options.mergeabilityWaitMs ?? 250 },
        );
        if (!rebased.ok) return rebased;
        head = rebased.head;
      }
      let failure: unknown;
      try {
        const answer = await access.client.request<MergeRequestJson>(
          "PUT",
          `/projects/${access.project}/merge_requests/${String(request.prNumber)}/merge`,
          {
            body: {
              sha: head,
              squash: request.method === "squash",
              ...(request.method === "squash" ? { squash_commit_message: request.title } : {}),
            },
          },
        );
        if (answer.data.state === "merged") {
          return await this.landed(access, request, answer.data, expected);
        }
        failure = new Error(answer.data.merge_error ?? `GitLab left ${mr} ${answer.data.state}`);
      } catch (error) {
        failure = error;
      }
      // Refused, or failed in a way that may have merged anyway: what is it now?
      const now = await this.readMergeRequest(access, request.prNumber);
      const judged = this.judgeFailure(request, now, failure, head);
      if (judged === "merged") {
        if (now) return this.landed(access, request, now, expected);
      } else if (judged !== "retry") {
        return judged;
      }
      if (attempt >= attempts) {
        return refuse(
          "base_moved",
          `GitLab did not merge ${mr} after ${String(attempt)} attempts: ${messageOf(failure)}`,
        );
      }
      this.options.logger.warn(
        { mr: request.prNumber, attempt, message: messageOf(failure) },
        "gitlab: merge failed; retrying",
      );
      await sleep((this.options.retryDelayMs ?? 1000) * attempt);
    }
  }

  /** What a failed merge call means, given the merge request as GitLab shows it after it. */
  private judgeFailure(
    request: MergeRequest,
    mr: MergeRequestJson | undefined,
    failure: unknown,
    head: string,
  ): Refusal | "merged" | "retry" {
    const name = `!${String(request.prNumber)}`;
    const status = failure instanceof GitLabError ? failure.status : undefined;
    if (!mr) return refuse("rejected", `merge request ${name} does not exist`);
    if (mr.state === "merged") return "merged";
    if (mr.state === "closed") return refuse("rejected", `${name} is closed`);
    if (mr.target_branch !== request.targetBranch) {
      return refuse("rejected", `${name} targets ${mr.target_branch}, not ${request.targetBranch}`);
    }
    if (mr.sha !== head) {
      return refuse("head_moved", `${name} is at ${mr.sha ?? "nothing"}, not ${head}`);
    }
    if (status === 409) return refuse("head_moved", `${name}: ${messageOf(failure)}`);
    if (status === 406 || status === 422 || mr.has_conflicts === true) {
      return refuse("merge_conflict", `GitLab cannot merge ${name}: ${messageOf(failure)}`);
    }
    if (status === 401 || status === 403) {
      return refuse(
        "rejected",
        `GitLab refused to merge ${name} (${String(status)}): the token's user may not merge into ${request.targetBranch}`,
      );
    }
    if (status === 405) {
      const blocker = mr.detailed_merge_status ?? "not mergeable";
      // Still checking, or locked mid-merge: GitLab gets past it.
      if (mergeabilityPending(mr) || mr.state === "locked") return "retry";
      return refuse("rejected", `GitLab refused to merge ${name}: ${blocker}`);
    }
    return "retry";
  }

  /**
   * The merge request landed: as tested, or (its tree differs from the tested one) not, and the
   * queue stops until someone looks.
   */
  private async landed(
    access: Access,
    request: MergeRequest,
    mr: MergeRequestJson,
    tested: Tested | undefined,
  ): Promise<MergeResult> {
    const sha = mr.merge_commit_sha ?? mr.squash_commit_sha ?? mr.sha;
    if (!sha) {
      return refuse("rejected", `GitLab merged !${String(request.prNumber)} but names no commit`);
    }
    if (tested === undefined) return { ok: true, sha };
    const differs = await this.landedDiffers(access, request, sha, tested);
    if (differs === null) {
      // What the target is now, as far as the queue knows: its own merge.
      if (mr.merge_commit_sha)
        this.noteHead(request.repo, request.targetBranch, mr.merge_commit_sha);
      return { ok: true, sha };
    }
    return {
      ok: false,
      reason: "rejected",
      pauseQueue: true,
      message: `!${String(request.prNumber)} landed on ${request.targetBranch} as ${sha}, which is not what it was tested with (${tested.sha}): ${differs}; the queue is paused until someone looks`,
    };
  }

  /**
   * How the landed commit differs from the tested one; null when their trees are the same. One
   * request (GitLab's compare, straight) when the mirror lacks the landed commit; a fetch only
   * when GitLab cannot say.
   */
  private async landedDiffers(
    access: Access,
    request: MergeRequest,
    sha: string,
    tested: Tested,
  ): Promise<string | null> {
    const { mirrors } = this.options;
    const local = await mirrors.exclusive(request.repo, async (git) =>
      (await git.resolve(sha)) === sha ? git.readTree(sha) : undefined,
    );
    if (local !== undefined) {
      return local === tested.tree ? null : `its tree is ${local}, not ${tested.tree}`;
    }
    try {
      const compared = await access.client.get<CompareJson>(
        `/projects/${access.project}/repository/compare`,
        { from: tested.sha, to: sha, straight: true },
      );
      if (compared.data.compare_timeout !== true) {
        const files = compared.data.diffs.map((diff) => diff.new_path);
        return files.length === 0 ? null : `it differs in ${files.slice(0, 10).join(", ")}`;
      }
    } catch (error) {
      if (!(error instanceof GitLabError && error.status === 404)) throw error;
    }
    const tree = await mirrors.exclusive(request.repo, async (git) => {
      await mirrors.fetch(request.repo, access.token, [
        {
          source: `refs/heads/${request.targetBranch}`,
          target: remoteBranchRef(request.targetBranch),
        },
      ]);
      return (await git.resolve(sha)) === sha ? git.readTree(sha) : undefined;
    });
    if (tree === tested.tree) return null;
    return tree === undefined
      ? "its tree could not be read"
      : `its tree is ${tree}, not ${tested.tree}`;
  }

  /** Whether the project's merge method needs the source rebased first (read every 5 min). */
  private async rebasing(access: Access, repo: OwnedRepoRef): Promise<boolean> {
    const key = `${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase();
    const known = this.methods.get(key);
    const now = this.options.clock.now();
    if (known && now - known.at < METHOD_TTL_MS) return REBASING_METHODS.has(known.method);
    const project = await access.client.get<{ merge_method?: string }>(
      `/projects/${access.project}`,
    );
    const method = project.data.merge_method ?? "merge";
    this.methods.set(key, { method, at: now });
    return REBASING_METHODS.has(method);
  }

  private testBranchName(request: TestBranchRequest): string {
    const leaf = request.slot === undefined ? request.runId : `slot-${String(request.slot)}`;
    return `${this.options.testBranchPrefix}${request.targetBranch}/${leaf}`;
  }

  private async readMergeRequest(
    access: Access,
    number: number,
  ): Promise<MergeRequestJson | undefined> {
    return access.client.find<MergeRequestJson>(
      `/projects/${access.project}/merge_requests/${String(number)}`,
    );
  }

  private async access(repo: OwnedRepoRef): Promise<Access> {
    const { client, connection } = await this.options.connections.access(repo.organizationId);
    return { client, token: connection.token, project: projectId(repo.owner, repo.name) };
  }
}

function refuse(reason: Refusal["reason"], message: string): Refusal {
  return { ok: false, reason, message };
}

function messageOf(error: unknown): string {
  if (error instanceof GitLabError) return `${String(error.status)} ${error.detail}`;
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
