/**
 * What a run of the built-in runner uses at one tree: its checks (`.mainline.yml`) and its
 * required statuses (the queue's override, `.mainline.yml`, `.trunk/trunk.yaml`, the checks), or
 * why the run fails at once, with every problem and where it is. The runner decides its runs with
 * it; a submission and the queue page tell the same mistakes before any run (`config-check.ts`).
 * No I/O of its own: files come through `read`.
 */
import type { RequiredStatusesSource } from "./providers.js";
import {
  MAINLINE_FILE,
  TRUNK_FILE,
  parseMainlineConfig,
  parseTrunkRequiredStatuses,
  type CheckDefinition,
  type ConfigProblem,
  type StatusPositions,
} from "./repo-config.js";
import { consultsSource, resolveRequiredStatuses } from "./required-statuses.js";

/** A file as read at the tree: its text (undefined: not there), or why it could not be read. */
export type FileRead = { ok: true; text: string | undefined } | { ok: false; message: string };

export type RunConfig =
  | {
      ok: true;
      checks: CheckDefinition[];
      required: { statuses: string[]; source: RequiredStatusesSource };
    }
  | {
      ok: false;
      /** The run's failure, as its timeline tells it. */
      error: { reason: "config_parsing_failure" | "no_required_statuses"; message: string };
      /** The mistakes, each with its file and line where known. */
      problems: ConfigProblem[];
    };

/** Where a run's required statuses came from, as its messages say it. */
const SOURCE_WORDS: Record<RequiredStatusesSource, string> = {
  merge_instance: "the queue's settings",
  mainline_config: MAINLINE_FILE,
  trunk_config: TRUNK_FILE,
  branch_protection: "branch protection",
  mainline_checks: MAINLINE_FILE,
};

const quoted = (names: readonly string[]) =>
  names.map((name) => JSON.stringify(name)).join(", ") || "none";

function parsingFailure(message: string, problems: ConfigProblem[]): RunConfig {
  return { ok: false, error: { reason: "config_parsing_failure", message }, problems };
}

/** The file a source is and where its list of statuses is, for a problem about the source. */
function sourceFile(
  source: RequiredStatusesSource,
  positions: { mainline: StatusPositions; trunk: StatusPositions },
): { file: string; positions: StatusPositions } | undefined {
  if (source === "mainline_config") return { file: MAINLINE_FILE, positions: positions.mainline };
  if (source === "trunk_config") return { file: TRUNK_FILE, positions: positions.trunk };
  return undefined;
}

/**
 * The run's configuration at one tree. `override`: the queue's required statuses (null when not
 * set); `at`: how the failure messages name the tree (the tested commit). `.trunk/trunk.yaml` is
 * read only when its statuses would be used (`consultsSource`).
 */
export async function resolveRunConfig(
  read: (file: string) => Promise<FileRead>,
  override: string[] | null,
  at: string,
): Promise<RunConfig> {
  const mainlineText = await read(MAINLINE_FILE);
  if (!mainlineText.ok) {
    return parsingFailure(mainlineText.message, [
      { code: "unreadable", message: mainlineText.message, file: MAINLINE_FILE },
    ]);
  }
  if (mainlineText.text === undefined) {
    return parsingFailure(`no ${MAINLINE_FILE} at ${at}`, [
      {
        code: "missing_file",
        message: `no ${MAINLINE_FILE}: the built-in runner reads its checks from it`,
        file: MAINLINE_FILE,
      },
    ]);
  }
  const parsed = parseMainlineConfig(mainlineText.text);
  if (!parsed.ok) return parsingFailure(parsed.message, parsed.problems);
  const { config } = parsed;
  let trunk: string[] | undefined;
  let trunkPositions: StatusPositions = { items: new Map() };
  if (consultsSource({ override, mainline: config }, "trunk_config")) {
    const trunkText = await read(TRUNK_FILE);
    if (!trunkText.ok) {
      return parsingFailure(trunkText.message, [
        { code: "unreadable", message: trunkText.message, file: TRUNK_FILE },
      ]);
    }
    const trunkParsed =
      trunkText.text === undefined ? undefined : parseTrunkRequiredStatuses(trunkText.text);
    if (trunkParsed?.ok === false) return parsingFailure(trunkParsed.message, trunkParsed.problems);
    trunk = trunkParsed?.requiredStatuses;
    if (trunkParsed) trunkPositions = trunkParsed.statusPositions;
  }
  const positions = { mainline: parsed.statusPositions, trunk: trunkPositions };
  const resolved = resolveRequiredStatuses({ override, mainline: config, trunk });
  if (!resolved.ok) {
    const source = [
      ["merge_instance", override] as const,
      ["mainline_config", config.requiredStatuses] as const,
      ["trunk_config", trunk] as const,
    ].find(([, statuses]) => statuses?.length === 0)?.[0];
    const where = source === undefined ? undefined : sourceFile(source, positions);
    const list = where?.positions.list;
    return {
      ok: false,
      error: { reason: resolved.reason, message: resolved.message },
      problems: [
        {
          code: "no_required_statuses",
          message: resolved.message,
          ...(where ? { file: where.file } : {}),
          ...(list ? { line: list.line, column: list.column } : {}),
        },
      ],
    };
  }
  // A required status that names no check would fail the run once every check ran: a mistake
  // in the configuration, told before any check runs.
  const names = config.checks.map((check) => check.name);
  const missing = resolved.statuses.filter((status) => !names.includes(status));
  if (missing.length === 0) {
    return {
      ok: true,
      checks: config.checks,
      required: { statuses: resolved.statuses, source: resolved.source },
    };
  }
  const message =
    `required status${missing.length > 1 ? "es" : ""} ${quoted(missing)} (from ${SOURCE_WORDS[resolved.source]}) ` +
    `name${missing.length > 1 ? "" : "s"} no check in ${MAINLINE_FILE}, whose checks are ` +
    quoted(names);
  const where = sourceFile(resolved.source, positions);
  const problems = missing.map((status): ConfigProblem => {
    const item = where?.positions.items.get(status);
    const what = where
      ? `merge.required_statuses: ${JSON.stringify(status)}`
      : `required status ${JSON.stringify(status)} (from ${SOURCE_WORDS[resolved.source]})`;
    return {
      code: "unknown_required_status",
      message: `${what} names no check in ${MAINLINE_FILE}, whose checks are ${quoted(names)}`,
      ...(where ? { file: where.file } : {}),
      ...(item ? { line: item.line, column: item.column } : {}),
    };
  });
  return parsingFailure(message, problems);
}
