/**
 * How the configuration reads a setting: the error it throws, and the parsing of the kinds of
 * values several settings share.
 */

export class ConfigError extends Error {}

export function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

/**
 * A setting that is a whole number within bounds (`fallback` when unset); anything else is a
 * ConfigError that names the setting, its unit and bounds, and what was given.
 */
export function wholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  rule: WholeNumberRule & { fallback: number },
): number {
  return optionalWholeNumber(env, name, rule) ?? rule.fallback;
}

export interface WholeNumberRule {
  min: number;
  max?: number;
  unit: string;
  why?: string;
}

/** The same, undefined when the setting is not set. */
export function optionalWholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  rule: WholeNumberRule,
): number | undefined {
  const text = nonEmpty(env[name]);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (/^\d+$/.test(text) && value >= rule.min && (rule.max === undefined || value <= rule.max)) {
    return value;
  }
  const range =
    rule.max === undefined
      ? `, at least ${String(rule.min)}`
      : ` from ${String(rule.min)} to ${String(rule.max)}`;
  const why = rule.why === undefined ? "" : `; ${rule.why}`;
  throw new ConfigError(
    `${name} must be a whole number of ${rule.unit}${range} (got "${text.slice(0, 80)}")${why}.`,
  );
}
