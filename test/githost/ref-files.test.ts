/**
 * Branch tips read from a bare repository's files (src/providers/local/git/ref-files.ts) agree
 * with git's own answer through creations, moves, deletions and packing, real git doing each step;
 * what the reader does not handle (a symbolic ref, a name it would not use as a path, a repository
 * without loose ref directories) is handed back to git.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { git } from "../../src/providers/local/git/git.js";
import { readBranchTips } from "../../src/providers/local/git/ref-files.js";

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function bareRepository(): Promise<{ gitDir: string; commits: string[] }> {
  const gitDir = mkdtempSync(path.join(tmpdir(), "mainline-ref-files-"));
  dirs.push(gitDir);
  await git(["init", "--quiet", "--bare", "--initial-branch=main", gitDir]);
  const tree = (await git(["mktree"], { gitDir, input: "" })).stdout.trim();
  const commits: string[] = [];
  for (let i = 0; i < 4; i++) {
    const parents = commits.length > 0 ? ["-p", commits[commits.length - 1] as string] : [];
    const { stdout } = await git(["commit-tree", tree, ...parents, "-m", `c${String(i)}`], {
      gitDir,
    });
    commits.push(stdout.trim());
  }
  return { gitDir, commits };
}

/** Git's own answer: every branch and its tip. */
async function gitsTips(gitDir: string): Promise<Map<string, string>> {
  const { stdout } = await git(
    ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"],
    {
      gitDir,
    },
  );
  const tips = new Map<string, string>();
  for (const line of stdout.split("\n").filter(Boolean)) {
    const [id, ref] = line.split(" ") as [string, string];
    tips.set(ref.slice("refs/heads/".length), id);
  }
  return tips;
}

describe("branch tips from the ref files", () => {
  it("agree with git through creations, moves, deletions and packing", async () => {
    const { gitDir, commits } = await bareRepository();
    const names = ["main", "feature/a", "feature/b", "pr-1", "pr-2", "release-1.0", "x/y/z"];
    // A fixed pseudo-random walk over the operations a host sees.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let step = 0; step < 60; step++) {
      const name = names[next(names.length)] as string;
      const op = next(10);
      if (op < 5)
        await git(["update-ref", `refs/heads/${name}`, commits[next(4)] as string], { gitDir });
      else if (op < 8) await git(["update-ref", "-d", `refs/heads/${name}`], { gitDir });
      else await git(["pack-refs", "--all"], { gitDir });
      const expected = await gitsTips(gitDir);
      const asked = [...names, "never-made"];
      const read = await readBranchTips(gitDir, asked);
      expect(read, `step ${String(step)}`).toEqual(
        new Map(asked.filter((n) => expected.has(n)).map((n) => [n, expected.get(n)])),
      );
    }
  });

  it("reads a branch that is only packed, and a loose tip over an older packed one", async () => {
    const { gitDir, commits } = await bareRepository();
    await git(["update-ref", "refs/heads/main", commits[0] as string], { gitDir });
    await git(["update-ref", "refs/heads/topic", commits[1] as string], { gitDir });
    await git(["pack-refs", "--all"], { gitDir });
    expect(await readBranchTips(gitDir, ["main", "topic"])).toEqual(
      new Map([
        ["main", commits[0]],
        ["topic", commits[1]],
      ]),
    );
    await git(["update-ref", "refs/heads/topic", commits[2] as string], { gitDir });
    expect((await readBranchTips(gitDir, ["topic"]))?.get("topic")).toBe(commits[2]);
    // Deleting rewrites packed-refs: the cached parse of the old file must not answer.
    await git(["update-ref", "-d", "refs/heads/main"], { gitDir });
    expect(await readBranchTips(gitDir, ["main"])).toEqual(new Map());
  });

  it("hands back to git what it does not handle", async () => {
    const { gitDir, commits } = await bareRepository();
    await git(["update-ref", "refs/heads/main", commits[0] as string], { gitDir });
    await git(["symbolic-ref", "refs/heads/alias", "refs/heads/main"], { gitDir });
    expect(await readBranchTips(gitDir, ["alias"])).toBeUndefined();
    for (const name of ["../config", "a/../main", ".hidden", "x.lock", "a//b", "sp ace", ""]) {
      expect(await readBranchTips(gitDir, [name]), name).toBeUndefined();
    }
    // `refs/heads` that is not a directory (a reftable repository keeps a stub file there).
    const other = mkdtempSync(path.join(tmpdir(), "mainline-ref-files-"));
    dirs.push(other);
    writeFileSync(path.join(other, "refs"), "this repository uses the reftable format\n");
    expect(await readBranchTips(other, ["main"])).toBeUndefined();
  });
});
