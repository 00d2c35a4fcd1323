/**
 * The repository stands on its own: no tracked file points outside it (to a `shared` directory
 * beside the checkout, or a variable naming one), and every "contract §N" citation and every link
 * to a section of docs/contract.md lands on a section that exists.
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

describe("the repository needs nothing beside it", () => {
  const texts = trackedTexts();

  it("has tracked files to look at (the check is not vacuous)", () => {
    expect(texts.length).toBeGreaterThan(100);
    expect(texts.some((t) => t.file === "docs/contract.md")).toBe(true);
    expect(sections).toEqual(new Set([1, 2, 3, 4, 5, 6, 7, 8]));
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
    expect(citations.length).toBeGreaterThan(50);
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
