/**
 * How the GitHub CI judges a tested commit, pure: GitHub's reports of its checks (check runs and
 * commit statuses) against the run's required checks, mapped as GitHub's own branch protection
 * judges them (the mapping is on `checkRunConclusion` and `judgeObservations`).
 */
import type { CheckConclusion, CiRunResult } from "../../mergequeue/providers.js";
import { checkCounts, type RequiredCheck } from "./required-checks.js";

/** One report of a check on the tested commit: a check run (with its App) or a commit status. */
export interface Observation {
  name: string;
  /** The App that reported a check run; null for a status. */
  appId: number | null;
  kind: "check_run" | "status";
  /** Undefined while it has not finished. */
  conclusion: CheckConclusion | undefined;
  url: string | undefined;
}

/**
 * A check run's conclusion, mapped deliberately (GitHub docs, "About status checks"): `success`
 * and `neutral` pass (success); `skipped` passes (skipped); `failure`, `action_required` and any
 * conclusion unknown here fail (failure); `cancelled` → cancelled; `timed_out` and `stale` (GitHub
 * gave up on it after 14 days) → timed_out.
 */
export function checkRunConclusion(conclusion: string): CheckConclusion {
  switch (conclusion) {
    case "success":
    case "neutral":
      return "success";
    case "skipped":
      return "skipped";
    case "cancelled":
      return "cancelled";
    case "timed_out":
    case "stale":
      return "timed_out";
    default:
      // failure, action_required, and anything GitHub adds later: not a pass.
      return "failure";
  }
}

/** A commit status's state: `success` passes; `failure` and `error` fail; undefined while pending. */
export function statusConclusion(state: string): CheckConclusion | undefined {
  if (state === "success") return "success";
  if (state === "pending") return undefined;
  return "failure";
}

export const passes = (c: CheckConclusion) => c === "success" || c === "skipped";

/** The worse of two final conclusions (a failure beats a pass; success beats skipped). */
function worse(a: CheckConclusion | undefined, b: CheckConclusion): CheckConclusion {
  if (a === undefined) return b;
  if (!passes(a)) return a;
  if (!passes(b)) return b;
  return a === "success" || b === "success" ? "success" : "skipped";
}

export type Verdict =
  { state: "pending" } | { state: "passed" | "failed"; checks: CiRunResult["checks"] };

/**
 * Judges the tested commit's reports against the required checks, pure. `failed` as soon as one
 * required check failed; `passed` once every one passed; else `pending`. The checks reported are
 * every finished one, one per name (the worst), with the required ones as they were judged.
 *
 * A check run and a status with the same name are both required to pass, as GitHub requires. A
 * check pinned to an App counts only check runs of that App; a status never meets a pinned check
 * (the combined status does not say which App posted it). A required check that never appears is
 * the queue's testing timeout's to end, not this provider's.
 */
export function judgeObservations(
  required: readonly RequiredCheck[],
  observed: readonly Observation[],
): Verdict {
  let failed = false;
  let pending = false;
  const byName = new Map<string, { conclusion: CheckConclusion; url: string | undefined }>();
  const note = (name: string, conclusion: CheckConclusion, url: string | undefined) => {
    const known = byName.get(name);
    const next = worse(known?.conclusion, conclusion);
    byName.set(name, {
      conclusion: next,
      url: known && known.conclusion === next ? known.url : url,
    });
  };
  for (const requirement of required) {
    const matching = observed.filter((o) =>
      o.kind === "status"
        ? requirement.appId === null && o.name === requirement.context
        : checkCounts(requirement, o.name, o.appId),
    );
    if (matching.length === 0) {
      pending = true;
      continue;
    }
    for (const o of matching) {
      if (o.conclusion === undefined) pending = true;
      else if (!passes(o.conclusion)) failed = true;
    }
  }
  const requiredNamesSet = new Set(required.map((r) => r.context));
  for (const o of observed) {
    if (o.conclusion === undefined) continue;
    // A required name's reports that do not count for it (another App's) are left out.
    if (
      requiredNamesSet.has(o.name) &&
      !required.some((r) =>
        o.kind === "status"
          ? r.appId === null && r.context === o.name
          : checkCounts(r, o.name, o.appId),
      )
    ) {
      continue;
    }
    note(o.name, o.conclusion, o.url);
  }
  if (!failed && pending) return { state: "pending" };
  const checks = [...byName].map(([name, { conclusion, url }]) => ({
    name,
    conclusion,
    ...(url ? { url } : {}),
  }));
  return { state: failed ? "failed" : "passed", checks };
}
