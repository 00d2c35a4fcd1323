/**
 * What a team sees of the queue on a pull (or merge) request, whatever the git host: the queue's
 * one comment (a GitHub comment, a GitLab note) and its state label, rendered from the pull
 * request's latest submission. Pure but for `buildView`, which reads the queue's records.
 */
import { createHash } from "node:crypto";
import { isTerminal, priorityName, type PrState } from "../../mergequeue/model.js";
import type { FailureExplainer } from "../../mergequeue/failure-explanation.js";
import type {
  EntryRecord,
  EntrySummary,
  MergeQueueRecord,
  RuntimeRecords,
} from "../../mergequeue/records.js";
import type { Repository } from "../../organizations/repositories.js";
import { VERDICT_WORDS, type FailureVerdict } from "../../testhealth/failure-verdicts.js";

/**
 * A Markdown inline code span of one line. A text holding a backtick is fenced by two, with a
 * space inside each fence (CommonMark strips one), so that it may start or end with one.
 */
export function inlineCode(text: string): string {
  const line = text.replace(/\s+/g, " ").replace(/``+/g, "`");
  return line.includes("`") ? `\`\` ${line} \`\`` : `\`${line}\``;
}

/** The hidden marker that tells the App's sticky comment from every other comment. */
export const COMMENT_MARKER = "<!-- mainline:queue -->";

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

export const STATE_WORDS: Record<PrState, string> = {
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

export const words = (reason: string) => reason.replace(/_/g, " ");

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

export const digest = (value: unknown) =>
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
export function commentView(view: PresenceView, stage: CommentStage | null): PresenceView {
  return stage === "testing" ? { ...view, state: "testing", position: null } : view;
}

/** The digests of what was last shown, per part. */
export interface Presented {
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
export function positionOf(entries: readonly EntrySummary[], entryId: string): number | null {
  const inFlight = new Set<PrState>(["testing", "tests_passed", "pending_failure"]);
  const rank = (e: EntrySummary) => (inFlight.has(e.state) ? 0 : e.state === "not_ready" ? 2 : 1);
  const ordered = [...entries].sort(
    (a, b) =>
      rank(a) - rank(b) || (rank(a) === 1 ? a.priorityValue - b.priorityValue : 0) || a.seq - b.seq,
  );
  const index = ordered.findIndex((e) => e.id === entryId);
  return index < 0 ? null : index + 1;
}

/** What `buildView` reads. */
export interface PresenceDriverDeps {
  runtime: Pick<RuntimeRecords, "latestEntry" | "activeSummaries" | "transitions">;
  /** The pull request's page on the dashboard, when the server knows its public address. */
  pageUrl?:
    | ((repository: Repository, branch: string, number: number) => Promise<string | undefined>)
    | undefined;
  /** Why a pull request failed: the comment names its failing tests. */
  failures?: Pick<FailureExplainer, "explainEntry"> | undefined;
}

/** What is shown of a pull request: its latest submission to the queue, as it stands. */
export async function buildView(
  deps: Pick<PresenceDriverDeps, "runtime" | "failures" | "pageUrl">,
  queue: MergeQueueRecord,
  repository: Repository,
  entry: EntryRecord,
): Promise<PresenceView> {
  const { runtime } = deps;
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
  const failure = await deps.failures?.explainEntry(repository, entry);
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
    pageUrl: await deps.pageUrl?.(repository, queue.targetBranch, entry.prNumber),
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
