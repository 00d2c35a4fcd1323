import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckoutPool } from "../../src/providers/local/ci/checkouts.js";
import { LocalGitHost } from "../../src/providers/local/git/host.js";
import { LocalRepositories } from "../../src/providers/local/git/repositories.js";
import type { MergeMethod } from "../../src/mergequeue/settings.js";
import type { MergeRequest } from "../../src/mergequeue/providers.js";
import {
  DEVELOPER,
  WorkingClone,
  plainGit,
  temporaryDirectory,
  type Person,
} from "../helpers/local-git.js";
import { MemoryLocalPullRequests } from "../helpers/local-pull-requests.js";
import { defined } from "../helpers/planner-harness.js";

const repo = { organizationId: "org-1", host: "local", owner: "acme", name: "app" };
const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const ALICE: Person = { name: "Alice Author", email: "alice@example.com" };

let root: string;
let bare: string;
let clone: WorkingClone;
let records: MemoryLocalPullRequests;
let host: LocalGitHost;
let baseSha: string;

/** git in the hosted bare repository, to inspect what the host did. */
const hosted = (...args: string[]) => plainGit(bare, args);
const mainHead = () => hosted("rev-parse", "refs/heads/main");
const commitField = (sha: string, format: string) =>
  hosted("show", "-s", `--format=${format}`, sha);

