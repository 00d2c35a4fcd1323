/**
 * What a team sees of the queue on a GitHub pull request: the comment, the check run and the state
 * labels, per the queue's settings. Driven durably from `mq_transitions` by one worker at a time (a
 * lease on a cursor), each pull request brought to its current state; what was last shown is
 * stored, so a transition read again sends nothing. docs/github.md, "On the pull request".
 */
import { createHash } from "node:crypto";
import { ApiError } from "../../lib/errors.js";
import type { Clock } from "../../lib/clock.js";
import { SECOND_MS } from "../../lib/time.js";
import { isTerminal, priorityName, type PrState } from "../../mergequeue/model.js";
import type {
  PresenceRecord,
  PresenceRecords,
  TransitionMark,
} from "../../mergequeue/pull-request-presence-records.js";
import type {
  EntryRecord,
  EntrySummary,
  MergeQueueRecord,
  MergeQueueRecords,
  RepositoryRecords,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { Repository } from "../../organizations/repositories.js";
import type { GitHubClient, GitHubLogger } from "./client.js";
import { statusOf } from "./conditional.js";
import type { GitHubRepositories } from "./repositories.js";
import { NO_RETRY, inlineCode, outcomeUnknown, upsertStickyComment } from "./sticky-comment.js";
import type { FailureExplainer } from "../../mergequeue/failure-explanation.js";
import { VERDICT_WORDS, type FailureVerdict } from "../../testhealth/failure-verdicts.js";

/** The hidden marker that tells the App's sticky comment from every other comment. */
export const COMMENT_MARKER = "<!-- mainline:queue -->";

/** The check run's name: Trunk's, so that anything that waits for Trunk's check keeps working. */
export function checkRunName(branch: string): string {
  return `Trunk Merge Queue (${branch})`;
}

/** The state label a pull request carries in each state (Trunk's labels); null: none. */
export function stateLabel(state: PrState): string | null {
  switch (state) {
    case "not_ready":
    case "pending":
      return "trunk:queued";
    case "testing":
    case "tests_passed":
    case "pending_failure":
      return "trunk:testing";
    case "failed":
      return "trunk:failed";
    case "merged":
    case "cancelled":
      return null;
  }
}

const STATE_WORDS: Record<PrState, string> = {
  not_ready: "Waiting to be ready",
  pending: "Queued",
  testing: "Testing",
  tests_passed: "Tests passed, waiting to merge",
  pending_failure: "Failed, waiting for the pull requests ahead",
  merged: "Merged",
  failed: "Failed",
  cancelled: "Cancelled",
};

/** What is shown of a pull request: its latest submission to one queue. */
export interface PresenceView {
  queueBranch: string;
  state: PrState;
  headSha: string;
  /** 1-based place among the queue's active pull requests; null once concluded. */
  position: number | null;
  queueLength: number;
  priority: string;
  /** The last transition's reason, and its detail when it has one. */
  reason: string;
  detail: string | null;
  /** The pull request's page on the dashboard; undefined without MAINLINE_PUBLIC_URL. */
  pageUrl: string | undefined;
  /** A failed pull request's failing tests (the first few), and how many more failed. */
  failedTests?: { name: string; verdict: FailureVerdict; summary: string | null }[];
  moreFailedTests?: number;
  /** Even more failed than the explanation lists. */
  moreThanListed?: boolean;
}

/** At most this many failing tests are named in the comment (the page names them all). */
export const COMMENT_TESTS = 10;

function failedTestLines(view: PresenceView): string[] {
  const tests = view.failedTests ?? [];
  if (tests.length === 0) return [];
  const more = view.moreFailedTests ?? 0;
  const lines = ["", "Failing tests:"];
  for (const test of tests) {
    const summary = test.summary ? ` — ${inlineCode(test.summary.slice(0, 200))}` : "";
    lines.push(`- ${inlineCode(test.name)}: ${VERDICT_WORDS[test.verdict]}${summary}`);
  }
  if (view.moreThanListed) lines.push(`- …and more than ${String(more)} more`);
  else if (more > 0) lines.push(`- …and ${String(more)} more`);
  return lines;
}

const words = (reason: string) => reason.replace(/_/g, " ");

export function renderComment(view: PresenceView): string {
  const lines = [COMMENT_MARKER, `### Merge queue (\`${view.queueBranch}\`)`, ""];
  // No position: it changes whenever a pull request ahead moves, and an edit each time would
  // spend GitHub's write budget on what the dashboard's page shows live (with the expected time).
  let status = `**${STATE_WORDS[view.state]}**`;
  if (view.position !== null) status += ` (priority ${view.priority})`;
  lines.push(status);
  // Why it is held back, once the queue knows (a review to give, a conflict to resolve…).
  const held = view.state === "not_ready" && view.reason !== "submitted";
  if (
    held ||
    view.state === "failed" ||
    view.state === "cancelled" ||
    view.state === "pending_failure"
  ) {
    lines.push("", `Reason: ${words(view.reason)}${view.detail ? ` — ${view.detail}` : ""}`);
    lines.push(...failedTestLines(view));
  }
  if (view.pageUrl) {
    lines.push(
      "",
      isTerminal(view.state)
        ? `[See it on the merge queue's dashboard](${view.pageUrl})`
        : `[Its place in the queue and when it should merge: the merge queue's dashboard](${view.pageUrl})`,
    );
  }
  lines.push(
    "",
    isTerminal(view.state)
      ? "<sub>Comment `/trunk merge` to submit it again.</sub>"
      : "<sub>Comment `/trunk cancel` to take it out of the queue.</sub>",
  );
  return lines.join("\n");
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

const digest = (value: unknown) =>
  createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 32);

/**
 * What the comment shows of a pull request still in the queue: queued, or being tested. Once
 * tested, it says "Testing" until the pull request concludes, whatever it passes through (tests
 * passed, failed behind the pull requests ahead, back to pending for a localization, tested
 * again): each would be an edit, and GitHub's write budget is spent on what a reader acts on. The
 * dashboard's page follows every state.
 */
export type CommentStage = "queued" | "testing";

export function commentStage(state: PrState, shown: CommentStage | undefined): CommentStage | null {
  if (isTerminal(state)) return null;
  if (state === "testing" || state === "tests_passed" || state === "pending_failure") {
    return "testing";
  }
  return state === "pending" && shown === "testing" ? "testing" : "queued";
}

/** The view the comment renders: a pull request being tested has no position to follow. */
function commentView(view: PresenceView, stage: CommentStage | null): PresenceView {
  return stage === "testing" ? { ...view, state: "testing", position: null } : view;
}

/** The digests of what was last shown, per part. */
interface Presented {
  /** The comment's stage as last shown (none once concluded). */
  stage?: CommentStage;
  comment?: string;
  check?: string;
  /** The check run shown is completed: a new submission gets a check run of its own. */
  checkCompleted?: boolean;
  /** The submission (queue entry) whose check run is shown. */
  checkFor?: string;
  /**
   * A creation GitHub may or may not have done (it failed with a 5xx or no answer): the comment
   * is looked for by its marker, the check run by name on this head, before making it again.
   */
  commentUnsure?: boolean;
  checkUnsure?: string;
}

/** The queue's rough order (as `PullRequestService` lists it): in flight, waiting, not ready. */
function positionOf(entries: readonly EntrySummary[], entryId: string): number | null {
  const inFlight = new Set<PrState>(["testing", "tests_passed", "pending_failure"]);
  const rank = (e: EntrySummary) => (inFlight.has(e.state) ? 0 : e.state === "not_ready" ? 2 : 1);
  const ordered = [...entries].sort(
    (a, b) =>
      rank(a) - rank(b) || (rank(a) === 1 ? a.priorityValue - b.priorityValue : 0) || a.seq - b.seq,
  );
  const index = ordered.findIndex((e) => e.id === entryId);
  return index < 0 ? null : index + 1;
}

export interface PresenceDeps {
  store: PresenceRecords;
  queues: Pick<MergeQueueRecords, "findById">;
  repositories: Pick<RepositoryRecords, "findById">;
  runtime: Pick<RuntimeRecords, "latestEntry" | "activeSummaries" | "transitions">;
  github: Pick<GitHubRepositories, "resolve">;
  /** The host name of GitHub's repositories (`github.com`, a GHES host). */
  host: string;
  /** The App's id: its own comments are the ones searched for the marker. */
  appId: () => Promise<number>;
  /** The pull request's page on the dashboard, when the server knows its public address. */
  pageUrl?:
    | ((repository: Repository, branch: string, number: number) => Promise<string | undefined>)
    | undefined;
  /** Why a pull request failed: the comment names its failing tests. */
  failures?: Pick<FailureExplainer, "explainEntry"> | undefined;
  clock: Clock;
  logger: GitHubLogger;
  owner: string;
}

export interface PresenceOptions {
  pollIntervalMs: number;
  leaseMs: number;
  batchSize: number;
  /**
   * A gap in the transitions' ids younger than this may be a transaction not committed yet
   * (PostgreSQL hands out ids before commit): the cursor waits at the gap until it is older.
   */
  gapGraceMs: number;
  /**
   * A state still in the queue (not merged, failed or cancelled) is shown once it has held this
   * long: a pull request that passes through states within a moment (queued, testing, tests
   * passed, merged) gets one edit for them, not one each. Concluded states are shown at once.
   */
  settleMs: number;
}

const DEFAULTS: PresenceOptions = {
  pollIntervalMs: SECOND_MS,
  leaseMs: 30 * SECOND_MS,
  batchSize: 500,
  gapGraceMs: 10 * SECOND_MS,
  settleMs: 2 * SECOND_MS,
};

const CURSOR = "github-presence";

export class PullRequestPresence {
  private readonly options: PresenceOptions;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private again = false;
  /** Passes run one at a time (the timer's and `idle`'s). */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly deps: PresenceDeps,
    options: Partial<PresenceOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.deps.store.releaseCursor(CURSOR, this.deps.owner).catch(() => undefined);
  }

  /** Looks for new transitions now. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /**
   * Resolves once every transition stored so far is shown (tests, benchmarks), states still
   * settling included.
   */
  async idle(): Promise<void> {
    for (;;) {
      const caughtUp = await this.pass({ settle: false });
      if (caughtUp) return;
    }
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .then((caughtUp) => {
          this.running = undefined;
          if (this.stopped) return;
          const soon = this.again || !caughtUp;
          this.again = false;
          this.schedule(soon ? 0 : this.options.pollIntervalMs);
        })
        .catch((error: unknown) => {
          this.running = undefined;
          this.deps.logger.warn({ err: error }, "github: presence pass failed; will retry");
          if (!this.stopped) this.schedule(this.options.pollIntervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  /**
   * One pass; false when a full batch was read (more may follow at once). `settle` (default):
   * a state younger than `settleMs` that is not a conclusion waits for a later pass.
   */
  pass(options: { settle?: boolean } = {}): Promise<boolean> {
    const settleMs = options.settle === false ? 0 : this.options.settleMs;
    const result = this.chain.then(() => this.passNow(settleMs));
    this.chain = result.catch(() => undefined);
    return result;
  }

  private async passNow(settleMs: number): Promise<boolean> {
    const { store, clock, owner } = this.deps;
    const now = clock.now();
    const cursor = await store.claimCursor(CURSOR, owner, now, now + this.options.leaseMs);
    if (cursor === undefined) return true;
    const marks = await store.transitionsAfter(cursor, this.options.batchSize);
    if (marks.length === 0) return true;

    // Up to where the cursor may move: not past a young gap (an uncommitted transaction).
    let safe = cursor;
    for (const mark of marks) {
      if (mark.id !== safe + 1 && now - mark.at < this.options.gapGraceMs) break;
      safe = mark.id;
    }

    // One update per pull request, in the order of their latest transition.
    const latest = new Map<string, TransitionMark>();
    const first = new Map<string, number>();
    for (const mark of marks) {
      const key = `${mark.queueId}#${mark.prNumber}`;
      latest.delete(key);
      latest.set(key, mark);
      if (!first.has(key)) first.set(key, mark.id);
    }
    for (const [key, mark] of latest) {
      try {
        const settling = settleMs > 0 ? { since: mark.at, ms: settleMs } : undefined;
        const shown = await this.present(mark.queueId, mark.prNumber, settling);
        // Not shown yet (settling): not past its first transition, shown at a later pass.
        if (!shown) safe = Math.min(safe, (first.get(key) ?? mark.id) - 1);
      } catch (error) {
        // Not past this pull request's first transition: it is tried again at the next pass.
        safe = Math.min(safe, (first.get(key) ?? mark.id) - 1);
        this.deps.logger.warn(
          { err: error, queueId: mark.queueId, prNumber: mark.prNumber },
          "github: could not update a pull request's merge-queue comment, check or labels; will retry",
        );
      }
    }
    if (safe > cursor) await store.advanceCursor(CURSOR, owner, safe, clock.now());
    // A full batch: more to read at once. Otherwise what is left (a young gap, a pull request
    // GitHub refused) waits for the next poll.
    return marks.length < this.options.batchSize;
  }

  /**
   * Brings one pull request on GitHub to its current state in the queue; false when it waits
   * instead (`settling`: a state that is no conclusion, which changed less than `ms` ago at
   * `since`, its latest transition).
   */
  async present(
    queueId: string,
    prNumber: number,
    settling?: { since: number; ms: number },
  ): Promise<boolean> {
    const { deps } = this;
    const queue = await deps.queues.findById(queueId);
    if (!queue) return true;
    const { commentsEnabled, statusCheckEnabled, stateLabelsEnabled } = queue.configuration;
    if (!commentsEnabled && !statusCheckEnabled && !stateLabelsEnabled) return true;
    const repository = await deps.repositories.findById(queue.repositoryId);
    if (repository?.host.toLowerCase() !== deps.host.toLowerCase()) return true;
    const entry = await deps.runtime.latestEntry(queueId, prNumber);
    if (!entry) return true;
    if (
      settling !== undefined &&
      !isTerminal(entry.state) &&
      deps.clock.now() - settling.since < settling.ms
    ) {
      return false;
    }

    const view = await this.view(queue, repository, entry);
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

  private async view(
    queue: MergeQueueRecord,
    repository: Repository,
    entry: EntryRecord,
  ): Promise<PresenceView> {
    const { runtime } = this.deps;
    let position: number | null = null;
    let queueLength = 0;
    if (!isTerminal(entry.state)) {
      const active = await runtime.activeSummaries(queue.id);
      position = positionOf(active, entry.id);
      queueLength = active.length;
    }
    let detail: string | null = null;
    if (entry.state === "failed" || entry.state === "cancelled") {
      const transitions = await runtime.transitions(entry.id);
      detail = transitions[transitions.length - 1]?.detail ?? null;
    }
    const failure = await this.deps.failures?.explainEntry(repository, entry);
    const tests = failure?.tests ?? [];
    return {
      queueBranch: queue.targetBranch,
      state: entry.state,
      headSha: entry.prSha,
      position,
      queueLength,
      priority: priorityName(entry.priorityValue),
      reason: entry.lastReason,
      detail,
      pageUrl: await this.deps.pageUrl?.(repository, queue.targetBranch, entry.prNumber),
      ...(tests.length === 0
        ? {}
        : {
            failedTests: tests.slice(0, COMMENT_TESTS).map((test) => ({
              name: test.classname ? `${test.classname}.${test.name}` : test.name,
              verdict: test.verdict,
              summary: test.summary,
            })),
            moreFailedTests: tests.length - Math.min(tests.length, COMMENT_TESTS),
            ...(failure?.testsTruncated ? { moreThanListed: true } : {}),
          }),
    };
  }

  /** Edits the sticky comment, finding or creating it first; its id. */
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
