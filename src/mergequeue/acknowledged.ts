/**
 * What a read shows of the commands acknowledged before the queue's driver applied them
 * (ADR 0018): submissions and impacted targets answered once stored in the inbox. A read looks at
 * the queue's pending commands first, then at the records, and lays the former over the latter,
 * so that it never waits for the driver and still shows every acknowledged write. Pure: what the
 * driver will record for them (docs/api.md, "Merge-queue pull requests").
 */
import {
  DEFAULT_PRIORITY,
  PRIORITY_NAMES,
  type Actor,
  type ImpactedTargets,
  type QueueSnapshot,
} from "./model.js";
import type {
  CommandRecord,
  EntryListQuery,
  EntryRecord,
  EntrySummary,
  TransitionRecord,
} from "./records.js";

/** A submission acknowledged and not yet applied (its latest, when there are several). */
export interface AcknowledgedSubmission {
  commandId: number;
  prNumber: number;
  priority: number | null;
  noBatch: boolean;
  actor: Actor;
  at: number;
}

/** The queue's acknowledged commands not yet applied, by pull request. */
export interface Acknowledged {
  queueId: string;
  /** Whether the queue's pull requests need impacted targets to be ready (parallel mode). */
  requiresImpactedTargets: boolean;
  submissions: Map<number, AcknowledgedSubmission>;
  /** The latest impacted targets of each pull request, for its head `headSha`. */
  targets: Map<number, { headSha: string; targets: ImpactedTargets }>;
}

/** None (a queue whose commands are all answered once applied). */
export const nothingAcknowledged = (queueId: string): Acknowledged => ({
  queueId,
  requiresImpactedTargets: false,
  submissions: new Map(),
  targets: new Map(),
});

/**
 * A submission not yet applied is listed after every recorded one, in the order it was stored:
 * its `seq` (the listing cursor's) is this plus its command's id.
 */
export const ACKNOWLEDGED_SEQ_BASE = 2 ** 47;

/** How many pending commands a read looks at, at most (the driver takes 100 a step). */
export const ACKNOWLEDGED_READ_LIMIT = 500;

type Payload = Record<string, unknown>;

const isRecord = (value: unknown): value is Payload =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function isActor(value: unknown): value is Actor {
  return isRecord(value) && typeof value.kind === "string";
}

function isTargets(value: unknown): value is ImpactedTargets {
  return value === "ALL" || (Array.isArray(value) && value.every((t) => typeof t === "string"));
}

/**
 * The acknowledged submissions and impacted targets among the queue's pending commands (in id
 * order); commands whose callers wait for the driver's answer, and anything else, are left out:
 * they are not acknowledged before they are applied.
 */
export function acknowledgedCommands(
  queue: { queueId: string; requiresImpactedTargets: boolean },
  pending: readonly CommandRecord[],
): Acknowledged {
  const acknowledged: Acknowledged = { ...nothingAcknowledged(queue.queueId), ...queue };
  for (const command of pending) {
    const { payload } = command;
    if (command.appliedAt !== null || !isRecord(payload) || payload.acknowledged !== true) continue;
    const prNumber = payload.prNumber;
    if (typeof prNumber !== "number") continue;
    if (payload.type === "submit" && isActor(payload.actor)) {
      acknowledged.submissions.set(prNumber, {
        commandId: command.id,
        prNumber,
        priority: typeof payload.priority === "number" ? payload.priority : null,
        noBatch: payload.noBatch === true,
        actor: payload.actor,
        at: command.createdAt,
      });
    } else if (
      payload.type === "set_impacted_targets" &&
      typeof payload.headSha === "string" &&
      isTargets(payload.targets)
    ) {
      acknowledged.targets.set(prNumber, { headSha: payload.headSha, targets: payload.targets });
    }
  }
  return acknowledged;
}

/**
 * With the targets the planner keeps for pull requests it does not hold (its snapshot's
 * `uploadedTargets`): an acknowledged submission gets them when it is applied, as it gets those
 * set after it; the latter, later, win.
 */
export function withKeptTargets(
  acknowledged: Acknowledged,
  kept: QueueSnapshot["uploadedTargets"] | undefined,
): Acknowledged {
  const targets = new Map(acknowledged.targets);
  for (const prNumber of acknowledged.submissions.keys()) {
    const uploaded = kept?.[String(prNumber)];
    if (uploaded && !targets.has(prNumber)) targets.set(prNumber, uploaded);
  }
  return { ...acknowledged, targets };
}

/**
 * The entry a submission not yet applied will be, as the planner first records it: `not_ready`
 * (reason `submitted`) since it was stored, with its priority and `noBatch`. What the driver reads
 * from the git host (title, head, base branch, author, mergeability) is not known yet: empty, as
 * is the entry's id.
 */