beforeEach(async () => {
  root = temporaryDirectory("githost");
  const dataDir = join(root, "data");
  bare = (await new LocalRepositories(dataDir).create(repo)).path;
  clone = WorkingClone.of(bare, join(root, "work"));
  clone.git("symbolic-ref", "HEAD", "refs/heads/main");
  baseSha = clone.commit({
    branch: "main",
    files: { "shared.txt": "one\ntwo\nthree\n", "README.md": "app\n" },
    message: "initial",
  });
  clone.push("main");
  records = new MemoryLocalPullRequests();
  host = new LocalGitHost({ dataDir, pullRequests: records, clock: { now: () => NOW } });
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** A pull request whose branch starts at main and commits `files`; returns its number and head. */
function openPullRequest(
  branch: string,
  files: Record<string, string | null>,
  options: { title?: string; author?: Person } = {},
): { number: number; headSha: string } {
  const headSha = clone.commit({
    branch,
    from: "origin/main",
    files,
    message: `${branch}: change`,
    ...(options.author ? { author: options.author } : {}),
  });
  clone.push(branch);
  const record = records.open(repo, { headBranch: branch, title: options.title ?? branch });
  return { number: record.number, headSha };
}

/** Someone else pushes a commit to main. */
function pushToMain(files: Record<string, string>): string {
  clone.git("fetch", "--quiet", "origin");
  const sha = clone.commit({ branch: "main", from: "origin/main", files, message: "elsewhere" });
  clone.push("main");
  return sha;
}

function mergeRequest(
  pr: { number: number; headSha: string },
  method: MergeMethod,
  expectedBaseSha = mainHead(),
): MergeRequest {
  return {
    repo,
    targetBranch: "main",
    prNumber: pr.number,
    headSha: pr.headSha,
    expectedBaseSha,
    method,
    title: `Title of #${String(pr.number)}`,
  };
}

describe("test branches", () => {
  it("merges the pull requests onto the base in order, one merge commit each", async () => {
    const prs = [
      openPullRequest("one", { "one.txt": "1\n" }),
      openPullRequest("two", { "two.txt": "2\n", "shared.txt": "one\ntwo\nthree\nfour\n" }),
      openPullRequest("three", { "three.txt": "3\n", "README.md": null }),
    ];
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-1",
      baseSha,
      prs,
    });
    if (!result.ok) throw new Error(result.message);
    expect(result.branch).toBe("mainline-merge/main/run-1");
    expect(await host.branchHead(repo, result.branch)).toBe(result.sha);

    const firstParents = hosted("rev-list", "--first-parent", result.sha).split("\n");
    expect(firstParents).toHaveLength(4);
    expect(firstParents[3]).toBe(baseSha);
    const secondParents = firstParents.slice(0, 3).map((sha) => hosted("rev-parse", `${sha}^2`));
    expect(secondParents).toEqual(prs.map((pr) => pr.headSha).reverse());
    expect(commitField(result.sha, "%s")).toBe("Merge #3 into a test branch of main");
    expect(commitField(result.sha, "%an <%ae> %cn %ct")).toBe(
      `Mainline <mainline@localhost> Mainline ${commitField(baseSha, "%ct")}`,
    );

    // Another run of the same pull requests on the same base tests the very same commit.
    const again = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-2",
      baseSha,
      prs,
    });
    expect(again).toEqual({ ok: true, branch: "mainline-merge/main/run-2", sha: result.sha });

    expect(await host.readFile(repo, result.sha, "one.txt")).toBe("1\n");
    expect(await host.readFile(repo, result.sha, "two.txt")).toBe("2\n");
    expect(await host.readFile(repo, result.sha, "three.txt")).toBe("3\n");
    expect(await host.readFile(repo, result.sha, "shared.txt")).toBe("one\ntwo\nthree\nfour\n");
    expect(await host.readFile(repo, result.sha, "README.md")).toBeUndefined();
  });

  it("reports the pull request that conflicts and the files, and makes no branch", async () => {
    const first = openPullRequest("first", { "shared.txt": "one\nTWO\nthree\n" });
    const second = openPullRequest("second", {
      "shared.txt": "one\nzwei\nthree\n",
      "b/other.txt": "fine\n",
      "a file.txt": "x\n",
    });
    const third = openPullRequest("third", { "a file.txt": "y\n" });
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-2",
      baseSha,
      prs: [first, second, third],
    });
    expect(result).toMatchObject({ ok: false, reason: "merge_conflict", prNumber: 2 });
    if (result.ok) return;
    expect(result.files).toEqual(["shared.txt"]);
    expect(result.message).toContain("#2");
    expect(result.message).toContain("shared.txt");
    expect(await host.branchHead(repo, "mainline-merge/main/run-2")).toBeUndefined();
  });

  it("names every conflicting file, whatever characters its name has", async () => {
    const first = openPullRequest("first", { "a file.txt": "x\n", "dir/é\nnewline": "x\n" });
    const second = openPullRequest("second", { "a file.txt": "y\n", "dir/é\nnewline": "y\n" });
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-4",
      baseSha,
      prs: [first, second],
    });
    expect(result).toMatchObject({
      ok: false,
      prNumber: 2,
      files: ["a file.txt", "dir/é\nnewline"],
    });
  });

  it("returns the branch already made when asked again, and deletes it", async () => {
    const pr = openPullRequest("one", { "one.txt": "1\n" });
    const request = { repo, targetBranch: "main", runId: "run-3", baseSha, prs: [pr] };
    const first = await host.createTestBranch(request);
    const again = await host.createTestBranch({ ...request, prs: [] });
    expect(again).toEqual(first);
    if (!first.ok) throw new Error(first.message);
    expect(hosted("rev-parse", `${first.sha}^2`)).toBe(pr.headSha);

    await host.deleteTestBranch(repo, first.branch);
    expect(await host.branchHead(repo, first.branch)).toBeUndefined();
    await expect(host.deleteTestBranch(repo, first.branch)).resolves.toBeUndefined();
    await expect(host.deleteTestBranch(repo, "main")).rejects.toThrow("not a test branch");
    expect(mainHead()).toBe(baseSha);
  });
});

