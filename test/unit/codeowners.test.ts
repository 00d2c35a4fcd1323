import { describe, expect, it } from "vitest";
import { normalizeRepoPath, parseCodeowners } from "../../src/testhealth/codeowners.js";

// Rules from GitHub's "About code owners" example file, in its order.
const GITHUB_DOCS_EXAMPLE = `
# This is a comment.
# Each line is a file pattern followed by one or more owners.

# These owners will be the default owners for everything in the repo.
*       @global-owner1 @global-owner2

# When someone opens a pull request that only modifies JS files, only @js-owner is requested.
*.js    @js-owner #This is an inline comment.

*.go docs@example.com

*.txt @octo-org/octocats

/build/logs/ @doctocat

docs/*  docs@example.com

apps/ @octocat

/docs/ @doctocat

/scripts/ @doctocat @octocat

**/logs @octocat

/apps/ @octocat
/apps/github
`;

describe("GitHub CODEOWNERS", () => {
  const owners = parseCodeowners(GITHUB_DOCS_EXAMPLE);

  it("is recognized as GitHub syntax and has no problems", () => {
    expect(owners.syntax).toBe("github");
    expect(owners.problems).toEqual([]);
  });

  it("falls back to the catch-all rule", () => {
    expect(owners.ownersOf("README.md")).toEqual(["@global-owner1", "@global-owner2"]);
    expect(owners.ownersOf("src/deep/main.rs")).toEqual(["@global-owner1", "@global-owner2"]);
  });

  it("matches an extension at any depth and ignores the inline comment", () => {
    expect(owners.ownersOf("index.js")).toEqual(["@js-owner"]);
    expect(owners.ownersOf("src/ui/button.js")).toEqual(["@js-owner"]);
    expect(owners.ownersOf("pkg/main.go")).toEqual(["docs@example.com"]);
    expect(owners.ownersOf("notes/todo.txt")).toEqual(["@octo-org/octocats"]);
  });

  it("anchors /build/logs/ to the root and owns everything below it", () => {
    const buildLogs = parseCodeowners("* @everyone\n/build/logs/ @doctocat");
    expect(buildLogs.ownersOf("build/logs/today.log")).toEqual(["@doctocat"]);
    expect(buildLogs.ownersOf("build/logs/2024/01/today.log")).toEqual(["@doctocat"]);
    expect(buildLogs.ownersOf("tools/build/logs/today.log")).toEqual(["@everyone"]);
    // In the full example `**/logs` comes later and wins.
    expect(owners.ownersOf("build/logs/today.log")).toEqual(["@octocat"]);
  });

  it("docs/* owns the files directly in docs/ only", () => {
    const onlyDocsStar = parseCodeowners("*.md @md-owner\ndocs/*  docs@example.com");
    expect(onlyDocsStar.ownersOf("docs/getting-started.md")).toEqual(["docs@example.com"]);
    expect(onlyDocsStar.ownersOf("docs/build-app/troubleshooting.md")).toEqual(["@md-owner"]);
    // A slash in the middle anchors the pattern to the root (gitignore).
    expect(onlyDocsStar.ownersOf("guide/docs/intro.md")).toEqual(["@md-owner"]);
  });

  it("apps/ owns an apps directory anywhere", () => {
    expect(owners.ownersOf("services/apps/server.rb")).toEqual(["@octocat"]);
    expect(owners.ownersOf("a/b/apps/c/d.rb")).toEqual(["@octocat"]);
    // A trailing slash names a directory only, not a file called apps.
    expect(parseCodeowners("apps/ @octocat").ownersOf("src/apps")).toEqual([]);
  });

  it("/docs/ owns the root docs directory, recursively, and wins over docs/* by coming later", () => {
    expect(owners.ownersOf("docs/getting-started.md")).toEqual(["@doctocat"]);
    expect(owners.ownersOf("docs/build-app/troubleshooting.md")).toEqual(["@doctocat"]);
    expect(owners.ownersOf("guide/docs/intro.rb")).toEqual(["@global-owner1", "@global-owner2"]);
  });

  it("**/logs owns a logs directory at any depth", () => {
    expect(owners.ownersOf("logs/a.log")).toEqual(["@octocat"]);
    expect(owners.ownersOf("scripts/logs/a.log")).toEqual(["@octocat"]);
    expect(owners.ownersOf("deeply/nested/logs/a.log")).toEqual(["@octocat"]);
  });

  it("a later rule without owners leaves its matches unowned", () => {
    expect(owners.ownersOf("apps/web/index.html")).toEqual(["@octocat"]);
    expect(owners.ownersOf("apps/github/index.html")).toEqual([]);
    expect(owners.ownersOf("apps/github/deep/index.js")).toEqual([]);
    expect(owners.ownersOf("apps/githubber/index.html")).toEqual(["@octocat"]);
  });

  it("the last matching rule wins, regardless of how specific the earlier one is", () => {
    const text = "/src/core/engine.ts @engine-owner\n*.ts @ts-owner";
    expect(parseCodeowners(text).ownersOf("src/core/engine.ts")).toEqual(["@ts-owner"]);
    const reversed = "*.ts @ts-owner\n/src/core/engine.ts @engine-owner";
    expect(parseCodeowners(reversed).ownersOf("src/core/engine.ts")).toEqual(["@engine-owner"]);
  });

  it("a name without a slash matches a file or directory at any depth; with one, only from the root", () => {
    const text = "Makefile @build\nsrc/lib @lib";
    const rules = parseCodeowners(text);
    expect(rules.ownersOf("Makefile")).toEqual(["@build"]);
    expect(rules.ownersOf("tools/Makefile")).toEqual(["@build"]);
    expect(rules.ownersOf("src/lib/a.ts")).toEqual(["@lib"]);
    expect(rules.ownersOf("src/lib")).toEqual(["@lib"]);
    expect(rules.ownersOf("packages/x/src/lib/a.ts")).toEqual([]);
    expect(rules.ownersOf("src/library/a.ts")).toEqual([]);
  });

  it("supports ?, ** in the middle, /* at the root, and is case-sensitive", () => {
    const rules = parseCodeowners("/* @root-files\nlog?.txt @logs\n/a/**/z.ts @z");
    expect(rules.ownersOf("package.json")).toEqual(["@root-files"]);
    expect(rules.ownersOf("src/index.ts")).toEqual([]);
    expect(rules.ownersOf("x/log1.txt")).toEqual(["@logs"]);
    expect(rules.ownersOf("x/log12.txt")).toEqual([]);
    expect(rules.ownersOf("a/z.ts")).toEqual(["@z"]);
    expect(rules.ownersOf("a/b/c/z.ts")).toEqual(["@z"]);
    expect(rules.ownersOf("A/z.ts")).toEqual([]);
  });

  it("treats * as matching dotfiles and [ ] literally (GitHub has no character ranges)", () => {
    const rules = parseCodeowners("*.yml @ci\ndocs/[ab].md @literal");
    expect(rules.syntax).toBe("github");
    expect(rules.ownersOf(".github/workflows/.ci.yml")).toEqual(["@ci"]);
    expect(rules.ownersOf("docs/[ab].md")).toEqual(["@literal"]);
    expect(rules.ownersOf("docs/a.md")).toEqual([]);
  });

  it("honours escaped # and escaped spaces in patterns", () => {
    const rules = parseCodeowners("\\#notes.md @hash\npath\\ with\\ spaces/ @space");
    expect(rules.problems).toEqual([]);
    expect(rules.ownersOf("#notes.md")).toEqual(["@hash"]);
    expect(rules.ownersOf("path with spaces/file.txt")).toEqual(["@space"]);
  });

  it("normalizes ./, leading slashes and backslashes in the queried path", () => {
    expect(owners.ownersOf("./docs/intro.md")).toEqual(["@doctocat"]);
    expect(owners.ownersOf("/docs/intro.md")).toEqual(["@doctocat"]);
    expect(owners.ownersOf("docs\\intro.md")).toEqual(["@doctocat"]);
    expect(owners.ownersOf(".\\apps\\github\\x.js")).toEqual([]);
    expect(normalizeRepoPath("./src//a/./b.ts")).toBe("src/a/b.ts");
    expect(owners.ownersOf("")).toEqual([]);
    expect(owners.ownersOf("./")).toEqual([]);
  });

  it("skips bad lines, reports them by line number, and keeps the rest", () => {
    const text = [
      "* @everyone", // 1
      "!*.md @nobody", // 2: negation is not supported
      "*.ts not-an-owner", // 3: invalid owner
      "/ @root", // 4: matches nothing
      "*.rs @rust", // 5
    ].join("\n");
    const rules = parseCodeowners(text);
    expect(rules.problems.map((problem) => problem.line)).toEqual([2, 3, 4]);
    expect(rules.problems[1]?.message).toContain("not-an-owner");
    expect(rules.ownersOf("a.ts")).toEqual(["@everyone"]);
    expect(rules.ownersOf("a.md")).toEqual(["@everyone"]);
    expect(rules.ownersOf("lib.rs")).toEqual(["@rust"]);
  });

  it("never throws, whatever the input", () => {
    for (const text of ["", "\n\n", "[", "*** @x", "\\", "a[ @x", "\uFEFF* @bom\r\n*.md @md\r\n"]) {
      expect(() => parseCodeowners(text).ownersOf("a/b.md")).not.toThrow();
    }
    const crlf = parseCodeowners("\uFEFF* @bom\r\n*.md @md\r\n");
    expect(crlf.ownersOf("x.md")).toEqual(["@md"]);
    expect(crlf.ownersOf("x.rs")).toEqual(["@bom"]);
  });

  it("removes repeated owners on a line", () => {
    expect(parseCodeowners("* @a @b @A").ownersOf("x")).toEqual(["@a", "@b"]);
  });
});

