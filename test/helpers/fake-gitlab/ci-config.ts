import { parse } from "yaml";
import { scalar } from "./http.js";

/**
 * The subset of `.gitlab-ci.yml` the fake runs: `workflow: rules`, `stages`, `variables`,
 * `default`/top-level `before_script`/`after_script`, and jobs with `stage`, `script`,
 * `before_script`, `after_script`, `rules` (`if`, `when`, `allow_failure`, `variables`), `when`,
 * `allow_failure`, `variables` and `timeout`. Other keywords are accepted and ignored (`needs`,
 * `image`, `artifacts`, `only`/`except`, …). `rules:if` expressions: `$VAR`, `==`, `!=`, `=~`,
 * `!~` with `/regex/flags`, `null`, `&&`, `||`, parentheses.
 */

const RESERVED = new Set([
  "image",
  "services",
  "stages",
  "types",
  "before_script",
  "after_script",
  "variables",
  "cache",
  "include",
  "workflow",
  "default",
  "spec",
]);

export type When = "on_success" | "always" | "manual" | "never" | "on_failure";

export interface Rule {
  if?: string;
  when?: When;
  allowFailure?: boolean;
  variables: Record<string, string>;
}

export interface CiJob {
  name: string;
  stage: string;
  script: string[];
  beforeScript: string[];
  afterScript: string[];
  rules: Rule[] | null;
  when: When;
  allowFailure: boolean | null;
  variables: Record<string, string>;
  timeoutMs: number;
}

export interface CiConfig {
  stages: string[];
  variables: Record<string, string>;
  workflowRules: Rule[] | null;
  jobs: CiJob[];
}

export class CiConfigError extends Error {}

function lines(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return (value.flat(8) as unknown[]).map(scalar);
  return [scalar(value)];
}

function variables(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== "object" || value === null) return out;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const raw: unknown = typeof v === "object" && v !== null && "value" in v ? v.value : v;
    out[k] = scalar(raw);
  }
  return out;
}

function rules(value: unknown, where: string): Rule[] | null {
  if (value === undefined) return null;
  if (!Array.isArray(value))
    throw new CiConfigError(`${where} config should be an array of hashes`);
  return value.map((r: unknown) => {
    if (typeof r !== "object" || r === null)
      throw new CiConfigError(`${where} rule should be a hash`);
    const rule = r as Record<string, unknown>;
    return {
      ...(typeof rule.if === "string" ? { if: rule.if } : {}),
      ...(typeof rule.when === "string" ? { when: rule.when as When } : {}),
      ...(typeof rule.allow_failure === "boolean" ? { allowFailure: rule.allow_failure } : {}),
      variables: variables(rule.variables),
    };
  });
}

/** `30s`, `5m`, `1h 30m`, `2 hours`; default one hour. */
function timeout(value: unknown): number {
  if (typeof value !== "string") return 3_600_000;
  let total = 0;
  for (const m of value.matchAll(/(\d+)\s*(h|hours?|m|min|minutes?|s|sec|seconds?)/g)) {
    const unit = (m[2] ?? "s").charAt(0);
    total += Number(m[1]) * (unit === "h" ? 3_600_000 : unit === "m" ? 60_000 : 1_000);
  }
  return total > 0 ? total : 3_600_000;
}

export function parseCiConfig(text: string): CiConfig {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (error) {
    throw new CiConfigError(
      `Invalid configuration format: ${(error as Error).message.split("\n")[0] ?? ""}`,
    );
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new CiConfigError("Invalid configuration format");
  }
  const root = doc as Record<string, unknown>;
  const stages = [
    ".pre",
    ...(lines(root.stages).length > 0 ? lines(root.stages) : ["build", "test", "deploy"]),
    ".post",
  ];
  const defaults = (
    typeof root.default === "object" && root.default !== null ? root.default : {}
  ) as Record<string, unknown>;
  const jobs: CiJob[] = [];
  for (const [name, value] of Object.entries(root)) {
    if (RESERVED.has(name) || name.startsWith(".")) continue;
    if (typeof value !== "object" || value === null)
      throw new CiConfigError(`jobs:${name} config should be a hash`);
    const job = value as Record<string, unknown>;
    if (job.script === undefined && job.trigger === undefined) {
      throw new CiConfigError(
        `jobs ${name} config should implement the script:, run:, or trigger: keyword`,
      );
    }
    const stage = typeof job.stage === "string" ? job.stage : "test";
    if (!stages.includes(stage)) {
      throw new CiConfigError(
        `${name} job: chosen stage ${stage} does not exist; available stages are ${stages.join(", ")}`,
      );
    }
    jobs.push({
      name,
      stage,
      script: lines(job.script),
      beforeScript: lines(job.before_script ?? defaults.before_script ?? root.before_script),
      afterScript: lines(job.after_script ?? defaults.after_script ?? root.after_script),
      rules: rules(job.rules, `jobs:${name}:rules`),
      when: (typeof job.when === "string" ? job.when : "on_success") as When,
      allowFailure: typeof job.allow_failure === "boolean" ? job.allow_failure : null,
      variables: variables(job.variables),
      timeoutMs: timeout(job.timeout ?? defaults.timeout),
    });
  }
  const workflow = root.workflow as Record<string, unknown> | undefined;
  return {
    stages,
    variables: variables(root.variables),
    workflowRules: rules(workflow?.rules, "workflow:rules"),
    jobs,
  };
}