describe("pull requests", () => {
  it("reports mergeability, whether the head contains the base, and state", async () => {
    const pr = openPullRequest("clean", { "clean.txt": "c\n" }, { title: "Clean change" });
    const conflicting = openPullRequest("conflicting", { "shared.txt": "other\n" });

    expect(await host.pullRequest(repo, pr.number)).toEqual({
      number: pr.number,
      title: "Clean change",
      author: "dev",
      headSha: pr.headSha,
      headBranch: "clean",
      baseBranch: "main",
      mergeability: "mergeable",
      upToDate: true,
      checksPassed: false,
      state: "open",
      draft: false,
    });
    pushToMain({ "shared.txt": "one\n2\nthree\n" });
    expect(await host.pullRequest(repo, pr.number)).toMatchObject({
      mergeability: "mergeable",
      upToDate: false,
    });
    expect(await host.pullRequest(repo, conflicting.number)).toMatchObject({
      mergeability: "not_mergeable",
      conflicts: ["shared.txt"],
      upToDate: false,
    });
    expect(await host.pullRequest(repo, 99)).toBeUndefined();
  });

  it("reports a pull request whose head branch was deleted as closed", async () => {
    const pr = openPullRequest("gone", { "gone.txt": "g\n" });
    clone.push("--delete", "gone");
    expect(await host.pullRequest(repo, pr.number)).toMatchObject({
      state: "closed",
      headSha: "",
      mergeability: "unspecified",
    });
  });

  it("reads files at a commit, undefined when the file or commit is absent", async () => {
    expect(await host.readFile(repo, baseSha, "README.md")).toBe("app\n");
    expect(await host.readFile(repo, baseSha, "missing.yml")).toBeUndefined();
    expect(await host.readFile(repo, "f".repeat(40), "README.md")).toBeUndefined();
  });

  it("refuses repositories of other hosts", async () => {
    await expect(host.branchHead({ ...repo, host: "github.com" }, "main")).rejects.toThrow(
      "not a local repository",
    );
  });
});