export function acknowledgedEntry(
  { queueId, requiresImpactedTargets }: Acknowledged,
  submission: AcknowledgedSubmission,
): EntryRecord {
  return {
    id: "",
    queueId,
    prNumber: submission.prNumber,
    prTitle: "",
    prSha: "",
    prHeadBranch: "",
    prBaseBranch: "",
    prAuthor: "",
    state: "not_ready",
    stateChangedAt: submission.at,
    submittedAt: submission.at,
    concludedAt: null,
    priorityValue: submission.priority ?? PRIORITY_NAMES[DEFAULT_PRIORITY],
    usedDefaultPriority: submission.priority === null,
    noBatch: submission.noBatch,
    seq: ACKNOWLEDGED_SEQ_BASE + submission.commandId,
    readiness: {
      mergeability: "unspecified",
      baseBranchMatches: true,
      requiresImpactedTargets,
      impactedTargets: null,
    },
    lastReason: "submitted",
  };
}

/** Whether an entry is a submission not yet applied (`acknowledgedEntry`). */
export const isAcknowledgedOnly = (entry: { id: string }): boolean => entry.id === "";

/** The transition the planner will record for a submission not yet applied. */
export function acknowledgedTransition(entry: EntryRecord, actor: Actor): TransitionRecord {
  return {
    entryId: entry.id,
    queueId: entry.queueId,
    at: entry.submittedAt,
    from: null,
    to: "not_ready",
    reason: "submitted",
    actor,
    runId: null,
    detail: null,
  };
}

/**
 * A pull request's latest entry as it reads once its acknowledged commands are applied: a new
 * submission where it has none in the queue (never submitted, or concluded), a resubmission's
 * priority and `noBatch` where it has one, and its impacted targets where they are for its head.
 */
export function withAcknowledged(
  entry: EntryRecord | undefined,
  prNumber: number,
  acknowledged: Acknowledged,
): EntryRecord | undefined {
  const submission = acknowledged.submissions.get(prNumber);
  let shown = entry;
  if (submission && (!entry || entry.concludedAt !== null)) {
    shown = acknowledgedEntry(acknowledged, submission);
  } else if (submission && entry) {
    shown = { ...entry, ...resubmitted(submission) };
  }
  const targets = acknowledged.targets.get(prNumber);
  // The planner keeps targets for the head they were set for (any, while the head is not known).
  if (shown && shown.concludedAt === null && targets) {
    if (isAcknowledgedOnly(shown) || shown.prSha === targets.headSha) {
      shown = { ...shown, readiness: { ...shown.readiness, impactedTargets: targets.targets } };
    }
  }
  return shown;
}

/**
 * The queue's active entries as they read once its acknowledged submissions are applied:
 * resubmissions change priority and `noBatch`, new ones follow the recorded entries.
 */
export function activeWithAcknowledged<T extends EntrySummary>(
  active: readonly T[],
  acknowledged: Acknowledged,
): (T | EntryRecord)[] {
  if (acknowledged.submissions.size === 0) return [...active];
  const held = new Set<number>();
  const shown: (T | EntryRecord)[] = active.map((entry) => {
    held.add(entry.prNumber);
    const submission = acknowledged.submissions.get(entry.prNumber);
    return submission ? { ...entry, ...resubmitted(submission) } : entry;
  });
  for (const submission of acknowledged.submissions.values()) {
    if (!held.has(submission.prNumber)) {
      shown.push(acknowledgedEntry(acknowledged, submission));
    }
  }
  return shown;
}

/**
 * listPullRequests' last page of recorded submissions (`query`'s) as it reads once the
 * acknowledged ones are applied: resubmissions of the pull requests in the queue (`active`, read
 * before `recorded`) change priority and `noBatch`; new submissions follow in the order they were
 * stored, where the query lists them (`not_ready`, not concluded, after the cursor), and listing
 * each pull request once (`latestOnly`) they replace its concluded submission.
 */
export function pageWithAcknowledged(
  recorded: readonly EntryRecord[],
  acknowledged: Acknowledged,
  active: ReadonlySet<number>,
  query: EntryListQuery,
): EntryRecord[] {
  // Applied after `active` was read, before `recorded` was: on the page already.
  const listed = new Set(recorded.filter((e) => e.concludedAt === null).map((e) => e.prNumber));
  const added = [...acknowledged.submissions.values()]
    .filter(({ prNumber }) => !active.has(prNumber) && !listed.has(prNumber))
    .map((submission) => acknowledgedEntry(acknowledged, submission))
    .sort((a, b) => a.seq - b.seq);
  const renewed = new Set(added.map((entry) => entry.prNumber));
  const rows = recorded
    .filter((entry) => !(query.latestOnly === true && renewed.has(entry.prNumber)))
    .map((entry) =>
      entry.concludedAt === null
        ? (withAcknowledged(entry, entry.prNumber, acknowledged) ?? entry)
        : entry,
    );
  if (query.concludedSince !== undefined || (query.state ?? "not_ready") !== "not_ready") {
    return rows;
  }
  return [...rows, ...added.filter((entry) => entry.seq > (query.afterSeq ?? 0))];
}

function resubmitted(
  submission: AcknowledgedSubmission,
): Pick<EntryRecord, "priorityValue" | "usedDefaultPriority" | "noBatch"> {
  return {
    priorityValue: submission.priority ?? PRIORITY_NAMES[DEFAULT_PRIORITY],
    usedDefaultPriority: submission.priority === null,
    noBatch: submission.noBatch,
  };
}
