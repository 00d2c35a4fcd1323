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

/** Where a value sits: its parent's place and its key there (paths are built only when needed). */
interface Place {
  parent: Place | null;
  key: string | number;
}

function pathOf(place: Place | null, rootPath: string): string {
  const keys: (string | number)[] = [];
  for (let at = place; at !== null; at = at.parent) keys.push(at.key);
  let path = rootPath;
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i] as string | number;
    path = typeof key === "number" ? `${path}[${String(key)}]` : path ? `${path}.${key}` : key;
  }
  return path || "body";
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
  const values: unknown[] = [root];
  const places: (Place | null)[] = [null];
  for (;;) {
    const value = values.pop();
    const place = places.pop();
    if (place === undefined) return undefined;
    if (typeof value === "string") {
      const problem = unstorableText(value);
      if (problem) return { path: pathOf(place, rootPath), message: problem };
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        values.push(value[i]);
        places.push({ parent: place, key: i });
      }
    } else if (typeof value === "object" && value !== null && !ArrayBuffer.isView(value)) {
      // Bytes (a body kept raw, as webhook deliveries are) are not text: not walked key by key.
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        const keyProblem = unstorableText(key);
        if (keyProblem) {
          return { path: pathOf(place, rootPath), message: `has a field name that ${keyProblem}` };
        }
        values.push((value as Record<string, unknown>)[key]);
        places.push({ parent: place, key });
      }
    }
  }
}