describe("merges", () => {
  it("merge_commit: parents base and head, titled by the pull request", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const result = await host.merge(mergeRequest(pr, "merge_commit"));
    if (!result.ok) throw new Error(result.message);
    expect(mainHead()).toBe(result.sha);
    expect(commitField(result.sha, "%P")).toBe(`${baseSha} ${pr.headSha}`);
    expect(commitField(result.sha, "%B")).toBe("Merge pull request #1: Title of #1");
    expect(commitField(result.sha, "%an %cn")).toBe("Mainline Mainline");
    const record = defined(await records.find(repo, pr.number));
    expect(record).toMatchObject({
      state: "merged",
      mergedSha: result.sha,
      mergingSha: result.sha,
    });
    expect(await host.pullRequest(repo, pr.number)).toMatchObject({ state: "merged" });
  });

  it("squash: one commit on the base by the PR's author, titled and described", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const head = clone.commit({ branch: "feature", files: { "g.txt": "g\n" }, message: "second" });
    clone.push("feature");
    const result = await host.merge(mergeRequest({ ...pr, headSha: head }, "squash"));
    if (!result.ok) throw new Error(result.message);
    expect(commitField(result.sha, "%P")).toBe(baseSha);
    expect(commitField(result.sha, "%B")).toBe("Title of #1\n\n* feature: change\n\n* second");
    expect(commitField(result.sha, "%an <%ae>|%cn")).toBe("Dev Eloper <dev@example.com>|Mainline");
    expect(hosted("rev-parse", `${result.sha}^{tree}`)).toBe(hosted("rev-parse", `${head}^{tree}`));
  });

  it("squash: the PR's description after the title, then the other authors as trailers", async () => {
    clone.commit({ branch: "feature", from: baseSha, files: { "f.txt": "f\n" }, author: ALICE });
    const head = clone.commit({
      branch: "feature",
      files: { "g.txt": "g\n" },
      author: { name: "Bob", email: "bob@example.com" },
      message: "add g",
    });
    clone.push("feature");
    const description = "Why: f and g belong together.\n\nSee the design notes.";
    const record = records.open(repo, {
      headBranch: "feature",
      author: ALICE.name,
      description: `${description}\n`,
    });
    const result = await host.merge(
      mergeRequest({ number: record.number, headSha: head }, "squash"),
    );
    if (!result.ok) throw new Error(result.message);
    expect(commitField(result.sha, "%B")).toBe(
      `Title of #1\n\n${description}\n\nCo-authored-by: Bob <bob@example.com>`,
    );
    expect(commitField(result.sha, "%an <%ae>|%cn")).toBe(
      `${ALICE.name} <${ALICE.email}>|Mainline`,
    );
  });

  it("rebase: replays each commit onto the base, keeping authors and messages", async () => {
    const moved = pushToMain({ "main.txt": "m\n" });
    clone.commit({
      branch: "feature",
      from: baseSha,
      files: { "f.txt": "f\n" },
      author: ALICE,
      message: "add f",
    });
    const head = clone.commit({
      branch: "feature",
      files: { "g.txt": "g\n" },
      author: { name: "Bob", email: "bob@example.com" },
      message: "add g\n\nwith a body",
    });
    clone.push("feature");
    const pr = { number: records.open(repo, { headBranch: "feature" }).number, headSha: head };
    const result = await host.merge(mergeRequest(pr, "rebase"));
    if (!result.ok) throw new Error(result.message);

    const landed = hosted("rev-list", "--reverse", `${moved}..${result.sha}`).split("\n");
    expect(landed).toHaveLength(2);
    expect(landed.map((sha) => commitField(sha, "%an <%ae>|%cn <%ce>|%B"))).toEqual([
      "Alice Author <alice@example.com>|Mainline <mainline@localhost>|add f",
      "Bob <bob@example.com>|Mainline <mainline@localhost>|add g\n\nwith a body",
    ]);
    expect(commitField(defined(landed[0]), "%P")).toBe(moved);
    expect(landed.map((sha) => commitField(sha, "%at"))).toEqual(
      [`${head}~1`, head].map((sha) => commitField(sha, "%at")),
    );
    expect(commitField(result.sha, "%ct")).toBe(String(NOW / 1000));
    expect(await host.readFile(repo, result.sha, "main.txt")).toBe("m\n");
    expect(await host.readFile(repo, result.sha, "g.txt")).toBe("g\n");
    expect(hosted("worktree", "list")).not.toContain("mainline-rebase");
  });

  it("lands, PR after PR and by any method, the tree the test branch of all of them had", async () => {
    const prs = [
      openPullRequest("one", { "one.txt": "1\n", "shared.txt": "ONE\ntwo\nthree\n" }),
      openPullRequest("two", { "two.txt": "2\n", "shared.txt": "one\ntwo\nTHREE\n" }),
      openPullRequest("three", { "three.txt": "3\n", "README.md": "new readme\n" }),
    ];
    const tested = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-9",
      baseSha,
      prs,
    });
    if (!tested.ok) throw new Error(tested.message);
    const methods: MergeMethod[] = ["squash", "rebase", "merge_commit"];
    for (const [index, pr] of prs.entries()) {
      const result = await host.merge(mergeRequest(pr, defined(methods[index])));
      expect(result.ok).toBe(true);
    }
    expect(hosted("rev-parse", "main^{tree}")).toBe(hosted("rev-parse", `${tested.sha}^{tree}`));
    expect(await host.readFile(repo, "main", "shared.txt")).toBe("ONE\ntwo\nTHREE\n");
  });

  it("refuses a rebase whose replay conflicts although the merge is clean", async () => {
    clone.commit({ branch: "feature", from: baseSha, files: { "shared.txt": "x\n" } });
    const head = clone.commit({ branch: "feature", files: { "shared.txt": "one\ntwo\nthree\n" } });
    clone.push("feature");
    const pr = { number: records.open(repo, { headBranch: "feature" }).number, headSha: head };
    const base = pushToMain({ "shared.txt": "one\n2\nthree\n" });

    const result = await host.merge(mergeRequest(pr, "rebase"));
    expect(result).toMatchObject({ ok: false, reason: "merge_conflict" });
    expect(mainHead()).toBe(base);
    expect(defined(await records.find(repo, pr.number)).mergingSha).toBeNull();
    expect(hosted("worktree", "list")).not.toContain("mainline-rebase");
  });

  it("refuses with head_moved when the pull request was pushed to", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    clone.commit({ branch: "feature", files: { "f.txt": "again\n" } });
    clone.push("feature");
    const result = await host.merge(mergeRequest(pr, "squash"));
    expect(result).toMatchObject({ ok: false, reason: "head_moved" });
    expect(mainHead()).toBe(baseSha);
  });

  it("refuses with base_moved when main is not where the queue expects", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const pushed = pushToMain({ "other.txt": "o\n" });
    const result = await host.merge(mergeRequest(pr, "squash", baseSha));
    expect(result).toMatchObject({ ok: false, reason: "base_moved" });
    expect(mainHead()).toBe(pushed);
  });

  it("never overwrites a push that lands while the merge is being made", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    let pushed = "";
    const markMerging = records.markMerging.bind(records);
    records.markMerging = async (...args) => {
      await markMerging(...args);
      pushed = pushToMain({ "other.txt": "o\n" });
    };
    const result = await host.merge(mergeRequest(pr, "merge_commit", baseSha));
    expect(result).toMatchObject({ ok: false, reason: "base_moved" });
    expect(mainHead()).toBe(pushed);
    records.markMerging = markMerging;

    const retried = await host.merge(mergeRequest(pr, "merge_commit", pushed));
    if (!retried.ok) throw new Error(retried.message);
    expect(commitField(retried.sha, "%P")).toBe(`${pushed} ${pr.headSha}`);
  });

  it("merges one at a time in the order asked: the later of two on one base finds it moved", async () => {
    const one = openPullRequest("one", { "one.txt": "1\n" });
    const two = openPullRequest("two", { "two.txt": "2\n" });
    const results = await Promise.all([
      host.merge(mergeRequest(one, "squash", baseSha)),
      host.merge(mergeRequest(two, "squash", baseSha)),
    ]);
    expect(results.map((r) => (r.ok ? "ok" : r.reason))).toEqual(["ok", "base_moved"]);
    expect(hosted("rev-list", "--count", `${baseSha}..main`)).toBe("1");
  });

  it("reports the same commit when repeated after success, without moving main again", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const request = mergeRequest(pr, "squash");
    const first = await host.merge(request);
    if (!first.ok) throw new Error(first.message);
    expect(await host.merge(request)).toEqual(first);
    expect(mainHead()).toBe(first.sha);
    expect(hosted("rev-list", "--count", `${baseSha}..main`)).toBe("1");
  });

  it("lands once when repeated after a crash between markMerging and moving main", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const request = mergeRequest(pr, "merge_commit");
    records.crash = { at: "markMerging", stored: true };
    await expect(host.merge(request)).rejects.toThrow("simulated crash");
    expect(mainHead()).toBe(baseSha);

    const result = await host.merge(request);
    if (!result.ok) throw new Error(result.message);
    expect(mainHead()).toBe(result.sha);
    expect(commitField(result.sha, "%P")).toBe(`${baseSha} ${pr.headSha}`);
    expect(defined(await records.find(repo, pr.number))).toMatchObject({
      state: "merged",
      mergedSha: result.sha,
    });
  });

  it("completes the record when repeated after a crash between moving main and markMerged", async () => {
    const pr = openPullRequest("feature", { "f.txt": "f\n" });
    const request = mergeRequest(pr, "squash");
    records.crash = { at: "markMerged", stored: false };
    await expect(host.merge(request)).rejects.toThrow("simulated crash");
    const landed = mainHead();
    expect(landed).not.toBe(baseSha);
    expect(defined(await records.find(repo, pr.number)).state).toBe("open");

    expect(await host.merge(request)).toEqual({ ok: true, sha: landed });
    expect(mainHead()).toBe(landed);
    expect(defined(await records.find(repo, pr.number))).toMatchObject({
      state: "merged",
      mergedSha: landed,
    });
    // Found again once main has moved on, and main is left where it is.
    const later = pushToMain({ "later.txt": "l\n" });
    expect(await host.merge(request)).toEqual({ ok: true, sha: landed });
    expect(mainHead()).toBe(later);
  });
});

