/**
 * The local git host: bare repositories on this machine (docs/contract.md §6), pull requests from
 * Mainline's own records, test branches and merges made with git plumbing in the bare repository
 * (no checkout, except a throwaway worktree to rebase).
 *
 * Safety rules, in the words of `GitHost`: every mutating call can be repeated; a merge lands
 * exactly the tree the queue tested (the `merge-tree` of base and head) or nothing; the base
 * branch only moves by compare-and-swap, so a concurrent push is never overwritten; and the commit
 * about to land is recorded (`markMerging`) before the branch moves, so that a merge repeated
 * after a crash finds it instead of landing the pull request twice.
 */
import path from "node:path";
import type { Clock } from "../../lib/clock.js";
import type { PullRequestInfo } from "../../mergequeue/model.js";
import type {
  GitHost,
  HostedRepository,
  MergeRequest,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../../mergequeue/providers.js";
import type { LocalPullRequestRecord, LocalPullRequestRecords } from "./records.js";
import { NO_HOOKS, git } from "./git.js";
import { LOCAL_HOST, TEST_BRANCH_PREFIX, repositoryPath, testBranchName } from "./layout.js";
import { replayOnto } from "./replay.js";
import { RepositoryGit, ZERO_OID, assertObjectId } from "./repository-git.js";

export interface LocalGitHostOptions {
  dataDir: string;
  pullRequests: LocalPullRequestRecords;
  /** Dates the commits Mainline writes. */
  clock: Clock;
}

type Refusal = Extract<MergeResult, { ok: false }>;

export class LocalGitHost implements GitHost {
  /** The tail of each repository's chain of merges: one merge at a time per repository. */
  private readonly mergeChains = new Map<string, Promise<unknown>>();

  constructor(private readonly options: LocalGitHostOptions) {}

  /**
   * A pull request as git sees it now. A head branch that no longer exists leaves nothing to
   * merge, so an open record is reported `closed` (head `""`, mergeability `unspecified`); the
   * queue then cancels it as it would a closed pull request.
   */
  async pullRequest(repo: HostedRepository, number: number): Promise<PullRequestInfo | undefined> {
    const git = this.repository(repo);
    const record = await this.options.pullRequests.find(repo, number);
    if (!record) return undefined;
    const head = await git.branchHead(record.headBranch);
    const base = await git.branchHead(record.baseBranch);
    const info: PullRequestInfo = {
      number,
      title: record.title,
      author: record.author,
      headSha: head ?? "",
      headBranch: record.headBranch,
      baseBranch: record.baseBranch,
      mergeability: "unspecified",
      upToDate: false,
      checksPassed: false,
      state: head === undefined && record.state === "open" ? "closed" : record.state,
      draft: false,
    };
    if (head === undefined || base === undefined) return info;
    const merged = await git.mergeTree(base, head);
    const contains = await this.stackedOn(repo, record, head, base);
    return {
      ...info,
      mergeability: merged.clean ? "mergeable" : "not_mergeable",
      upToDate: await git.isAncestor(base, head),
      ...(contains.length > 0 ? { contains } : {}),
    };
  }

  /**
   * The open pull requests into the same branch that this one is stacked on: their heads are in
   * its history and not yet on the branch. The queue keeps a stack in order with this.
   */
  private async stackedOn(
    repo: HostedRepository,
    record: { number: number; baseBranch: string },
    head: string,
    base: string,
  ): Promise<{ number: number; headSha: string }[]> {
    const git = this.repository(repo);
    const contains: { number: number; headSha: string }[] = [];
    for (const other of await this.options.pullRequests.listOpen(repo)) {
      if (other.number === record.number || other.baseBranch !== record.baseBranch) continue;
      const otherHead = await git.branchHead(other.headBranch);
      if (otherHead === undefined || otherHead === head) continue;
      if ((await git.isAncestor(otherHead, head)) && !(await git.isAncestor(otherHead, base))) {
        contains.push({ number: other.number, headSha: otherHead });
      }
    }
    return contains;
  }

  async branchHead(repo: HostedRepository, branch: string): Promise<string | undefined> {
    return this.repository(repo).branchHead(branch);
  }

  /**
   * Merges each pull request's head onto the base in order, one real merge commit each, and
   * creates the test branch (create-only, so a repeated call returns the branch already made).
   */
  async createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const git = this.repository(request.repo);
    const branch = testBranchName(request.targetBranch, request.runId);
    const ref = `refs/heads/${branch}`;
    const existing = await git.resolve(ref);
    if (existing !== undefined) return { ok: true, branch, sha: existing };

    assertObjectId(request.baseSha, "baseSha");
    let current = request.baseSha;
    for (const [index, pr] of request.prs.entries()) {
      assertObjectId(pr.headSha, `head of #${String(pr.number)}`);
      const merged = await git.mergeTree(current, pr.headSha);
      if (!merged.clean) {
        // Which of those ahead it conflicts with: none when it conflicts with the base itself,
        // else each one it does not merge with pairwise (all of them if only the mix conflicts).
        const ahead = request.prs.slice(0, index);
        let conflictsWith: number[] = [];
        if ((await git.mergeTree(request.baseSha, pr.headSha)).clean) {
          for (const other of ahead) {
            if (!(await git.mergeTree(other.headSha, pr.headSha)).clean) {
              conflictsWith.push(other.number);
            }
          }
          if (conflictsWith.length === 0) conflictsWith = ahead.map((other) => other.number);
        }
        return {
          ok: false,
          reason: "merge_conflict",
          prNumber: pr.number,
          files: merged.files,
          conflictsWith,
          message: `#${String(pr.number)} does not merge onto ${request.targetBranch} and the pull requests ahead of it: ${merged.summary}`,
        };
      }
      const message = `Merge #${String(pr.number)} for test run ${request.runId} of ${request.targetBranch}`;
      current = await git.commitTree(merged.tree, [current, pr.headSha], message);
    }
    if (await git.compareAndSwap(ref, current, ZERO_OID)) return { ok: true, branch, sha: current };
    // Made concurrently by a repeated call: that one is the branch.
    const made = await git.resolve(ref);
    if (made === undefined) throw new Error(`test branch ${branch} vanished while being created`);
    return { ok: true, branch, sha: made };
  }

  /** Deletes a test branch (gone already is fine); refuses any other branch, to be safe. */
  async deleteTestBranch(repo: HostedRepository, branch: string): Promise<void> {
    if (!branch.startsWith(TEST_BRANCH_PREFIX)) {
      throw new Error(`${branch} is not a test branch; only test branches are deleted`);
    }
    await this.repository(repo).deleteRef(`refs/heads/${branch}`);
  }

  merge(request: MergeRequest): Promise<MergeResult> {
    const key = repositoryKey(request.repo);
    // Tails never reject, so each merge starts when the one before it has ended, however it did.
    const run = (this.mergeChains.get(key) ?? Promise.resolve()).then(() => this.mergeNow(request));
    const tail = run.catch(() => undefined);
    this.mergeChains.set(key, tail);
    void tail.then(() => {
      if (this.mergeChains.get(key) === tail) this.mergeChains.delete(key);
    });
    return run;
  }

  async readFile(repo: HostedRepository, sha: string, path: string): Promise<string | undefined> {
    return this.repository(repo).readFile(sha, path);
  }

  /**
   * A working tree of `sha` at `dir` (which must not exist) for the built-in CI runner: a clone
   * that borrows the repository's objects instead of copying them.
   */
  async checkout(repo: HostedRepository, sha: string, dir: string): Promise<void> {
    assertObjectId(sha, "commit");
    this.repository(repo);
    const source = repositoryPath(this.options.dataDir, repo);
    await git(["clone", "--quiet", "--shared", "--no-checkout", source, dir]);
    // Files written in parallel (one worker per CPU): a large tree checks out 2-3 times faster.
    await git([...NO_HOOKS, "-c", "checkout.workers=0", "checkout", "--quiet", "--detach", sha], {
      cwd: dir,
    });
  }

  /**
   * Brings a working tree made by `checkout` (of this repository) to exactly `sha`, for a new run
   * after another: tracked files forced to the commit (only those that differ are written), every
   * other file (untracked, ignored, nested repositories) removed. Hooks a check may have left in
   * the clone are not run. Throws when git cannot (a check broke the clone): make a fresh one then.
   */
  async refreshCheckout(repo: HostedRepository, sha: string, dir: string): Promise<void> {
    assertObjectId(sha, "commit");
    this.repository(repo);
    // This clone and this tree, whatever a check wrote into its configuration.
    const here = ["--work-tree", dir, ...NO_HOOKS, "-c", "core.fsmonitor=false"];
    const inDir = { cwd: dir, gitDir: path.join(dir, ".git") };
    await git([...here, "checkout", "--quiet", "--force", "--detach", sha], inDir);
    await git([...here, "clean", "-ffdxq"], inDir);
  }

  private async mergeNow(request: MergeRequest): Promise<MergeResult> {
    const { pullRequests } = this.options;
    const git = this.repository(request.repo);
    const number = request.prNumber;
    const record = await pullRequests.find(request.repo, number);
    if (!record) return refuse("rejected", `pull request #${String(number)} does not exist`);
    const base = await git.branchHead(request.targetBranch);

    const landed = await this.alreadyLanded(git, record, base);
    if (landed !== undefined) {
      if (record.state !== "merged") {
        await pullRequests.markMerged(request.repo, number, landed, this.options.clock.now());
      }
      return { ok: true, sha: landed };
    }
    const refusal = await this.checkMergeable(git, request, record, base);
    if (refusal) return refusal;

    const landing = await this.landingCommit(git, request);
    if (!landing.ok) return landing;
    await pullRequests.markMerging(request.repo, number, landing.sha);
    const ref = `refs/heads/${request.targetBranch}`;
    if (!(await git.compareAndSwap(ref, landing.sha, request.expectedBaseSha))) {
      return refuse(
        "base_moved",
        `${request.targetBranch} moved while #${String(number)} was merging`,
      );
    }
    await pullRequests.markMerged(request.repo, number, landing.sha, this.options.clock.now());
    return { ok: true, sha: landing.sha };
  }

  /** The commit this PR already landed as: recorded merged, or recorded merging and on the base. */
  private async alreadyLanded(
    git: RepositoryGit,
    record: LocalPullRequestRecord,
    base: string | undefined,
  ): Promise<string | undefined> {
    const merged = record.mergedSha ?? (record.state === "merged" ? record.mergingSha : null);
    if (merged !== null) return merged;
    if (record.mergingSha === null || base === undefined) return undefined;
    return (await git.isAncestor(record.mergingSha, base)) ? record.mergingSha : undefined;
  }

  private async checkMergeable(
    git: RepositoryGit,
    request: MergeRequest,
    record: LocalPullRequestRecord,
    base: string | undefined,
  ): Promise<Refusal | undefined> {
    const pr = `#${String(request.prNumber)}`;
    if (record.state !== "open") return refuse("rejected", `${pr} is ${record.state}`);
    if (record.baseBranch !== request.targetBranch) {
      return refuse("rejected", `${pr} targets ${record.baseBranch}, not ${request.targetBranch}`);
    }
    if (base === undefined) return refuse("rejected", `${request.targetBranch} does not exist`);
    const head = await git.branchHead(record.headBranch);
    if (head !== request.headSha) {
      return refuse("head_moved", `${pr} is at ${head ?? "no commit"}, not ${request.headSha}`);
    }
    if (base !== request.expectedBaseSha) {
      return refuse(
        "base_moved",
        `${request.targetBranch} is at ${base}, not ${request.expectedBaseSha}`,
      );
    }
    return undefined;
  }

  /**
   * The commit to land, by merge method. Its tree is always the tree of merging the head onto
   * the base, which is what the queue's test branch for this PR on this base contained.
   */
  private async landingCommit(
    git: RepositoryGit,
    request: MergeRequest,
  ): Promise<{ ok: true; sha: string } | Refusal> {
    const base = request.expectedBaseSha;
    const head = request.headSha;
    const merged = await git.mergeTree(base, head);
    if (!merged.clean)
      return refuse("merge_conflict", `#${String(request.prNumber)}: ${merged.summary}`);
    switch (request.method) {
      case "merge_commit": {
        const message = `Merge pull request #${String(request.prNumber)}: ${request.title}`;
        return { ok: true, sha: await git.commitTree(merged.tree, [base, head], message) };
      }
      case "squash":
        return { ok: true, sha: await git.commitTree(merged.tree, [base], request.title) };
      case "rebase": {
        // Replayed commits keep their authors (and author dates); only the committer is Mainline.
        const replay = await replayOnto(git, base, head, { GIT_COMMITTER_DATE: this.commitDate() });
        if (!replay.ok) return refuse("merge_conflict", replay.message);
        if ((await git.treeOf(replay.sha)) !== merged.tree) {
          return refuse(
            "merge_conflict",
            `rebasing #${String(request.prNumber)} gives a different tree than merging it, which is what was tested`,
          );
        }
        return { ok: true, sha: replay.sha };
      }
    }
  }

  private repository(repo: HostedRepository): RepositoryGit {
    if (repo.host.toLowerCase() !== LOCAL_HOST) {
      throw new Error(`${repo.host}/${repo.owner}/${repo.name} is not a local repository`);
    }
    return new RepositoryGit(repositoryPath(this.options.dataDir, repo), () => {
      const date = this.commitDate();
      return { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
    });
  }

  /** Commits Mainline writes are dated by the injected clock (the identity is the runner's). */
  private commitDate(): string {
    return `${String(Math.floor(this.options.clock.now() / 1000))} +0000`;
  }
}

/** What a check may have written into a clone's configuration must not run as a hook. */
function refuse(reason: Refusal["reason"], message: string): Refusal {
  return { ok: false, reason, message };
}

const repositoryKey = (repo: HostedRepository) =>
  `${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase();
