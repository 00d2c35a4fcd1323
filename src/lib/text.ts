/**
 * Text both databases store exactly as given: PostgreSQL's `text` takes no NUL character, and a
 * UTF-16 surrogate without its other half has no UTF-8 form (drivers silently replace it).
 */

/** A UTF-16 surrogate without its other half: not Unicode text, and not storable as UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored as text by both databases, or undefined when it can. */
export function unstorableText(value: string): string | undefined {
  if (value.includes("\u0000")) return "must not contain NUL characters (\\u0000)";
  if (LONE_SURROGATE.test(value)) {
    return "must be valid Unicode text (it holds an unpaired surrogate)";
  }
  return undefined;
}

function childPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${String(key)}]`;
  return parent === "" ? key : `${parent}.${key}`;
}

/**
 * The first string (or object key) in a parsed JSON value that PostgreSQL cannot store
 * (`text` takes no NUL) or that is not Unicode, with its path (`repo.owner`, `items[2]`).
 * Iterative, so that a deeply nested body cannot exhaust the stack.
 */
export function findUnstorableText(
  root: unknown,
  rootPath: string,
): { path: string; message: string } | undefined {
  const stack: { value: unknown; path: string }[] = [{ value: root, path: rootPath }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { value, path } = next;
    if (typeof value === "string") {
      const problem = unstorableText(value);
      if (problem) return { path: path || "body", message: problem };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], path: childPath(path, i) });
      }
    } else if (typeof value === "object" && value !== null) {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        const keyProblem = unstorableText(key);
        if (keyProblem) {
          return { path: path || "body", message: `has a field name that ${keyProblem}` };
        }
        stack.push({ value: child, path: childPath(path, key) });
      }
    }
  }
  return undefined;
}
