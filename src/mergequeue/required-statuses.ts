/**
 * Which checks must pass for a run to pass, from the first source that names them. Pure. A source
 * that gives an explicit empty list wins too, and fails the run: an empty list is a decision
 * someone wrote down, and falling through to a looser source would ignore it.
 */
import type { RequiredStatusesSource } from "./providers.js";
import {
  MAINLINE_FILE,
  TRUNK_FILE,
  parseMainlineConfig,
  parseTrunkRequiredStatuses,
  type MainlineConfig,
} from "./repo-config.js";

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

/**
 * The precedence, first source first: the queue's override, the repository's configuration
 * (`.mainline.yml`, then `.trunk/trunk.yaml`), the git host's branch protection, and last the
 * built-in runner's default: every check of `.mainline.yml`.
 */
function candidates(
  input: RequiredStatusesInput,
): [RequiredStatusesSource, string[] | null | undefined][] {
  return [
    ["merge_instance", input.override],
    ["mainline_config", input.mainline?.requiredStatuses],
    ["trunk_config", input.trunk],
    ["branch_protection", input.branchProtection],
    ["mainline_checks", input.mainline?.checks.map((check) => check.name)],
  ];
}

/**
 * Whether a source is consulted at all: no source before it names statuses. A caller reads a
 * source only when it is (the runner reads `.trunk/trunk.yaml` only then), so that the precedence
 * is written in this one place.
 */
export function consultsSource(
  input: Partial<RequiredStatusesInput>,
  source: RequiredStatusesSource,
): boolean {
  const known: RequiredStatusesInput = {
    override: input.override ?? null,
    mainline: input.mainline,
    trunk: input.trunk,
    ...(input.branchProtection === undefined ? {} : { branchProtection: input.branchProtection }),
  };
  for (const [candidate, statuses] of candidates(known)) {
    if (candidate === source) return true;
    if (statuses !== null && statuses !== undefined) return false;
  }
  return false;
}

export function resolveRequiredStatuses(input: RequiredStatusesInput): RequiredStatuses {
  for (const [source, statuses] of candidates(input)) {
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

/**
 * The repository's own sources at a tested commit (`.mainline.yml`, then `.trunk/trunk.yaml`),
 * each read only where the precedence consults it; a file that does not parse fails the run.
 * `read` answers a file's text at the commit (undefined: no such file).
 */
export async function readConfigSources(
  override: string[] | null,
  read: (path: string) => Promise<string | undefined>,
): Promise<
  | { ok: true; mainline: MainlineConfig | undefined; trunk: string[] | undefined }
  | { ok: false; reason: "config_parsing_failure"; message: string }
> {
  let mainline: MainlineConfig | undefined;
  if (consultsSource({ override }, "mainline_config")) {
    const text = await read(MAINLINE_FILE);
    if (text !== undefined) {
      const parsed = parseMainlineConfig(text, { checksOptional: true });
      if (!parsed.ok)
        return { ok: false, reason: "config_parsing_failure", message: parsed.message };
      mainline = parsed.config;
    }
  }
  let trunk: string[] | undefined;
  if (consultsSource({ override, mainline }, "trunk_config")) {
    const text = await read(TRUNK_FILE);
    const parsed = text === undefined ? undefined : parseTrunkRequiredStatuses(text);
    if (parsed?.ok === false) {
      return { ok: false, reason: "config_parsing_failure", message: parsed.message };
    }
    trunk = parsed?.requiredStatuses;
  }
  return { ok: true, mainline, trunk };
}
