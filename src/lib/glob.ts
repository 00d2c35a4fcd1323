/**
 * A small glob expander for JUnit report paths (`mainline upload --junit`, a check's
 * `junit_paths`): `*`, `?`, `[set]` and `**`, shell-like about dot files; the rules are on
 * `expandGlobs`.
 */
import type { Dirent } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";

/** One segment of a pattern: a literal name, `**`, or a matcher for names. */
export type GlobSegment =
  | { kind: "literal"; name: string }
  | { kind: "globstar" }
  | { kind: "wildcard"; source: string; test: (name: string) => boolean };

export interface CompiledGlob {
  /** Absolute directory where matching starts. */
  base: string;
  segments: GlobSegment[];
}

const WILDCARD = /[*?[]/;
const SKIPPED_BY_GLOBSTAR = new Set(["node_modules"]);

/** True when the text has a wildcard (`*`, `?` or `[`). */
export function hasWildcard(text: string): boolean {
  return WILDCARD.test(text);
}

/** The regular expression for one segment's wildcard pattern (anchored, no `/`). */
export function segmentRegExp(pattern: string): RegExp {
  let source = "";
  for (let at = 0; at < pattern.length; at++) {
    const char = pattern.charAt(at);
    if (char === "*") {
      while (pattern.charAt(at + 1) === "*") at++; // `a**b` is `a*b` within a segment
      source += "[^/]*";
    } else if (char === "?") {
      source += "[^/]";
    } else if (char === "[") {
      const end = pattern.indexOf("]", at + 2);
      if (end === -1) {
        source += "\\[";
        continue;
      }
      let body = pattern.slice(at + 1, end);
      const negated = body.startsWith("!") || body.startsWith("^");
      if (negated) body = body.slice(1);
      source += `[${negated ? "^/" : ""}${body.replace(/[\\\]^]/g, "\\$&")}]`;
      at = end;
    } else {
      source += char.replace(/[.+^${}()|\\]/g, "\\$&");
    }
  }
  return new RegExp(`^${source}$`);
}

function compileSegment(segment: string): GlobSegment {
  if (segment === "**") return { kind: "globstar" };
  if (!hasWildcard(segment)) return { kind: "literal", name: segment };
  const regExp = segmentRegExp(segment);
  const matchesDot = segment.startsWith(".");
  return {
    kind: "wildcard",
    source: segment,
    test: (name) => (matchesDot || !name.startsWith(".")) && regExp.test(name),
  };
}

/** Splits a pattern into its base directory and segments. Pure. */
export function compileGlob(pattern: string, cwd: string): CompiledGlob {
  const absolute = path.isAbsolute(pattern);
  const parts = pattern.split("/").filter((part) => part !== "" && part !== ".");
  const segments: GlobSegment[] = [];
  for (const part of parts) {
    const segment = compileSegment(part);
    // `**/**` is `**`.
    if (segment.kind === "globstar" && segments.at(-1)?.kind === "globstar") continue;
    segments.push(segment);
  }
  return { base: absolute ? path.parse(path.resolve(pattern)).root : path.resolve(cwd), segments };
}

/** Whether `relativePath` (`/`-separated, relative to the pattern's base) matches. Pure. */
export function matchesGlob(pattern: string, relativePath: string): boolean {
  const { segments } = compileGlob(pattern, "/");
  const names = relativePath.split("/").filter((part) => part !== "" && part !== ".");
  return matchFrom(segments, 0, names, 0);
}

function matchFrom(segments: GlobSegment[], si: number, names: string[], ni: number): boolean {
  const segment = segments[si];
  if (segment === undefined) return ni === names.length;
  if (segment.kind === "globstar") {
    for (let skip = ni; skip <= names.length; skip++) {
      if (skip > ni && !descendable(names[skip - 1] ?? "")) return false;
      if (matchFrom(segments, si + 1, names, skip)) return true;
    }
    return false;
  }
  const name = names[ni];
  if (name === undefined) return false;
  const ok = segment.kind === "literal" ? segment.name === name : segment.test(name);
  return ok && matchFrom(segments, si + 1, names, ni + 1);
}

function descendable(name: string): boolean {
  return !name.startsWith(".") && !SKIPPED_BY_GLOBSTAR.has(name);
}

async function statKind(file: string): Promise<"file" | "directory" | null> {
  try {
    const info = await stat(file);
    if (info.isFile()) return "file";
    return info.isDirectory() ? "directory" : null;
  } catch {
    return null;
  }
}

async function listDirectory(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch {
    return []; // unreadable or vanished: nothing matches there
  }
}

/** The files one pattern matches, as absolute paths (unsorted, may repeat). */
async function expandOne(compiled: CompiledGlob, found: Set<string>): Promise<void> {
  const { segments } = compiled;
  const visit = async (dir: string, index: number, known?: "file" | "directory"): Promise<void> => {
    const segment = segments[index];
    if (segment === undefined) {
      if ((known ?? (await statKind(dir))) === "file") found.add(dir);
      return;
    }
    switch (segment.kind) {
      case "literal": {
        const next = path.join(dir, segment.name);
        const kind = await statKind(next);
        if (kind === "file" && index === segments.length - 1) found.add(next);
        else if (kind === "directory") await visit(next, index + 1, kind);
        return;
      }
      case "wildcard": {
        for (const entry of await listDirectory(dir)) {
          if (!segment.test(entry.name)) continue;
          const next = path.join(dir, entry.name);
          const kind = entry.isSymbolicLink() ? await statKind(next) : direntKind(entry);
          if (kind === null) continue;
          if (index === segments.length - 1) {
            if (kind === "file") found.add(next);
          } else if (kind === "directory") {
            await visit(next, index + 1, kind);
          }
        }
        return;
      }
      case "globstar": {
        const last = index === segments.length - 1;
        if (!last) await visit(dir, index + 1, "directory");
        for (const entry of await listDirectory(dir)) {
          if (!descendable(entry.name)) continue;
          const next = path.join(dir, entry.name);
          if (entry.isDirectory()) await visit(next, index, "directory");
          // A trailing `**` matches every file below.
          else if (last && (entry.isFile() || (await statKind(next)) === "file")) found.add(next);
        }
        return;
      }
    }
  };
  if (segments.length === 0) return;
  await visit(compiled.base, 0, "directory");
}

function direntKind(entry: Dirent): "file" | "directory" | null {
  if (entry.isFile()) return "file";
  return entry.isDirectory() ? "directory" : null;
}

export interface GlobExpansion {
  /** Every matched file once, sorted, absolute. */
  files: string[];
  /** The patterns that matched no file. */
  unmatched: string[];
}

/**
 * Expands each pattern relative to `cwd` (unless absolute; patterns are `/`-separated):
 *
 * - `*` matches any characters within one path segment, `?` one character, `[abc]`, `[a-z]` and
 *   `[!abc]` one character of (or not of) a set;
 * - `**` as a whole segment matches zero or more directories;
 * - wildcards do not match a leading `.` (as in shells): `*.xml` skips `.hidden.xml`, `.*.xml`
 *   matches it;
 * - `**` does not descend into dot-directories, `node_modules` or symbolic links to directories
 *   (no cycles, no vendored reports); name such a directory literally to search it;
 * - segments without wildcards (including `..`) are taken as they are, without listing the
 *   directory.
 *
 * Only files are returned (a symbolic link to a file counts), as sorted absolute paths.
 */
export async function expandGlobs(
  patterns: readonly string[],
  cwd: string,
): Promise<GlobExpansion> {
  const all = new Set<string>();
  const unmatched: string[] = [];
  for (const pattern of patterns) {
    const found = new Set<string>();
    await expandOne(compileGlob(pattern, cwd), found);
    if (found.size === 0) unmatched.push(pattern);
    for (const file of found) all.add(file);
  }
  return { files: [...all].sort(), unmatched };
}