/** The first rule that matches (a rule without `if` always does), or null. */
export function firstMatch(list: Rule[], vars: Record<string, string>): Rule | null {
  return list.find((r) => r.if === undefined || evaluate(r.if, vars)) ?? null;
}

// ---- rules:if ----------------------------------------------------------------------------------

type Token =
  | { t: "var"; name: string }
  | { t: "str"; value: string }
  | { t: "re"; re: RegExp }
  | { t: "null" }
  | { t: "op"; op: string };

function tokenize(expr: string): Token[] {
  const out: Token[] = [];
  const re =
    /\s*(?:\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|\/((?:[^/\\]|\\.)*)\/([a-z]*)|(null)\b|(==|!=|=~|!~|&&|\|\||\(|\)))/y;
  let rest = expr.trim();
  while (rest !== "") {
    re.lastIndex = 0;
    const m = re.exec(rest);
    if (m === null) throw new CiConfigError(`invalid expression syntax: ${expr}`);
    if (m[1] !== undefined) out.push({ t: "var", name: m[1] });
    else if (m[2] !== undefined) out.push({ t: "str", value: m[2] });
    else if (m[3] !== undefined) out.push({ t: "str", value: m[3] });
    else if (m[4] !== undefined)
      out.push({ t: "re", re: new RegExp(m[4], (m[5] ?? "").replace(/[^imsu]/g, "")) });
    else if (m[6] !== undefined) out.push({ t: "null" });
    else out.push({ t: "op", op: m[7] ?? "" });
    rest = rest.slice(m[0].length).trimStart();
  }
  return out;
}

type Value = string | RegExp | null;

/** Evaluates a `rules:if` expression against the pipeline's variables. */
export function evaluate(expr: string, vars: Record<string, string>): boolean {
  const tokens = tokenize(expr);
  let i = 0;
  const peek = (): Token | undefined => tokens[i];
  const operand = (): Value => {
    const token = tokens[i++];
    if (token === undefined) throw new CiConfigError(`invalid expression syntax: ${expr}`);
    if (token.t === "var") return vars[token.name] ?? null;
    if (token.t === "str") return token.value;
    if (token.t === "re") return token.re;
    if (token.t === "null") return null;
    throw new CiConfigError(`invalid expression syntax: ${expr}`);
  };
  const asRegExp = (v: Value): RegExp | null => {
    if (v instanceof RegExp) return v;
    const m = v === null ? null : /^\/(.*)\/([a-z]*)$/s.exec(v);
    return m === null ? null : new RegExp(m[1] ?? "", (m[2] ?? "").replace(/[^imsu]/g, ""));
  };
  const primary = (): boolean => {
    const token = peek();
    if (token?.t === "op" && token.op === "(") {
      i++;
      const value = or();
      i++; // ")"
      return value;
    }
    const left = operand();
    const next = peek();
    if (next?.t !== "op" || !["==", "!=", "=~", "!~"].includes(next.op)) {
      return typeof left === "string" && left !== "";
    }
    i++;
    const right = operand();
    if (next.op === "==" || next.op === "!=") {
      const same = String(left) === String(right) && (left === null) === (right === null);
      return next.op === "==" ? same : !same;
    }
    const pattern = asRegExp(right);
    const matched = typeof left === "string" && pattern !== null && pattern.test(left);
    return next.op === "=~" ? matched : !matched;
  };
  const and = (): boolean => {
    let value = primary();
    while (peek()?.t === "op" && (peek() as { op: string }).op === "&&") {
      i++;
      const right = primary();
      value = value && right;
    }
    return value;
  };
  const or = (): boolean => {
    let value = and();
    while (peek()?.t === "op" && (peek() as { op: string }).op === "||") {
      i++;
      const right = and();
      value = value || right;
    }
    return value;
  };
  return or();
}
