/**
 * Where the configuration check (`mergequeue/config-check.ts`) reads a local repository's files:
 * the tree a submitted pull request's run would test (its head merged onto the target branch's
 * head, as a test branch merges it), or a branch's head. Reads are git plumbing on the bare
 * repository: no checkout, no ref moved.
 */
import type { ConfigTree, RepoConfigSource } from "../../../mergequeue/config-check.js";
import type { LocalPullRequestRecords } from "../../../mergequeue/local-pull-request-records.js";
import type { OwnedRepoRef } from "../../../organizations/repositories.js";
import type { LocalGitHost } from "./host.js";

export interface LocalConfigSourceDeps {
  gitHost: Pick<LocalGitHost, "branchHead" | "mergedTree" | "readFile">;
  pullRequests: Pick<LocalPullRequestRecords, "find">;
}

export class LocalConfigSource implements RepoConfigSource {
  constructor(private readonly deps: LocalConfigSourceDeps) {}

  async submission(
    repo: OwnedRepoRef,
    prNumber: number,
    targetBranch: string,
  ): Promise<ConfigTree | undefined> {
    const { gitHost } = this.deps;
    const record = await this.deps.pullRequests.find(repo, prNumber);
    if (!record) return undefined;
    const [head, base] = await Promise.all([
      gitHost.branchHead(repo, record.headBranch),
      gitHost.branchHead(repo, targetBranch),
    ]);
    if (head === undefined) return undefined;
    const pr = `#${String(prNumber)}`;
    if (base === undefined) return this.tree(repo, head, head, `${pr}'s head`);
    // Merged only when a file is read: a report kept for these two commits needs no merge.
    let merged: Promise<string> | undefined;
    const tree: ConfigTree = {
      key: `${base}+${head}`,
      what: `${pr} merged into ${targetBranch}`,
      read: async (file) => gitHost.readFile(repo, await at(), file),
    };
    const at = () =>
      (merged ??= gitHost.mergedTree(repo, base, head).then((mergedTree) => {
        if (mergedTree !== undefined) return mergedTree;
        // It does not merge (its run fails on that): its own files are what it brings.
        tree.what = `${pr}'s head, which does not merge into ${targetBranch}`;
        return head;
      }));
    return tree;
  }

  async branch(repo: OwnedRepoRef, branch: string): Promise<ConfigTree | undefined> {
    const head = await this.deps.gitHost.branchHead(repo, branch);
    return head === undefined ? undefined : this.tree(repo, head, head, `${branch}'s head`);
  }

  private tree(repo: OwnedRepoRef, key: string, sha: string, what: string): ConfigTree {
    return { key, what, read: (file) => this.deps.gitHost.readFile(repo, sha, file) };
  }
}
