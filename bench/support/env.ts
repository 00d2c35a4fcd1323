/** A whole-number setting from the environment, within bounds; the fallback when unset. */
export function integerFromEnv(name: string, fallback: number, min: number, max: number): number {
  const value = process.env[name];
  if (value === undefined || value.trim() === "") return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min || number > max) {
    throw new Error(`${name} takes a whole number from ${min} to ${max} (got "${value}").`);
  }
  return number;
}

/** A comma-separated setting from the environment: its non-empty items, trimmed. */
export function listFromEnv(name: string, fallback: string): string[] {
  return (process.env[name] ?? fallback)
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}
