/**
 * The repository stands on its own: no tracked file points outside it (to a `shared` directory
 * beside the checkout, or a variable naming one), and every "contract §N" citation and every link
 * to a section of docs/contract.md lands on a section that exists. The same for the background
 * (docs/background.md): nothing cites the research notes it was written from, and every
 * citation of one of its sections ("background", a "§" and the section's key, as in the code's
 * comments) and every link into it lands on one of its headings.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Tracked text files (binary ones, with a NUL byte, are left out) and their contents. */
function trackedTexts(): { file: string; text: string }[] {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((f) => f !== "");
  return files.flatMap((file) => {
    let buffer: Buffer;
    try {
      buffer = readFileSync(path.join(root, file));
    } catch {
      return []; // deleted in the working tree, not yet committed
    }
    return buffer.includes(0) ? [] : [{ file, text: buffer.toString("utf8") }];
  });
}

// Spelled in pieces so that this file does not match itself.
const FORBIDDEN = ["../" + "shared", "shared" + "/spec", "MAINLINE_" + "SHARED_DIR"];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

const contract = readFileSync(path.join(root, "docs/contract.md"), "utf8");
const sections = new Set([...contract.matchAll(/^## (\d+)\. /gm)].map((match) => Number(match[1])));
const anchors = new Set(
  [...contract.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? "")),
);

/** Every "contract §N" (also "contract.md §N", "Contract §N") in a text, with its line. */
function contractCitations(text: string): { line: number; section: number }[] {
  return text.split("\n").flatMap((line, index) =>
    [...line.matchAll(/\bcontract(?:\.md)?\]?(?:\([^)]*\))?,? §(\d+)/gi)].map((match) => ({
      line: index + 1,
      section: Number(match[1]),
    })),
  );
}

/** Every link to an anchor of contract.md in a text. */
function contractAnchors(text: string): { line: number; anchor: string }[] {
  return text.split("\n").flatMap((line, index) =>
    [...line.matchAll(/contract\.md#([\w-]+)/g)].map((match) => ({
      line: index + 1,
      anchor: match[1] ?? "",
    })),
  );
}

const background = readFileSync(path.join(root, "docs/background.md"), "utf8");

/** The key of a background section: "## Merge queue §2.7 — batching" is `merge-queue-2.7`. */
function backgroundKey(topic: string, section: string | undefined): string {
  const slug = topic.trim().toLowerCase().replace(/\s+/g, "-");
  return section === undefined ? slug : `${slug}-${section}`;
}

/** The sections of docs/background.md: `## <Topic>[ §<N>] — <title>`. */
const backgroundKeys = new Set(
  [...background.matchAll(/^## ([A-Za-z][A-Za-z ]*?)(?: §(\d+(?:\.\d+)*))? — /gm)].map((match) =>
    backgroundKey(match[1] ?? "", match[2]),
  ),
);
const backgroundAnchors = new Set(
  [...background.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? "")),
);

/** Line number (1-based) of a character offset. */
const lineAt = (text: string, offset: number): number => text.slice(0, offset).split("\n").length;

// The research notes the background was written from (outside the repository).
const NOTES = "merge-queue|trunk-api|test-health|stack|dashboard|github-provider";
/**
 * A citation of those notes: the word "research" (any case, a whole word), then, across spaces,
 * line breaks and comment markers (`*`, `//`, `#`), optionally "'s", either a "§", the name of a
 * note (optionally with `.md`) or the word "table". All must point at docs/background.md instead.
 */
const RESEARCH_CITATION = new RegExp(
  `\\bresearch\\b(?:'s)?(?:[\\s*/#]+)(?:§|(?:${NOTES})(?:\\.md)?\\b|table\\b)`,
  "gi",
);

/** Every citation of the research notes in a text, with its line and wording. */
function researchCitations(text: string): { line: number; cited: string }[] {
  return [...text.matchAll(RESEARCH_CITATION)].map((match) => ({
    line: lineAt(text, match.index),
    cited: match[0].replace(/\s+/g, " "),
  }));
}

const KEY = "[a-z]+(?:-[a-z]+)*(?:-\\d+(?:\\.\\d+)*)?";
/**
 * Every citation of docs/background.md: the word "background" (any case, also "background.md"),
 * then, across spaces, line breaks and comment markers, a "§" and a section key such as
 * `merge-queue-2.7`, then any further keys listed after it (", §" or " and §", then a key). What
 * follows a "§" after "background" is reported as it stands when it is not a key, so that a
 * citation without its topic ("5.2") fails too.
 */
function backgroundCitations(text: string): { line: number; key: string }[] {
  const citation = new RegExp(
    `\\bbackground(?:\\.md)?[\\s*/#]+§(${KEY}|[^\\s),;]*)((?:(?:,| and) §${KEY})*)`,
    "gi",
  );
  return [...text.matchAll(citation)].flatMap((match) =>
    [match[1] ?? "", ...[...(match[2] ?? "").matchAll(/§([\w.-]+)/g)].map((m) => m[1] ?? "")].map(
      (key) => ({ line: lineAt(text, match.index), key: key.replace(/\.+$/, "") }),
    ),
  );
}

/** Every link to an anchor of background.md in a text (and same-file links inside it). */
function backgroundLinks(file: string, text: string): { line: number; anchor: string }[] {
  const pattern = file === "docs/background.md" ? /\]\(#([\w-]+)\)/g : /background\.md#([\w-]+)/g;
  return [...text.matchAll(pattern)].map((match) => ({
    line: lineAt(text, match.index),
    anchor: match[1] ?? "",
  }));
}

