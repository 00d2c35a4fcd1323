// CODEOWNERS, GitHub and GitLab flavours: parse once, then answer "who owns this file?" cheaply.
//
// Patterns are compiled to regular expressions here rather than matched with `ignore`: GitHub
// documents that `docs/*` does not own `docs/build-app/troubleshooting.md`, while gitignore
// semantics (and `ignore`) match it through the ignored directory `docs/build-app`; GitLab's
// rules (every relative pattern floats to any depth, no implied directory contents) differ
// from gitignore too, and `ignore` throws on paths such as `./src/a.ts`.

export type CodeownersSyntax = "github" | "gitlab";

export interface CodeownersProblem {
  /** 1-based line number in the CODEOWNERS text. */
  line: number;
  message: string;
}

export interface Codeowners {
  readonly syntax: CodeownersSyntax;
  /** Lines that were skipped or are suspicious; parsing never throws. */
  readonly problems: readonly CodeownersProblem[];
  /** Owners of a repository-relative file path, `[]` when no rule (or an owner-less rule) matches. */
  ownersOf(path: string): string[];
}

interface OwnershipRule {
  matcher: RegExp;
  owners: readonly string[];
}

interface GitLabSection {
  rules: Map<string, OwnershipRule>; // keyed by normalized pattern, in first-definition order
}

const GITLAB_SECTION_HEADER = /^\s*\^?\[[^\]]+\]/;

export function parseCodeowners(text: string): Codeowners {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n|\r/);
  return lines.some((line) => GITLAB_SECTION_HEADER.test(line))
    ? parseGitLab(lines)
    : parseGitHub(lines);
}

/** `./src/a.ts`, `/src/a.ts`, `src\a.ts` and `src//a.ts` all become `src/a.ts`. */
export function normalizeRepoPath(path: string): string {
  return path
    .replaceAll("\\", "/")
    .split("/")
    .filter((segment) => segment !== "" && segment !== ".")
    .join("/");
}

// ---------------------------------------------------------------------------------------------
// GitHub: gitignore-style patterns, the last matching rule wins (even one without owners).

function parseGitHub(lines: readonly string[]): Codeowners {
  const rules: OwnershipRule[] = [];
  const problems: CodeownersProblem[] = [];
  lines.forEach((rawLine, index) => {
    const entry = splitEntry(rawLine);
    if (entry === null) return;
    const rule = githubRule(entry);
    if (typeof rule === "string") problems.push({ line: index + 1, message: rule });
    else rules.push(rule);
  });
  rules.reverse(); // so that the first hit is the last matching rule
  return {
    syntax: "github",
    problems,
    ownersOf(path) {
      const file = normalizeRepoPath(path);
      if (file === "") return [];
      const rule = rules.find((candidate) => candidate.matcher.test(file));
      return rule ? [...rule.owners] : [];
    },
  };
}

/** A GitHub rule, or why its line is invalid. */
function githubRule(entry: CodeownersEntry): OwnershipRule | string {
  const owners = githubOwners(entry.ownerTokens);
  if (typeof owners === "string") return owners;
  const matcher = compileGitHubPattern(entry.pattern);
  return typeof matcher === "string" ? matcher : { matcher, owners };
}

/** The owners of a GitHub rule, or why the line is invalid (GitHub skips such lines). */
function githubOwners(tokens: readonly string[]): string[] | string {
  const owners: string[] = [];
  for (const token of tokens) {
    if (token.startsWith("#")) break; // a trailing comment
    if (!looksLikeOwner(token)) {
      return `"${token}" is not an owner (expected @user, @org/team or an email address)`;
    }
    owners.push(token);
  }
  return dedupeOwners(owners);
}

function compileGitHubPattern(pattern: string): RegExp | string {
  if (pattern.startsWith("!")) return `negated pattern "${pattern}" is not supported`;
  const directoryOnly = pattern.endsWith("/");
  const trimmed = pattern.replace(/^\/+/, "").replace(/\/+$/, "");
  if (trimmed === "") return `pattern "${pattern}" matches nothing`;
  // gitignore: a slash at the start or in the middle anchors the pattern to the root.
  const anchored = pattern.startsWith("/") || trimmed.includes("/");
  // GitHub: `docs/*` owns the files directly in docs/, not those in its subdirectories.
  const directChildrenOnly = pattern.endsWith("/*");
  const body = globToRegExpSource(trimmed, { characterClasses: false });
  if (body === null) return `pattern "${pattern}" is malformed`;
  const prefix = anchored ? "" : "(?:.*/)?";
  // A pattern naming a directory also owns everything below it.
  const suffix = directChildrenOnly ? "" : directoryOnly ? "/.+" : "(?:/.+)?";
  return compileRegExp(`^${prefix}${body}${suffix}$`, pattern);
}

