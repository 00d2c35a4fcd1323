/**
 * What a team sees of the queue on a GitLab merge request: the queue's one note, edited in place,
 * and its state label (`trunk:queued`, `trunk:testing`, `trunk:failed`), per the queue's settings,
 * shown by the presence driver (`../presence/driver.ts`). A note whose creation GitLab may have
 * done (a 5xx, no answer) is looked for by its hidden marker among the token user's notes before
 * it is made again (docs/gitlab.md, "On the merge request").
 */
import { ApiError } from "../../lib/errors.js";
import type { PresenceRecord } from "../../mergequeue/pull-request-presence-records.js";
import {
  PresenceDriver,
  type DriverDeps,
  type PresenceOptions,
  type PresenceTarget,
} from "../presence/driver.js";
import {
  COMMENT_MARKER,
  commentStage,
  commentView,
  digest,
  renderComment,
  stateLabel,
  type Presented,
} from "../presence/view.js";
import { GitLabError, GitLabUnreachable, projectId, type GitLabClient } from "./client.js";
import type { GitLabConnections } from "./connections.js";

export interface GitLabPresenceDeps extends DriverDeps {
  connections: Pick<GitLabConnections, "access">;
}

interface NoteJson {
  id: number;
  body: string;
  system?: boolean;
  author?: { id?: number };
}

/** Whether a failed write may have been carried out all the same (a 5xx, no answer). */
function outcomeUnknown(error: unknown): boolean {
  return (
    (error instanceof GitLabUnreachable && !error.notSent) ||
    (error instanceof GitLabError && error.status >= 500)
  );
}

export class GitLabPresence extends PresenceDriver<GitLabPresenceDeps> {
  constructor(deps: GitLabPresenceDeps, options: Partial<PresenceOptions> = {}) {
    super(deps, options, "gitlab-presence", "gitlab");
  }

  protected async show({ queue, repository, entry, view }: PresenceTarget): Promise<boolean> {
    const { deps } = this;
    const prNumber = entry.prNumber;
    const { commentsEnabled, stateLabelsEnabled } = queue.configuration;
    const previous = await deps.store.find(queue.id, prNumber);
    const shown: Presented = previous?.presented
      ? (JSON.parse(previous.presented) as Presented)
      : {};
    const stage = commentStage(view.state, shown.stage);
    const note = commentsEnabled ? renderComment(commentView(view, stage)) : undefined;
    const label = stateLabelsEnabled ? stateLabel(view.state) : (previous?.stateLabel ?? null);
    const noteChanged = note !== undefined && digest(note) !== shown.comment;
    const labelChanged = label !== (previous?.stateLabel ?? null);
    if (!noteChanged && !labelChanged) return true;

    let access;
    try {
      access = await deps.connections.access(repository.organizationId);
    } catch (error) {
      // Not connected (any more): nothing can be shown there.
      if (error instanceof ApiError) return true;
      throw error;
    }
    const mr = `/projects/${projectId(repository.owner, repository.name)}/merge_requests/${String(prNumber)}`;
    const record: PresenceRecord = previous ?? {
      queueId: queue.id,
      prNumber,
      commentId: null,
      checkRunId: null,
      checkSha: null,
      stateLabel: null,
      presented: null,
      updatedAt: 0,
    };
    const next: Presented = { ...shown };
    // Stored before anything is made, so that a crash in between makes the next attempt look.
    if (!previous) await deps.store.save({ ...record, updatedAt: deps.clock.now() });
    if (note !== undefined && noteChanged) {
      const search =
        previous !== undefined && (record.commentId === null || shown.commentUnsure === true);
      record.commentId = await this.upsertNote(access.client, mr, {
        known: shown.commentUnsure === true ? null : record.commentId,
        search,
        userId: access.connection.userId,
        body: note,
        onUnknown: async () => {
          await deps.store.save({
            ...record,
            commentId: null,
            presented: JSON.stringify({ ...next, commentUnsure: true }),
            updatedAt: deps.clock.now(),
          });
        },
      });
      next.comment = digest(note);
      if (stage === null) delete next.stage;
      else next.stage = stage;
      delete next.commentUnsure;
    }
    if (labelChanged) {
      // One write for both: adding a label twice or removing one that is gone is harmless.
      await access.client.request("PUT", mr, {
        body: {
          ...(label === null ? {} : { add_labels: label }),
          ...(record.stateLabel === null ? {} : { remove_labels: record.stateLabel }),
        },
      });
      record.stateLabel = label;
    }
    record.presented = JSON.stringify(next);
    record.updatedAt = deps.clock.now();
    await deps.store.save(record);
    return true;
  }

  /** Edits the queue's note, finding or creating it first; its id. */
  private async upsertNote(
    client: GitLabClient,
    mr: string,
    how: {
      known: number | null;
      search: boolean;
      userId: number;
      body: string;
      onUnknown: () => Promise<void>;
    },
  ): Promise<number> {
    let known = how.known;
    if (known === null && how.search) {
      const notes = await client.get<NoteJson[]>(`${mr}/notes`, {
        sort: "desc",
        order_by: "created_at",
        per_page: 100,
      });
      known =
        notes.data.find(
          (note) =>
            note.author?.id === how.userId &&
            note.system !== true &&
            note.body.startsWith(COMMENT_MARKER),
        )?.id ?? null;
    }
    if (known !== null) {
      try {
        await client.request("PUT", `${mr}/notes/${String(known)}`, { body: { body: how.body } });
        return known;
      } catch (error) {
        // Deleted by someone: made again.
        if (!(error instanceof GitLabError && error.status === 404)) throw error;
      }
    }
    try {
      const made = await client.request<NoteJson>("POST", `${mr}/notes`, {
        body: { body: how.body },
      });
      return made.data.id;
    } catch (error) {
      if (outcomeUnknown(error)) await how.onUnknown();
      throw error;
    }
  }
}