// Shaped after GitLab's own fixture (ee/spec/fixtures/sectional_codeowners_example).
const GITLAB_EXAMPLE = `
# Rules before any section belong to the default section.
* @default-codeowner
*.rb @ruby-owner
/docs/ @all-docs
/docs/* @root-docs
lib/ @lib-owner
path\\ with\\ spaces/ @space-owner

[Documentation]
ee/docs @gl-docs
docs @gl-docs
README.md @gl-docs

^[Database][2] @gl-database
README.md
model/db

[DefaultOwners] @config-owner @gl-docs
README.md
model/db @db-owner

[documentation]
guides/ @guides-owner
`;

describe("GitLab CODEOWNERS", () => {
  const owners = parseCodeowners(GITLAB_EXAMPLE);

  it("is recognized by its section headers and has no problems", () => {
    expect(owners.syntax).toBe("gitlab");
    expect(owners.problems).toEqual([]);
  });

  it("combines the last match of every section, in section order, without repeats", () => {
    expect(owners.ownersOf("README.md")).toEqual([
      "@default-codeowner",
      "@gl-docs",
      "@gl-database",
      "@config-owner",
    ]);
  });

  it("gives rules without owners their section's default owners", () => {
    expect(owners.ownersOf("app/model/db")).toEqual([
      "@default-codeowner",
      "@gl-database",
      "@db-owner",
    ]);
  });

  it("lets the last match win within a section", () => {
    expect(owners.ownersOf("app/models/user.rb")).toEqual(["@ruby-owner"]);
    expect(owners.ownersOf("docs/index.md")).toEqual(["@root-docs"]);
    // /docs/* reaches only direct children; /docs/ owns the rest.
    expect(owners.ownersOf("docs/projects/index.md")).toEqual(["@all-docs"]);
  });

  it("floats every relative pattern to any depth, even one containing a slash", () => {
    expect(owners.ownersOf("ee/docs")).toEqual(["@default-codeowner", "@gl-docs"]);
    expect(owners.ownersOf("vendor/ee/docs")).toEqual(["@default-codeowner", "@gl-docs"]);
    expect(owners.ownersOf("x/lib/y/z.c")).toEqual(["@lib-owner"]);
    expect(owners.ownersOf("a/path with spaces/b.txt")).toEqual(["@space-owner"]);
  });

  it("does not give a pattern without a trailing slash the directory's contents", () => {
    // `docs` in [Documentation] names a file; files inside docs/ get only the default section.
    expect(owners.ownersOf("docs/projects/index.md")).not.toContain("@gl-docs");
  });

  it("merges sections whose names differ only in case", () => {
    expect(owners.ownersOf("guides/start.md")).toEqual(["@default-codeowner", "@guides-owner"]);
  });

  it("supports character classes, which GitLab's globs have", () => {
    const rules = parseCodeowners("[Code]\n/src/v[0-9].ts @versions\n/src/[!a]*.js @not-a");
    expect(rules.ownersOf("src/v1.ts")).toEqual(["@versions"]);
    expect(rules.ownersOf("src/vx.ts")).toEqual([]);
    expect(rules.ownersOf("src/b.js")).toEqual(["@not-a"]);
    expect(rules.ownersOf("src/a.js")).toEqual([]);
  });

  it("replaces the owners of a repeated pattern in place, as GitLab does", () => {
    const text = "[S]\n*.md @first\n/docs/*.md @docs\n*.md @second";
    // The redefined *.md keeps its earlier position, so /docs/*.md still comes after it.
    expect(parseCodeowners(text).ownersOf("docs/a.md")).toEqual(["@docs"]);
    expect(parseCodeowners(text).ownersOf("a.md")).toEqual(["@second"]);
  });

  it("normalizes the queried path", () => {
    expect(owners.ownersOf("./app\\models\\user.rb")).toEqual(["@ruby-owner"]);
    expect(owners.ownersOf("/app/models/user.rb")).toEqual(["@ruby-owner"]);
  });

  it("reports bad lines and keeps going", () => {
    const text = [
      "[Backend]", // 1
      "*.go", // 2: no owners and no section default
      "[]", // 3: no section name
      "[Frontend][x] @fe", // 4: approval count is not a number (the section still counts)
      "*.tsx @fe-lead", // 5
      "[Docs] not owners", // 6: default owners that name nobody
      "/src/[z-a].md @bad", // 7: reversed range
      "*.md @docs", // 8
    ].join("\n");
    const rules = parseCodeowners(text);
    expect(rules.problems.map((problem) => problem.line)).toEqual([2, 3, 4, 6, 7]);
    expect(rules.ownersOf("main.go")).toEqual([]);
    expect(rules.ownersOf("ui/App.tsx")).toEqual(["@fe-lead"]);
    expect(rules.ownersOf("README.md")).toEqual(["@docs"]);
  });

  it("ignores words in an owner list that are not owners, as GitLab does", () => {
    const rules = parseCodeowners("[Legal]\nLICENSE @legal this does not match janedoe@gitlab.com");
    expect(rules.problems).toEqual([]);
    expect(rules.ownersOf("LICENSE")).toEqual(["@legal", "janedoe@gitlab.com"]);
  });
});
