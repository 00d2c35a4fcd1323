/**
 * A failed batch being localized, as the queue page, `getQueue` and the CLI show it:
 * the pull requests cleared, the suspects, the prefixes being tested, the presumed culprit, and
 * all of it in words. Pure; read from the planner's snapshot.
 */
import type { BisectionGroup, QueueSnapshot } from "./model.js";

export interface LocalizationView {
  /** The localization (the planner's group id). */
  id: string;
  /** The failed batch run. */
  runId: string;
  /** The batch's pull requests still in the localization, in order. */
  prNumbers: number[];
  /** Cleared by a passing prefix (they merge where they stand, and may have merged already). */
  cleared: number[];
  /** Among these is the failing pull request. */
  suspects: number[];
  /** The prefixes being tested now: their run and the pull requests each adds to what passed. */
  prefixes: { runId: string; prNumbers: number[] }[];
  /** The pull request presumed to fail the batch (the lane goes on behind it), if any. */
  presumedCulprit: number | null;
  /** What is happening, in words. */
  summary: string;
}

const prList = (numbers: readonly number[]) => numbers.map((n) => `#${String(n)}`).join(", ");

/**
 * A localization in words and numbers. `numberOf` names an entry's pull request, or undefined
 * when nothing knows it any more; such an entry is left out.
 */
export function localizationView(
  group: BisectionGroup,
  numberOf: (entryId: string) => number | undefined,
): LocalizationView {
  const numbers = (ids: readonly string[]) =>
    ids.flatMap((id) => {
      const n = numberOf(id);
      return n === undefined ? [] : [n];
    });
  const suspects = numbers(group.entries.slice(group.passed, group.failsAt));
  const prefixes = [...group.prefixes]
    .sort((a, b) => a.length - b.length)
    .map((prefix) => ({
      runId: prefix.runId,
      prNumbers: numbers(group.entries.slice(group.passed, prefix.length)),
    }));
  const culprit = group.entries[group.failsAt - 1];
  const presumedCulprit =
    group.presumedAt !== null && culprit !== undefined ? (numberOf(culprit) ?? null) : null;
  const what =
    prefixes.length === 0
      ? `batch run ${group.runId} failed; waiting for a slot to test its prefixes`
      : `testing ${prefixes.length === 1 ? "1 prefix" : `${String(prefixes.length)} prefixes`} of batch run ${group.runId} to find the failing pull request`;
  const among = suspects.length === 0 ? "" : ` (one of ${prList(suspects)})`;
  const presumed =
    presumedCulprit === null
      ? ""
      : `; #${String(presumedCulprit)} is presumed to fail it and the queue goes on behind it`;
  return {
    id: group.id,
    runId: group.runId,
    prNumbers: numbers(group.entries),
    cleared: numbers(group.entries.slice(0, group.passed)),
    suspects,
    prefixes,
    presumedCulprit,
    summary: `${what}${among}${presumed}`,
  };
}

/**
 * The snapshot's localizations in progress. A pull request that left the queue (a cleared one
 * that merged) is named by the runs of its localization, which the planner keeps while it lasts.
 */
export function localizationsOf(snapshot: QueueSnapshot): LocalizationView[] {
  return Object.values(snapshot.bisections).map((group) => {
    const known = new Map<string, number>();
    for (const runId of [group.runId, group.failedRunId, group.passedRunId]) {
      const run = runId === null ? undefined : snapshot.runs[runId];
      for (const pr of run?.prs ?? []) known.set(pr.entryId, pr.number);
    }
    return localizationView(group, (id) => snapshot.entries[id]?.pr.number ?? known.get(id));
  });
}

/**
 * The entries of a localization still waiting for its verdict (the suspects that have not left
 * it), by id: what `waitsOf` and the board mark as under localization.
 */
export function undecidedEntries(snapshot: QueueSnapshot, group: BisectionGroup): string[] {
  return group.entries
    .slice(group.passed, group.failsAt)
    .filter((id) => snapshot.entries[id]?.bisection?.groupId === group.id);
}
