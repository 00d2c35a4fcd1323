/**
 * What a queued pull request waits for, in words: the planner's `WaitingReason` for a pending one
 * it holds on purpose (kept in the queue's snapshot, see `Entry.waiting`), and the localization a
 * suspect of a failed batch waits for, as the API and the CLI show them. Derived at read time
 * from the stored snapshot; nothing about it is stored elsewhere.
 */
import type { QueueSnapshot, WaitingReason } from "./model.js";
import { localizationsOf, undecidedEntries, type LocalizationView } from "./localizations.js";

/** The planner's reasons, and `under_localization` (a suspect of a failed batch). */
export type WaitingKind = WaitingReason["kind"] | "under_localization";

export const WAITING_KINDS = [
  "batch_forming",
  "bisection_ahead",
  "under_localization",
] as const satisfies readonly WaitingKind[];

/** A queued entry's wait, as a read answers it. Times are epoch milliseconds. */
export interface WaitingFor {
  reason: WaitingKind;
  /** In words, with times in RFC 3339 (UTC). */
  message: string;
  /** When the wait ends at the latest (batch forming: the batch starts by then). */
  until?: number;
  /** Batch forming: how many pull requests the batch holds, and the size it waits for. */
  batch?: { have: number; need: number };
  /**
   * Bisection ahead: the suspects of the failed batch ahead being localized; under
   * localization: those of its own (one of them fails the batch).
   */
  prNumbers?: number[];
  /** Under localization: the failed batch run being localized. */
  runId?: string;
}

const prList = (numbers: readonly number[]) => numbers.map((n) => `#${String(n)}`).join(", ");

/**
 * "batch forming: 1 of 3, starts by 15:19 at the latest"; `time` writes the deadline (an RFC 3339
 * time in the API, a local clock time in the CLI).
 */
export function describeWaiting(
  reason: Pick<WaitingFor, "until" | "batch" | "prNumbers"> & { reason: WaitingReason["kind"] },
  time: (epochMs: number) => string = (ms) => new Date(ms).toISOString(),
): string {
  if (reason.reason === "batch_forming") {
    const { have, need } = reason.batch ?? { have: 0, need: 0 };
    const by = reason.until === undefined ? "" : `, starts by ${time(reason.until)} at the latest`;
    return `batch forming: ${String(have)} of ${String(need)}${by}`;
  }
  const suspects = reason.prNumbers ?? [];
  return suspects.length === 0
    ? "waiting for the localization of the failed batch ahead"
    : `waiting for the localization of the failed batch ahead (suspects ${prList(suspects)})`;
}

export function toWaitingFor(reason: WaitingReason): WaitingFor {
  const base =
    reason.kind === "batch_forming"
      ? {
          reason: reason.kind,
          until: reason.startsBy,
          batch: { have: reason.have, need: reason.need },
        }
      : { reason: reason.kind, prNumbers: [...reason.prNumbers] };
  return { ...base, message: describeWaiting(base) };
}

/** A suspect's wait for the localization of its failed batch. */
export function localizationWait(view: LocalizationView): WaitingFor {
  return {
    reason: "under_localization",
    message: `under localization: ${view.summary}`,
    prNumbers: [...view.suspects],
    runId: view.runId,
  };
}

/**
 * The waits of a snapshot's entries, by entry id (only entries that wait): the pending ones the
 * planner holds on purpose, and the suspects of the localizations in progress (`pending_failure`).
 */
export function waitsOf(snapshot: QueueSnapshot | undefined): Map<string, WaitingFor> {
  const waits = new Map<string, WaitingFor>();
  if (!snapshot) return waits;
  for (const id of snapshot.waiting ?? []) {
    const entry = snapshot.entries[id];
    if (entry?.state === "pending" && entry.waiting) waits.set(id, toWaitingFor(entry.waiting));
  }
  for (const view of localizationsOf(snapshot)) {
    const group = snapshot.bisections[view.id];
    if (!group) continue;
    const wait = localizationWait(view);
    for (const id of undecidedEntries(snapshot, group)) waits.set(id, { ...wait });
  }
  return waits;
}