// ---------------------------------------------------------------------------------------------
// GitLab: sections; the last match within each section wins and the sections' owners combine.

function parseGitLab(lines: readonly string[]): Codeowners {
  const sections = new Map<string, GitLabSection>(); // keyed by lowercase name, first-seen order
  const problems: CodeownersProblem[] = [];
  const defaultSection: GitLabSection = { rules: new Map() };
  sections.set("codeowners", defaultSection); // GitLab's name for rules before any header
  let current: { section: GitLabSection; defaultOwners: string[] } = {
    section: defaultSection,
    defaultOwners: [],
  };

  lines.forEach((rawLine, index) => {
    const report = (message: string): void => {
      problems.push({ line: index + 1, message });
    };
    const line = rawLine.trim();
    if (line === "" || line.startsWith("#")) return;
    if (line.startsWith("[") || line.startsWith("^[")) {
      const header = parseSectionHeader(line, report);
      if (header === null) return;
      const key = header.name.toLowerCase(); // GitLab merges sections whose names differ in case
      const section = sections.get(key) ?? { rules: new Map<string, OwnershipRule>() };
      sections.set(key, section);
      current = { section, defaultOwners: header.defaultOwners };
      return;
    }
    const entry = splitEntry(rawLine);
    if (entry === null) return;
    const rule = gitlabRule(entry, current.defaultOwners, report);
    if (rule === null) return;
    // Redefining a pattern replaces its owners but keeps its place, as GitLab's ordered hash does.
    current.section.rules.set(rule.key, rule.rule);
  });

  const orderedSections = [...sections.values()].map((section) => [...section.rules.values()]);
  for (const rules of orderedSections) rules.reverse();
  return {
    syntax: "gitlab",
    problems,
    ownersOf(path) {
      const file = normalizeRepoPath(path);
      if (file === "") return [];
      const rooted = `/${file}`;
      const owners = orderedSections.flatMap(
        (rules) => rules.find((rule) => rule.matcher.test(rooted))?.owners ?? [],
      );
      return dedupeOwners(owners);
    },
  };
}

interface SectionHeader {
  name: string;
  defaultOwners: string[];
}

function parseSectionHeader(line: string, report: (message: string) => void): SectionHeader | null {
  const header = /^\^?\[([^\]]*)\](?:\[([^\]]*)\])?(.*)$/.exec(line);
  const name = header?.[1]?.trim() ?? "";
  if (header === null || name === "") {
    report("section header without a name");
    return null;
  }
  const approvals = header[2];
  if (approvals !== undefined && !/^\s*[1-9]\d*\s*$/.test(approvals)) {
    report(`section "${name}": approval count "${approvals}" is not a positive integer`);
  }
  const ownerText = (header[3] ?? "").trim();
  const defaultOwners = ownerText === "" ? [] : extractGitLabOwners(ownerText);
  if (ownerText !== "" && defaultOwners.length === 0) {
    report(`section "${name}": "${ownerText}" names no owners`);
  }
  return { name, defaultOwners };
}

function gitlabRule(
  entry: CodeownersEntry,
  defaultOwners: readonly string[],
  report: (message: string) => void,
): { key: string; rule: OwnershipRule } | null {
  if (entry.pattern.startsWith("!")) {
    report(`exclusion pattern "${entry.pattern}" is not supported`);
    return null;
  }
  const ownerText = entry.ownerTokens.join(" ");
  let owners = extractGitLabOwners(ownerText);
  if (ownerText !== "" && owners.length === 0) {
    report(`"${ownerText}" names no owners`);
  }
  if (ownerText === "") owners = [...defaultOwners];
  if (owners.length === 0) {
    // GitLab flags this too, but keeps the rule: a matching file has no owners in this section.
    report(`pattern "${entry.pattern}" has no owners and its section no default owners`);
  }
  const key = normalizeGitLabPattern(entry.pattern);
  const body = globToRegExpSource(key, { characterClasses: true });
  const matcher =
    body === null
      ? `pattern "${entry.pattern}" is malformed`
      : compileRegExp(`^${body}$`, entry.pattern);
  if (typeof matcher === "string") {
    report(matcher);
    return null;
  }
  return { key, rule: { matcher, owners } };
}

