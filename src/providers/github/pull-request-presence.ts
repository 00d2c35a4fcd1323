/**
 * What a team sees of the queue on a GitHub pull request: the comment, the check run and the state
 * labels, per the queue's settings, shown by the presence driver (`../presence/driver.ts`).
 * docs/github.md, "On the pull request".
 */
import { ApiError } from "../../lib/errors.js";
import { isTerminal } from "../../mergequeue/model.js";
import type { PresenceRecord } from "../../mergequeue/pull-request-presence-records.js";
import type { MergeQueueRecord } from "../../mergequeue/records.js";
import {
  PresenceDriver,
  type DriverDeps,
  type PresenceOptions,
  type PresenceTarget,
} from "../presence/driver.js";
import {
  COMMENT_MARKER,
  STATE_WORDS,
  commentStage,
  commentView,
  digest,
  renderComment,
  stateLabel,
  words,
  type PresenceView,
  type Presented,
} from "../presence/view.js";
import type { GitHubClient } from "./client.js";
import { statusOf } from "./conditional.js";
import type { GitHubRepositories } from "./repositories.js";
import { NO_RETRY, outcomeUnknown, upsertStickyComment } from "./sticky-comment.js";

export type { PresenceOptions } from "../presence/driver.js";
export {
  COMMENT_MARKER,
  COMMENT_TESTS,
  commentStage,
  renderComment,
  stateLabel,
  type PresenceView,
} from "../presence/view.js";

/** The check run's name: Trunk's, so that anything that waits for Trunk's check keeps working. */
export function checkRunName(branch: string): string {
  return `Trunk Merge Queue (${branch})`;
}

interface CheckRunFields {
  status: "in_progress" | "completed";
  conclusion?: "success" | "failure" | "neutral";
  title: string;
  summary: string;
}

/**
 * The queue's check run on a pull request; undefined: none is shown yet. With the queue's comment
 * on (`beside`), the comment tells where the pull request stands, and the check run is written
 * once, when the pull request concludes (GitHub's write budget is spent once on each). Alone, the
 * check run follows the pull request from its submission and tells where it stands itself.
 */
export function renderCheckRun(view: PresenceView, beside = false): CheckRunFields | undefined {
  if (beside && !isTerminal(view.state)) return undefined;
  const title =
    view.position !== null
      ? `${STATE_WORDS[view.state]} (position ${view.position} of ${view.queueLength})`
      : STATE_WORDS[view.state];
  const summary = [
    `State: ${view.state}; reason: ${words(view.reason)}${view.detail ? ` — ${view.detail}` : ""}.`,
    ...(view.pageUrl ? [`[The pull request on the dashboard](${view.pageUrl})`] : []),
  ].join("\n\n");
  switch (view.state) {
    case "merged":
      return { status: "completed", conclusion: "success", title, summary };
    case "failed":
      return { status: "completed", conclusion: "failure", title, summary };
    case "cancelled":
      // Taken out on purpose (or closed): not a failure of the pull request, and not blocking.
      return { status: "completed", conclusion: "neutral", title, summary };
    default:
      return { status: "in_progress", title, summary };
  }
}

export interface PresenceDeps extends DriverDeps {
  github: Pick<GitHubRepositories, "resolve">;
  /** The App's id: its own comments are the ones searched for the marker. */
  appId: () => Promise<number>;
}

export class PullRequestPresence extends PresenceDriver<PresenceDeps> {
  constructor(deps: PresenceDeps, options: Partial<PresenceOptions> = {}) {
    super(deps, options, "github-presence", "github");
  }

