/**
 * Parsing of the repository files the built-in runner reads at the tested commit: `.mainline.yml`
 * (checks and required statuses) and Trunk's `.trunk/trunk.yaml` (only its
 * `merge.required_statuses`). Pure. `.mainline.yml` is strict: an unknown key is an error naming
 * its path, because a misspelt `timout_minutes` silently ignored would be worse than a failed run.
 */
import { LineCounter, parseDocument } from "yaml";

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
   * report them); the runner warns about those, since on its own the run could never pass.
   */
  checks: CheckDefinition[];
}

export type Parsed<T> = ({ ok: true } & T) | { ok: false; message: string };

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Loads YAML into plain data; an empty file is an empty mapping. Errors say where. */
function loadYaml(text: string, file: string): Parsed<{ value: unknown }> {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const [error] = document.errors;
  if (error !== undefined) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    return {
      ok: false,
      message: `${file}: invalid YAML at line ${line}, column ${col}: ${error.message}`,
    };
  }
  return { ok: true, value: (document.toJS() as unknown) ?? {} };
}

/** Collects every problem with its key path, so that one failed run reports them all. */
class Problems {
  readonly list: string[] = [];

  add(path: string, message: string): void {
    this.list.push(`${path}: ${message}`);
  }

  unknownKeys(value: Mapping, allowed: readonly string[], prefix: string): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.add(prefix === "" ? key : `${prefix}.${key}`, "unknown key");
    }
  }

  /** A list of non-empty strings, without repeats; undefined (and a problem) otherwise. */
  stringList(value: unknown, path: string): string[] | undefined {
    if (!Array.isArray(value)) {
      this.add(path, "expected a list of strings");
      return undefined;
    }
    const strings: string[] = [];
    value.forEach((item: unknown, index) => {
      if (typeof item !== "string" || item.trim() === "") {
        this.add(`${path}[${String(index)}]`, "expected a non-empty string");
      } else if (!strings.includes(item)) {
        strings.push(item);
      }
    });
    return strings;
  }
}

/** Reads `merge.required_statuses` (shared by both files; `.mainline.yml` also checks keys). */
function requiredStatusesOf(
  root: Mapping,
  problems: Problems,
  strict: boolean,
): string[] | undefined {
  const merge = root.merge;
  if (merge === undefined) return undefined;
  if (!isMapping(merge)) {
    problems.add("merge", "expected a mapping");
    return undefined;
  }
  if (strict) problems.unknownKeys(merge, ["required_statuses"], "merge");
  if (merge.required_statuses === undefined) return undefined;
  return problems.stringList(merge.required_statuses, "merge.required_statuses");
}

const CHECK_KEYS = ["name", "run", "timeout_minutes", "junit_paths"] as const;

function parseCheck(value: unknown, path: string, problems: Problems): CheckDefinition | undefined {
  if (!isMapping(value)) {
    problems.add(path, "expected a mapping with name and run");
    return undefined;
  }
  problems.unknownKeys(value, CHECK_KEYS, path);
  const { name, run, timeout_minutes: timeout, junit_paths: junit } = value;
  const named = typeof name === "string" && name.trim() !== "";
  const label = named ? `${path} (${JSON.stringify(name)})` : path;
  if (name === undefined) problems.add(path, 'missing "name"');
  else if (!named) problems.add(`${path}.name`, "expected a non-empty string");
  if (run === undefined) problems.add(label, 'missing "run"');
  else if (typeof run !== "string" || run.trim() === "") {
    problems.add(`${label}.run`, "expected a non-empty string");
  }
  const positive = typeof timeout === "number" && Number.isFinite(timeout) && timeout > 0;
  if (timeout !== undefined && !positive) {
    problems.add(`${label}.timeout_minutes`, "expected a positive number");
  }
  const junitPaths = junit === undefined ? [] : problems.stringList(junit, `${label}.junit_paths`);
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
    problems.add("ci", 'missing (the built-in runner needs "ci.checks")');
    return [];
  }
  if (!isMapping(ci)) {
    problems.add("ci", "expected a mapping");
    return [];
  }
  problems.unknownKeys(ci, ["checks"], "ci");
  if (!Array.isArray(ci.checks) || ci.checks.length === 0) {
    problems.add("ci.checks", "expected a non-empty list of checks");
    return [];
  }
  const checks: CheckDefinition[] = [];
  const firstIndex = new Map<string, number>();
  ci.checks.forEach((value: unknown, index) => {
    const path = `ci.checks[${String(index)}]`;
    const check = parseCheck(value, path, problems);
    if (check === undefined) return;
    const first = firstIndex.get(check.name);
    if (first !== undefined) {
      problems.add(
        `${path} (${JSON.stringify(check.name)})`,
        `duplicate name (also ci.checks[${String(first)}])`,
      );
      return;
    }
    firstIndex.set(check.name, index);
    checks.push(check);
  });
  return checks;
}

/**
 * Parses `.mainline.yml`. The message lists every problem, separated by `; `. `ci` is required
 * unless `checksOptional` (a repository whose CI is not the built-in runner: GitHub's).
 */
export function parseMainlineConfig(
  text: string,
  options: { checksOptional?: boolean } = {},
): Parsed<{ config: MainlineConfig }> {
  const loaded = loadYaml(text, ".mainline.yml");
  if (!loaded.ok) return loaded;
  const root = loaded.value;
  if (!isMapping(root)) return { ok: false, message: ".mainline.yml: expected a mapping" };
  const problems = new Problems();
  problems.unknownKeys(root, ["merge", "ci"], "");
  const requiredStatuses = requiredStatusesOf(root, problems, true);
  const checks = parseChecks(root, problems, options.checksOptional === true);
  if (problems.list.length > 0) return { ok: false, message: problems.list.join("; ") };
  return { ok: true, config: { requiredStatuses, checks } };
}

/**
 * Reads `merge.required_statuses` from Trunk's `.trunk/trunk.yaml`; every other key (the file has
 * many: linters, runtimes, plugins) is ignored. Undefined when the file does not say.
 */
export function parseTrunkRequiredStatuses(
  text: string,
): Parsed<{ requiredStatuses: string[] | undefined }> {
  const loaded = loadYaml(text, ".trunk/trunk.yaml");
  if (!loaded.ok) return loaded;
  const root = loaded.value;
  if (!isMapping(root)) return { ok: false, message: ".trunk/trunk.yaml: expected a mapping" };
  const problems = new Problems();
  const requiredStatuses = requiredStatusesOf(root, problems, false);
  if (problems.list.length > 0) {
    return { ok: false, message: `.trunk/trunk.yaml: ${problems.list.join("; ")}` };
  }
  return { ok: true, requiredStatuses };
}