describe("landing what was tested", () => {
  const BOB: Person = { name: "Bob Builder", email: "bob@example.com" };

  /** #1 edits the first line; #2, stacked on #1's branch, edits it again; both tested together. */
  async function stackedAndTested() {
    const parent = openPullRequest("parent", { "shared.txt": "ONE\ntwo\nthree\n" });
    const headSha = clone.commit({
      branch: "child",
      from: "parent",
      files: { "shared.txt": "ONE, again\ntwo\nthree\n", "child.txt": "c\n" },
      message: "child: change",
    });
    clone.push("child");
    const child = { number: records.open(repo, { headBranch: "child" }).number, headSha };
    const tested = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-1",
      baseSha,
      prs: [parent, child],
    });
    if (!tested.ok) throw new Error(tested.message);
    return { parent, child, testedSha: tested.sha };
  }

  it.each(["squash", "rebase", "merge_commit"] as const)(
    "%s: a stacked PR lands, after its parent, with the tree it was tested with",
    async (method) => {
      const { parent, child, testedSha } = await stackedAndTested();
      const first = await host.merge({ ...mergeRequest(parent, method), testedSha });
      if (!first.ok) throw new Error(first.message);
      // Merging the child afresh onto the parent's squash would conflict on shared.txt.
      const second = await host.merge({ ...mergeRequest(child, method), testedSha });
      if (!second.ok) throw new Error(second.message);
      expect(hosted("rev-parse", "main^{tree}")).toBe(hosted("rev-parse", `${testedSha}^{tree}`));
      expect(hosted("rev-parse", `${first.sha}^{tree}`)).toBe(
        hosted("rev-parse", `${testedSha}^1^{tree}`),
      );
      if (method === "rebase") {
        // Only the child's own commit is replayed; the parent's landed with the parent.
        expect(hosted("log", "--format=%s", `${baseSha}..main`).split("\n")).toEqual([
          "child: change",
          "parent: change",
        ]);
      }
    },
  );

  it.each(["squash", "rebase"] as const)(
    "%s: a stacked PR that edits its parent's lines is mergeable, tested and landed after the parent landed",
    async (method) => {
      const { parent, child } = await stackedAndTested();
      const first = await host.merge(mergeRequest(parent, method));
      if (!first.ok) throw new Error(first.message);
      // git alone would apply the parent's change again from the old merge base, and conflict.
      expect(await host.pullRequest(repo, child.number)).toMatchObject({
        mergeability: "mergeable",
      });
      const tested = await host.createTestBranch({
        repo,
        targetBranch: "main",
        runId: "run-2",
        baseSha: first.sha,
        prs: [child],
      });
      if (!tested.ok) throw new Error(tested.message);
      expect(hosted("rev-parse", `${tested.sha}^{tree}`)).toBe(
        hosted("rev-parse", `${child.headSha}^{tree}`),
      );
      const second = await host.merge({ ...mergeRequest(child, method), testedSha: tested.sha });
      if (!second.ok) throw new Error(second.message);
      expect(hosted("rev-parse", "main^{tree}")).toBe(hosted("rev-parse", `${tested.sha}^{tree}`));
      // Only the child's own commit lands the second time.
      expect(hosted("log", "--format=%s", `${first.sha}..main`)).toBe(
        method === "squash" ? "Title of #2" : "child: change",
      );
    },
  );

  it("refuses with base_moved when main does not hold what the PR was tested on", async () => {
    const { child, testedSha } = await stackedAndTested();
    const result = await host.merge({ ...mergeRequest(child, "squash"), testedSha });
    expect(result).toMatchObject({ ok: false, reason: "base_moved" });
    expect(mainHead()).toBe(baseSha);
  });

  it("refuses a PR that is not on the test branch said to have cleared it", async () => {
    const { testedSha } = await stackedAndTested();
    const other = openPullRequest("other", { "o.txt": "o\n" });
    const result = await host.merge({ ...mergeRequest(other, "squash"), testedSha });
    expect(result).toMatchObject({ ok: false, reason: "rejected" });
    expect(mainHead()).toBe(baseSha);
  });

  it("squash: by the PR's author, titled, described, crediting the other authors", async () => {
    clone.commit({
      branch: "feature",
      from: baseSha,
      files: { "f.txt": "f\n" },
      author: BOB,
      message: "add f\n\nbecause f",
    });
    clone.commit({ branch: "feature", files: { "g.txt": "g\n" }, author: ALICE, message: "add g" });
    const head = clone.commit({
      branch: "feature",
      files: { "h.txt": "h\n" },
      author: DEVELOPER,
      message: "add h",
    });
    clone.push("feature");
    const number = records.open(repo, { headBranch: "feature", author: "alice" }).number;
    const result = await host.merge({
      ...mergeRequest({ number, headSha: head }, "squash"),
      title: "Add f, g and h (#1)",
    });
    if (!result.ok) throw new Error(result.message);
    expect(commitField(result.sha, "%an <%ae>|%cn <%ce>")).toBe(
      "Alice Author <alice@example.com>|Mainline <mainline@localhost>",
    );
    expect(commitField(result.sha, "%B")).toBe(
      [
        "Add f, g and h (#1)",
        "",
        "* add f\n\nbecause f",
        "",
        "* add g",
        "",
        "* add h",
        "",
        "Co-authored-by: Bob Builder <bob@example.com>",
        "Co-authored-by: Dev Eloper <dev@example.com>",
      ].join("\n"),
    );
  });
});

