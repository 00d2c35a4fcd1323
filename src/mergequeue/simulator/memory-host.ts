/**
 * An in-memory git host and CI for tests: commits are names, merges conflict only when told to, CI
 * results arrive when the test says. It keeps the real hosts' contracts (merges compare-and-swap
 * the expected heads, a repeated merge reports its commit, every mutating call is safe to repeat):
 * a change here must keep them too.
 */
import type {
  CiProvider,
  CiResultListener,
  CiRunRequest,
  CiRunResult,
  GitHost,
  MergeRequest,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../providers.js";
import type { PullRequestInfo } from "../model.js";
import { type OwnedRepoRef } from "../../organizations/repositories.js";

/** An open, mergeable pull request into `main`, with whatever the caller sets. */
export function openPullRequestInfo(
  number: number,
  overrides: Partial<PullRequestInfo> = {},
): PullRequestInfo {
  return {
    number,
    title: `PR ${number}`,
    author: "dev",
    headSha: `head-${number}`,
    headBranch: `feature-${number}`,
    baseBranch: "main",
    mergeability: "mergeable",
    upToDate: false,
    checksPassed: true,
    state: "open",
    draft: false,
    ...overrides,
  };
}

/**
 * The in-memory host is one space of names (tests open pull requests on it by host/owner/name,
 * without knowing organization ids), so it addresses repositories without their organization.
 */
type MemoryAddress = Pick<OwnedRepoRef, "host" | "owner" | "name">;

const key = (repo: MemoryAddress) => `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();

interface MemoryRepository {
  branches: Map<string, string>;
  pullRequests: Map<number, PullRequestInfo>;
  /** PR number → the commit its merge produced. */
  merges: Map<number, string>;
  /** Every merge call that changed the branch, in order (to prove nothing merged twice). */
  mergeLog: number[];
  /** PRs that conflict with anything merged before them. */
  conflicting: Set<number>;
  /** PR → the PRs it conflicts with (edits the same lines as), whichever is merged first. */
  conflictsWith: Map<number, number[]>;
  /** PRs already merged into the branch (a conflict with one of them is one with the base). */
  landed: Set<number>;
  files: Map<string, string>;
}

export class MemoryGitHost implements GitHost {
  private readonly repositories = new Map<string, MemoryRepository>();
  private commits = 0;
  readonly testBranches = new Set<string>();

  repository(repo: MemoryAddress, head = "root"): MemoryRepository {
    let found = this.repositories.get(key(repo));
    if (!found) {
      found = {
        branches: new Map([["main", head]]),
        pullRequests: new Map(),
        merges: new Map(),
        mergeLog: [],
        conflicting: new Set(),
        conflictsWith: new Map(),
        landed: new Set(),
        files: new Map(),
      };
      this.repositories.set(key(repo), found);
    }
    return found;
  }

  addPullRequest(
    repo: MemoryAddress,
    pr: Partial<PullRequestInfo> & { number: number },
  ): PullRequestInfo {
    const info = openPullRequestInfo(pr.number, pr);
    this.repository(repo).pullRequests.set(info.number, info);
    return info;
  }

  updatePullRequest(repo: MemoryAddress, number: number, change: Partial<PullRequestInfo>) {
    const current = this.repository(repo).pullRequests.get(number);
    if (!current) throw new Error(`no PR #${number}`);
    const updated = { ...current, ...change };
    this.repository(repo).pullRequests.set(number, updated);
    return updated;
  }

  /** Someone pushes to a branch outside the queue. */
  push(repo: MemoryAddress, branch: string, sha = `push-${++this.commits}`): string {
    this.repository(repo).branches.set(branch, sha);
    return sha;
  }

  mergeLog(repo: MemoryAddress): number[] {
    return [...this.repository(repo).mergeLog];
  }

  pullRequest(repo: MemoryAddress, number: number): Promise<PullRequestInfo | undefined> {
    return Promise.resolve(this.repository(repo).pullRequests.get(number));
  }

  branchHead(repo: MemoryAddress, branch: string): Promise<string | undefined> {
    return Promise.resolve(this.repository(repo).branches.get(branch));
  }

  createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const repository = this.repository(request.repo);
    // The first PR, in the request's order, that does not apply onto the base and those ahead.
    for (const [i, pr] of request.prs.entries()) {
      const ahead = request.prs.slice(0, i).map((p) => p.number);
      const partners = repository.conflictsWith.get(pr.number) ?? [];
      const withBase = partners.some((n) => repository.landed.has(n));
      const withAhead = repository.conflicting.has(pr.number)
        ? ahead
        : ahead.filter((n) => partners.includes(n));
      if (!withBase && withAhead.length === 0) continue;
      return Promise.resolve({
        ok: false,
        reason: "merge_conflict",
        prNumber: pr.number,
        files: ["conflict.txt"],
        conflictsWith: withBase ? [] : withAhead,
        message: `#${pr.number} conflicts with the pull requests ahead of it`,
      });
    }
    const branch = `mainline-merge/${request.targetBranch}/${request.runId}`;
    const sha = `test-${request.baseSha}+${request.prs.map((pr) => pr.number).join("+")}`;
    repository.branches.set(branch, sha);
    this.testBranches.add(`${key(request.repo)}:${branch}`);
    return Promise.resolve({ ok: true, branch, sha });
  }

  deleteTestBranch(repo: MemoryAddress, branch: string): Promise<void> {
    this.repository(repo).branches.delete(branch);
    this.testBranches.delete(`${key(repo)}:${branch}`);
    return Promise.resolve();
  }

  merge(request: MergeRequest): Promise<MergeResult> {
    const repository = this.repository(request.repo);
    const done = repository.merges.get(request.prNumber);
    if (done) return Promise.resolve({ ok: true, sha: done });
    const pr = repository.pullRequests.get(request.prNumber);
    if (!pr || pr.headSha !== request.headSha) {
      return Promise.resolve({ ok: false, reason: "head_moved", message: "the head moved" });
    }
    const head = repository.branches.get(request.targetBranch);
    if (head !== request.expectedBaseSha) {
      return Promise.resolve({ ok: false, reason: "base_moved", message: "the base moved" });
    }
    const sha = `merge-${++this.commits}-pr${request.prNumber}`;
    repository.branches.set(request.targetBranch, sha);
    repository.merges.set(request.prNumber, sha);
    repository.mergeLog.push(request.prNumber);
    repository.landed.add(request.prNumber);
    repository.pullRequests.set(request.prNumber, { ...pr, state: "merged" });
    return Promise.resolve({ ok: true, sha });
  }

  readFile(repo: MemoryAddress, _sha: string, path: string): Promise<string | undefined> {
    return Promise.resolve(this.repository(repo).files.get(path));
  }
}

