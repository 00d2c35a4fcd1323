/**
 * HTML by tagged template: every interpolated value is escaped unless it is `SafeHtml` (`markup`'s
 * own, or `trustedHtml`). URL attributes take only relative or http(s) URLs (anything else renders
 * as `about:invalid#unsafe-url`); an unquoted attribute (`=${…}`) throws.
 */

/** Markup that is already safe: produced by `markup`, never by concatenating raw input. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/**
 * Marks text as HTML as it is. Only for markup this code wrote itself (an SVG renderer's output,
 * a constant): never for anything that came from a request, a report or the database.
 */
export function trustedHtml(text: string): SafeHtml {
  return new SafeHtml(text);
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

export type Interpolation =
  SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

/** What an unsafe URL renders as (Go's html/template does the same with its own marker). */
export const UNSAFE_URL = "about:invalid#unsafe-url";

/** A URL attribute's value opened just before the interpolation: `href="`. */
const URL_ATTRIBUTE = /\s(?:href|src|action|formaction|xlink:href|poster)\s*=\s*["']$/i;
/** An attribute whose value is not quoted, inside a tag: ` title=` (attributes as we write them). */
const UNQUOTED_ATTRIBUTE = /\s[\w:-]+=$/;

/** Relative to this server (`/x`, `?q`, `#a`, but not `//host`) or an http(s) URL. */
export function isSafeUrl(url: string): boolean {
  const trimmed = url.trim();
  if (/^\/(?![/\\])/.test(trimmed) || /^[?#]/.test(trimmed)) return true;
  return /^https?:\/\/[^\s]+$/i.test(trimmed);
}

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false || value === true) return "";
  if (value instanceof SafeHtml) return value.value;
  if (typeof value === "number") return escapeHtml(String(value));
  if (typeof value === "string") return escapeHtml(value);
  return value.map(render).join("");
}

/**
 * A template whose every interpolation is escaped (arrays are joined; booleans, null and
 * undefined render nothing). Named `markup`, not `html`, so that formatters leave the markup of
 * templates exactly as written.
 */
export function markup(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, i) => {
    const before = strings[i] ?? "";
    if (UNQUOTED_ATTRIBUTE.test(before) && out.lastIndexOf("<") > out.lastIndexOf(">")) {
      throw new Error(`markup: quote the attribute before \${…} (after "${before.slice(-30)}")`);
    }
    if (URL_ATTRIBUTE.test(before) && !(value instanceof SafeHtml)) {
      const text = typeof value === "string" ? value : "";
      out += escapeHtml(isSafeUrl(text) ? text : UNSAFE_URL);
    } else {
      out += render(value);
    }
    out += strings[i + 1] ?? "";
  });
  return new SafeHtml(out);
}

/** Joins pieces of markup with a separator (itself escaped unless it is markup). */
export function joinMarkup(parts: readonly SafeHtml[], separator: Interpolation = ""): SafeHtml {
  const sep = render(separator);
  return new SafeHtml(parts.map((p) => p.value).join(sep));
}

/**
 * A path with its query, built from parts (never from raw input): `/acme/flaky-tests/repo` and
 * `{repo: "acme/app", page: 2}` → `/acme/flaky-tests/repo?repo=acme/app&page=2`. Undefined and
 * empty values are left out; slashes stay readable in values (they need no escaping in a query).
 */
export function pathWithQuery(
  path: string,
  query: Readonly<Record<string, string | number | undefined>> = {},
): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString().replace(/%2F/gi, "/");
  return text ? `${path}?${text}` : path;
}

/** One path segment, percent-encoded. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}
