import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileGlob, expandGlobs, matchesGlob, segmentRegExp } from "../../src/lib/glob.js";

describe("segmentRegExp", () => {
  it.each([
    ["*.xml", "junit.xml", true],
    ["*.xml", "junit.xml.bak", false],
    ["junit-?.xml", "junit-1.xml", true],
    ["junit-?.xml", "junit-12.xml", false],
    ["report[0-9].xml", "report7.xml", true],
    ["report[0-9].xml", "reportx.xml", false],
    ["report[!0-9].xml", "reportx.xml", true],
    ["report[!0-9].xml", "report7.xml", false],
    ["a+b(c).xml", "a+b(c).xml", true],
    ["a+b(c).xml", "aab(c).xml", false],
    ["[unclosed", "[unclosed", true],
    ["a**b", "axyzb", true],
  ])("%s against %s: %s", (pattern, name, expected) => {
    expect(segmentRegExp(pattern).test(name)).toBe(expected);
  });
});

describe("matchesGlob", () => {
  it.each([
    ["test-results/**/*.xml", "test-results/junit.xml", true],
    ["test-results/**/*.xml", "test-results/a/b/c/junit.xml", true],
    ["test-results/**/*.xml", "other/junit.xml", false],
    ["**/junit.xml", "junit.xml", true],
    ["**/junit.xml", "pkg/a/junit.xml", true],
    ["**/junit.xml", "node_modules/x/junit.xml", false],
    ["**/junit.xml", ".cache/junit.xml", false],
    ["node_modules/**/junit.xml", "node_modules/x/junit.xml", true],
    ["*.xml", ".hidden.xml", false],
    [".*.xml", ".hidden.xml", true],
    ["reports/**", "reports/a/b.xml", true],
    ["./reports/*.xml", "reports/a.xml", true],
    ["reports/*.xml", "reports/a/b.xml", false],
    ["**/**/x.xml", "a/x.xml", true],
  ])("%s matches %s: %s", (pattern, file, expected) => {
    expect(matchesGlob(pattern, file)).toBe(expected);
  });
});

describe("compileGlob", () => {
  it("starts relative patterns at the working directory and absolute ones at the root", () => {
    expect(compileGlob("a/*.xml", "/work/repo").base).toBe("/work/repo");
    expect(compileGlob("/tmp/a/*.xml", "/work/repo").base).toBe("/");
    expect(compileGlob("../up/*.xml", "/work/repo").segments[0]).toEqual({
      kind: "literal",
      name: "..",
    });
  });
});

describe("expandGlobs on a real directory", () => {
  let root: string;
  const touch = (relative: string) => {
    const file = path.join(root, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "<testsuites/>");
  };

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), "mainline-glob-"));
    for (const file of [
      "test-results/junit.xml",
      "test-results/unit/a.xml",
      "test-results/unit/deep/b.xml",
      "test-results/unit/notes.txt",
      "test-results/.hidden/c.xml",
      "node_modules/pkg/junit.xml",
      "packages/web/junit.xml",
      "packages/api/junit.xml",
      "outside/x.xml",
    ]) {
      touch(file);
    }
    mkdirSync(path.join(root, "test-results/dir.xml")); // a directory named like a report
    symlinkSync(path.join(root, "test-results"), path.join(root, "test-results/unit/loop"));
    symlinkSync(path.join(root, "outside/x.xml"), path.join(root, "test-results/linked.xml"));
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  const relative = (files: string[]) => files.map((file) => path.relative(root, file));

  it("** finds files at any depth, skips dot-directories, node_modules and linked directories", async () => {
    const { files, unmatched } = await expandGlobs(["test-results/**/*.xml"], root);
    expect(relative(files)).toEqual([
      "test-results/junit.xml",
      "test-results/linked.xml",
      "test-results/unit/a.xml",
      "test-results/unit/deep/b.xml",
    ]);
    expect(unmatched).toEqual([]);
  });

  it("several patterns: each file once, sorted; unmatched patterns are reported", async () => {
    const { files, unmatched } = await expandGlobs(
      ["packages/*/junit.xml", "**/junit.xml", "missing/*.xml"],
      root,
    );
    expect(relative(files)).toEqual([
      "packages/api/junit.xml",
      "packages/web/junit.xml",
      "test-results/junit.xml",
    ]);
    expect(unmatched).toEqual(["missing/*.xml"]);
  });

  it("literal paths, .. and absolute patterns", async () => {
    const nested = path.join(root, "packages/web");
    expect(relative((await expandGlobs(["junit.xml"], nested)).files)).toEqual([
      "packages/web/junit.xml",
    ]);
    expect(relative((await expandGlobs(["../api/*.xml"], nested)).files)).toEqual([
      "packages/api/junit.xml",
    ]);
    const absolute = path.join(root, "test-results/unit/*.xml");
    expect(relative((await expandGlobs([absolute], "/")).files)).toEqual([
      "test-results/unit/a.xml",
    ]);
  });

  it("names a skipped directory literally to search it; a trailing ** takes every file", async () => {
    expect(relative((await expandGlobs(["node_modules/**/*.xml"], root)).files)).toEqual([
      "node_modules/pkg/junit.xml",
    ]);
    expect(relative((await expandGlobs(["test-results/.hidden/*.xml"], root)).files)).toEqual([
      "test-results/.hidden/c.xml",
    ]);
    expect(relative((await expandGlobs(["test-results/unit/**"], root)).files)).toEqual([
      "test-results/unit/a.xml",
      "test-results/unit/deep/b.xml",
      "test-results/unit/notes.txt",
    ]);
  });

  it("directories never match, even when the name fits", async () => {
    const { files } = await expandGlobs(["test-results/*.xml"], root);
    expect(relative(files)).toEqual(["test-results/junit.xml", "test-results/linked.xml"]);
    expect((await expandGlobs(["test-results/dir.xml"], root)).files).toEqual([]);
  });
});
