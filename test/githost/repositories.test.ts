import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryPath, validateRepositoryName } from "../../src/githost/local/layout.js";
import { LocalRepositories } from "../../src/githost/local/repositories.js";
import { WorkingClone, plainGit, temporaryDirectory } from "../helpers/local-git.js";

let root: string;
let dataDir: string;
let repositories: LocalRepositories;

beforeEach(() => {
  root = temporaryDirectory("repositories");
  dataDir = join(root, "data");
  repositories = new LocalRepositories(dataDir);
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe("repository layout", () => {
  it("puts repositories at {dataDir}/git/{owner}/{name}.git", () => {
    expect(repositoryPath("/srv/data", "acme", "my-app_2.0")).toBe(
      "/srv/data/git/acme/my-app_2.0.git",
    );
  });

  it.each([
    ["", "app", "owner"],
    ["acme", "", "name"],
    ["..", "app", "owner"],
    ["acme", ".hidden", "name"],
    ["acme", "app.git", "name"],
    ["acme", "a/b", "name"],
    ["ac me", "app", "owner"],
    ["acme", "app\n", "name"],
  ])("refuses owner %j, name %j, naming the %s", (owner, name, field) => {
    expect(() => {
      validateRepositoryName(owner, name);
    }).toThrow(new RegExp(`^repo\\.${field} `));
  });
});

describe("LocalRepositories", () => {
  it("creates a bare repository once, whose default branch is main", async () => {
    expect(await repositories.exists("acme", "app")).toBe(false);
    const created = await repositories.create("acme", "app");
    expect(created).toEqual({ created: true, path: join(dataDir, "git/acme/app.git") });
    expect(await repositories.exists("acme", "app")).toBe(true);
    expect(plainGit(created.path, ["rev-parse", "--is-bare-repository"])).toBe("true");
    expect(plainGit(created.path, ["symbolic-ref", "HEAD"])).toBe("refs/heads/main");

    expect(await repositories.create("acme", "app")).toEqual({
      created: false,
      path: created.path,
    });
    const racing = await Promise.all([
      repositories.create("acme", "other"),
      repositories.create("acme", "other"),
    ]);
    expect(racing.map((r) => r.created).sort()).toEqual([false, true]);
  });

  it("lists branches and their commits", async () => {
    const { path } = await repositories.create("acme", "app");
    expect(await repositories.branches("acme", "app")).toEqual(new Map());
    const clone = WorkingClone.of(path, join(root, "work"));
    clone.git("symbolic-ref", "HEAD", "refs/heads/main");
    const main = clone.commit({ branch: "main", files: { "a.txt": "a\n" } });
    const feature = clone.commit({ branch: "team/feature", from: "main", files: { b: "b" } });
    clone.push("main", "team/feature");
    expect(await repositories.branches("acme", "app")).toEqual(
      new Map([
        ["main", main],
        ["team/feature", feature],
      ]),
    );
    await expect(repositories.branches("acme", "missing")).rejects.toThrow("not a git repository");
  });
});
