/**
 * Whose red is it? For each test that failed in a merge-queue run, what test health knows of it:
 * quarantined or known flaky (not the pull request's doing), broken on the stable branches too,
 * new (first seen in this run), or none of these (it fails here: most likely the change). Pure.
 */
import { quarantineSetting, type QuarantineSettings } from "./quarantine.js";
import type { TestStanding } from "./records.js";

export type FailureVerdict = "quarantined" | "flaky" | "broken" | "new" | "failing";

/** In the order a reader should look at them: what is most likely theirs first. */
export const VERDICT_ORDER: readonly FailureVerdict[] = [
  "failing",
  "new",
  "broken",
  "flaky",
  "quarantined",
];

/** One short phrase per verdict, as the pages, the CLI and the comment on the pull request say it. */
export const VERDICT_WORDS: Record<FailureVerdict, string> = {
  failing: "fails here (not known flaky or broken)",
  new: "new in this pull request",
  broken: "broken on the stable branch too",
  flaky: "known flaky",
  quarantined: "known flaky, quarantined",
};

/**
 * The verdict of one failed test. `since`: when the run started; a test first seen since then is
 * new (the run brought it). A test test health does not know yet (its upload is still being
 * processed) counts as failing.
 */
export function failureVerdict(
  standing: TestStanding | undefined,
  settings: QuarantineSettings,
  since: number,
): FailureVerdict {
  if (!standing) return "failing";
  if (quarantineSetting(settings, standing.quarantineOverride, standing.status) !== null) {
    return "quarantined";
  }
  if (standing.status === "flaky") return "flaky";
  if (standing.status === "broken") return "broken";
  if (standing.firstSeenAt >= since) return "new";
  return "failing";
}

/** Sorts by verdict (the reader's order), then by name. */
export function byVerdict<T extends { verdict: FailureVerdict; name: string }>(
  tests: readonly T[],
): T[] {
  const rank = (verdict: FailureVerdict) => VERDICT_ORDER.indexOf(verdict);
  return [...tests].sort(
    (a, b) => rank(a.verdict) - rank(b.verdict) || a.name.localeCompare(b.name),
  );
}