/** CI whose runs finish when told to (`finish`), or by a rule given up front (`autoResult`). */
export class MemoryCi implements CiProvider {
  readonly started = new Map<string, CiRunRequest>();
  readonly cancelled = new Set<string>();
  private listeners: CiResultListener[] = [];
  /** When set, every run is answered right after it starts. */
  autoResult: ((request: CiRunRequest) => CiRunResult["checks"]) | null = null;

  start(request: CiRunRequest): Promise<void> {
    this.started.set(`${request.queueId}/${request.runId}`, request);
    const auto = this.autoResult;
    if (auto) {
      setImmediate(() => {
        this.finish(request.queueId, request.runId, auto(request));
      });
    }
    return Promise.resolve();
  }

  cancel(queueId: string, runId: string): Promise<void> {
    this.cancelled.add(`${queueId}/${runId}`);
    return Promise.resolve();
  }

  onResult(listener: CiResultListener): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /** Reports a run's result; `extra` adds what a real CI may say (required statuses, flakes). */
  finish(
    queueId: string,
    runId: string,
    checks: CiRunResult["checks"],
    extra: Omit<CiRunResult, "queueId" | "runId" | "checks"> = {},
  ): void {
    for (const listener of this.listeners) void listener({ queueId, runId, checks, ...extra });
  }

  /** Runs started for a queue whose PRs are exactly these, in order. */
  runsFor(queueId: string, prNumbers: number[]): CiRunRequest[] {
    return [...this.started.values()].filter(
      (r) => r.queueId === queueId && r.prNumbers.join(",") === prNumbers.join(","),
    );
  }
}
