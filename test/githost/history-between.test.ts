/**
 * `RepositoryGit.historyBetween` (one `git log --boundary base..head`), and `refsBetween` built on
 * it, answer what git's own reachability commands answer — `for-each-ref --merged=head
 * --no-merged=base` for the refs, `merge-base --is-ancestor base head` for whether head contains
 * base — for every pair of commits of a history with branches, merges of the base into a branch,
 * branches stacked on branches, unrelated roots and refs outside the asked prefixes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git } from "../../src/providers/local/git/git.js";
import { RepositoryGit } from "../../src/providers/local/git/repository-git.js";

const PREFIXES = ["refs/heads/", "refs/mainline/landed/"];
let gitDir: string;
let commits: string[];

/** A pseudo-random history: each commit has one or two earlier parents, or none (a new root). */
async function randomHistory(): Promise<string[]> {
  const tree = (await git(["mktree"], { gitDir, input: "" })).stdout.trim();
  const made: string[] = [];
  let seed = 11;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let i = 0; i < 40; i++) {
    const parents: string[] = [];
    if (i > 0 && i !== 25) parents.push(made[Math.max(0, i - 1 - next(4))] as string);
    if (i > 3 && next(4) === 0) parents.push(made[next(i)] as string);
    const args = ["commit-tree", tree, "-m", `c${String(i)}`];
    for (const parent of new Set(parents)) args.push("-p", parent);
    made.push((await git(args, { gitDir })).stdout.trim());
  }
  // Refs on a third of the commits, some on the same commit, and refs no prefix asks for.
  for (let i = 0; i < made.length; i += 3) {
    await git(["update-ref", `refs/heads/b${String(i)}`, made[i] as string], { gitDir });
    if (i % 2 === 0)
      await git(["update-ref", `refs/heads/x/y${String(i)}`, made[i] as string], { gitDir });
    if (i % 4 === 0)
      await git(["update-ref", `refs/mainline/landed/${String(i)}`, made[i] as string], { gitDir });
    if (i % 5 === 0)
      await git(["update-ref", `refs/tags/t${String(i)}`, made[i] as string], { gitDir });
    if (i % 7 === 0)
      await git(["update-ref", `refs/other/o${String(i)}`, made[i] as string], { gitDir });
  }
  // HEAD of the bare repository names a branch, as it does in the host's repositories.
  await git(["symbolic-ref", "HEAD", "refs/heads/b0"], { gitDir });
  return made;
}

async function gitsAnswer(head: string, base: string) {
  const { stdout } = await git(
    [
      "for-each-ref",
      "--format=%(objectname) %(refname)",
      `--merged=${head}`,
      `--no-merged=${base}`,
      ...PREFIXES,
    ],
    { gitDir },
  );
  const refs = new Map<string, string>();
  for (const line of stdout.split("\n").filter(Boolean)) {
    const [sha, ref] = line.split(" ") as [string, string];
    refs.set(ref, sha);
  }
  const { code } = await git(["merge-base", "--is-ancestor", base, head], { gitDir }, [0, 1]);
  return { refs, containsBase: code === 0 };
}

beforeAll(async () => {
  gitDir = mkdtempSync(path.join(tmpdir(), "mainline-history-between-"));
  await git(["init", "--quiet", "--bare", "--initial-branch=main", gitDir]);
  commits = await randomHistory();
});

afterAll(() => {
  rmSync(gitDir, { recursive: true, force: true });
});

describe("the history between two commits, in one git call", () => {
  it("agrees with for-each-ref and merge-base for every pair of a random history", async () => {
    const repository = new RepositoryGit(gitDir);
    let contained = 0;
    let withRefs = 0;
    // Every fourth commit against every other commit (and itself): 400 pairs, a few at a time.
    const pairs = commits
      .filter((_, h) => h % 4 === 0)
      .flatMap((head) => commits.map((base) => ({ head, base })));
    const check = async ({ head, base }: { head: string; base: string }) => {
      const expected = await gitsAnswer(head, base);
      const got = await repository.historyBetween(head, base, PREFIXES);
      expect({ head, base, ...got }).toEqual({ head, base, ...expected });
      // The commits of one prefix's refs, in for-each-ref's order (by name), each once.
      const listed = [...expected.refs]
        .filter(([ref]) => ref.startsWith("refs/heads/"))
        .map(([, sha]) => sha);
      expect(await repository.refsBetween("refs/heads/", head, base)).toEqual([...new Set(listed)]);
      if (got.containsBase) contained += 1;
      if (got.refs.size > 0) withRefs += 1;
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = next++; i < pairs.length; i = next++)
          await check(pairs[i] as (typeof pairs)[0]);
      }),
    );
    expect(pairs).toHaveLength(400);
    // The history has both kinds of pairs, so the comparison means something.
    expect(contained).toBeGreaterThan(20);
    expect(contained).toBeLessThan(380);
    expect(withRefs).toBeGreaterThan(20);
    // 1,600 git commands: a slow machine needs more than the default 30 s.
  }, 120_000);

  it("refuses what is not a commit id before it reaches git", async () => {
    const repository = new RepositoryGit(gitDir);
    await expect(
      repository.historyBetween("--output=/tmp/x", commits[0] as string, PREFIXES),
    ).rejects.toThrow(/not a commit id/);
  });
});
