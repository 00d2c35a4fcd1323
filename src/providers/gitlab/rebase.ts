/**
 * Semi-linear and fast-forward projects: GitLab merges a merge request there only once its source
 * branch is on the target's head, so the queue asks GitLab to rebase it (`PUT …/rebase`, done by
 * GitLab in the background) just before merging, and merges the rebased head. The tested tree
 * still decides: after the merge, the landed tree is compared with the one the queue tested.
 */
import type { MergeRequest, MergeResult } from "../../mergequeue/providers.js";
import type { GitLabClient } from "./client.js";
import type { MergeRequestJson } from "./merge-requests.js";

type Refusal = Extract<MergeResult, { ok: false }>;

/** The project merge methods that need the source on the target's head. */
export const REBASING_METHODS = new Set(["rebase_merge", "ff"]);

export interface RebaseWait {
  /** Between reads while GitLab rebases (default 250 ms). */
  intervalMs?: number;
  /** How long GitLab may take (default 60 s); then the queue tries the merge again later. */
  timeoutMs?: number;
}

/**
 * The head to merge: the merge request's own when it is on the target's head already, else the
 * one GitLab made by rebasing it. A merge request that moved since it was tested, or that GitLab
 * cannot rebase (a conflict), is refused.
 */
export async function rebasedHead(
  client: GitLabClient,
  path: string,
  request: MergeRequest,
  wait: RebaseWait = {},
): Promise<{ ok: true; head: string } | Refusal> {
  const name = `!${String(request.prNumber)}`;
  const read = async () =>
    (
      await client.get<MergeRequestJson & { rebase_in_progress?: boolean }>(path, {
        include_rebase_in_progress: true,
      })
    ).data;
  let mr = await read();
  if (mr.sha !== request.headSha) {
    return {
      ok: false,
      reason: "head_moved",
      message: `${name} is at ${mr.sha ?? "nothing"}, not ${request.headSha}`,
    };
  }
  if (mr.diff_refs?.base_sha === request.expectedBaseSha) return { ok: true, head: mr.sha };
  // Asked once; an answer lost on the way is read back below like any other.
  await client.request("PUT", `${path}/rebase`).catch(() => undefined);
  const deadline = Date.now() + (wait.timeoutMs ?? 60_000);
  for (;;) {
    mr = await read();
    const done = mr.rebase_in_progress !== true;
    if (done && mr.sha !== request.headSha && mr.sha !== null) return { ok: true, head: mr.sha };
    if (done && mr.merge_error) {
      return {
        ok: false,
        reason: "merge_conflict",
        message: `GitLab could not rebase ${name} onto ${request.targetBranch}: ${mr.merge_error}`,
      };
    }
    if (Date.now() > deadline) {
      return {
        ok: false,
        reason: "base_moved",
        message: `GitLab did not rebase ${name} within ${String((wait.timeoutMs ?? 60_000) / 1000)} s`,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, wait.intervalMs ?? 250));
  }
}