  /** The comment, the check run and the state label, as the queue's settings ask. */
  protected async show({ queue, repository, entry, view }: PresenceTarget): Promise<boolean> {
    const { deps } = this;
    const { queueId, prNumber } = { queueId: queue.id, prNumber: entry.prNumber };
    const { commentsEnabled, statusCheckEnabled, stateLabelsEnabled } = queue.configuration;
    const previous = await deps.store.find(queueId, prNumber);
    const shown: Presented = previous?.presented
      ? (JSON.parse(previous.presented) as Presented)
      : {};
    const stage = commentStage(view.state, shown.stage);
    const comment = commentsEnabled ? renderComment(commentView(view, stage)) : undefined;
    const check = statusCheckEnabled ? renderCheckRun(view, commentsEnabled) : undefined;
    const label = stateLabelsEnabled ? stateLabel(view.state) : (previous?.stateLabel ?? null);
    const want: Presented = {
      ...(comment ? { comment: digest(comment) } : {}),
      // No check run to show yet (the comment stands for it): what was shown stays.
      ...(check
        ? { check: digest([check, view.headSha, entry.id]) }
        : shown.check === undefined
          ? {}
          : { check: shown.check }),
    };
    if (
      want.comment === shown.comment &&
      want.check === shown.check &&
      label === (previous?.stateLabel ?? null)
    ) {
      return true;
    }

    let access;
    try {
      access = await deps.github.resolve(repository);
    } catch (error) {
      // No installation serves the repository (any more): nothing can be shown there.
      if (error instanceof ApiError) return true;
      throw error;
    }
    const repo = { owner: access.owner, repo: access.name };
    const client = access.client;
    const record: PresenceRecord = previous ?? {
      queueId,
      prNumber,
      commentId: null,
      checkRunId: null,
      checkSha: null,
      stateLabel: null,
      presented: null,
      updatedAt: 0,
    };
    const next: Presented = { ...shown };
    // A pull request shown for the first time has nothing of ours on it yet: its comment and
    // check run are created without looking for them first. The record is stored before they
    // are, so that a crash in between makes the next attempt look (and not show them twice).
    const search = previous !== undefined;
    if (!search) await deps.store.save({ ...record, updatedAt: deps.clock.now() });

    // A creation whose outcome is unknown is stored as such before the error goes on: the next
    // attempt looks for what GitHub may have made.
    const unsure = async (part: Pick<Presented, "commentUnsure" | "checkUnsure">) => {
      await deps.store.save({
        ...record,
        ...(part.commentUnsure === true ? { commentId: null } : {}),
        presented: JSON.stringify({ ...next, ...part }),
        updatedAt: deps.clock.now(),
      });
    };
    if (comment !== undefined && want.comment !== shown.comment) {
      record.commentId = await upsertStickyComment(client, {
        repo,
        prNumber,
        known: shown.commentUnsure === true ? null : record.commentId,
        marker: COMMENT_MARKER,
        body: comment,
        search: search || shown.commentUnsure === true,
        appId: deps.appId,
        onUnknown: () => unsure({ commentUnsure: true }),
      });
      next.comment = digest(comment);
      if (stage === null) delete next.stage;
      else next.stage = stage;
      delete next.commentUnsure;
    }
    if (check !== undefined && want.check !== shown.check) {
      // None of this submission yet: a new one (the first; or after an earlier submission's,
      // which stays as it concluded). Beside the comment, that is when the submission concludes.
      const earlierSubmission =
        shown.checkFor === undefined
          ? shown.checkCompleted === true && check.status !== "completed"
          : shown.checkFor !== entry.id;
      const create = !search || shown.check === undefined || earlierSubmission;
      // Marked before it is made, so that a crash in between makes the next attempt look for it.
      if (create && search && shown.checkUnsure !== view.headSha) {
        await unsure({ checkUnsure: view.headSha });
      }
      record.checkRunId = await this.upsertCheckRun(client, repo, queue, view, record, check, {
        create,
        unsure: shown.checkUnsure === view.headSha,
        onUnknown: () => unsure({ checkUnsure: view.headSha }),
      });
      record.checkSha = view.headSha;
      next.check = digest([check, view.headSha, entry.id]);
      next.checkCompleted = check.status === "completed";
      next.checkFor = entry.id;
      delete next.checkUnsure;
    }
    if (stateLabelsEnabled && label !== record.stateLabel) {
      if (record.stateLabel !== null) {
        try {
          await client.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", {
            ...repo,
            issue_number: prNumber,
            name: record.stateLabel,
          });
        } catch (error) {
          if (statusOf(error) !== 404) throw error; // someone removed it already
        }
      }
      if (label !== null) {
        await client.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", {
          ...repo,
          issue_number: prNumber,
          labels: [label],
        });
      }
      record.stateLabel = label;
    }
    record.presented = JSON.stringify(next);
    record.updatedAt = deps.clock.now();
    await deps.store.save(record);
    return true;
  }

  /** Updates the check run on the head commit, creating it for a new head; its id. */
  private async upsertCheckRun(
    client: GitHubClient,
    repo: { owner: string; repo: string },
    queue: MergeQueueRecord,
    view: PresenceView,
    record: PresenceRecord,
    fields: CheckRunFields,
    how: {
      /** Create a new one (first shown, or a new submission after the last one concluded). */
      create: boolean;
      /** An earlier creation's outcome is unknown: look for it on the head first. */
      unsure: boolean;
      /** The creation failed with an unknown outcome (stored before the error goes on). */
      onUnknown: () => Promise<void>;
    },
  ): Promise<number> {
    const body = {
      status: fields.status,
      ...(fields.conclusion ? { conclusion: fields.conclusion } : {}),
      ...(fields.status === "completed"
        ? { completed_at: new Date(this.deps.clock.now()).toISOString() }
        : {}),
      ...(view.pageUrl ? { details_url: view.pageUrl } : {}),
      output: { title: fields.title, summary: fields.summary },
    };
    let known =
      record.checkSha === view.headSha && !how.create && !how.unsure ? record.checkRunId : null;
    if (known === null && (!how.create || how.unsure)) {
      // Not known for this head (a new head, a lost row, a creation GitHub may have done): ours
      // may be there already. A concluded one of an earlier submission is not it.
      const earlier = how.create ? record.checkRunId : null;
      const appId = await this.deps.appId();
      const { data } = await client.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
        ...repo,
        ref: view.headSha,
        check_name: checkRunName(queue.targetBranch),
        app_id: appId,
        filter: "latest",
      });
      const found = data.check_runs.find(
        (run) => run.app?.id === appId && Number(run.id) !== earlier,
      );
      known = found ? Number(found.id) : null;
    }
    if (known !== null) {
      try {
        await client.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
          ...repo,
          check_run_id: known,
          ...body,
        });
        return known;
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
    }
    try {
      const { data } = await client.request("POST /repos/{owner}/{repo}/check-runs", {
        ...repo,
        name: checkRunName(queue.targetBranch),
        head_sha: view.headSha,
        external_id: `${queue.id}#${record.prNumber}`,
        started_at: new Date(this.deps.clock.now()).toISOString(),
        ...body,
        request: NO_RETRY,
      });
      return Number(data.id);
    } catch (error) {
      if (outcomeUnknown(error)) await how.onUnknown();
      throw error;
    }
  }
}
