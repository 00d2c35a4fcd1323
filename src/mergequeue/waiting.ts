/**
 * What a pending pull request waits for, in words: the planner's `WaitingReason` (kept in the
 * queue's snapshot, see `Entry.waiting`) as the API and the CLI show it. Derived at read time from
 * the stored snapshot; nothing about it is stored elsewhere.
 */
import type { QueueSnapshot, WaitingReason } from "./model.js";

export type WaitingKind = WaitingReason["kind"];

export const WAITING_KINDS = [
  "batch_forming",
  "bisection_ahead",
] as const satisfies readonly WaitingKind[];

/** A pending entry's wait, as a read answers it. Times are epoch milliseconds. */
export interface WaitingFor {
  reason: WaitingKind;
  /** In words, with times in RFC 3339 (UTC). */
  message: string;
  /** When the wait ends at the latest (batch forming: the batch starts by then). */
  until?: number;
  /** Batch forming: how many pull requests the batch holds, and the size it waits for. */
  batch?: { have: number; need: number };
  /** Bisection ahead: the pull requests of the batch being bisected. */
  prNumbers?: number[];
}

const prList = (numbers: readonly number[]) => numbers.map((n) => `#${String(n)}`).join(", ");

/**
 * "batch forming: 1 of 3, starts by 15:19 at the latest"; `time` writes the deadline (an RFC 3339
 * time in the API, a local clock time in the CLI).
 */
export function describeWaiting(
  reason: Pick<WaitingFor, "reason" | "until" | "batch" | "prNumbers">,
  time: (epochMs: number) => string = (ms) => new Date(ms).toISOString(),
): string {
  if (reason.reason === "batch_forming") {
    const { have, need } = reason.batch ?? { have: 0, need: 0 };
    const by = reason.until === undefined ? "" : `, starts by ${time(reason.until)} at the latest`;
    return `batch forming: ${String(have)} of ${String(need)}${by}`;
  }
  const ahead = reason.prNumbers ?? [];
  return ahead.length === 0
    ? "waiting for the bisection of the batch ahead"
    : `waiting for the bisection of the batch ahead (${prList(ahead)})`;
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

/** The waits of a stored snapshot's entries, by entry id (only entries that wait). */
export function waitsOf(snapshot: unknown): Map<string, WaitingFor> {
  const waits = new Map<string, WaitingFor>();
  const s = snapshot as Partial<QueueSnapshot> | null | undefined;
  if (!s?.entries) return waits;
  for (const id of s.waiting ?? []) {
    const entry = s.entries[id];
    if (entry?.state === "pending" && entry.waiting) waits.set(id, toWaitingFor(entry.waiting));
  }
  return waits;
}
