/**
 * `most_common_failures`: failures grouped by a normalized signature, so that the same failure with
 * a different number, id, time or temporary path counts as one.
 */
export interface FailureOccurrence {
  type: string | null;
  message: string | null;
  text: string | null;
  /** When the failed run happened, epoch ms. */
  at: number;
}

export interface FailureGroup {
  summary: string;
  occurrenceCount: number;
  lastOccurrence: number;
}

export const SUMMARY_LIMIT = 200;
export const MAX_FAILURE_GROUPS = 5;

/** Order matters: the specific shapes go before the plain numbers they contain. */
const VOLATILE: readonly [RegExp, string][] = [
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<uuid>"],
  [
    /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g,
    "<time>",
  ],
  [/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, "<time>"],
  [
    /(?:\/tmp|\/var\/folders|\/private\/var\/folders|[A-Za-z]:\\(?:Users\\[^\\\s]+\\AppData\\Local\\)?Temp)[^\s'"`)\]]*/g,
    "<tmp>",
  ],
  [/\b0x[0-9a-f]+\b/gi, "<hex>"],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b/gi, "<hex>"],
  [/\d+(?:\.\d+)?/g, "<n>"],
];

/** The first line worth showing: of the message, else of the text. */
export function firstLine(occurrence: Pick<FailureOccurrence, "message" | "text">): string {
  for (const source of [occurrence.message, occurrence.text]) {
    const line = source
      ?.split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0);
    if (line) return line;
  }
  return "";
}

export function failureSignature(
  occurrence: Pick<FailureOccurrence, "type" | "message" | "text">,
): string {
  let line = firstLine(occurrence);
  for (const [pattern, replacement] of VOLATILE) line = line.replace(pattern, replacement);
  return `${occurrence.type?.trim() ?? ""}\u0000${line.replace(/\s+/g, " ")}`;
}

export function failureSummary(
  occurrence: Pick<FailureOccurrence, "type" | "message" | "text">,
): string {
  const line = firstLine(occurrence) || occurrence.type?.trim() || "Failed";
  return line.length > SUMMARY_LIMIT ? `${line.slice(0, SUMMARY_LIMIT - 1)}…` : line;
}

/**
 * The most frequent signatures, at most five: most occurrences first, then the most recent.
 * The summary is the first line of the group's latest occurrence.
 */
export function mostCommonFailures(
  occurrences: readonly FailureOccurrence[],
  limit = MAX_FAILURE_GROUPS,
): FailureGroup[] {
  const groups = new Map<string, { count: number; latest: FailureOccurrence }>();
  for (const occurrence of occurrences) {
    const key = failureSignature(occurrence);
    const group = groups.get(key);
    if (!group) groups.set(key, { count: 1, latest: occurrence });
    else {
      group.count += 1;
      if (occurrence.at > group.latest.at) group.latest = occurrence;
    }
  }
  return rankFailureGroups(
    [...groups.values()].map(({ count, latest }) => ({
      summary: failureSummary(latest),
      occurrenceCount: count,
      lastOccurrence: latest.at,
    })),
    limit,
  );
}

/** Failure groups, most occurrences first, then the most recent, at most `limit` (in place). */
export function rankFailureGroups<G extends FailureGroup>(
  groups: G[],
  limit = MAX_FAILURE_GROUPS,
): G[] {
  return groups
    .sort(
      (a, b) =>
        b.occurrenceCount - a.occurrenceCount ||
        b.lastOccurrence - a.lastOccurrence ||
        a.summary.localeCompare(b.summary),
    )
    .slice(0, limit);
}
