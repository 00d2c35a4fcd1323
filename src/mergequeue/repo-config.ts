/**
 * Parsing of the repository files the built-in runner reads at the tested commit: `.mainline.yml`
 * (checks and required statuses) and Trunk's `.trunk/trunk.yaml` (only its
 * `merge.required_statuses`). Pure. `.mainline.yml` is strict: an unknown key is an error naming
 * its path, because a misspelt `timout_minutes` silently ignored would be worse than a failed run.
 * Every problem says where it is (file, line, column), from the YAML nodes' source ranges.
 */
import { LineCounter, isMap, isNode, isScalar, isSeq, parseDocument, type Document } from "yaml";

export const DEFAULT_TIMEOUT_MINUTES = 30;

export interface CheckDefinition {
  name: string;
  /** Run by `/bin/sh -c` in a checkout of the tested commit. */
  run: string;
  timeoutMinutes: number;
  /** Globs relative to the checkout; the reports they match go to test health. */
  junitPaths: string[];
}

export interface MainlineConfig {
  /** `merge.required_statuses`; undefined when the file does not say. */
  requiredStatuses: string[] | undefined;
  /**
   * At least one, names unique. `merge.required_statuses` may name other checks (another CI may
   * report them); the built-in runner refuses those (`run-config.ts`): its run could never pass.
   */
  checks: CheckDefinition[];
}

/** Where something is in a file: 1-based line and column. */
export interface SourcePosition {
  line: number;
  column: number;
}

/** What kind of mistake a problem is (the submission's warnings carry it as `config_<code>`). */
export type ConfigProblemCode =
  | "invalid_yaml"
  | "unknown_key"
  | "wrong_type"
  | "missing_key"
  | "duplicate_check"
  /** Set by `run-config.ts`: the file is not there. */
  | "missing_file"
  /** Set by `run-config.ts`: the file could not be read (the git host failed). */
  | "unreadable"
  /** Set by `run-config.ts`: a required status that no check of `.mainline.yml` reports. */
  | "unknown_required_status"
  /** Set by `run-config.ts`: an explicit empty list, or no source names any. */
  | "no_required_statuses";

/** One mistake in a configuration file, with where it is when that is known. */
export interface ConfigProblem {
  code: ConfigProblemCode;
  /** The key path and what is wrong with it: `ci.checks[1].timout: unknown key`. */
  message: string;
  /** The file, relative to the repository's root; absent when the mistake is in no file. */
  file?: string;
  line?: number;
  column?: number;
}

/**
 * Where `merge.required_statuses` and each status in it (its first mention) are: a required
 * status that names no check is reported at its own line.
 */
export interface StatusPositions {
  list?: SourcePosition;
  items: Map<string, SourcePosition>;
}

export type Parsed<T> =
  | ({ ok: true } & T)
  | {
      ok: false;
      /** Every problem in one line, separated by `; ` (a run's failure message). */
      message: string;
      problems: ConfigProblem[];
    };

type Mapping = Record<string, unknown>;
type Segment = string | number;

function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `ci.checks[1].timout` from its segments. */
function showPath(path: readonly Segment[]): string {
  return path
    .map((segment, index) =>
      typeof segment === "number" ? `[${String(segment)}]` : index === 0 ? segment : `.${segment}`,
    )
    .join("");
}

/** Finds the positions of key paths in a parsed YAML document (its nodes keep their ranges). */
class Locator {
  constructor(
    private readonly document: Document,
    private readonly lines: LineCounter,
  ) {}

  /**
   * Where the value at `path` starts (with `key`: its key), or the nearest ancestor that exists
   * (a missing key is reported at the mapping that lacks it); undefined in an empty file.
   */
  at(path: readonly Segment[], key = false): SourcePosition | undefined {
    let node: unknown = this.document.contents;
    let nearest = this.start(node);
    for (const [index, segment] of path.entries()) {
      let keyNode: unknown;
      if (isMap(node)) {
        const pair = node.items.find((item) =>
          isScalar(item.key) ? String(item.key.value) === String(segment) : false,
        );
        if (pair === undefined) return nearest;
        keyNode = pair.key;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        node = node.items[segment];
        if (node === undefined) return nearest;
      } else {
        return nearest;
      }
      const last = index === path.length - 1;
      // An empty value (`run:`) has no text of its own: its key says where it is.
      const value = isScalar(node) && node.value === null ? undefined : this.start(node);
      const here = (last && key) || value === undefined ? this.start(keyNode) : value;
      nearest = here ?? nearest;
    }
    return nearest;
  }

  private start(node: unknown): SourcePosition | undefined {
    if (!isNode(node) || node.range === undefined || node.range === null) return undefined;
    return this.position(node.range[0]);
  }

  position(offset: number): SourcePosition {
    const { line, col } = this.lines.linePos(offset);
    return { line, column: col };
  }
}

