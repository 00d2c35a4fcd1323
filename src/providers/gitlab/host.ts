/**
 * The merge queue's git host on GitLab: merge requests read over REST, test branches assembled
 * in the project's local mirror and pushed, merges pinned to the tested head (`sha`) and checked
 * after the fact against the tested tree. A merge whose answer was lost is read back before
 * anything depends on it (docs/gitlab.md, "Merging").
 */
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

interface Access {
  client: GitLabClient;
  token: string;
  project: string;
}

export class GitLabGitHost implements GitHost {
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
    return found?.commit.id;
  }

  async createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const access = await this.access(request.repo);
    const branch = this.testBranchName(request);
    assertObjectId(request.baseSha, "baseSha");
    const { mirrors } = this.options;
    const built = await mirrors.exclusive(request.repo, async (git) => {
      const wanted = [request.baseSha, ...request.prs.map((pr) => pr.headSha)];
      if (!(await mirrors.hasCommits(git, wanted))) {
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
      }
      for (const sha of wanted) {
        if ((await git.resolve(sha)) !== sha) {
          throw new Error(
            `${sha} is not on GitLab's ${request.targetBranch} or the merge requests' heads any more (they moved); the queue reads them again`,
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
    let expectedTree: string | undefined;
    if (request.testedSha !== undefined) {
      const { mirrors } = this.options;
      const tested = await mirrors.exclusive(request.repo, async (git) => {
        if (!(await mirrors.hasCommits(git, [request.expectedBaseSha, request.testedSha ?? ""]))) {
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
      expectedTree = tested.tree;
    }
    const attempts = this.options.mergeAttempts ?? 3;
    for (let attempt = 1; ; attempt++) {
      const base = await this.branchHead(request.repo, request.targetBranch);
      if (base === undefined) return refuse("rejected", `${request.targetBranch} does not exist`);
      if (base !== request.expectedBaseSha) {
        // A merge done before (its answer lost) moved the base too: the merge request says.
        const now = await this.readMergeRequest(access, request.prNumber);
        if (now?.state === "merged") return this.landed(access, request, now, expectedTree);
        return refuse(
          "base_moved",
          `${request.targetBranch} is at ${base}, not ${request.expectedBaseSha}`,
        );
      }
      let failure: unknown;
      try {
        const answer = await access.client.request<MergeRequestJson>(
          "PUT",
          `/projects/${access.project}/merge_requests/${String(request.prNumber)}/merge`,
          {
            body: {
              sha: request.headSha,
              squash: request.method === "squash",
              ...(request.method === "squash" ? { squash_commit_message: request.title } : {}),
            },
          },
        );
        if (answer.data.state === "merged") {
          return await this.landed(access, request, answer.data, expectedTree);
        }
        failure = new Error(answer.data.merge_error ?? `GitLab left ${mr} ${answer.data.state}`);
      } catch (error) {
        failure = error;
      }
      // Refused, or failed in a way that may have merged anyway: what is it now?
      const now = await this.readMergeRequest(access, request.prNumber);
      const judged = this.judgeFailure(request, now, failure);
      if (judged === "merged") {
        if (now) return this.landed(access, request, now, expectedTree);
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
  ): Refusal | "merged" | "retry" {
    const name = `!${String(request.prNumber)}`;
    const status = failure instanceof GitLabError ? failure.status : undefined;
    if (!mr) return refuse("rejected", `merge request ${name} does not exist`);
    if (mr.state === "merged") return "merged";
    if (mr.state === "closed") return refuse("rejected", `${name} is closed`);
    if (mr.target_branch !== request.targetBranch) {
      return refuse("rejected", `${name} targets ${mr.target_branch}, not ${request.targetBranch}`);
    }
    if (mr.sha !== request.headSha) {
      return refuse("head_moved", `${name} is at ${mr.sha ?? "nothing"}, not ${request.headSha}`);
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
    expectedTree: string | undefined,
  ): Promise<MergeResult> {
    const sha = mr.merge_commit_sha ?? mr.squash_commit_sha ?? mr.sha;
    if (!sha)
      return refuse("rejected", `GitLab merged !${String(request.prNumber)} but names no commit`);
    if (expectedTree === undefined) return { ok: true, sha };
    const { mirrors } = this.options;
    const tree = await mirrors.exclusive(request.repo, async (git) => {
      if ((await git.resolve(sha)) !== sha) {
        await mirrors.fetch(request.repo, access.token, [
          {
            source: `refs/heads/${request.targetBranch}`,
            target: remoteBranchRef(request.targetBranch),
          },
        ]);
      }
      return (await git.resolve(sha)) === sha ? git.readTree(sha) : undefined;
    });
    if (tree === expectedTree) return { ok: true, sha };
    return {
      ok: false,
      reason: "rejected",
      pauseQueue: true,
      message: `!${String(request.prNumber)} landed on ${request.targetBranch} as ${sha}, whose tree ${tree === undefined ? "could not be read" : `(${tree})`} is not the tree it was tested with (${expectedTree}): the queue is paused until someone looks`,
    };
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