describe("the repository needs nothing beside it", () => {
  const texts = trackedTexts();

  it("has tracked files to look at (the check is not vacuous)", () => {
    expect(texts.length).toBeGreaterThan(100);
    expect(texts.some((t) => t.file === "docs/contract.md")).toBe(true);
    expect(sections).toEqual(new Set([1, 2, 3, 4, 5, 6, 7, 8, 9]));
  });

  it("no tracked file points at a shared directory outside the repository", () => {
    const found = texts.flatMap(({ file, text }) =>
      FORBIDDEN.filter((needle) => text.includes(needle)).map((needle) => `${file}: ${needle}`),
    );
    expect(found).toEqual([]);
  });

  it("every contract citation names a section of docs/contract.md", () => {
    const citations = texts.flatMap(({ file, text }) =>
      contractCitations(text).map((c) => ({ ...c, file })),
    );
    expect(citations.length).toBeGreaterThan(20);
    const dangling = citations
      .filter((c) => !sections.has(c.section))
      .map((c) => `${c.file}:${c.line}: §${c.section}`);
    expect(dangling).toEqual([]);
  });

  it("every link into docs/contract.md lands on a heading", () => {
    const links = texts.flatMap(({ file, text }) =>
      contractAnchors(text).map((a) => ({ ...a, file })),
    );
    expect(links.length).toBeGreaterThan(5);
    const dangling = links
      .filter((a) => !anchors.has(a.anchor))
      .map((a) => `${a.file}:${a.line}: #${a.anchor}`);
    expect(dangling).toEqual([]);
  });

  it("cites no research notes: every such citation points at docs/background.md", () => {
    const found = texts
      .filter(({ file }) => !file.startsWith("test/fixtures/"))
      .flatMap(({ file, text }) =>
        researchCitations(text).map((c) => `${file}:${c.line}: ${c.cited}`),
      );
    expect(found).toEqual([]);
  });

  it("every background citation names a section of docs/background.md", () => {
    expect(backgroundKeys.size).toBeGreaterThan(20);
    const citations = texts.flatMap(({ file, text }) =>
      backgroundCitations(text).map((c) => ({ ...c, file })),
    );
    expect(citations.length).toBeGreaterThan(30);
    const dangling = citations
      .filter((c) => !backgroundKeys.has(c.key))
      .map((c) => `${c.file}:${c.line}: §${c.key}`);
    expect(dangling).toEqual([]);
  });

  it("every link into docs/background.md lands on a heading", () => {
    const links = texts.flatMap(({ file, text }) =>
      backgroundLinks(file, text).map((a) => ({ ...a, file })),
    );
    expect(links.length).toBeGreaterThan(5);
    const dangling = links
      .filter((a) => !backgroundAnchors.has(a.anchor))
      .map((a) => `${a.file}:${a.line}: #${a.anchor}`);
    expect(dangling).toEqual([]);
  });

  it("recognizes the research and background citation forms it checks", () => {
    const r = "re" + "search"; // spelled in pieces so that this file does not match itself
    expect(
      researchCitations(
        [
          `(${r} merge-queue §2.7), ${r}`,
          ` * trunk-api §3.4; ${r} §2.2 and ${r.toUpperCase()} §5.2's model,`,
          `the ${r} table's figure, (${r} github-provider.md), a ${r} stack note`,
          `facebook${r}/ProgramBench#64 and ${r} in general`,
        ].join("\n"),
      ).map((c) => [c.line, c.cited]),
    ).toEqual([
      [1, `${r} merge-queue`],
      [1, `${r}\n * trunk-api`.replace(/\s+/g, " ")],
      [2, `${r} §`],
      [2, `${r.toUpperCase()} §`],
      [3, `${r} table`],
      [3, `${r} github-provider.md`],
      [3, `${r} stack`],
    ]);
    expect(
      backgroundCitations(
        [
          "(background §merge-queue-2.7), background.md §github-provider; Background",
          " * §merge-queue-5.2, §merge-queue-8.3 and §trunk-api-3.12. A background " + "§5.2",
        ].join("\n"),
      ),
    ).toEqual([
      { line: 1, key: "merge-queue-2.7" },
      { line: 1, key: "github-provider" },
      { line: 1, key: "merge-queue-5.2" },
      { line: 1, key: "merge-queue-8.3" },
      { line: 1, key: "trunk-api-3.12" },
      { line: 2, key: "5.2" },
    ]);
    expect(backgroundKey("Trunk API", "3.12")).toBe("trunk-api-3.12");
    expect(anchorOf("Merge queue §2.7 — batching and bisection")).toBe(
      "merge-queue-27--batching-and-bisection",
    );
  });

  it("recognizes the citation forms it checks", () => {
    expect(
      contractCitations(["see contract", "§9 and docs/contract.md §3, Contract §1."].join(" ")),
    ).toEqual([
      { line: 1, section: 9 },
      { line: 1, section: 3 },
      { line: 1, section: 1 },
    ]);
    expect(contractCitations("[contract §7](contract.md#7-running-it)")).toEqual([
      { line: 1, section: 7 },
    ]);
    expect(anchorOf("2. Organizations, repositories and tenancy")).toBe(
      "2-organizations-repositories-and-tenancy",
    );
  });
});
