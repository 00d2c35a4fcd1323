/**
 * Which checks must pass for a run to pass (docs/contract.md §5), from the first source that names them.
 * Pure. A source that gives an explicit empty list wins too, and fails the run: an empty list is
 * a decision someone wrote down, and falling through to a looser source would ignore it.
 */
import type { RequiredStatusesSource } from "./providers.js";
import type { MainlineConfig } from "./repo-config.js";

export interface RequiredStatusesInput {
  /** The queue's `requiredStatuses` setting; null when not overridden. */
  override: string[] | null;
  /** `.mainline.yml` at the tested commit, when there is one. */
  mainline: MainlineConfig | undefined;
  /** `merge.required_statuses` of `.trunk/trunk.yaml` at the tested commit. */
  trunk: string[] | undefined;
  /** The git host's branch protection (GitHub); the local host has none. */
  branchProtection?: string[];
}

export type RequiredStatuses =
  | { ok: true; statuses: string[]; source: RequiredStatusesSource }
  | { ok: false; reason: "no_required_statuses"; message: string };

const SOURCE_NAMES: Record<RequiredStatusesSource, string> = {
  merge_instance: "the queue's requiredStatuses setting",
  mainline_config: "merge.required_statuses in .mainline.yml",
  trunk_config: "merge.required_statuses in .trunk/trunk.yaml",
  branch_protection: "the branch protection",
  mainline_checks: "the checks of .mainline.yml",
};

export function resolveRequiredStatuses(input: RequiredStatusesInput): RequiredStatuses {
  // The built-in runner's default (docs/contract.md §6): every check of `.mainline.yml`.
  const candidates: [RequiredStatusesSource, string[] | null | undefined][] = [
    ["merge_instance", input.override],
    ["mainline_config", input.mainline?.requiredStatuses],
    ["trunk_config", input.trunk],
    ["branch_protection", input.branchProtection],
    ["mainline_checks", input.mainline?.checks.map((check) => check.name)],
  ];
  for (const [source, statuses] of candidates) {
    if (statuses === null || statuses === undefined) continue;
    if (statuses.length === 0) {
      return {
        ok: false,
        reason: "no_required_statuses",
        message: `${SOURCE_NAMES[source]} is an empty list`,
      };
    }
    return { ok: true, statuses, source };
  }
  return {
    ok: false,
    reason: "no_required_statuses",
    message:
      "no required statuses: none in the queue's settings, .mainline.yml, .trunk/trunk.yaml " +
      "or branch protection",
  };
}
