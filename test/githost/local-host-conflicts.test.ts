import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalGitHost } from "../../src/providers/local/git/host.js";
import { LocalRepositories } from "../../src/providers/local/git/repositories.js";
import { WorkingClone, temporaryDirectory } from "../helpers/local-git.js";
import { MemoryLocalPullRequests } from "../helpers/local-pull-requests.js";

/**
 * A test branch that cannot be built names the first PR that does not apply and the PRs ahead
 * of it that it conflicts with, so that the queue evicts that PR only (issue 14, item 2).
 */
const repo = { organizationId: "org-1", host: "local", owner: "acme", name: "app" };

let root: string;
let clone: WorkingClone;
let records: MemoryLocalPullRequests;
let host: LocalGitHost;
let baseSha: string;

beforeEach(async () => {
  root = temporaryDirectory("githost-conflicts");
  const dataDir = join(root, "data");
  const bare = (await new LocalRepositories(dataDir).create(repo)).path;
  clone = WorkingClone.of(bare, join(root, "work"));
  clone.git("symbolic-ref", "HEAD", "refs/heads/main");
  baseSha = clone.commit({
    branch: "main",
    files: { "a.txt": "one\n", "b.txt": "one\n" },
    message: "initial",
  });
  clone.push("main");
  records = new MemoryLocalPullRequests();
  host = new LocalGitHost({
    dataDir,
    pullRequests: records,
    clock: { now: () => Date.UTC(2026, 0, 2) },
  });
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function openPullRequest(branch: string, files: Record<string, string>) {
  const headSha = clone.commit({ branch, from: "origin/main", files, message: branch });
  clone.push(branch);
  const record = records.open(repo, { headBranch: branch, title: branch });
  return { number: record.number, headSha };
}

describe("conflicts in test branches", () => {
  it("names the PR ahead that the first non-applying PR conflicts with, not the others", async () => {
    const first = openPullRequest("first", { "a.txt": "first\n" });
    const unrelated = openPullRequest("unrelated", { "c.txt": "c\n" });
    const third = openPullRequest("third", { "a.txt": "third\n" });
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-1",
      baseSha,
      prs: [first, unrelated, third],
    });
    expect(result).toMatchObject({
      ok: false,
      prNumber: third.number,
      files: ["a.txt"],
      conflictsWith: [first.number],
    });
  });

  it("names no PR when the conflict is with the base itself", async () => {
    const pr = openPullRequest("stale", { "b.txt": "stale\n" });
    clone.git("fetch", "--quiet", "origin");
    const moved = clone.commit({
      branch: "main",
      from: "origin/main",
      files: { "b.txt": "moved\n" },
      message: "elsewhere",
    });
    clone.push("main");
    const ahead = openPullRequest("ahead", { "c.txt": "c\n" });
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-2",
      baseSha: moved,
      prs: [ahead, pr],
    });
    expect(result).toMatchObject({ ok: false, prNumber: pr.number, conflictsWith: [] });
    expect(result).not.toHaveProperty("landedConflicts");
  });

  it("names the PR already merged into the target that a stale PR conflicts with", async () => {
    const landed = openPullRequest("landed", { "a.txt": "landed\n" });
    const later = openPullRequest("later", { "a.txt": "later\n" });
    const unrelated = openPullRequest("unrelated-landed", { "c.txt": "c\n" });
    // #1 lands (as a squash commit would), then an unrelated PR lands after it.
    clone.git("fetch", "--quiet", "origin");
    const squash = clone.commit({
      branch: "main",
      from: "origin/main",
      files: { "a.txt": "landed\n" },
      message: "landed (#1)",
    });
    await records.markMerged(repo, landed.number, squash, 1);
    const after = clone.commit({ branch: "main", files: { "c.txt": "c\n" }, message: "c (#3)" });
    await records.markMerged(repo, unrelated.number, after, 2);
    clone.push("main");
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-3",
      baseSha: after,
      prs: [later],
    });
    expect(result).toMatchObject({
      ok: false,
      prNumber: later.number,
      files: ["a.txt"],
      conflictsWith: [],
      landedConflicts: [landed.number],
    });
  });
});

describe("stacked pull requests", () => {
  it("tells which open PRs a PR is stacked on, until their commits are on the branch", async () => {
    const parent = openPullRequest("parent", { "a.txt": "parent\n" });
    const childHead = clone.commit({
      branch: "child",
      from: "parent",
      files: { "b.txt": "child\n" },
      message: "child",
    });
    clone.push("child");
    const child = records.open(repo, { headBranch: "child", title: "child" });
    expect((await host.pullRequest(repo, child.number))?.contains).toEqual([
      { number: parent.number, headSha: parent.headSha },
    ]);
    expect((await host.pullRequest(repo, parent.number))?.contains).toBeUndefined();
    // The parent's commits reach main: the child is stacked on nothing that is still to land.
    clone.git("push", "--quiet", "origin", `${parent.headSha}:refs/heads/main`);
    expect(childHead).not.toBe(parent.headSha);
    expect((await host.pullRequest(repo, child.number))?.contains).toBeUndefined();
  });
});
