/**
 * The commits a GitLab queue tests, made in the project's mirror: each merge request's head
 * merged onto the base and those ahead of it, one merge commit each, dated as the base so that
 * the same heads on the same base make the same commits (a retried run tests the same commit).
 */
import type {
  MergeRequest,
  MergeResult,
  TestBranchRequest,
  TestBranchResult,
} from "../../mergequeue/providers.js";
import { assertObjectId, conflictsAhead, type RepositoryGit } from "../local/git/repository-git.js";

/** How far back a test branch's first-parent chain is searched for a merge request's merge. */
const MAX_TEST_BRANCH_DEPTH = 256;

type Built = { ok: true; sha: string } | Extract<TestBranchResult, { ok: false }>;

export async function buildTestCommit(
  git: RepositoryGit,
  request: TestBranchRequest,
): Promise<Built> {
  let current = request.baseSha;
  const date = await git.readCommitDate(request.baseSha);
  for (const [index, pr] of request.prs.entries()) {
    assertObjectId(pr.headSha, `head of !${String(pr.number)}`);
    const merged = await git.mergeTree(current, pr.headSha);
    if (!merged.clean) {
      const ahead = request.prs.slice(0, index);
      const conflictsWith = await conflictsAhead(git, request.baseSha, ahead, pr.headSha);
      return {
        ok: false,
        reason: "merge_conflict",
        prNumber: pr.number,
        files: merged.files,
        conflictsWith,
        message: `!${String(pr.number)} does not merge onto ${request.targetBranch} and the merge requests ahead of it: ${merged.summary}`,
      };
    }
    const message = `Merge !${String(pr.number)} into a test branch of ${request.targetBranch}\n\nMainline run ${request.runId}`;
    current = await git.commitTree(merged.tree, [current, pr.headSha], message, { date });
  }
  return { ok: true, sha: current };
}

/**
 * The tree the merge request passed with: the merge of its head on the test branch that cleared
 * it, found on that branch's first-parent chain. The base must hold the tree that merge was made
 * onto (those ahead landed as tested), or the test does not hold for it.
 */
export async function testedTree(
  git: RepositoryGit,
  request: MergeRequest,
): Promise<{ ok: true; tree: string; sha: string } | Extract<MergeResult, { ok: false }>> {
  const name = `!${String(request.prNumber)}`;
  let sha = request.testedSha;
  for (let step = 0; sha !== undefined && step < MAX_TEST_BRANCH_DEPTH; step++) {
    if ((await git.resolve(sha)) !== sha) break;
    const parents = await git.parents(sha);
    const [first, second] = parents;
    if (parents.length === 2 && second === request.headSha && first !== undefined) {
      if (
        first !== request.expectedBaseSha &&
        (await git.readTree(first)) !== (await git.readTree(request.expectedBaseSha))
      ) {
        return {
          ok: false,
          reason: "base_moved",
          message: `${request.targetBranch} at ${request.expectedBaseSha} does not hold what ${name} was tested on`,
        };
      }
      return { ok: true, tree: await git.readTree(sha), sha };
    }
    sha = first;
  }
  return {
    ok: false,
    reason: "rejected",
    message: `${name} at ${request.headSha} is not on the test branch ${request.testedSha ?? ""} that cleared it`,
  };
}
