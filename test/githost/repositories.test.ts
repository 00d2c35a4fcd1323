import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryPath, validateRepositoryName } from "../../src/providers/local/git/layout.js";
import { LocalRepositories } from "../../src/providers/local/git/repositories.js";
import { DEVELOPER, WorkingClone, plainGit, temporaryDirectory } from "../helpers/local-git.js";

const ORG = "0b7c41f2-6a53-4f4e-9d1e-3c2a8f5e7d10";
const OTHER_ORG = "5d3e2f10-8c4b-4a7e-b1d2-9e8f7a6b5c4d";
const app = { organizationId: ORG, owner: "acme", name: "app" };

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
  it("puts repositories at {dataDir}/git/{organizationId}/{owner}/{name}.git", () => {
    expect(
      repositoryPath("/srv/data", { organizationId: ORG, owner: "acme", name: "my-app_2.0" }),
    ).toBe(`/srv/data/git/${ORG}/acme/my-app_2.0.git`);
  });

  it.each(["", "..", "a/b", "a.b"])("refuses organization id %j as a path segment", (id) => {
    expect(() =>
      repositoryPath("/srv/data", { organizationId: id, owner: "a", name: "b" }),
    ).toThrow("is not an organization id");
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
    ["a".repeat(101), "app", "owner"],
    ["acme", "a".repeat(101), "name"],
  ])("refuses owner %j, name %j, naming the %s", (owner, name, field) => {
    expect(() => {
      validateRepositoryName(owner, name);
    }).toThrow(new RegExp(`^repo\\.${field} `));
  });
});

describe("LocalRepositories", () => {
  it("creates a bare repository once, whose default branch is main", async () => {
    expect(await repositories.exists(app)).toBe(false);
    const created = await repositories.create(app);
    expect(created).toEqual({ created: true, path: join(dataDir, `git/${ORG}/acme/app.git`) });
    expect(await repositories.exists(app)).toBe(true);
    expect(plainGit(created.path, ["rev-parse", "--is-bare-repository"])).toBe("true");
    expect(plainGit(created.path, ["symbolic-ref", "HEAD"])).toBe("refs/heads/main");

    expect(await repositories.create(app)).toEqual({
      created: false,
      path: created.path,
    });
    const racing = await Promise.all([
      repositories.create({ ...app, name: "other" }),
      repositories.create({ ...app, name: "other" }),
    ]);
    expect(racing.map((r) => r.created).sort()).toEqual([false, true]);
  });

  it("keeps each organization's repository of the same name apart", async () => {
    const mine = await repositories.create(app);
    const theirs = await repositories.create({ ...app, organizationId: OTHER_ORG });
    expect(theirs.created).toBe(true);
    expect(theirs.path).toBe(join(dataDir, `git/${OTHER_ORG}/acme/app.git`));
    expect(theirs.path).not.toBe(mine.path);
    const clone = WorkingClone.of(mine.path, join(root, "work"));
    clone.git("symbolic-ref", "HEAD", "refs/heads/main");
    clone.commit({ branch: "main", files: { "a.txt": "a\n" } });
    clone.push("main");
    expect([...(await repositories.branches(app)).keys()]).toEqual(["main"]);
    expect(await repositories.branches({ ...app, organizationId: OTHER_ORG })).toEqual(new Map());
  });

  it("accepts names of up to 100 characters", async () => {
    const long = { organizationId: ORG, owner: "o".repeat(100), name: "n".repeat(100) };
    const created = await repositories.create(long);
    expect(created.created).toBe(true);
    expect(await repositories.exists(long)).toBe(true);
  });

  it("lists branches and their commits", async () => {
    const { path } = await repositories.create(app);
    expect(await repositories.branches(app)).toEqual(new Map());
    const clone = WorkingClone.of(path, join(root, "work"));
    clone.git("symbolic-ref", "HEAD", "refs/heads/main");
    const main = clone.commit({ branch: "main", files: { "a.txt": "a\n" } });
    const feature = clone.commit({ branch: "team/feature", from: "main", files: { b: "b" } });
    clone.push("main", "team/feature");
    expect(await repositories.branches(app)).toEqual(
      new Map([
        ["main", main],
        ["team/feature", feature],
      ]),
    );
    await expect(repositories.branches({ ...app, name: "missing" })).rejects.toThrow(
      "not a git repository",
    );
  });

  it("names who wrote a branch's changes: its oldest commit the base lacks, else its tip's", async () => {
    const { path } = await repositories.create(app);
    const clone = WorkingClone.of(path, join(root, "work"));
    clone.git("symbolic-ref", "HEAD", "refs/heads/main");
    clone.commit({ branch: "main", files: { "a.txt": "a\n" } });
    const ada = { name: "Ada Lovelace", email: "ada@example.com" };
    const grace = { name: "Grace Hopper", email: "grace@example.com" };
    clone.commit({ branch: "feature", from: "main", files: { b: "b" }, author: ada });
    clone.commit({ branch: "feature", files: { c: "c" }, author: grace });
    clone.git("checkout", "--quiet", "-B", "same", "main");
    clone.push("main", "feature", "same");
    expect(await repositories.changesAuthor(app, "feature", "main")).toBe("Ada Lovelace");
    // Nothing of its own: whoever made the commit it points at.
    expect(await repositories.changesAuthor(app, "same", "main")).toBe(DEVELOPER.name);
  });
});
