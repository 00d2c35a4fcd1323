/**
 * Derived data kept across `plan` calls, per snapshot object (a replaced object starts afresh):
 * the entries stacked on each PR, and where each head of the lineage is.
 */
import type { Entry, QueueSnapshot } from "../model.js";
import { at } from "./state.js";

/**
 * For each PR number, the queued entries whose PR contains one of its heads (stacked on it):
 * derived data, kept per `entries` object across `plan` calls. Built from the entries the first
 * time; then the planner notes every entry it adds, drops or gives a new PR. Readers check each
 * entry against the snapshot, so an entry noted that is gone or changed is skipped.
 */
const stackIndexes = new WeakMap<Record<string, Entry>, Map<number, Set<string>>>();

export function stackIndexOf(entries: Record<string, Entry>): Map<number, Set<string>> {
  let index = stackIndexes.get(entries);
  if (!index) {
    index = new Map();
    stackIndexes.set(entries, index);
    for (const entry of Object.values(entries)) noteIn(index, entry, true);
  }
  return index;
}

/** Keeps the index of stacked entries in step with `entries`, once it is built. */
export function noteStack(entries: Record<string, Entry>, entry: Entry, present: boolean): void {
  const index = stackIndexes.get(entries);
  if (index) noteIn(index, entry, present);
}

function noteIn(index: Map<number, Set<string>>, entry: Entry, present: boolean): void {
  for (const c of entry.pr.contains ?? []) {
    let ids = index.get(c.number);
    if (present) {
      if (!ids) index.set(c.number, (ids = new Set()));
      ids.add(entry.id);
    } else if (ids) {
      ids.delete(entry.id);
      if (ids.size === 0) index.delete(c.number);
    }
  }
}

/**
 * Where each head of a lineage (`base.merges`) is: derived data, kept per array across `plan`
 * calls and extended as merges are appended, rebuilt when the array is replaced or no longer
 * starts as it did (a later duplicate head wins, as in a fresh build).
 */
const lineageIndexes = new WeakMap<
  QueueSnapshot["base"]["merges"],
  { length: number; lastSha: string | null; index: Map<string, number> }
>();

export function lineageIndexOf(merges: QueueSnapshot["base"]["merges"]): Map<string, number> {
  let cached = lineageIndexes.get(merges);
  if (
    !cached ||
    cached.length > merges.length ||
    (cached.length > 0 && merges[cached.length - 1]?.sha !== cached.lastSha)
  ) {
    cached = { length: 0, lastSha: null, index: new Map() };
    lineageIndexes.set(merges, cached);
  }
  for (let i = cached.length; i < merges.length; i++) cached.index.set(at(merges, i).sha, i);
  cached.length = merges.length;
  cached.lastSha = merges[merges.length - 1]?.sha ?? null;
  return cached.index;
}
