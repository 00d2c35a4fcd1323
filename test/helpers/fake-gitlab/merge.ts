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
