import { squashOnMerge } from "./entities.js";
import { GitLabError, notAllowed, unauthorized } from "./http.js";
import type { MergeRequests } from "./merge-requests.js";
import { needRebase, needsCheck, stateBlocker } from "./mergeability.js";
import { ZERO_SHA, type MergeRequest, type User } from "./model.js";
import type { Pushes } from "./pushes.js";
import type { World } from "./world.js";

/**
 * `PUT /projects/:id/merge_requests/:iid/merge`, in GitLab's order of checks: 401 (may not merge
 * into the target) → 405 (`mergeable_state?`: not open, draft, source missing, unresolved
 * threads, CI must pass or still running) → 406/422 `Branch cannot be merged` (git: a conflict, or
 * not fast-forwardable under the `ff`/`rebase_merge` methods; the check runs now if stale) → 409
 * (`sha` is not the head). Then a synchronous merge with real git per merge method and squash
 * option, the target moved with a compare-and-swap, and a push's side effects.
 */

export interface MergeParams {
  sha?: string;
  squash?: boolean;
  shouldRemoveSourceBranch?: boolean;
  mergeCommitMessage?: string;
  squashCommitMessage?: string;
}

export class Merges {
  constructor(
    private readonly world: World,
    private readonly mrs: MergeRequests,
    private readonly pushes: Pushes,
  ) {}

  merge(mr: MergeRequest, user: User, params: MergeParams): Promise<void> {
    return this.world.withLock(mr.project, () => this.mergeLocked(mr, user, params));
  }

  /**
   * `PUT …/merge_requests/:iid/rebase`: the source branch's own commits replayed onto the target
   * (GitLab does it in Sidekiq and answers 202 at once; here it is done before the answer, so a
   * read right after shows `rebase_in_progress: false`). A conflict leaves the branch as it was
   * and sets `merge_error`, as GitLab does.
   */
  rebase(mr: MergeRequest, user: User): Promise<void> {
    return this.world.withLock(mr.project, () => this.rebaseLocked(mr, user));
  }

  private async rebaseLocked(mr: MergeRequest, user: User): Promise<void> {
    const project = mr.project;
    const repo = this.world.repo(project);
    const target = await repo.branchHead(mr.targetBranch);
    const head = await repo.branchHead(mr.sourceBranch);
    if (target === null || head === null)
      throw new GitLabError(409, "Failed to enqueue the rebase operation");
    if (await repo.bare.isAncestor(target, head)) return;
    const base = await repo.bare.mergeBase(target, head);
    let onto = target;
    for (const commit of await repo.bare.commitsBetween(base, head)) {
      const data = await repo.bare.readCommit(commit);
      if (data.parents.length > 1) continue;
      const picked = await repo.bare.cherryPickTree(commit, onto);
      if ("conflicts" in picked) {
        mr.mergeError = `Rebase failed: conflicts in ${picked.conflicts.join(", ")}. Please rebase locally.`;
        return;
      }
      const committer = { name: user.name, email: user.email };
      onto = await repo.bare.commitTree(picked.tree, [onto], data.message, data.author, committer);
    }
    if (!(await repo.updateRef(`refs/heads/${mr.sourceBranch}`, onto, head))) {
      mr.mergeError = "Rebase failed: the source branch moved.";
      return;
    }
    mr.mergeError = null;
    await this.pushes.process(project, user, [
      { ref: `refs/heads/${mr.sourceBranch}`, before: head, after: onto },
    ]);
  }

  private async mergeLocked(mr: MergeRequest, user: User, params: MergeParams): Promise<void> {
    const project = mr.project;
    if (!this.world.canMerge(project, user, mr.targetBranch)) throw unauthorized();
    if (stateBlocker(mr) !== null) throw notAllowed();
    if (needsCheck(mr)) await this.mrs.check(mr);
    if (mr.mergeStatus !== "can_be_merged" || needRebase(mr)) {
      throw new GitLabError(this.world.options.mergeConflictStatus, "Branch cannot be merged");
    }
    if (params.sha !== undefined && params.sha !== mr.sha) {
      throw new GitLabError(409, `SHA does not match HEAD of source branch: ${mr.sha}`);
    }
    if (params.squash === true) mr.squash = true;
    const repo = this.world.repo(project);
    const target = await repo.branchHead(mr.targetBranch);
    if (target === null)
      throw new GitLabError(this.world.options.mergeConflictStatus, "Branch cannot be merged");
    const who = { name: user.name, email: user.email };
    let source = mr.sha;
    let squashSha: string | null = null;
    if (squashOnMerge(mr)) {
      const base = (await repo.bare.mergeBase(target, mr.sha)) ?? target;
      const tree = (await repo.bare.readCommit(mr.sha)).tree;
      const author = { name: mr.author.name, email: mr.author.email };
      squashSha = await repo.bare.commitTree(
        tree,
        [base],
        params.squashCommitMessage ?? mr.title,
        author,
        who,
      );
      source = squashSha;
    }
    const method = project.settings.merge_method;
    let next: string;
    let mergeCommit: string | null = null;
    if (method === "ff") {
      next = source;
    } else {
      const merged = await repo.bare.mergeTree(target, source);
      if ("conflicts" in merged)
        throw new GitLabError(this.world.options.mergeConflictStatus, "Branch cannot be merged");
      const message = params.mergeCommitMessage ?? defaultMessage(mr);
      next = await repo.bare.commitTree(merged.tree, [target, source], message, who, who);
      mergeCommit = next;
    }
    if (!(await repo.updateRef(`refs/heads/${mr.targetBranch}`, next, target))) {
      mr.mergeError = "Something went wrong during merge: the target branch moved.";
      return;
    }
    await this.mrs.markMerged(mr, user, mergeCommit, squashSha);
    await this.pushes.process(project, user, [
      { ref: `refs/heads/${mr.targetBranch}`, before: target, after: next },
    ]);
    const remove = params.shouldRemoveSourceBranch ?? mr.forceRemoveSourceBranch;
    if (remove && this.world.protectionOf(project, mr.sourceBranch) === null) {
      const head = await repo.branchHead(mr.sourceBranch);
      if (
        head !== null &&
        (await repo.updateRef(`refs/heads/${mr.sourceBranch}`, ZERO_SHA, head))
      ) {
        await this.pushes.process(project, user, [
          { ref: `refs/heads/${mr.sourceBranch}`, before: head, after: ZERO_SHA },
        ]);
      }
    }
  }
}

/** GitLab's default merge commit message (no template). */
export function defaultMessage(mr: MergeRequest): string {
  return [
    `Merge branch '${mr.sourceBranch}' into '${mr.targetBranch}'`,
    mr.title,
    `See merge request ${mr.project.pathWithNamespace}!${mr.iid}`,
  ].join("\n\n");
}
