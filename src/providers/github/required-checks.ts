/**
 * The checks GitHub requires on a branch: the union of classic branch protection and the active
 * rulesets' `required_status_checks`, each with its App pin (a pinned check counts only when that
 * App reports it: `checkCounts`). A 404 from the classic API means "no classic protection", never
 * "no checks".
 */
import type { RequiredCheck } from "../../mergequeue/watched-ci-runs.js";
import { statusOf } from "./conditional.js";
import type { GitHubClient } from "./octokit.js";

export type { RequiredCheck } from "../../mergequeue/watched-ci-runs.js";

/** `GET …/protection/required_status_checks` as GitHub answers it (status-check-policy). */
export interface ClassicRequiredChecks {
  contexts?: readonly string[] | null;
  checks?: readonly { context: string; app_id?: number | null }[] | null;
}

/** One rule of `GET …/rules/branches/{b}`. */
export interface BranchRule {
  type: string;
  parameters?: {
    required_status_checks?: readonly { context: string; integration_id?: number | null }[];
  } & Record<string, unknown>;
}

/** GitHub's "any App" in a classic `app_id`: null, absent or -1. */
function pinOf(id: number | null | undefined): number | null {
  return typeof id === "number" && id > 0 ? id : null;
}

/**
 * The union, pure: every distinct (context, pin). A context named in classic `contexts` and not
 * in its `checks` is unpinned. Order: classic first, then the rules, each as GitHub lists them.
 */
export function unionRequiredChecks(
  classic: ClassicRequiredChecks | undefined,
  rules: readonly BranchRule[],
): RequiredCheck[] {
  const out: RequiredCheck[] = [];
  const seen = new Set<string>();
  const add = (context: string, appId: number | null) => {
    const key = `${appId ?? ""}\u0000${context}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ context, appId });
  };
  if (classic) {
    const checks = classic.checks ?? [];
    for (const check of checks) add(check.context, pinOf(check.app_id));
    const pinnedOrListed = new Set(checks.map((c) => c.context));
    for (const context of classic.contexts ?? []) {
      if (!pinnedOrListed.has(context)) add(context, null);
    }
  }
  for (const rule of rules) {
    if (rule.type !== "required_status_checks") continue;
    for (const check of rule.parameters?.required_status_checks ?? []) {
      add(check.context, pinOf(check.integration_id));
    }
  }
  return out;
}

/** Whether a check run (reported by App `appId`) or a status (no App known) counts for `required`. */
export function checkCounts(required: RequiredCheck, name: string, appId: number | null): boolean {
  return name === required.context && (required.appId === null || required.appId === appId);
}

/** The distinct names of required checks (what the queue's run shows as its required statuses). */
export function requiredNames(checks: readonly RequiredCheck[]): string[] {
  return [...new Set(checks.map((c) => c.context))];
}

/**
 * Reads the branch's required checks from GitHub: both APIs, unioned. A failure of either (other
 * than the classic API's 404) is thrown: reading "no checks" from an error would let untested
 * code through.
 */
export async function readRequiredChecks(
  client: GitHubClient,
  repo: { owner: string; name: string },
  branch: string,
): Promise<RequiredCheck[]> {
  let classic: ClassicRequiredChecks | undefined;
  try {
    const answer = await client.request(
      "GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks",
      { owner: repo.owner, repo: repo.name, branch },
    );
    classic = answer.data;
  } catch (error) {
    if (statusOf(error) !== 404) throw error;
  }
  const rules: BranchRule[] = [];
  for (let page = 1; page <= 100; page++) {
    const answer = await client.request("GET /repos/{owner}/{repo}/rules/branches/{branch}", {
      owner: repo.owner,
      repo: repo.name,
      branch,
      per_page: 100,
      page,
    });
    const found = answer.data as BranchRule[];
    rules.push(...found);
    if (!/\brel="next"/.test(answer.headers.link ?? "") || found.length === 0) break;
  }
  return unionRequiredChecks(classic, rules);
}