/** Loads YAML into plain data and a locator; an empty file is an empty mapping. */
function loadYaml(text: string, file: string): Parsed<{ value: unknown; locator: Locator }> {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const locator = new Locator(document, lines);
  const [error] = document.errors;
  if (error !== undefined) {
    const { line, column } = locator.position(error.pos[0]);
    return {
      ok: false,
      message: `${file}: invalid YAML at line ${String(line)}, column ${String(column)}: ${error.message}`,
      problems: [
        { code: "invalid_yaml", message: `invalid YAML: ${error.message}`, file, line, column },
      ],
    };
  }
  return { ok: true, value: (document.toJS() as unknown) ?? {}, locator };
}

/** Collects every problem with its key path and position, so that one failed run reports them all. */
class Problems {
  readonly list: ConfigProblem[] = [];

  constructor(
    private readonly file: string,
    private readonly locator: Locator,
  ) {}

  /**
   * `shown`: the path as the message names it (default: `path`); `key`: the problem is the key
   * itself (an unknown key), not its value.
   */
  add(
    code: ConfigProblemCode,
    path: readonly Segment[],
    message: string,
    options: { shown?: string; key?: boolean } = {},
  ): void {
    const shown = options.shown ?? showPath(path);
    const at = this.locator.at(path, options.key);
    this.list.push({
      code,
      message: shown === "" ? message : `${shown}: ${message}`,
      file: this.file,
      ...(at === undefined ? {} : { line: at.line, column: at.column }),
    });
  }

  position(path: readonly Segment[]): SourcePosition | undefined {
    return this.locator.at(path);
  }

  /** The problems' failure message: each with its path, separated by `; `. */
  message(): string {
    return this.list.map((problem) => problem.message).join("; ");
  }

  unknownKeys(value: Mapping, allowed: readonly string[], prefix: readonly Segment[]): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) {
        this.add("unknown_key", [...prefix, key], "unknown key", { key: true });
      }
    }
  }

  /** A list of non-empty strings, without repeats; undefined (and a problem) otherwise. */
  stringList(
    value: unknown,
    path: readonly Segment[],
    shown?: string,
  ): { strings: string[]; positions: Map<string, SourcePosition> } | undefined {
    const named = shown ?? showPath(path);
    if (!Array.isArray(value)) {
      this.add("wrong_type", path, "expected a list of strings", { shown: named });
      return undefined;
    }
    const strings: string[] = [];
    const positions = new Map<string, SourcePosition>();
    value.forEach((item: unknown, index) => {
      const itemPath = [...path, index];
      if (typeof item !== "string" || item.trim() === "") {
        this.add("wrong_type", itemPath, "expected a non-empty string", {
          shown: `${named}[${String(index)}]`,
        });
      } else if (!strings.includes(item)) {
        strings.push(item);
        const at = this.position(itemPath);
        if (at !== undefined) positions.set(item, at);
      }
    });
    return { strings, positions };
  }
}

const NO_STATUS_POSITIONS: StatusPositions = { items: new Map() };

/** Reads `merge.required_statuses` (shared by both files; `.mainline.yml` also checks keys). */
function requiredStatusesOf(
  root: Mapping,
  problems: Problems,
  strict: boolean,
): { statuses: string[] | undefined; positions: StatusPositions } {
  const none = { statuses: undefined, positions: NO_STATUS_POSITIONS };
  const merge = root.merge;
  if (merge === undefined) return none;
  if (!isMapping(merge)) {
    problems.add("wrong_type", ["merge"], "expected a mapping");
    return none;
  }
  if (strict) problems.unknownKeys(merge, ["required_statuses"], ["merge"]);
  if (merge.required_statuses === undefined) return none;
  const path = ["merge", "required_statuses"];
  const list = problems.stringList(merge.required_statuses, path);
  if (list === undefined) return none;
  const at = problems.position(path);
  return {
    statuses: list.strings,
    positions: { ...(at === undefined ? {} : { list: at }), items: list.positions },
  };
}

const CHECK_KEYS = ["name", "run", "timeout_minutes", "junit_paths"] as const;

