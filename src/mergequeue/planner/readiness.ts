/**
 * Readiness: whether a queued pull request can be tested (base branch, reviews, mergeability,
 * impacted targets), and what its own state says (closed, merged, draft, landed in a stack).
 */
import { QUEUE_ACTOR, type Entry, type TransitionReason } from "../model.js";
import { type PlanningState, config } from "./state.js";
import { record, transition } from "./state-changes.js";
import { conclude, insertIntoOrder, leaveOrder } from "./order.js";

/** Why an entry cannot be tested yet, or null when it is ready. */
function notReadyReason(p: PlanningState, entry: Entry): TransitionReason | null {
  const pr = entry.pr;
  if (pr.baseBranch !== p.s.targetBranch) return "base_branch_mismatch";
  if (pr.reviewRequired === true) return "review_required";
  if (pr.mergeability === "not_mergeable") {
    return (pr.conflicts?.length ?? 0) > 0 ? "conflicts_with_base" : "not_mergeable";
  }
  // Entries already admitted keep their place while the host recomputes mergeability.
  if (entry.state === "not_ready" && pr.mergeability !== "mergeable") return "not_mergeable";
  if (config(p).mode === "parallel" && entry.impactedTargets === null) {
    return "awaiting_impacted_targets";
  }
  return null;
}

export function checkPullRequest(p: PlanningState, entry: Entry): void {
  const through = p.s.landedThrough[String(entry.pr.number)];
  if (through?.headSha === entry.pr.headSha && p.s.merging?.entryId !== entry.id) {
    // Its commits are on the branch already, inside a PR stacked on it: nothing to test.
    conclude(
      p,
      entry,
      "merged",
      "merged_through_stack",
      QUEUE_ACTOR,
      null,
      `its commits landed with #${through.by}`,
    );
    return;
  }
  if (entry.pr.state === "closed") {
    conclude(p, entry, "cancelled", "pr_closed", { kind: "git_host" });
    return;
  }
  if (entry.pr.state === "merged") {
    conclude(p, entry, "merged", "merged_manually", { kind: "git_host" });
    return;
  }
  if (entry.pr.draft) {
    conclude(p, entry, "cancelled", "pr_draft", { kind: "git_host" });
    return;
  }
  const reason = notReadyReason(p, entry);
  if (reason === null && entry.state === "not_ready") {
    entry.readyAt = p.now;
    transition(p, entry, "pending", "ready");
    insertIntoOrder(p, entry);
  } else if (reason !== null && entry.state !== "not_ready") {
    leaveOrder(p, entry, reason);
    entry.readyAt = null;
    transition(p, entry, "not_ready", reason, null, notReadyDetail(p, entry, reason));
  } else if (
    reason === "conflicts_with_base" &&
    entry.state === "not_ready" &&
    entry.conflictShown !== notReadyDetail(p, entry, reason)
  ) {
    // Held (submitted, or not ready for another reason) by a conflict with the target branch:
    // said on the timeline with its files, again when they change.
    record(p, entry, "not_ready", reason, QUEUE_ACTOR, null, notReadyDetail(p, entry, reason));
  } else if (
    reason === "review_required" &&
    entry.state === "not_ready" &&
    entry.awaitingReview !== true
  ) {
    // Submitted (or held for another reason) and now waiting for reviews: the one not-ready
    // reason a person must act on is said on the timeline, without restarting its not-ready time.
    record(p, entry, "not_ready", reason, QUEUE_ACTOR, null, notReadyDetail(p, entry, reason));
  }
  if (reason === "review_required") entry.awaitingReview = true;
  else Reflect.deleteProperty(entry, "awaitingReview");
  const conflict = reason === "conflicts_with_base" ? notReadyDetail(p, entry, reason) : null;
  if (conflict !== null) entry.conflictShown = conflict;
  else Reflect.deleteProperty(entry, "conflictShown");
}

/** Files named in a conflict's detail at most (then how many more). */
const CONFLICT_FILES_SHOWN = 10;

function notReadyDetail(p: PlanningState, entry: Entry, reason: TransitionReason): string | null {
  if (reason === "review_required") {
    return "the target branch requires approving reviews this pull request does not have yet";
  }
  if (reason === "conflicts_with_base") {
    const files = entry.pr.conflicts ?? [];
    const shown = files.slice(0, CONFLICT_FILES_SHOWN).join(", ");
    const more =
      files.length > CONFLICT_FILES_SHOWN ? ` and ${files.length - CONFLICT_FILES_SHOWN} more` : "";
    return `conflicts with ${p.s.targetBranch}: ${shown}${more}`;
  }
  return null;
}
