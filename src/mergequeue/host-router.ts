/**
 * One `GitHost` and one `CiProvider` for the engine, whatever hosts the repositories: each call
 * goes to the provider of the repository's host (`local` → the local git host and built-in
 * runner), anything else to the fallback (GitHub once it exists; in-memory until then).
 */
import type {
  CiProvider,
  CiRunRequest,
  CiResultListener,
  GitHost,
  OwnedRepoRef,
  MergeRequest,
  TestBranchRequest,
} from "./providers.js";

export class GitHostRouter implements GitHost {
  constructor(
    private readonly hosts: ReadonlyMap<string, GitHost>,
    private readonly fallback: GitHost,
  ) {}

  private for(repo: OwnedRepoRef): GitHost {
    return this.hosts.get(repo.host.toLowerCase()) ?? this.fallback;
  }

  pullRequest(repo: OwnedRepoRef, number: number) {
    return this.for(repo).pullRequest(repo, number);
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
}

export class CiRouter implements CiProvider {
  constructor(
    private readonly providers: ReadonlyMap<string, CiProvider>,
    private readonly fallback: CiProvider,
  ) {}

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