function parseCheck(
  value: unknown,
  path: readonly Segment[],
  problems: Problems,
): CheckDefinition | undefined {
  if (!isMapping(value)) {
    problems.add("wrong_type", path, "expected a mapping with name and run");
    return undefined;
  }
  problems.unknownKeys(value, CHECK_KEYS, path);
  const { name, run, timeout_minutes: timeout, junit_paths: junit } = value;
  const named = typeof name === "string" && name.trim() !== "";
  const label = named ? `${showPath(path)} (${JSON.stringify(name)})` : showPath(path);
  const field = (key: string) => ({ path: [...path, key], shown: `${label}.${key}` });
  if (name === undefined) problems.add("missing_key", path, 'missing "name"');
  else if (!named) problems.add("wrong_type", [...path, "name"], "expected a non-empty string");
  if (run === undefined) problems.add("missing_key", path, 'missing "run"', { shown: label });
  else if (typeof run !== "string" || run.trim() === "") {
    const { path: at, shown } = field("run");
    problems.add("wrong_type", at, "expected a non-empty string", { shown });
  }
  const positive = typeof timeout === "number" && Number.isFinite(timeout) && timeout > 0;
  if (timeout !== undefined && !positive) {
    const { path: at, shown } = field("timeout_minutes");
    problems.add("wrong_type", at, "expected a positive number", { shown });
  }
  const junitPaths =
    junit === undefined
      ? []
      : problems.stringList(junit, field("junit_paths").path, field("junit_paths").shown)?.strings;
  if (!named || typeof run !== "string" || junitPaths === undefined) return undefined;
  return {
    name,
    run,
    timeoutMinutes: positive ? timeout : DEFAULT_TIMEOUT_MINUTES,
    junitPaths,
  };
}

function parseChecks(root: Mapping, problems: Problems, optional: boolean): CheckDefinition[] {
  const ci = root.ci;
  if (ci === undefined) {
    if (optional) return [];
    problems.add("missing_key", ["ci"], 'missing (the built-in runner needs "ci.checks")');
    return [];
  }
  if (!isMapping(ci)) {
    problems.add("wrong_type", ["ci"], "expected a mapping");
    return [];
  }
  problems.unknownKeys(ci, ["checks"], ["ci"]);
  if (!Array.isArray(ci.checks) || ci.checks.length === 0) {
    const code = ci.checks === undefined ? "missing_key" : "wrong_type";
    problems.add(code, ["ci", "checks"], "expected a non-empty list of checks");
    return [];
  }
  const checks: CheckDefinition[] = [];
  const firstIndex = new Map<string, number>();
  ci.checks.forEach((value: unknown, index) => {
    const path = ["ci", "checks", index];
    const check = parseCheck(value, path, problems);
    if (check === undefined) return;
    const first = firstIndex.get(check.name);
    if (first !== undefined) {
      problems.add(
        "duplicate_check",
        [...path, "name"],
        `duplicate name (also ci.checks[${String(first)}])`,
        { shown: `${showPath(path)} (${JSON.stringify(check.name)})` },
      );
      return;
    }
    firstIndex.set(check.name, index);
    checks.push(check);
  });
  return checks;
}

export const MAINLINE_FILE = ".mainline.yml";
export const TRUNK_FILE = ".trunk/trunk.yaml";

/** The root of a file as a mapping, or the problem that it is not one. */
function rootMapping(text: string, file: string): Parsed<{ root: Mapping; problems: Problems }> {
  const loaded = loadYaml(text, file);
  if (!loaded.ok) return loaded;
  const problems = new Problems(file, loaded.locator);
  if (!isMapping(loaded.value)) {
    problems.add("wrong_type", [], "expected a mapping");
    return { ok: false, message: `${file}: expected a mapping`, problems: problems.list };
  }
  return { ok: true, root: loaded.value, problems };
}

/**
 * Parses `.mainline.yml`. The message lists every problem, separated by `; `; each problem says
 * where it is. `ci` is required unless `checksOptional` (a repository whose CI is not the
 * built-in runner: GitHub's).
 */
export function parseMainlineConfig(
  text: string,
  options: { checksOptional?: boolean } = {},
): Parsed<{ config: MainlineConfig; statusPositions: StatusPositions }> {
  const loaded = rootMapping(text, MAINLINE_FILE);
  if (!loaded.ok) return loaded;
  const { root, problems } = loaded;
  problems.unknownKeys(root, ["merge", "ci"], []);
  const required = requiredStatusesOf(root, problems, true);
  const checks = parseChecks(root, problems, options.checksOptional === true);
  if (problems.list.length > 0) {
    return { ok: false, message: problems.message(), problems: problems.list };
  }
  return {
    ok: true,
    config: { requiredStatuses: required.statuses, checks },
    statusPositions: required.positions,
  };
}

/**
 * Reads `merge.required_statuses` from Trunk's `.trunk/trunk.yaml`; every other key (the file has
 * many: linters, runtimes, plugins) is ignored. Undefined when the file does not say.
 */
export function parseTrunkRequiredStatuses(
  text: string,
): Parsed<{ requiredStatuses: string[] | undefined; statusPositions: StatusPositions }> {
  const loaded = rootMapping(text, TRUNK_FILE);
  if (!loaded.ok) return loaded;
  const { root, problems } = loaded;
  const required = requiredStatusesOf(root, problems, false);
  if (problems.list.length > 0) {
    return {
      ok: false,
      message: `${TRUNK_FILE}: ${problems.message()}`,
      problems: problems.list,
    };
  }
  return { ok: true, requiredStatuses: required.statuses, statusPositions: required.positions };
}
