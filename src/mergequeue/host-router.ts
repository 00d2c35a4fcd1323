/**
 * One `GitHost` and one `CiProvider` for the engine, whatever hosts the repositories: each call
 * goes to the provider of the repository's host (`local` → the local git host and built-in
 * runner). A host with no provider gets the fallback when one is given (tests and the simulator
 * give an in-memory host), else a clear `host_not_connected` error.
 */
import { ApiError } from "../lib/errors.js";
import type {
  CiProvider,
  CiRunRequest,
  CiResultListener,
  GitHost,
  PullRequestReadOptions,
  MergeRequest,
  TestBranchRequest,
} from "./providers.js";
import { type OwnedRepoRef } from "../organizations/repositories.js";

/** The error of any operation on a repository whose host has no provider. */
export function hostNotConnected(host: string): ApiError {
  return new ApiError(
    "host_not_connected",
    `The merge queue cannot reach ${host}: no provider for host ${host} is configured on this server, so its pull requests cannot be read, tested or merged.`,
  );
}

/** A host with no provider: every operation fails with `host_not_connected`. */
class UnconnectedHost implements GitHost {
  private fail(repo: OwnedRepoRef): never {
    throw hostNotConnected(repo.host);
  }
  pullRequest(repo: OwnedRepoRef): Promise<never> {
    return Promise.resolve().then(() => this.fail(repo));
  }
  branchHead(repo: OwnedRepoRef): Promise<never> {
    return Promise.resolve().then(() => this.fail(repo));
  }
  createTestBranch(request: TestBranchRequest): Promise<never> {
    return Promise.resolve().then(() => this.fail(request.repo));
  }
  deleteTestBranch(repo: OwnedRepoRef): Promise<never> {
    return Promise.resolve().then(() => this.fail(repo));
  }
  merge(request: MergeRequest): Promise<never> {
    return Promise.resolve().then(() => this.fail(request.repo));
  }
  readFile(repo: OwnedRepoRef): Promise<never> {
    return Promise.resolve().then(() => this.fail(repo));
  }
}

/** No CI for a host with no provider: a run never starts (its git host failed first). */
class UnconnectedCi implements CiProvider {
  start(request: CiRunRequest): Promise<void> {
    return Promise.reject(hostNotConnected(request.repo.host));
  }
  cancel(): Promise<void> {
    return Promise.resolve();
  }
  onResult(): () => void {
    return () => undefined;
  }
}

export class GitHostRouter implements GitHost {
  private readonly fallback: GitHost;

  constructor(
    private readonly hosts: ReadonlyMap<string, GitHost>,
    fallback?: GitHost,
  ) {
    this.fallback = fallback ?? new UnconnectedHost();
  }

  /** Whether the repositories of a host can be reached (a provider, or the fallback, serves it). */
  connected(host: string): boolean {
    return this.hosts.has(host.toLowerCase()) || !(this.fallback instanceof UnconnectedHost);
  }

  private for(repo: OwnedRepoRef): GitHost {
    return this.hosts.get(repo.host.toLowerCase()) ?? this.fallback;
  }

  pullRequest(repo: OwnedRepoRef, number: number, options?: PullRequestReadOptions) {
    return this.for(repo).pullRequest(repo, number, options);
  }

  branchHead(repo: OwnedRepoRef, branch: string) {
    return this.for(repo).branchHead(repo, branch);
  }

  createTestBranch(request: TestBranchRequest) {
    return this.for(request.repo).createTestBranch(request);
  }

  deleteTestBranch(repo: OwnedRepoRef, branch: string) {
    return this.for(repo).deleteTestBranch(repo, branch);
  }

  merge(request: MergeRequest) {
    return this.for(request.repo).merge(request);
  }

  readFile(repo: OwnedRepoRef, sha: string, path: string) {
    return this.for(repo).readFile(repo, sha, path);
  }

  async rateLimit(repo: OwnedRepoRef) {
    const host = this.for(repo);
    return host.rateLimit ? host.rateLimit(repo) : undefined;
  }
}

export class CiRouter implements CiProvider {
  private readonly fallback: CiProvider;

  constructor(
    private readonly providers: ReadonlyMap<string, CiProvider>,
    fallback?: CiProvider,
  ) {
    this.fallback = fallback ?? new UnconnectedCi();
  }

  private all(): CiProvider[] {
    return [...new Set([...this.providers.values(), this.fallback])];
  }

  start(request: CiRunRequest): Promise<void> {
    return (this.providers.get(request.repo.host.toLowerCase()) ?? this.fallback).start(request);
  }

  /** Run ids do not name their host: every provider is asked (cancelling an unknown run is a no-op). */
  async cancel(queueId: string, runId: string): Promise<void> {
    await Promise.all(this.all().map((provider) => provider.cancel(queueId, runId)));
  }

  onResult(listener: CiResultListener): () => void {
    const unsubscribe = this.all().map((provider) => provider.onResult(listener));
    return () => {
      for (const stop of unsubscribe) stop();
    };
  }
}