describe("checkouts for the built-in runner", () => {
  /** Every file of a working tree (outside `.git`), relative path → content. */
  function treeOf(dir: string): Record<string, string> {
    const files: Record<string, string> = {};
    const walk = (at: string) => {
      for (const entry of readdirSync(join(dir, at), { withFileTypes: true })) {
        const relative = at === "" ? entry.name : `${at}/${entry.name}`;
        if (relative === ".git") continue;
        if (entry.isDirectory()) walk(relative);
        else files[relative] = readFileSync(join(dir, relative), "utf8");
      }
    };
    walk("");
    return files;
  }

  function pool(): CheckoutPool {
    return new CheckoutPool({
      root: join(root, "checkouts"),
      checkout: (r, sha, dir) => host.checkout(r, sha, dir),
      refresh: (r, sha, dir) => host.refreshCheckout(r, sha, dir),
      maxIdlePerRepository: 1,
    });
  }

  it("reuses a released checkout, brought to exactly the next commit whatever the last run left", async () => {
    const checkouts = pool();
    const first = await checkouts.acquire(repo, baseSha);
    expect(treeOf(first.dir)).toEqual({ "shared.txt": "one\ntwo\nthree\n", "README.md": "app\n" });
    // What a check might leave: changed and deleted tracked files, new and ignored files, a hook.
    writeFileSync(join(first.dir, "README.md"), "scribbled\n");
    rmSync(join(first.dir, "shared.txt"));
    mkdirSync(join(first.dir, "build"));
    writeFileSync(join(first.dir, "build", "out.o"), "binary\n");
    writeFileSync(join(first.dir, ".gitignore"), "build/\n");
    const hooked = join(root, "hooked");
    writeFileSync(
      join(first.dir, ".git", "hooks", "post-checkout"),
      `#!/bin/sh\ntouch ${hooked}\n`,
      {
        mode: 0o755,
      },
    );
    await first.release();

    const pr = openPullRequest("feature", { "f.txt": "f\n", "README.md": null });
    const second = await checkouts.acquire(repo, pr.headSha);
    expect(second.dir).toBe(first.dir);
    expect(treeOf(second.dir)).toEqual({ "shared.txt": "one\ntwo\nthree\n", "f.txt": "f\n" });
    expect(plainGit(second.dir, ["rev-parse", "HEAD"])).toBe(pr.headSha);
    expect(existsSync(hooked)).toBe(false);

    // Held by one run at a time: another run meanwhile gets a checkout of its own.
    const third = await checkouts.acquire(repo, baseSha);
    expect(third.dir).not.toBe(second.dir);
    await second.release();
    await third.release(); // beyond the one idle checkout kept: removed
    expect(existsSync(third.dir)).toBe(false);
    await checkouts.close();
    expect(existsSync(join(root, "checkouts"))).toBe(false);
  });

  it("makes a fresh checkout when a run broke the one it had", async () => {
    const checkouts = pool();
    const first = await checkouts.acquire(repo, baseSha);
    rmSync(join(first.dir, ".git"), { recursive: true, force: true });
    writeFileSync(join(first.dir, "left.txt"), "behind\n");
    await first.release();
    const second = await checkouts.acquire(repo, baseSha);
    expect(treeOf(second.dir)).toEqual({ "shared.txt": "one\ntwo\nthree\n", "README.md": "app\n" });
    expect(second.dir).not.toBe(first.dir);
    expect(existsSync(first.dir)).toBe(false);
    await second.release();
    await checkouts.close();
  });
});
