/**
 * The local git host: bare repositories on this machine, pull requests from Mainline's records,
 * test branches and merges by git plumbing. Every mutating call can be repeated; a merge lands
 * exactly the tested tree or nothing; the base moves only by compare-and-swap; the commit about to
 * land is recorded before the branch moves, so a merge repeated after a crash is found, not redone.
 */
import path from "node:path";
import type { Clock } from "../../../lib/clock.js";
import type { PullRequestInfo } from "../../../mergequeue/model.js";
import type {
  GitHost,
  MergeRequest,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../../../mergequeue/providers.js";
import type {
  LocalPullRequestRecord,
  LocalPullRequestRecords,
} from "../../../mergequeue/local-pull-request-records.js";
import { NO_HOOKS, git } from "./git.js";
import { LOCAL_HOST, TEST_BRANCH_PREFIX, repositoryPath, testBranchName } from "./layout.js";
import { readBranchTips } from "./ref-files.js";
import { replayOnto } from "./replay.js";
import {
  RepositoryGit,
  ZERO_OID,
  assertObjectId,
  conflictsAhead,
  type CommitSummary,
  type TreeMerge,
} from "./repository-git.js";
import { type OwnedRepoRef } from "../../../organizations/repositories.js";
import { SerialPerKey } from "../../../lib/serial-per-key.js";

export interface LocalGitHostOptions {
  dataDir: string;
  pullRequests: LocalPullRequestRecords;
  /** Dates the commits Mainline writes. */
  clock: Clock;
}

type Refusal = Extract<MergeResult, { ok: false }>;

export class LocalGitHost implements GitHost {
  /** Merges, one at a time per repository. */
  private readonly mergeLine = new SerialPerKey();

  constructor(private readonly options: LocalGitHostOptions) {}

  /** What is stored about a pull request (no git): enough to check a submission. */
  async storedPullRequest(
    repo: OwnedRepoRef,
    number: number,
  ): Promise<Pick<LocalPullRequestRecord, "state" | "baseBranch"> | undefined> {
    return this.options.pullRequests.find(repo, number);
  }

  /**
   * A pull request as git sees it now. A head branch that no longer exists leaves nothing to
   * merge, so an open record is reported `closed` (head `""`, mergeability `unspecified`); the
   * queue then cancels it as it would a closed pull request.
   */
  async pullRequest(repo: OwnedRepoRef, number: number): Promise<PullRequestInfo | undefined> {
    const git = this.repository(repo);
    const record = await this.options.pullRequests.find(repo, number);
    if (!record) return undefined;
    // Both heads at once.
    const heads = await branchHeads(git, [record.headBranch, record.baseBranch]);
    const head = heads.get(record.headBranch);
    const base = heads.get(record.baseBranch);
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
    // One git call lists the branches `head` contains and `base` does not (the stack check: it
    // costs the same with 10 or 1,000 open pull requests), the landed heads among them and
    // whether `head` contains `base`.
    const between = await refsBetween(git, head, base);
    const merged = await this.mergeable(git, base, head, between.landed);
    const contains = await this.stackedOn(repo, record, head, between.branches);
    return {
      ...info,
      mergeability: merged.clean ? "mergeable" : "not_mergeable",
      ...(!merged.clean && merged.files.length > 0 ? { conflicts: merged.files } : {}),
      upToDate: between.upToDate,
      ...(contains.length > 0 ? { contains } : {}),
    };
  }

  /** Mergeability by (base, head, landed heads between them): what git says never changes. */
  private readonly merges = new Map<string, Promise<{ clean: boolean; files: string[] }>>();

  /**
   * Whether `head` merges onto `base`. It depends only on the two commits and the landed heads
   * between them (`mergeStacked`), so each answer is kept: a pull request looked up again (every
   * submission, push notice or replan) costs no merge.
   */
  private mergeable(
    git: RepositoryGit,
    base: string,
    head: string,
    landed: readonly string[],
  ): Promise<{ clean: boolean; files: string[] }> {
    const key = `${git.gitDir}\0${base}\0${head}\0${landed.join(",")}`;
    const known = this.merges.get(key);
    if (known) return known;
    const answer = (async () => {
      const { merged } = await mergeStacked(git, base, head, undefined, landed);
      return merged.clean ? { clean: true, files: [] } : { clean: false, files: merged.files };
    })();
    this.merges.set(key, answer);
    // A failed git call is not an answer; the oldest answers go first beyond the bound.
    answer.catch(() => this.merges.delete(key));
    if (this.merges.size > MERGEABILITY_CACHE) {
      const oldest = this.merges.keys().next();
      if (!oldest.done) this.merges.delete(oldest.value);
    }
    return answer;
  }

  /**
   * The open pull requests into the same branch that this one is stacked on: their heads are in
   * its history and not yet on the branch (`between`). The queue keeps a stack in order with this.
   */
  private async stackedOn(
    repo: OwnedRepoRef,
    record: { number: number; baseBranch: string },
    head: string,
    between: ReadonlyMap<string, string>,
  ): Promise<{ number: number; headSha: string }[]> {
    // Its own head branch is always among them: only others need the list of open PRs.
    if (![...between.values()].some((tip) => tip !== head)) return [];
    const contains: { number: number; headSha: string }[] = [];
    for (const other of await this.options.pullRequests.listOpen(repo)) {
      if (other.number === record.number || other.baseBranch !== record.baseBranch) continue;
      const otherHead = between.get(other.headBranch);
      if (otherHead === undefined || otherHead === head) continue;
      contains.push({ number: other.number, headSha: otherHead });
    }
    return contains;
  }

  async branchHead(repo: OwnedRepoRef, branch: string): Promise<string | undefined> {
    return this.repository(repo).branchHead(branch);
  }

  /**
   * Merges each pull request's head onto the base in order, one real merge commit each (dated
   * as the base, so that they depend only on base and heads), and creates the test branch (create-only, so a repeated call returns the branch already made).
   */
  async createTestBranch(request: TestBranchRequest): Promise<TestBranchResult> {
    const git = this.repository(request.repo);
    const branch = testBranchName(request.targetBranch, request.runId);
    const ref = `refs/heads/${branch}`;
    const existing = await git.resolve(ref);
    if (existing !== undefined) return { ok: true, branch, sha: existing };

    assertObjectId(request.baseSha, "baseSha");
    let current = request.baseSha;
    // The same pull requests on the same base make the same commits, whichever run asks: a run
    // repeated on the same tested tree (a retry) tests the same commit, so that test health sees
    // a failure and a pass there as pass-on-retry.
    const date = await git.readCommitDate(request.baseSha);
    for (const [index, pr] of request.prs.entries()) {
      assertObjectId(pr.headSha, `head of #${String(pr.number)}`);
      const { merged, onto } = await mergeStacked(git, current, pr.headSha, date);
      if (!merged.clean) {
        const ahead = request.prs.slice(0, index);
        const conflictsWith = await conflictsAhead(git, request.baseSha, ahead, pr.headSha);
        const landedConflicts =
          conflictsWith.length === 0
            ? await this.landedConflicts(
                request.repo,
                git,
                request.baseSha,
                pr.headSha,
                merged.files,
              )
            : [];
        return {
          ok: false,
          reason: "merge_conflict",
          prNumber: pr.number,
          files: merged.files,
          conflictsWith,
          ...(landedConflicts.length > 0 ? { landedConflicts } : {}),
          message: `#${String(pr.number)} does not merge onto ${request.targetBranch} and the pull requests ahead of it: ${merged.summary}`,
        };
      }
      const message = `Merge #${String(pr.number)} into a test branch of ${request.targetBranch}`;
      current = await git.commitTree(merged.tree, [onto, pr.headSha], message, { date });
    }
    if (await git.compareAndSwap(ref, current, ZERO_OID)) return { ok: true, branch, sha: current };
    // Made concurrently by a repeated call: that one is the branch.
    const made = await git.resolve(ref);
    if (made === undefined) throw new Error(`test branch ${branch} vanished while being created`);
    return { ok: true, branch, sha: made };
  }

  /**
   * The pull requests the queue landed on the base since `head` left it whose changes touch the
   * conflicting files: what a PR that no longer applies onto its target conflicts with. Each
   * commit of the base's first-parent history belongs to the nearest PR landed at or after it
   * (a squash or merge commit is the PR's own; a rebase lands several commits, the last recorded).
   */
  private async landedConflicts(
    repo: OwnedRepoRef,
    git: RepositoryGit,
    base: string,
    head: string,
    files: string[],
  ): Promise<number[]> {
    if (files.length === 0) return [];
    const touching = new Set(await git.firstParentCommits(base, head, files));
    if (touching.size === 0) return [];
    const landedAs = new Map<string, number>();
    for (const record of await this.options.pullRequests.listMerged(repo)) {
      if (record.mergedSha) landedAs.set(record.mergedSha, record.number);
    }
    const numbers: number[] = [];
    let owner: number | undefined;
    for (const sha of await git.firstParentCommits(base, head)) {
      owner = landedAs.get(sha) ?? owner;
      if (touching.has(sha) && owner !== undefined && !numbers.includes(owner)) numbers.push(owner);
    }
    return numbers.sort((a, b) => a - b);
  }

  /** Deletes a test branch (gone already is fine); refuses any other branch, to be safe. */
  async deleteTestBranch(repo: OwnedRepoRef, branch: string): Promise<void> {
    if (!branch.startsWith(TEST_BRANCH_PREFIX)) {
      throw new Error(`${branch} is not a test branch; only test branches are deleted`);
    }
    await this.repository(repo).deleteRef(`refs/heads/${branch}`);
  }

  merge(request: MergeRequest): Promise<MergeResult> {
    const key = repositoryKey(request.repo);
    return this.mergeLine.run(key, () => this.mergeNow(request));
  }

  /** A file at a commit or tree; undefined when it has no such file. */
  async readFile(repo: OwnedRepoRef, sha: string, path: string): Promise<string | undefined> {
    return this.repository(repo).readFile(sha, path);
  }

  /**
   * The tree of `head` merged onto `base` as a test branch merges it (knowing stacks), without
   * moving any ref; undefined when they do not merge.
   */
  async mergedTree(repo: OwnedRepoRef, base: string, head: string): Promise<string | undefined> {
    assertObjectId(base, "base");
    assertObjectId(head, "head");
    const { merged } = await mergeStacked(this.repository(repo), base, head);
    return merged.clean ? merged.tree : undefined;
  }

  /**
   * A working tree of `sha` at `dir` (which must not exist) for the built-in CI runner: a clone
   * that borrows the repository's objects instead of copying them.
   */
  async checkout(repo: OwnedRepoRef, sha: string, dir: string): Promise<void> {
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
  async refreshCheckout(repo: OwnedRepoRef, sha: string, dir: string): Promise<void> {
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
        await keepLandedHead(git, number, request.headSha);
        await pullRequests.markMerged(request.repo, number, landed, this.options.clock.now());
      }
      return { ok: true, sha: landed };
    }
    const refusal = await this.checkMergeable(git, request, record, base);
    if (refusal) return refusal;

    const landing = await this.landingCommit(git, request, record);
    if (!landing.ok) return landing;
    await pullRequests.markMerging(request.repo, number, landing.sha);
    const ref = `refs/heads/${request.targetBranch}`;
    if (!(await git.compareAndSwap(ref, landing.sha, request.expectedBaseSha))) {
      return refuse(
        "base_moved",
        `${request.targetBranch} moved while #${String(number)} was merging`,
      );
    }
    await keepLandedHead(git, number, request.headSha);
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
   * The commit to land, by merge method. Its tree is the tree that passed with the PR: the test
   * branch of the run that cleared it, up to and including this PR (`tested`). Landing never
   * merges afresh (a squash of a stacked PR, merged onto a base that holds its parent's squash,
   * could conflict where the test branch did not); it only checks that the base it lands on has
   * the tree the PR was tested on.
   */
  private async landingCommit(
    git: RepositoryGit,
    request: MergeRequest,
    record: LocalPullRequestRecord,
  ): Promise<{ ok: true; sha: string } | Refusal> {
    const pr = `#${String(request.prNumber)}`;
    const base = request.expectedBaseSha;
    const head = request.headSha;
    const tested = await this.testedMerge(git, request);
    if (!tested.ok) return tested;
    const { tree, testedOn } = tested;
    switch (request.method) {
      case "merge_commit": {
        const message = `Merge pull request ${pr}: ${request.title}`;
        return { ok: true, sha: await git.commitTree(tree, [base, head], message) };
      }
      case "squash": {
        const commits = await git.ownCommits(head, testedOn);
        const squash = squashMessage(request.title, record, commits);
        return { ok: true, sha: await git.commitTree(tree, [base], squash.message, squash) };
      }
      case "rebase": {
        // Only the PR's own commits: those of a stacked PR's parent landed with the parent.
        // Replayed commits keep their authors (and author dates); only the committer is Mainline.
        const commits = (await git.ownCommits(head, testedOn)).map((commit) => commit.sha);
        const replay = await replayOnto(git, base, commits, {
          GIT_COMMITTER_DATE: this.commitDate(),
        });
        if (!replay.ok) return refuse("merge_conflict", `${pr}: ${replay.message}`);
        if ((await git.readTree(replay.sha)) !== tree) {
          return refuse(
            "merge_conflict",
            `rebasing ${pr} gives a different tree than the one tested with it`,
          );
        }
        return { ok: true, sha: replay.sha };
      }
    }
  }

  /**
   * The tree that passed with the PR and the commit it was tested on top of. With a test branch:
   * its merge of this head, found on its first-parent chain; the base must have the tree that
   * merge was made onto (the PRs ahead landed as tested), or the test does not hold for it. A
   * direct merge (no run) merges the head onto the base.
   */
  private async testedMerge(
    git: RepositoryGit,
    request: MergeRequest,
  ): Promise<{ ok: true; tree: string; testedOn: string } | Refusal> {
    const pr = `#${String(request.prNumber)}`;
    const base = request.expectedBaseSha;
    if (request.testedSha === undefined) {
      const { merged, onto } = await mergeStacked(git, base, request.headSha);
      if (!merged.clean) return refuse("merge_conflict", `${pr}: ${merged.summary}`);
      return { ok: true, tree: merged.tree, testedOn: onto };
    }
    assertObjectId(request.testedSha, "tested commit");
    const chain = await git.firstParentChain(request.testedSha, base);
    const merge = chain.find((parents) => parents[2] === request.headSha && parents.length === 3);
    const testedOn = merge?.[1];
    if (merge?.[0] === undefined || testedOn === undefined) {
      return refuse(
        "rejected",
        `${pr} at ${request.headSha} is not on the test branch ${request.testedSha} that cleared it`,
      );
    }
    if ((await git.readTree(testedOn)) !== (await git.readTree(base))) {
      return refuse(
        "base_moved",
        `${request.targetBranch} at ${base} does not hold what ${pr} was tested on`,
      );
    }
    return { ok: true, tree: await git.readTree(merge[0]), testedOn };
  }

  private repository(repo: OwnedRepoRef): RepositoryGit {
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

/** Where the heads of landed pull requests are kept (`refs/mainline/landed/<number>`). */
const LANDED_PREFIX = "refs/mainline/landed/";

/**
 * Merges `head` onto `base`, knowing stacks. A pull request stacked on one that landed by squash
 * or rebase contains its parent's original commits, which the base holds only as their landed
 * copy: git's merge would apply the parent's change a second time from the old merge base, and
 * conflict wherever the child edits its parent's lines. So when `head` contains the head of a
 * landed PR that `base` lacks, `onto` is a commit with the base's tree and that head as second
 * parent (it records that the base holds it), and the merge is made onto that: only the child's
 * own change is applied. `onto` is the base itself otherwise.
 */
async function mergeStacked(
  git: RepositoryGit,
  base: string,
  head: string,
  date?: string,
  /** The landed heads `head` contains and `base` lacks, when the caller has listed them. */
  landedBetween?: readonly string[],
): Promise<{ merged: TreeMerge; onto: string }> {
  const landed = landedBetween ?? (await git.refsBetween(LANDED_PREFIX, head, base));
  // The newest of them: the one no other contains (a stack's heads are all in its history).
  let newest: string | undefined;
  for (const candidate of landed) {
    if (newest === undefined || (await git.isAncestor(newest, candidate))) newest = candidate;
  }
  if (newest === undefined) return { merged: await git.mergeTree(base, head), onto: base };
  // Dated as the base: asked again (every look at the PR), it is the same commit, not a new one.
  const message = `${newest} has landed on this base`;
  const onto = await git.commitTree(await git.readTree(base), [base, newest], message, {
    date: date ?? (await git.readCommitDate(base)),
  });
  return { merged: await git.mergeTree(onto, head), onto };
}

/** How many mergeability answers the host keeps (a few hundred bytes each). */
const MERGEABILITY_CACHE = 10_000;

/**
 * The tips of branches, read from the repository's ref files (no process), or in one git call when
 * those say something unusual; a branch that does not exist is absent.
 */
async function branchHeads(
  repository: RepositoryGit,
  branches: readonly string[],
): Promise<Map<string, string>> {
  const read = await readBranchTips(repository.gitDir, branches);
  if (read !== undefined) return read;
  const refs = [...new Set(branches)].map((branch) => `refs/heads/${branch}`);
  // A pattern also matches the refs below it (`refs/heads/a` matches `refs/heads/a/b`): only
  // exact names count. Ref names cannot hold the characters that would make it a glob.
  const { stdout } = await git(["for-each-ref", "--format=%(objectname) %(refname)", ...refs], {
    gitDir: repository.gitDir,
  });
  const heads = new Map<string, string>();
  for (const line of stdout.split("\n")) {
    const space = line.indexOf(" ");
    const ref = line.slice(space + 1);
    if (space > 0 && refs.includes(ref))
      heads.set(ref.slice("refs/heads/".length), line.slice(0, space));
  }
  return heads;
}

/**
 * In one git call: the branches whose tips `head` contains and `base` does not, with their tips,
 * the landed heads (`LANDED_PREFIX`) `head` contains and `base` does not, and whether `head`
 * contains `base` (the pull request is up to date).
 */
async function refsBetween(
  repository: RepositoryGit,
  head: string,
  base: string,
): Promise<{ branches: Map<string, string>; landed: string[]; upToDate: boolean }> {
  const { refs, containsBase } = await repository.historyBetween(head, base, [
    "refs/heads/",
    LANDED_PREFIX,
  ]);
  const branches = new Map<string, string>();
  const landed = new Set<string>();
  for (const [ref, sha] of refs) {
    if (ref.startsWith("refs/heads/")) branches.set(ref.slice("refs/heads/".length), sha);
    else landed.add(sha);
  }
  return { branches, landed: [...landed].sort(), upToDate: containsBase };
}

/**
 * Keeps the head of a PR that landed (written once the base holds it, so never for a PR that did
 * not land): a PR stacked on it merges onto the landed commit from there (`mergeStacked`).
 */
async function keepLandedHead(git: RepositoryGit, number: number, head: string): Promise<void> {
  await git.updateRef(`${LANDED_PREFIX}${String(number)}`, head);
}

function refuse(reason: Refusal["reason"], message: string): Refusal {
  return { ok: false, reason, message };
}

const repositoryKey = (repo: OwnedRepoRef) =>
  `${repo.organizationId}/${repo.owner}/${repo.name}`.toLowerCase();

/**
 * A squash commit's author and message: the author is the PR's author as its commits name them
 * (the commit author whose name or e-mail matches the PR's author, else the author of its first
 * commit); the message is the title with `(#n)`, then the PR's description (when it has none,
 * the messages of its commits, as GitHub's default squash message has them, when there are
 * several) and a `Co-authored-by:` trailer for every other author of its commits.
 */
export function squashMessage(
  title: string,
  record: Pick<LocalPullRequestRecord, "author"> & { description?: string },
  commits: CommitSummary[],
): { message: string; author?: { name: string; email: string } } {
  const login = record.author.toLowerCase();
  const authors = commits.map((commit) => commit.author);
  const author =
    authors.find(
      (a) => a.name.toLowerCase() === login || a.email.toLowerCase().split("@")[0] === login,
    ) ?? authors[0];
  const coAuthors: string[] = [];
  for (const other of authors) {
    const line = `Co-authored-by: ${other.name} <${other.email}>`;
    if (other.email.toLowerCase() === author?.email.toLowerCase()) continue;
    if (!coAuthors.includes(line)) coAuthors.push(line);
  }
  const given = record.description?.trim() ?? "";
  const description =
    given !== ""
      ? given
      : commits.length > 1
        ? commits.map((commit) => `* ${commit.message}`).join("\n\n")
        : "";
  const message = [title, description, coAuthors.join("\n")].filter((p) => p !== "").join("\n\n");
  return author ? { message, author } : { message };
}
