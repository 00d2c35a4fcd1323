/**
 * Test branches on GitHub: each run's combination assembled with `POST /merges` on a scratch ref
 * CI ignores, then published under the prefix CI watches (a run's own branch, or its slot's); a
 * merge that does not apply is narrowed down to the pull requests and files it conflicts with.
 */
import type { TestBranchRequest, TestBranchResult } from "../../mergequeue/providers.js";
import type { OwnedRepoRef } from "../../organizations/repositories.js";
import { SerialPerKey } from "../../lib/serial-per-key.js";
import type { GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import { messageOf, sleep, where, type GitHubGitApi } from "./git-api.js";
import type { GitHubRepositories, GitHubRepositoryAccess } from "./repositories.js";
import { BoundedMap } from "../../lib/bounded-map.js";

/** Where CI looks for test branches, by default (Trunk's prefix: users' CI filters keep working). */
export const DEFAULT_TEST_BRANCH_PREFIX = "trunk-merge/";
/** Where test branches are assembled, out of CI's sight (CI must ignore it, as with Trunk). */
export const SCRATCH_BRANCH_PREFIX = "trunk-temp/";

/** The start of the last part of a slot's test branch name (`trunk-merge/<target>/slot-0`). */
const SLOT_BRANCH_LEAF = "slot-";
/** The end of a slot's test branch name (a run's ends with its numeric id). */
const SLOT_BRANCH_END = new RegExp(`/${SLOT_BRANCH_LEAF}\\d+$`);
/** The last part of a queue's scratch branch name (`trunk-temp/<target>/queue`). */
const SCRATCH_BRANCH_LEAF = "queue";
/** Beyond this many pull requests ahead, a conflict is not narrowed down pairwise. */
const MAX_PAIRWISE_PROBES = 8;

type Conflict = Extract<TestBranchResult, { ok: false }>;

/** `POST /merges`'s answer: the merge commit, with its tree, parents and files. */
interface MergeCommitPayload {
  sha: string;
  commit?: { tree?: { sha?: string } };
  parents?: { sha: string }[];
  files?: { filename: string; previous_filename?: string }[];
}

/** A test merge's message: the pull request, and the run (a run's merges are its own commits). */
function mergeMessage(request: TestBranchRequest, pr: { number: number }): string {
  return `Merge #${String(pr.number)} into a test branch of ${request.targetBranch} (run ${request.runId})`;
}

/** GitHub lists at most 300 files of a commit: a list that long may be cut. */
const COMMIT_FILES_LIMIT = 300;

/** The files a merge changed, as `POST /merges` lists them; undefined when it may not be all. */
function filesOf(made: MergeCommitPayload): string[] | undefined {
  if (made.files === undefined || made.files.length >= COMMIT_FILES_LIMIT) return undefined;
  return made.files.flatMap((f) =>
    f.previous_filename === undefined ? [f.filename] : [f.filename, f.previous_filename],
  );
}

export interface GitHubTestBranchesDeps {
  repositories: Pick<GitHubRepositories, "resolve">;
  api: GitHubGitApi;
  logger: GitHubLogger;
  /** The prefix of the branches CI tests; ends with `/`. */
  prefix: string;
  /** Attempts at a `/merges` call GitHub answered with a passing failure. */
  attempts: number;
  /** The wait before the n-th retry (n from 1). */
  retryDelayMs: (retry: number) => number;
}

export class GitHubTestBranches {
  /** Scratch branches known to exist (made or moved here). */
  private readonly scratchKnown = new Set<string>();
  /** Slot branches published here, and the commit each was last put on. */
  private readonly slotHeads = new BoundedMap<string, string>(1024);
  /** Test-branch merges taken for the base commit they are the same merge as (`sameMerge`). */
  private readonly sameAs = new BoundedMap<string, string>(1024);
  /** Where each scratch branch was left by the last assembly here that finished. */
  private readonly scratchHeads = new BoundedMap<string, string>(1024);
  /** Assemblies on a queue's scratch branch, one at a time per queue. */
  private readonly assemblies = new SerialPerKey();
  /**
   * Merge commits made here, by what they hold: base + the heads merged onto it in order. A run
   * whose pull requests start with a chain made before (a batch's first half, tested while it is
   * bisected) starts from that commit instead of merging the same again.
   */
  private readonly chains = new BoundedMap<string, string>(4096);
  /**
   * Those commits published for CI, by scratch branch and commit. One is never published again
   * for another run: CI's results of the first are on that very commit, and would be read as the
   * new run's (a run tried again merges its last pull request afresh: a new commit, whose message
   * names the run).
   */
  private readonly published = new BoundedMap<string, true>(4096);

  constructor(private readonly deps: GitHubTestBranchesDeps) {}

  /** The branch CI tests for a run. */
  testBranchName(targetBranch: string, runId: string): string {
    return `${this.deps.prefix}${targetBranch}/${runId}`;
  }

  /** The branch CI tests for the runs of a slot (kept, moved by each run in it). */
  slotBranchName(targetBranch: string, slot: number): string {
    return `${this.deps.prefix}${targetBranch}/${SLOT_BRANCH_LEAF}${String(slot)}`;
  }

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
  create(request: TestBranchRequest): Promise<TestBranchResult> {
    const key = `${request.repo.organizationId}/${request.repo.owner}/${request.repo.name}\u0000${request.targetBranch}`;
    return this.assemblies.run(key, () => this.assemble(request));
  }

  private async assemble(request: TestBranchRequest): Promise<TestBranchResult> {
    const access = await this.deps.repositories.resolve(request.repo);
    const scratch = this.scratchBranchName(request.targetBranch);
    const known = `${access.owner}/${access.name}:${scratch}`.toLowerCase();
    const chain = (length: number) =>
      [known, request.baseSha, ...request.prs.slice(0, length).map((pr) => pr.headSha)].join(" ");
    const made = this.madeBefore(request.prs.length, chain, known);
    if (made === undefined && request.slot !== undefined && request.prs.length === 1) {
      const onSlot = await this.ontoSlot(access, request, request.slot, scratch);
      if (onSlot?.ok) {
        this.chains.set(chain(1), onSlot.sha);
        this.published.set(`${known} ${onSlot.sha}`, true);
      }
      if (onSlot !== undefined) return onSlot;
    }
    if (made !== undefined) {
      try {
        if (made.length === request.prs.length) {
          return await this.publish(access, request, made.sha, known);
        }
        // Part of it: the rest is merged onto that commit, on the scratch branch moved there.
        const wasAt = this.scratchHeads.get(known);
        this.scratchHeads.delete(known);
        if (wasAt !== made.sha) await this.deps.api.moveRef(access, scratch, made.sha);
      } catch (error) {
        // GitHub no longer has the commit (422): assembled again, from the base.
        if (statusOf(error) !== 422) throw error;
        this.forgetChains(request.prs.length, chain);
        return await this.assemble(request);
      }
    }
    const assembled = await this.assembleOnScratch(access, request, scratch, known, made, chain);
    if (typeof assembled !== "string") return assembled;
    return await this.publish(access, request, assembled, known);
  }

  /**
   * Publishes the assembled commit as the branch CI tests: the slot's branch when the run has a
   * slot, else the run's own (create-only: one published already answers a repeated call).
   */
  private async publish(
    access: GitHubRepositoryAccess,
    request: TestBranchRequest,
    current: string,
    known: string,
  ): Promise<TestBranchResult> {
    const branch = this.testBranchName(request.targetBranch, request.runId);
    this.published.set(`${known} ${current}`, true);
    if (request.slot !== undefined) {
      const slotBranch = this.slotBranchName(request.targetBranch, request.slot);
      const slotKey = `${access.owner}/${access.name}:${slotBranch}`.toLowerCase();
      const head = this.slotHeads.get(slotKey);
      // Moved to the commit it is on already, the branch would not be pushed and CI would not
      // run: that (rare) run gets a branch of its own.
      if (head !== current) {
        if (head === undefined) await this.deps.api.putRef(access, slotBranch, current);
        else await this.deps.api.moveRef(access, slotBranch, current);
        this.slotHeads.set(slotKey, current);
        return { ok: true, branch: slotBranch, sha: current };
      }
    }
    try {
      await access.client.request("POST /repos/{owner}/{repo}/git/refs", {
        ...where(access),
        ref: `refs/heads/${branch}`,
        sha: current,
      });
    } catch (error) {
      // Published already by an earlier (repeated) call: that one is the branch.
      const made =
        statusOf(error) === 422 ? await this.deps.api.refHead(access, branch, false) : undefined;
      if (made === undefined) throw error;
      return { ok: true, branch, sha: made };
    }
    return { ok: true, branch, sha: current };
  }

  /**
   * The longest start of the run's chain made here before: its commit and its length. The whole
   * chain only when its commit was never published (a batch's first half): else it is a start.
   */
  private madeBefore(
    length: number,
    chain: (length: number) => string,
    known: string,
  ): { sha: string; length: number } | undefined {
    for (let k = length; k >= 1; k--) {
      const sha = this.chains.get(chain(k));
      if (sha === undefined) continue;
      if (k < length || this.published.get(`${known} ${sha}`) !== true) return { sha, length: k };
    }
    return undefined;
  }

  private forgetChains(length: number, chain: (length: number) => string): void {
    for (let k = 1; k <= length; k++) this.chains.delete(chain(k));
  }

  /**
   * Merges the run's pull requests on the scratch branch, from the base (or from the start of
   * the chain `made` before, where the branch is already): the last merge's commit, or the
   * conflict.
   */
  private async assembleOnScratch(
    access: GitHubRepositoryAccess,
    request: TestBranchRequest,
    scratch: string,
    known: string,
    made: { sha: string; length: number } | undefined,
    chain: (length: number) => string,
  ): Promise<string | Conflict> {
    const start =
      made === undefined ? await this.scratchStart(access, request, scratch, known) : undefined;
    let current = made?.sha ?? start ?? request.baseSha;
    for (const [index, pr] of request.prs.entries()) {
      if (index < (made?.length ?? 0)) continue;
      const message = mergeMessage(request, pr);
      const merged = await this.mergeOnto(access, scratch, current, pr.headSha, message, {
        base: start ?? request.baseSha,
      });
      if (merged === null) {
        // The branch stays where it was: the next assembly may start there.
        this.scratchHeads.set(known, current);
        return await this.conflict(access, request, index, scratch);
      }
      current = merged;
      this.chains.set(chain(index + 1), current);
    }
    this.scratchHeads.set(known, current);
    return current;
  }

  /**
   * Where the scratch branch's assembly starts when nothing of the chain was made before: the
   * base's very merge where the branch holds it (left there: undefined is answered), else the
   * base (the branch moved there, or made).
   */
  private async scratchStart(
    access: GitHubRepositoryAccess,
    request: TestBranchRequest,
    scratch: string,
    known: string,
  ): Promise<string | undefined> {
    // Known here to exist: moved; else created (moved when it exists after all).
    const start = this.sameMerge(this.scratchHeads.get(known), request.baseSha);
    this.scratchHeads.delete(known);
    if (start !== undefined && start !== request.baseSha) this.sameAs.set(start, request.baseSha);
    if (start === undefined) {
      if (this.scratchKnown.has(known)) {
        await this.deps.api.moveRef(access, scratch, request.baseSha);
      } else await this.deps.api.putRef(access, scratch, request.baseSha);
    }
    this.scratchKnown.add(known);
    return start;
  }

  /**
   * A run of one pull request whose slot's branch holds the base's very merge already (a serial
   * queue's last run, landed: `sameMerge`): the pull request is merged onto the slot's branch
   * itself, whose push is the one CI needs. One write where the scratch branch costs two (merge,
   * then move the slot). Undefined when the slot's branch is elsewhere or not known here.
   */
  private async ontoSlot(
    access: GitHubRepositoryAccess,
    request: TestBranchRequest,
    slot: number,
    scratch: string,
  ): Promise<TestBranchResult | undefined> {
    const pr = request.prs[0];
    const slotBranch = this.slotBranchName(request.targetBranch, slot);
    const slotKey = `${access.owner}/${access.name}:${slotBranch}`.toLowerCase();
    const start = this.sameMerge(this.slotHeads.get(slotKey), request.baseSha);
    if (pr === undefined || start === undefined) return undefined;
    if (start !== request.baseSha) this.sameAs.set(start, request.baseSha);
    // Not known until the merge answers: a failure leaves the next run to move the branch.
    this.slotHeads.delete(slotKey);
    const message = mergeMessage(request, pr);
    const merged = await this.mergeOnto(access, slotBranch, start, pr.headSha, message, {
      base: start,
    });
    if (merged === null) {
      this.slotHeads.set(slotKey, start);
      return await this.conflict(access, request, 0, scratch);
    }
    this.slotHeads.set(slotKey, merged);
    return { ok: true, branch: slotBranch, sha: merged };
  }

  /**
   * Where to assemble on `base`: the scratch branch's commit `head` when it is the same merge as
   * `base`, so the branch need not be moved back (a write); else `base` itself (undefined when
   * the branch is elsewhere). The same merge: the test branch's merge of a pull request that then
   * landed on the base just tested, with the same tree, as a merge commit (the same parents) or
   * squashed (one parent, the merge's first). Merging onto either gives the trees a batch's chain
   * of merges gives, and the tested tree is checked against the base's at the merge.
   */
  private sameMerge(head: string | undefined, base: string): string | undefined {
    if (head === undefined || head === base) return head;
    const ours = this.deps.api.known(head);
    const theirs = this.deps.api.known(base);
    if (ours === undefined || theirs === undefined || ours.tree !== theirs.tree) return undefined;
    // A parent may itself be a merge taken for its base before (runs that follow each other).
    const parent = (i: number) => this.sameAs.get(ours.parents[i] ?? "") ?? ours.parents[i];
    const squashed = theirs.parents.length === 1 && parent(0) === theirs.parents[0];
    const same =
      ours.parents.length === theirs.parents.length &&
      ours.parents.every((_, i) => parent(i) === theirs.parents[i]);
    return same || squashed ? head : undefined;
  }

  /**
   * Deletes a run's test branch (gone already is fine); a slot's branch is kept for the slot's
   * next run. Refuses any other branch, to be safe.
   */
  async delete(repo: OwnedRepoRef, branch: string): Promise<void> {
    if (!branch.startsWith(this.deps.prefix) || branch.includes("..")) {
      throw new Error(`${branch} is not a test branch; only test branches are deleted`);
    }
    // A slot's branch (kept between runs) rather than one run's.
    if (SLOT_BRANCH_END.test(branch)) return;
    const access = await this.deps.repositories.resolve(repo);
    await this.deps.api.dropRef(access, branch);
  }

  /**
   * Merges `head` onto the scratch branch at `current`: its new head, or null on a conflict.
   * `POST /merges` is never repeated blindly (GitHub may merge and still answer a 5xx or time
   * out; a repeat would then answer 204, "nothing to merge"): after an unknown outcome the branch
   * is read, and the merge taken from it when it happened. A 409 that is not a conflict (a passing
   * permission glitch) and rate limits are retried too.
   */
  private async mergeOnto(
    access: GitHubRepositoryAccess,
    scratch: string,
    current: string,
    head: string,
    message: string,
    /** On a test branch (not a probe): the base it is assembled on, kept with each merge. */
    assembly?: { base: string },
  ): Promise<string | null> {
    let uncertain = false;
    for (let attempt = 1; ; attempt++) {
      let response;
      try {
        response = await access.client.request("POST /repos/{owner}/{repo}/merges", {
          ...where(access),
          base: scratch,
          head,
          commit_message: message,
          request: { retries: 0 },
        });
      } catch (error) {
        const status = statusOf(error);
        const text = messageOf(error);
        if (status === 409 && /^merge conflict/i.test(text)) return null;
        const unknown = status === undefined || status >= 500;
        uncertain ||= unknown;
        const transient =
          unknown ||
          status === 409 ||
          status === 429 ||
          (status === 403 && /rate limit/i.test(text));
        if (!transient || attempt >= this.deps.attempts) {
          const made = unknown ? await this.mergeMade(access, scratch, current, head) : undefined;
          if (made !== undefined) return made;
          throw error;
        }
        this.deps.logger.warn(
          { status, attempt, message: text },
          "github: merging into a test branch failed; retrying",
        );
        await sleep(this.deps.retryDelayMs(attempt));
        if (unknown) {
          const made = await this.mergeMade(access, scratch, current, head);
          if (made !== undefined) return made;
        }
        continue;
      }
      // 204: the head is in the branch already. After an unknown outcome, that may be the merge
      // that was thought lost: the branch says.
      if ((response.status as number) === 204) {
        if (!uncertain) return current;
        return (await this.mergeMade(access, scratch, current, head)) ?? current;
      }
      const made = response.data as MergeCommitPayload;
      const parents = (made.parents ?? []).map((parent) => parent.sha);
      if (parents.length > 0 && parents[0] !== current) {
        throw new Error(
          `${scratch} moved under a test branch being assembled (it was at ${current}; the merge of ${head} went onto ${parents[0] ?? ""})`,
        );
      }
      const tree = made.commit?.tree?.sha;
      if (tree !== undefined) {
        this.deps.api.rememberCommit(made.sha, {
          tree,
          parents,
          ...(assembly ? { assembled: { base: assembly.base, files: filesOf(made) } } : {}),
        });
      }
      return made.sha;
    }
  }

  /**
   * After a `POST /merges` whose outcome is unknown: the merge commit of `head` onto `current` if
   * the scratch branch moved to it, undefined if the branch is still at `current` (not merged).
   * Anything else moved the branch under the assembly: an error.
   */
  private async mergeMade(
    access: GitHubRepositoryAccess,
    scratch: string,
    current: string,
    head: string,
  ): Promise<string | undefined> {
    const now = await this.deps.api.refHead(access, scratch, false);
    if (now === undefined || now === current) return undefined;
    const commit = await this.deps.api.commit(access, now);
    if (commit?.parents[0] === current && commit.parents[1] === head) {
      this.deps.logger.warn(
        { head, merge: now },
        "github: a merge into a test branch answered an error but was made; taken",
      );
      return now;
    }
    throw new Error(
      `${scratch} moved under a test branch being assembled (it was at ${current}, now ${now})`,
    );
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
    // Dropped afterwards only if made: a conflict with the base alone (index 0) makes none.
    const made = { probe: false };
    const mergesAlone = async (onto: string): Promise<boolean> => {
      made.probe = true;
      await this.deps.api.putRef(access, probe, onto);
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
      if (made.probe) await this.deps.api.dropRef(access, probe);
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
      const compare = await this.deps.api.get<{ files?: { filename: string }[] }>(
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
}
