/**
 * The App's one comment of a kind on a pull request, edited in place: found by its id, else (when
 * an earlier attempt may have made it) by its hidden marker among the App's comments, else made.
 * A creation is never retried blindly: an unknown outcome is reported, for the next attempt to look.
 */
import { paginate, type GitHubClient } from "./client.js";
import { statusOf } from "./conditional.js";

export { inlineCode } from "../presence/view.js";

/** Whether a failed request may have been carried out all the same (GitHub's 5xx, no answer). */
export function outcomeUnknown(error: unknown): boolean {
  const status = statusOf(error);
  return status === undefined || status >= 500;
}

/** Creations are never retried blindly: an unknown outcome is looked for before a new attempt. */
export const NO_RETRY = { retries: 0 } as const;

export interface StickyComment {
  repo: { owner: string; repo: string };
  prNumber: number;
  /** The comment's id when known. */
  known: number | null;
  /** The first line of the body, which tells this comment from every other. */
  marker: string;
  body: string;
  /** Whether an earlier attempt may have made it: look among the comments first. */
  search: boolean;
  appId: () => Promise<number | undefined>;
  /** The creation failed with an unknown outcome (called before the error goes on). */
  onUnknown: () => Promise<void>;
}

/** Writes the comment; its id. */
export async function upsertStickyComment(
  client: GitHubClient,
  comment: StickyComment,
): Promise<number> {
  const { repo, prNumber, body } = comment;
  let id = comment.known;
  if (id === null && comment.search) {
    const appId = await comment.appId();
    const ours = await paginate(
      client,
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
      { ...repo, issue_number: prNumber },
      (data) =>
        (data as { id: number; body?: string; performed_via_github_app?: { id: number } | null }[])
          .filter(
            (c) =>
              c.performed_via_github_app?.id === appId && (c.body ?? "").startsWith(comment.marker),
          )
          .map((c) => c.id),
    );
    id = ours[0] ?? null;
  }
  if (id !== null) {
    try {
      await client.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
        ...repo,
        comment_id: id,
        body,
      });
      return id;
    } catch (error) {
      if (statusOf(error) !== 404) throw error; // deleted by someone: made again
    }
  }
  try {
    const { data } = await client.request(
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      { ...repo, issue_number: prNumber, body, request: NO_RETRY },
    );
    return Number(data.id);
  } catch (error) {
    if (outcomeUnknown(error)) await comment.onUnknown();
    throw error;
  }
}