/** GitLab's `normalize_pattern`: relative patterns float to any depth; `dir/` owns its contents. */
function normalizeGitLabPattern(pattern: string): string {
  if (pattern === "*") return "/**/*";
  let normalized = pattern.startsWith("/") ? pattern : `/**/${pattern}`;
  if (normalized.endsWith("/")) normalized += "**/*";
  return normalized;
}

/** GitLab ignores words that are neither @names nor email addresses. */
function extractGitLabOwners(ownerText: string): string[] {
  return dedupeOwners(ownerText.split(/\s+/).filter(looksLikeOwner));
}

// ---------------------------------------------------------------------------------------------
// Shared pieces.

interface CodeownersEntry {
  pattern: string;
  ownerTokens: string[];
}

/** Splits a rule line at the first unescaped whitespace; null for blank lines and comments. */
function splitEntry(rawLine: string): CodeownersEntry | null {
  const line = rawLine.trim();
  if (line === "" || line.startsWith("#")) return null;
  const separator = /(?<!\\)\s+/.exec(line);
  const rawPattern = separator ? line.slice(0, separator.index) : line;
  const rest = separator ? line.slice(separator.index + separator[0].length) : "";
  // `\#` lets a pattern start with `#`; `\ ` puts a space in a pattern.
  const pattern = rawPattern.replace(/^\\#/, "#").replace(/\\(\s)/g, "$1");
  return { pattern, ownerTokens: rest === "" ? [] : rest.split(/\s+/) };
}

function looksLikeOwner(token: string): boolean {
  return /^@[^\s@]+$/.test(token) || /^[^\s@]+@[^\s@]+$/.test(token);
}

/** Removes repeated owners, case-insensitively (user and team names are), keeping first spelling. */
function dedupeOwners(owners: readonly string[]): string[] {
  const seen = new Set<string>();
  return owners.filter((owner) => {
    const key = owner.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Translates a glob to regular-expression source: `*` and `?` stay within a path segment, a
 * whole-segment `**` spans directories, `\x` is a literal x. Character classes (`[a-z]`) are
 * honoured only where the syntax has them: GitHub documents that CODEOWNERS lacks them.
 * Returns null for an unterminated class.
 */
function globToRegExpSource(glob: string, options: { characterClasses: boolean }): string | null {
  let source = "";
  let index = 0;
  while (index < glob.length) {
    const char = glob.charAt(index);
    const segmentStart = index === 0 || glob.charAt(index - 1) === "/";
    if (char === "*") {
      let end = index;
      while (glob.charAt(end) === "*") end++;
      const wholeSegment = end - index === 2 && segmentStart;
      if (wholeSegment && glob.charAt(end) === "/") {
        source += "(?:.*/)?";
        index = end + 1;
      } else if (wholeSegment && end === glob.length) {
        source += ".*";
        index = end;
      } else {
        source += "[^/]*";
        index = end;
      }
    } else if (char === "?") {
      source += "[^/]";
      index++;
    } else if (char === "\\" && index + 1 < glob.length) {
      source += escapeRegExp(glob.charAt(index + 1));
      index += 2;
    } else if (char === "[" && options.characterClasses) {
      const characterClass = readCharacterClass(glob, index);
      if (characterClass === null) return null;
      source += characterClass.source;
      index = characterClass.end;
    } else {
      source += escapeRegExp(char);
      index++;
    }
  }
  return source;
}

/** `[abc]`, `[a-z]`, `[!abc]` or `[^abc]` starting at `start`; never matches `/`. */
function readCharacterClass(glob: string, start: number): { source: string; end: number } | null {
  let index = start + 1;
  const negated = glob.charAt(index) === "!" || glob.charAt(index) === "^";
  if (negated) index++;
  let members = "";
  // A `]` right after the opening bracket is a member, not the end.
  if (glob.charAt(index) === "]") {
    members += "\\]";
    index++;
  }
  while (index < glob.length && glob.charAt(index) !== "]") {
    const char = glob.charAt(index);
    members += char === "-" ? "-" : escapeRegExp(char);
    index++;
  }
  if (index >= glob.length) return null;
  const source = negated ? `[^/${members}]` : `(?!/)[${members}]`;
  return { source, end: index + 1 };
}

/** A compiled matcher, or why it cannot be built (e.g. a reversed range such as `[z-a]`). */
function compileRegExp(source: string, pattern: string): RegExp | string {
  try {
    return new RegExp(source);
  } catch {
    return `pattern "${pattern}" is malformed`;
  }
}

function escapeRegExp(char: string): string {
  return /[.*+?^${}()|[\]\\/-]/.test(char) ? `\\${char}` : char;
}
