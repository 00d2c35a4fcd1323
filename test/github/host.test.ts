/**
 * The merge queue's git host on GitHub (src/providers/github/host.ts) against the fake GitHub:
 * pull requests as the queue sees them (draft, closed, merged, mergeability still computing,
 * required reviews, up to date, checks), test branches assembled out of CI's sight and published
 * under the prefix CI watches (conflicts and whom they are with), merges that are never made twice
 * (repeated calls, ghost merges, a base GitHub says was modified), and the check that what lands
 * is the tree that was tested.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { OwnedRepoRef } from "../../src/organizations/repositories.js";
import { GitHubGitHost } from "../../src/providers/github/host.js";
import type { TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";

const execFileAsync = promisify(execFile);
const NAME = "acme-gh/widgets";
let world: GitHubWorld;
let server: TestServer;
let repo: OwnedRepoRef;
let host: GitHubGitHost;
let installationId: number;
const errors: string[] = [];

// Writes go one a second per installation (GitHub's advice, kept by the client).
vi.setConfig({ testTimeout: 90_000 });

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  for (const login of ["alice", "bob", "carol"]) gh.createUser(login);
  gh.addOrgMember("acme-gh", "alice", "admin");
  await gh.createRepository({
    owner: "acme-gh",
    name: "widgets",
    files: { "README.md": "widgets\n", "shared.txt": "one\ntwo\nthree\n" },
  });
  gh.setCollaborator(NAME, "bob", "write");
  gh.setCollaborator(NAME, "carol", "write");
  server = await startGitHubServer(world, {
    githubGitHost: { retryDelayMs: () => 5, mergeabilityReads: 2 },
  });
  installationId = gh.installApp(world.app.id, { account: "acme-gh" }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
  repo = {
    organizationId: server.organizationId,
    host: "github.com",
    owner: "acme-gh",
    name: "widgets",
  };
  const github = server.services.github;
  if (!github) throw new Error("no GitHub provider");
  // The provider's own host, with a logger whose errors the tests read.
  host = new GitHubGitHost({
    repositories: github.repositories,
    app: github.app,
    logger: {
      info: () => undefined,
      warn: () => undefined,
      error: (_fields, message) => {
        errors.push(message);
      },
    },
    retryDelayMs: () => 5,
    mergeabilityReads: 2,
    // No webhooks reach this host: protection is read each time, a landed commit at once.
    requirementsTtlMs: 0,
    pushWaitMs: 0,
  });
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

let branches = 0;
/** A pull request from a new branch off `main` changing `files`. */
async function openPr(files: Record<string, string | null>, options: { draft?: boolean } = {}) {
  const branch = `feature-${String((branches += 1))}`;
  const headSha = await world.gh.commit(NAME, { branch, from: "main", files, by: "bob" });
  const number = await world.gh.openPullRequest(NAME, {
    head: branch,
    by: "bob",
    draft: options.draft ?? false,
  });
  return { number, headSha, branch };
}

const main = async () => (await world.gh.readRef(NAME, "heads/main")) ?? "";

/** The installation's own client (acting as the App). */
function appClient(): Octokit {
  return new Octokit({ baseUrl: world.gh.url, auth: world.gh.installationToken(installationId) });
}

async function treeOf(sha: string): Promise<string> {
  const { data } = await appClient().request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", {
    owner: "acme-gh",
    repo: "widgets",
    commit_sha: sha,
  });
  return data.tree.sha;
}

async function fileAt(sha: string, path: string): Promise<string | undefined> {
  return host.readFile(repo, sha, path);
}

describe("pull requests", () => {
  it("reads an open pull request: head, base, mergeability, up to date", async () => {
    const pr = await openPr({ "a.txt": "a\n" });
    // Without `readiness` (no direct merge): one read of the pull request, nothing compared.
    const mark = world.gh.requests.mark();
    expect(await host.pullRequest(repo, pr.number)).toMatchObject({
      mergeability: "mergeable",
      upToDate: false,
      checksPassed: false,
    });
    expect(
      world.gh.requests.count({ operationId: "repos/compare-commits-with-basehead", since: mark }),
    ).toBe(0);
    expect(world.gh.requests.count({ operationId: "checks/list-for-ref", since: mark })).toBe(0);
    const info = await host.pullRequest(repo, pr.number, { readiness: true });
    expect(info).toMatchObject({
      number: pr.number,
      author: "bob",
      headSha: pr.headSha,
      headBranch: pr.branch,
      baseBranch: "main",
      state: "open",
      draft: false,
      mergeability: "mergeable",
      upToDate: true,
    });
    // The base moves on: the pull request is behind it.
    await world.gh.commit(NAME, { branch: "main", files: { "other.txt": "x\n" }, by: "alice" });
    expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.upToDate).toBe(false);
  });

  it("answers undefined for a pull request that does not exist", async () => {
    expect(await host.pullRequest(repo, 9999)).toBeUndefined();
  });

  it("tells drafts, closed and merged pull requests", async () => {
    const draft = await openPr({ "d.txt": "d\n" }, { draft: true });
    expect((await host.pullRequest(repo, draft.number))?.draft).toBe(true);
    const closed = await openPr({ "c.txt": "c\n" });
    await world.gh.closePullRequest(NAME, closed.number, { by: "bob" });
    expect((await host.pullRequest(repo, closed.number))?.state).toBe("closed");
    const merged = await openPr({ "m.txt": "m\n" });
    await world.gh.mergePullRequest(NAME, merged.number, { by: "alice", method: "merge" });
    expect((await host.pullRequest(repo, merged.number))?.state).toBe("merged");
  });

  it("reports mergeability GitHub is still computing as in progress, never as an answer", async () => {
    const pr = await openPr({ "slow.txt": "s\n" });
    world.gh.holdMergeability(NAME, pr.number, 60_000);
    await world.gh.pushToPullRequest(NAME, pr.number, { "slow.txt": "t\n" });
    expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("in_progress");
  });

  it("reports a pull request that conflicts with its base as not mergeable", async () => {
    const pr = await openPr({ "shared.txt": "ONE\ntwo\nthree\n" });
    await world.gh.commit(NAME, {
      branch: "main",
      files: { "shared.txt": "uno\ntwo\nthree\n" },
      by: "alice",
    });
    expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("not_mergeable");
  });

  it("holds a pull request back until the required approvals are given (protection and rulesets)", async () => {
    const { gh } = world;
    gh.protectBranch(NAME, "main", { requiredApprovingReviewCount: 1 });
    try {
      const pr = await openPr({ "reviewed.txt": "r\n" });
      expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("not_mergeable");
      await gh.approve(NAME, pr.number, "carol");
      expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("mergeable");
      // The reviewer's latest verdict counts: a request for changes takes the approval back.
      await gh.requestChanges(NAME, pr.number, "carol");
      expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("not_mergeable");
    } finally {
      gh.unprotectBranch(NAME, "main");
    }

    // A ruleset asking for two distinct approvers.
    const ruleset = gh.addRuleset(NAME, {
      name: "reviews",
      enforcement: "active",
      include: ["~DEFAULT_BRANCH"],
      rules: [
        {
          type: "pull_request",
          parameters: {
            required_approving_review_count: 2,
            dismiss_stale_reviews_on_push: false,
            require_code_owner_review: false,
            require_last_push_approval: false,
            required_review_thread_resolution: false,
          },
        },
      ],
    });
    try {
      const pr = await openPr({ "ruled.txt": "r\n" });
      await gh.approve(NAME, pr.number, "carol");
      await gh.approve(NAME, pr.number, "carol");
      expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("not_mergeable");
      await gh.approve(NAME, pr.number, "alice");
      expect((await host.pullRequest(repo, pr.number))?.mergeability).toBe("mergeable");
    } finally {
      gh.removeRuleset(NAME, ruleset);
    }
  });

  it("reads protection and rulesets once a while, and again when a webhook says they changed", async () => {
    const { gh } = world;
    let now = 1_000_000;
    const github = server.services.github;
    if (!github) throw new Error("no GitHub provider");
    const cached = new GitHubGitHost({
      repositories: github.repositories,
      app: github.app,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      retryDelayMs: () => 5,
      mergeabilityReads: 2,
      requirementsTtlMs: 60_000,
      now: () => now,
    });
    const protectionReads = (since: number) =>
      gh.requests.count({ operationId: "repos/get-branch-protection", since });
    const pr = await openPr({ "cached.txt": "c\n" });
    const mark = gh.requests.mark();
    expect((await cached.pullRequest(repo, pr.number))?.mergeability).toBe("mergeable");
    expect((await cached.pullRequest(repo, pr.number))?.mergeability).toBe("mergeable");
    expect(protectionReads(mark)).toBe(1);
    gh.protectBranch(NAME, "main", { requiredApprovingReviewCount: 1 });
    try {
      // Within the TTL and no webhook: what was read holds (GitHub enforces it on the merge).
      expect((await cached.pullRequest(repo, pr.number))?.mergeability).toBe("mergeable");
      expect(protectionReads(mark)).toBe(1);
      // The webhook forgets it: read again at once.
      cached.forgetRequirements({ owner: "acme-gh", name: "widgets" });
      expect((await cached.pullRequest(repo, pr.number))?.mergeability).toBe("not_mergeable");
      expect(protectionReads(mark)).toBe(2);
      // And the TTL ends it anyway.
      now += 60_000;
      await cached.pullRequest(repo, pr.number);
      expect(protectionReads(mark)).toBe(3);
    } finally {
      gh.unprotectBranch(NAME, "main");
    }
  });

  it("says the checks passed when every required check passed on an up-to-date head", async () => {
    const { gh } = world;
    gh.protectBranch(NAME, "main", { requiredStatusChecks: { strict: false, contexts: ["ci"] } });
    try {
      const pr = await openPr({ "checked.txt": "c\n" });
      expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.checksPassed).toBe(
        false,
      );
      gh.postStatus(NAME, pr.headSha, { state: "failure", context: "ci", by: "alice" });
      expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.checksPassed).toBe(
        false,
      );
      gh.postStatus(NAME, pr.headSha, { state: "success", context: "ci", by: "alice" });
      expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.checksPassed).toBe(
        true,
      );
    } finally {
      gh.unprotectBranch(NAME, "main");
    }
  });

  it("counts a required check pinned to an App only when that App reports it", async () => {
    const { gh } = world;
    gh.protectBranch(NAME, "main", {
      requiredStatusChecks: {
        strict: false,
        contexts: [],
        checks: [{ context: "build", appId: 15368 }],
      },
    });
    try {
      const pr = await openPr({ "pinned.txt": "p\n" });
      // A status of that name, from no App: it does not count.
      gh.postStatus(NAME, pr.headSha, { state: "success", context: "build", by: "alice" });
      expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.checksPassed).toBe(
        false,
      );
      const run = await gh.postCheckRun(NAME, {
        name: "build",
        headSha: pr.headSha,
        status: "in_progress",
      });
      await gh.completeCheckRun(NAME, run.id, "success");
      expect((await host.pullRequest(repo, pr.number, { readiness: true }))?.checksPassed).toBe(
        true,
      );
    } finally {
      gh.unprotectBranch(NAME, "main");
    }
  });

  it("reads files at a commit, and answers undefined for one that is absent", async () => {
    const base = await main();
    expect(await host.readFile(repo, base, "README.md")).toBe("widgets\n");
    expect(await host.readFile(repo, base, "missing.yml")).toBeUndefined();
    expect(await host.branchHead(repo, "main")).toBe(base);
    expect(await host.branchHead(repo, "no-such-branch")).toBeUndefined();
  });
});

describe("test branches", () => {
  it("merges the heads in order onto the base and publishes the branch CI watches", async () => {
    const a = await openPr({ "tb-a.txt": "a\n" });
    const b = await openPr({ "tb-b.txt": "b\n" });
    const base = await main();
    const request = {
      repo,
      targetBranch: "main",
      runId: "run-ok",
      baseSha: base,
      prs: [a, b].map(({ number, headSha }) => ({ number, headSha })),
    };
    const made = await host.createTestBranch(request);
    expect(made).toMatchObject({ ok: true, branch: "trunk-merge/main/run-ok" });
    if (!made.ok) return;
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/run-ok")).toBe(made.sha);
    // Assembled on the queue's one scratch branch, which stays (moved, never deleted).
    expect(await world.gh.readRef(NAME, "heads/trunk-temp/main/queue")).toBe(made.sha);
    expect(await world.gh.readRef(NAME, "heads/trunk-temp/main/run-ok")).toBeNull();
    expect(await fileAt(made.sha, "tb-a.txt")).toBe("a\n");
    expect(await fileAt(made.sha, "tb-b.txt")).toBe("b\n");
    // The base did not move.
    expect(await main()).toBe(base);

    // A repeated call returns the branch made. Its commit was published, so it is not published
    // again: the last merge is made afresh on the first's commit (the scratch branch moved back
    // there), and the run's branch, made already, is the answer.
    const mark = world.gh.requests.mark();
    expect(await host.createTestBranch(request)).toEqual(made);
    expect(world.gh.requests.count({ operationId: "repos/merge", since: mark })).toBe(1);
    expect(world.gh.requests.count({ operationId: "git/create-ref", since: mark })).toBe(1);
    expect(world.gh.requests.count({ operationId: "git/update-ref", since: mark })).toBe(1);
    expect(world.gh.requests.count({ operationId: "git/delete-ref", since: mark })).toBe(0);
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/run-ok")).toBe(made.sha);

    await host.deleteTestBranch(repo, made.branch);
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/run-ok")).toBeNull();
    // Deleting it again is fine; anything outside the prefix is refused.
    await host.deleteTestBranch(repo, made.branch);
    await expect(host.deleteTestBranch(repo, "main")).rejects.toThrow(/not a test branch/);
    expect(await main()).toBe(base);
  });

  it("publishes a slot's runs on one branch, moved from run to run and never deleted", async () => {
    const a = await openPr({ "slot-a.txt": "a\n" });
    const b = await openPr({ "slot-b.txt": "b\n" });
    const base = await main();
    const slotRef = "heads/trunk-merge/main/slot-3";
    const run = (runId: string, pr: typeof a) =>
      host.createTestBranch({
        repo,
        targetBranch: "main",
        runId,
        baseSha: base,
        prs: [{ number: pr.number, headSha: pr.headSha }],
        slot: 3,
      });
    const mark = world.gh.requests.mark();
    const first = await run("slot-run-1", a);
    expect(first).toMatchObject({ ok: true, branch: "trunk-merge/main/slot-3" });
    if (!first.ok) return;
    expect(await world.gh.readRef(NAME, slotRef)).toBe(first.sha);
    expect(await fileAt(first.sha, "slot-a.txt")).toBe("a\n");
    // Its end leaves the branch to the slot's next run, which moves it: no ref made or deleted.
    await host.deleteTestBranch(repo, first.branch);
    expect(await world.gh.readRef(NAME, slotRef)).toBe(first.sha);
    const moved = world.gh.requests.mark();
    const second = await run("slot-run-2", b);
    expect(second).toMatchObject({ ok: true, branch: "trunk-merge/main/slot-3" });
    if (!second.ok) return;
    expect(second.sha).not.toBe(first.sha);
    expect(await world.gh.readRef(NAME, slotRef)).toBe(second.sha);
    expect(await fileAt(second.sha, "slot-b.txt")).toBe("b\n");
    expect(await fileAt(second.sha, "slot-a.txt")).toBeUndefined();
    expect(world.gh.requests.count({ operationId: "git/create-ref", since: moved })).toBe(0);
    expect(world.gh.requests.count({ operationId: "git/delete-ref", since: mark })).toBe(0);

    // A branch deleted behind the queue's back is made again.
    const [owner, name] = NAME.split("/") as [string, string];
    await appClient().request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
      owner,
      repo: name,
      ref: slotRef,
    });
    expect(await world.gh.readRef(NAME, slotRef)).toBeNull();
    const third = await run("slot-run-3", a);
    expect(third.ok && (await world.gh.readRef(NAME, slotRef)) === third.sha).toBe(true);
    expect(await main()).toBe(base);
  });

  it("starts a run from the merges made for an earlier one that began the same (bisection, retries)", async () => {
    const [a, b, c, d] = await Promise.all(
      ["a", "b", "c", "d"].map((x) => openPr({ [`bisect-${x}.txt`]: `${x}\n` })),
    );
    if (!a || !b || !c || !d) return;
    const base = await main();
    const run = (runId: string, prs: (typeof a)[]) =>
      host.createTestBranch({
        repo,
        targetBranch: "main",
        runId,
        baseSha: base,
        prs: prs.map(({ number, headSha }) => ({ number, headSha })),
        slot: 7,
      });
    const merges = (since: number) =>
      world.gh.requests.count({ operationId: "repos/merge", since });
    const batch = await run("bisect-1", [a, b, c]);
    if (!batch.ok) throw new Error("the batch did not assemble");

    // Its first half: the commit made after b's merge, published; nothing merged again.
    let mark = world.gh.requests.mark();
    const half = await run("bisect-2", [a, b]);
    if (!half.ok) throw new Error("the half did not assemble");
    expect(merges(mark)).toBe(0);
    expect(world.gh.requests.count({ operationId: "git/update-ref", since: mark })).toBe(1);
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/slot-7")).toBe(half.sha);
    expect(await fileAt(half.sha, "bisect-b.txt")).toBe("b\n");
    expect(await fileAt(half.sha, "bisect-c.txt")).toBeUndefined();

    // Tried again, its commit (published, CI's results on it) is not published again: its last
    // merge is made afresh, a new commit with the same tree.
    mark = world.gh.requests.mark();
    const retried = await run("bisect-2b", [a, b]);
    if (!retried.ok) throw new Error("the retry did not assemble");
    expect(merges(mark)).toBe(1);
    expect(retried.sha).not.toBe(half.sha);
    expect(await treeOf(retried.sha)).toBe(await treeOf(half.sha));
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/slot-7")).toBe(retried.sha);

    // Without c, with d: a and b's commit, then d merged onto it.
    mark = world.gh.requests.mark();
    const other = await run("bisect-3", [a, b, d]);
    if (!other.ok) throw new Error("the other run did not assemble");
    expect(merges(mark)).toBe(1);
    const { data: commit } = await appClient().request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { owner: "acme-gh", repo: "widgets", commit_sha: other.sha },
    );
    expect(commit.parents[0]?.sha).toBe(retried.sha);
    expect(await fileAt(other.sha, "bisect-d.txt")).toBe("d\n");
    expect(await fileAt(other.sha, "bisect-c.txt")).toBeUndefined();

    // A commit GitHub no longer has (collected): assembled from the base again.
    const gitDir = world.gh.gitDir(NAME);
    await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "bisect-4",
      baseSha: base,
      prs: [{ number: d.number, headSha: d.headSha }],
      slot: 7,
    });
    await execFileAsync("git", ["-C", gitDir, "reflog", "expire", "--expire=now", "--all"]);
    await execFileAsync("git", ["-C", gitDir, "gc", "--prune=now", "--quiet"]);
    expect(await treeOf(half.sha).catch(() => "gone")).toBe("gone");
    mark = world.gh.requests.mark();
    const again = await run("bisect-5", [a, b]);
    if (!again.ok) throw new Error("the half did not assemble again");
    expect(merges(mark)).toBe(2);
    expect(await fileAt(again.sha, "bisect-b.txt")).toBe("b\n");
    expect(await world.gh.readRef(NAME, "heads/trunk-merge/main/slot-7")).toBe(again.sha);
  });

  it("names the pull request that conflicts, whom it conflicts with and the files", async () => {
    const a = await openPr({ "clash.txt": "from a\n" });
    const b = await openPr({ "other-b.txt": "b\n" });
    const c = await openPr({ "clash.txt": "from c\n" });
    const base = await main();
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-conflict",
      baseSha: base,
      prs: [a, b, c].map(({ number, headSha }) => ({ number, headSha })),
    });
    expect(result).toMatchObject({
      ok: false,
      reason: "merge_conflict",
      prNumber: c.number,
      conflictsWith: [a.number],
      files: ["clash.txt"],
    });
    // Nothing is left behind but the queue's scratch branch (and the slot branches of the tests
    // before): no test branch, no probe branch.
    const refs = await appClient().request("GET /repos/{owner}/{repo}/git/matching-refs/{ref}", {
      owner: "acme-gh",
      repo: "widgets",
      ref: "heads/trunk-",
    });
    expect(refs.data.map((ref) => ref.ref).filter((ref) => !/\/slot-\d+$/.test(ref))).toEqual([
      "refs/heads/trunk-temp/main/queue",
    ]);
  });

  it("says a pull request that does not apply onto the base conflicts with the base itself", async () => {
    const a = await openPr({ "fine.txt": "a\n" });
    const stale = await openPr({ "base-clash.txt": "pr\n" });
    await world.gh.commit(NAME, {
      branch: "main",
      files: { "base-clash.txt": "main\n" },
      by: "alice",
    });
    const result = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId: "run-base-conflict",
      baseSha: await main(),
      prs: [a, stale].map(({ number, headSha }) => ({ number, headSha })),
    });
    expect(result).toMatchObject({
      ok: false,
      prNumber: stale.number,
      conflictsWith: [],
      files: ["base-clash.txt"],
    });
  });

  it("retries a 409 from /merges that is not a conflict", async () => {
    const { gh } = world;
    const a = await openPr({ "glitch.txt": "g\n" });
    const rule = gh.addFault(gh.fault.mergesPermissionConflict({ times: 2 }));
    try {
      const made = await host.createTestBranch({
        repo,
        targetBranch: "main",
        runId: "run-glitch",
        baseSha: await main(),
        prs: [{ number: a.number, headSha: a.headSha }],
      });
      expect(gh.faults.fired(rule)).toBe(2);
      expect(made.ok).toBe(true);
      if (made.ok) expect(await fileAt(made.sha, "glitch.txt")).toBe("g\n");
    } finally {
      gh.faults.remove(rule);
    }
  });
});

describe("test branches, when GitHub merged and answered an error", () => {
  /**
   * One `POST /merges` of the assembly (`position`) is made, then answered 502; the branch must
   * hold every pull request, each merged once, in order. (Octokit used to repeat the call, GitHub
   * answered 204, "nothing to merge", and the pull request was left out.)
   */
  async function assembleWithGhost(position: number, runId: string) {
    const { gh } = world;
    const prs = [
      await openPr({ [`${runId}-a.txt`]: "a\n" }),
      await openPr({ [`${runId}-b.txt`]: "b\n" }),
      await openPr({ [`${runId}-c.txt`]: "c\n" }),
    ];
    const rule = gh.addFault(gh.fault.succeedsButErrors("repos/merge", 502, { skip: position }));
    const mark = gh.requests.mark();
    try {
      const made = await host.createTestBranch({
        repo,
        targetBranch: "main",
        runId,
        baseSha: await main(),
        prs: prs.map(({ number, headSha }) => ({ number, headSha })),
      });
      expect(gh.faults.fired(rule)).toBe(1);
      expect(made.ok).toBe(true);
      if (!made.ok) return;
      for (const letter of ["a", "b", "c"]) {
        expect(await fileAt(made.sha, `${runId}-${letter}.txt`)).toBe(`${letter}\n`);
      }
      // One merge commit per pull request on the first-parent chain, in order, none twice.
      const merged: string[] = [];
      let sha: string | undefined = made.sha;
      for (let step = 0; step < prs.length && sha !== undefined; step++) {
        const { data }: { data: { parents: { sha: string }[] } } = await appClient().request(
          "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
          { owner: "acme-gh", repo: "widgets", commit_sha: sha },
        );
        merged.unshift(data.parents[1]?.sha ?? "");
        sha = data.parents[0]?.sha;
      }
      expect(merged).toEqual(prs.map((pr) => pr.headSha));
      expect(sha).toBe(await main());
      // Not repeated blindly: three calls for three pull requests (the branch read instead).
      expect(gh.requests.count({ operationId: "repos/merge", since: mark })).toBe(3);
    } finally {
      gh.faults.remove(rule);
    }
  }

  it("takes a merge answered 502 in the middle of a batch as made", async () => {
    await assembleWithGhost(1, "run-ghost-middle");
  });

  it("takes a merge answered 502 at the end of a batch as made", async () => {
    await assembleWithGhost(2, "run-ghost-last");
  });
});

describe("merging", () => {
  /** A pull request tested on its own test branch, ready to merge. */
  async function tested(files: Record<string, string>, runId: string) {
    const pr = await openPr(files);
    const base = await main();
    const made = await host.createTestBranch({
      repo,
      targetBranch: "main",
      runId,
      baseSha: base,
      prs: [{ number: pr.number, headSha: pr.headSha }],
    });
    if (!made.ok) throw new Error(made.message);
    return {
      pr,
      request: {
        repo,
        targetBranch: "main",
        prNumber: pr.number,
        headSha: pr.headSha,
        expectedBaseSha: base,
        method: "merge_commit" as const,
        title: `Change ${runId} (#${String(pr.number)})`,
        testedSha: made.sha,
      },
      made,
    };
  }

  it("lands the tested tree, once: a repeated merge reports the same commit", async () => {
    const { request, made } = await tested({ "land.txt": "l\n" }, "run-land");
    const mark = world.gh.requests.mark();
    const merged = await host.merge(request);
    expect(merged).toMatchObject({ ok: true });
    if (!merged.ok) return;
    expect(await main()).toBe(merged.sha);
    expect(await treeOf(merged.sha)).toBe(await treeOf(made.sha));
    expect(world.gh.pullRequest(NAME, request.prNumber).state).toBe("closed");
    // Again (a crash after the merge): the same commit, no second merge.
    expect(await host.merge(request)).toEqual(merged);
    expect(world.gh.requests.count({ operationId: "pulls/merge", since: mark })).toBe(1);
  });

  it.each(["merge_commit", "squash"] as const)(
    "builds the next test branch on the tested merge that landed (%s), without moving the scratch branch back",
    async (method) => {
      const { request } = await tested({ [`next-a-${method}.txt`]: "a\n" }, `run-next-a-${method}`);
      const merged = await host.merge({ ...request, method });
      expect(merged).toMatchObject({ ok: true });
      if (!merged.ok) return;
      const pr = await openPr({ [`next-b-${method}.txt`]: "b\n" });
      const mark = world.gh.requests.mark();
      const made = await host.createTestBranch({
        repo,
        targetBranch: "main",
        runId: `run-next-b-${method}`,
        baseSha: merged.sha,
        prs: [{ number: pr.number, headSha: pr.headSha }],
      });
      if (!made.ok) throw new Error(made.message);
      // The scratch branch held the same merge as the base (its tree; its parents, or its first
      // parent for a squash): not moved.
      const moves = world.gh.requests
        .filter({ operationId: "git/update-ref", since: mark })
        .filter((r) => r.path.includes("trunk-temp"));
      expect(moves.map((r) => `${r.method} ${r.path} ${String(r.status)}`)).toEqual([]);
      expect(await treeOf(merged.sha)).toBe(await treeOf(request.testedSha));
      // What lands is what was tested, checked against the base's tree.
      const next = await host.merge({
        repo,
        targetBranch: "main",
        prNumber: pr.number,
        headSha: pr.headSha,
        expectedBaseSha: merged.sha,
        method,
        title: `Next (#${String(pr.number)})`,
        testedSha: made.sha,
      });
      expect(next).toMatchObject({ ok: true });
      if (next.ok) expect(await treeOf(next.sha)).toBe(await treeOf(made.sha));
      expect(await fileAt(made.sha, `next-a-${method}.txt`)).toBe("a\n");
    },
  );

  it.each(["squash", "merge_commit"] as const)(
    "merges a serial run's pull request onto its slot's branch when the slot holds the merge that landed (%s)",
    async (method) => {
      const { gh } = world;
      const slot = method === "squash" ? 5 : 6;
      const run = async (files: Record<string, string>, runId: string) => {
        const pr = await openPr(files);
        const baseSha = await main();
        const made = await host.createTestBranch({
          repo,
          targetBranch: "main",
          runId,
          slot,
          baseSha,
          prs: [{ number: pr.number, headSha: pr.headSha }],
        });
        if (!made.ok) throw new Error(made.message);
        return { pr, baseSha, made };
      };
      const land = async (tested: Awaited<ReturnType<typeof run>>) => {
        const merged = await host.merge({
          repo,
          targetBranch: "main",
          prNumber: tested.pr.number,
          headSha: tested.pr.headSha,
          expectedBaseSha: tested.baseSha,
          method,
          title: `Slot (#${String(tested.pr.number)})`,
          testedSha: tested.made.sha,
        });
        expect(merged).toMatchObject({ ok: true });
      };
      const first = await run({ [`slot-a-${method}.txt`]: "a\n" }, `run-slot-a-${method}`);
      await land(first);

      // With a second one (a ghost: made, then answered 502), the slot's branch is merged onto.
      const rule = gh.addFault(gh.fault.succeedsButErrors("repos/merge", 502));
      const mark = gh.requests.mark();
      const second = await run({ [`slot-b-${method}.txt`]: "b\n" }, `run-slot-b-${method}`);
      gh.faults.remove(rule);
      const writes = gh.requests
        .filter({ since: mark })
        .filter((r) => r.method !== "GET")
        .map((r) => `${r.method} ${decodeURIComponent(r.path)} ${String(r.status)}`);
      expect(writes).toEqual(["POST /repos/acme-gh/widgets/merges 502"]);
      expect(second.made.branch).toBe(`trunk-merge/main/slot-${String(slot)}`);
      expect(await fileAt(second.made.sha, `slot-a-${method}.txt`)).toBe("a\n");
      expect(await fileAt(second.made.sha, `slot-b-${method}.txt`)).toBe("b\n");
      // What lands is what was tested: the tree check passes.
      await land(second);
      expect(await treeOf(await main())).toBe(await treeOf(second.made.sha));
    },
  );

  it("takes the base from the webhooks while they flow, and reads it when they do not", async () => {
    const github = { owner: "acme-gh", name: "widgets" };
    const first = await tested({ "heard-a.txt": "a\n" }, "run-heard-a");
    // The last push the webhooks told of on main is the expected base, and they are flowing.
    host.heard(github, { branch: "main", sha: first.request.expectedBaseSha });
    let mark = world.gh.requests.mark();
    expect(await host.merge(first.request)).toMatchObject({ ok: true });
    expect(world.gh.requests.count({ operationId: "git/get-ref", since: mark })).toBe(0);

    // The last push they told of went elsewhere: the base is read (and is where it was expected).
    const second = await tested({ "heard-b.txt": "b\n" }, "run-heard-b");
    host.heard(github, { branch: "main", sha: "0".repeat(40) });
    mark = world.gh.requests.mark();
    expect(await host.merge(second.request)).toMatchObject({ ok: true });
    expect(world.gh.requests.count({ operationId: "git/get-ref", since: mark })).toBe(1);
  });

  it("squashes with the title given", async () => {
    const { request } = await tested({ "squash.txt": "s\n" }, "run-squash");
    const merged = await host.merge({ ...request, method: "squash" });
    if (!merged.ok) throw new Error(merged.message);
    const { data } = await appClient().request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { owner: "acme-gh", repo: "widgets", commit_sha: merged.sha },
    );
    expect(data.parents).toHaveLength(1);
    expect(data.message.split("\n")[0]).toBe(request.title);
  });

  it("takes a ghost merge (405 merge already in progress, merged anyway) as merged", async () => {
    const { gh } = world;
    const { request } = await tested({ "ghost.txt": "g\n" }, "run-ghost");
    const rule = gh.addFault(gh.fault.mergeAlreadyInProgress({ merged: true }));
    const mark = gh.requests.mark();
    try {
      const merged = await host.merge(request);
      expect(gh.faults.fired(rule)).toBe(1);
      expect(merged).toMatchObject({ ok: true });
      if (merged.ok) expect(await main()).toBe(merged.sha);
      expect(gh.requests.count({ operationId: "pulls/merge", since: mark })).toBe(1);
    } finally {
      gh.faults.remove(rule);
    }
  });

  it("retries 'base branch was modified' after reading the pull request again", async () => {
    const { gh } = world;
    const { request } = await tested({ "retry.txt": "r\n" }, "run-retry");
    const rule = gh.addFault(gh.fault.baseBranchModified({ times: 2 }));
    try {
      const merged = await host.merge(request);
      expect(gh.faults.fired(rule)).toBe(2);
      expect(merged).toMatchObject({ ok: true });
      expect(gh.pullRequest(NAME, request.prNumber).state).toBe("closed");
    } finally {
      gh.faults.remove(rule);
    }
  });

  it("retries 'head branch was modified' when the head did not move", async () => {
    const { gh } = world;
    const { request } = await tested({ "head-glitch.txt": "h\n" }, "run-head-glitch");
    const rule = gh.addFault(gh.fault.headBranchModified());
    try {
      expect(await host.merge(request)).toMatchObject({ ok: true });
      expect(gh.faults.fired(rule)).toBe(1);
    } finally {
      gh.faults.remove(rule);
    }
  });

  it("a merge GitHub made but answered with a 500 is taken as made, never made twice", async () => {
    const { gh } = world;
    const { request, made } = await tested({ "made.txt": "m\n" }, "run-made");
    const before = await main();
    const rule = gh.addFault(gh.fault.succeedsButErrors("pulls/merge", 500));
    try {
      const merged = await host.merge(request);
      expect(gh.faults.fired(rule)).toBe(1);
      expect(merged).toMatchObject({ ok: true });
      if (!merged.ok) return;
      // One commit landed on the base: the merge, whose first parent is the base before it.
      expect(await main()).toBe(merged.sha);
      const { data } = await appClient().request(
        "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
        { owner: "acme-gh", repo: "widgets", commit_sha: merged.sha },
      );
      expect(data.parents.map((p) => p.sha)).toEqual([before, request.headSha]);
      expect(await treeOf(merged.sha)).toBe(await treeOf(made.sha));
    } finally {
      gh.faults.remove(rule);
    }
  });

  it("gives up on a base GitHub keeps calling modified with base_moved, having merged nothing", async () => {
    const { gh } = world;
    const { request } = await tested({ "stuck.txt": "s\n" }, "run-stuck");
    const before = await main();
    const rule = gh.addFault(gh.fault.baseBranchModified({ times: Infinity }));
    try {
      const result = await host.merge(request);
      expect(result).toMatchObject({ ok: false, reason: "base_moved" });
      expect(await main()).toBe(before);
    } finally {
      gh.faults.remove(rule);
    }
  });

  it("refuses a moved base without calling the merge, and a moved head on GitHub's word", async () => {
    const { request, pr } = await tested({ "moved.txt": "m\n" }, "run-moved");
    const mark = world.gh.requests.mark();
    expect(await host.merge({ ...request, expectedBaseSha: "1".repeat(40) })).toMatchObject({
      ok: false,
      reason: "base_moved",
    });
    expect(world.gh.requests.count({ operationId: "pulls/merge", since: mark })).toBe(0);
    // The merge is pinned to the tested head: pushed to since, GitHub refuses it (409), and
    // nothing lands.
    const base = await main();
    await world.gh.commit(NAME, { branch: pr.branch, files: { "moved.txt": "n\n" }, by: "bob" });
    expect(await host.merge(request)).toMatchObject({
      ok: false,
      reason: "head_moved",
    });
    expect(world.gh.requests.count({ operationId: "pulls/merge", since: mark })).toBe(1);
    expect(await main()).toBe(base);
  });

  it("passes GitHub's refusal on (required checks) as rejected", async () => {
    const { gh } = world;
    const { request } = await tested({ "refused.txt": "r\n" }, "run-refused");
    gh.protectBranch(NAME, "main", { requiredStatusChecks: { strict: false, contexts: ["ci"] } });
    try {
      const result = await host.merge(request);
      expect(result).toMatchObject({ ok: false, reason: "rejected" });
      if (!result.ok) expect(result.message).toContain('Required status check "ci" is expected');
      expect(gh.pullRequest(NAME, request.prNumber).state).toBe("open");
    } finally {
      gh.unprotectBranch(NAME, "main");
    }
  });

  it("checks the landed tree from the push webhook, not a read, before the next merge", async () => {
    const github = server.services.github;
    if (!github) throw new Error("no GitHub provider");
    const waiting = new GitHubGitHost({
      repositories: github.repositories,
      app: github.app,
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
      retryDelayMs: () => 5,
      pushWaitMs: 60_000,
    });
    const where = { owner: "acme-gh", name: "widgets" };
    const first = await tested({ "pushed-1.txt": "1\n" }, "run-pushed-1");
    const second = await tested({ "pushed-2.txt": "2\n" }, "run-pushed-2");
    const mark = world.gh.requests.mark();
    const merges = () => world.gh.requests.count({ operationId: "pulls/merge", since: mark });
    const done: string[] = [];
    const one = waiting.merge(first.request).finally(() => done.push("first"));
    // The second (on the base the first leaves) queues behind the first's check.
    const two = waiting.merge(second.request).finally(() => done.push("second"));
    await vi.waitFor(
      () => {
        expect(merges()).toBe(1);
      },
      { timeout: 30_000, interval: 100 },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done).toEqual([]);
    expect(merges()).toBe(1);
    // Its push webhook names the tested tree: verified without reading the landed commit.
    const landed = await main();
    waiting.pushed(where, landed, await treeOf(first.made.sha));
    expect(await one).toEqual({ ok: true, sha: landed });
    expect(await two).toMatchObject({ ok: false, reason: "base_moved" });
    expect(done).toEqual(["first", "second"]);
    const reads = world.gh.requests.filter({ operationId: "git/get-commit", since: mark });
    expect(reads.filter((r) => r.path.includes(landed))).toEqual([]);

    // One naming another tree: what landed was not tested, and the queue stops.
    const third = await tested({ "pushed-3.txt": "3\n" }, "run-pushed-3");
    const three = waiting.merge(third.request);
    await vi.waitFor(
      () => {
        expect(merges()).toBe(2);
      },
      { timeout: 30_000, interval: 100 },
    );
    waiting.pushed(where, await main(), await treeOf(first.made.sha));
    expect(await three).toMatchObject({ ok: false, reason: "rejected", pauseQueue: true });
  });

  it("detects a landed tree that differs from the tested one, says so and pauses the queue", async () => {
    const pr = await openPr({ "untested.txt": "u\n" });
    const base = await main();
    // A "test branch" whose merge of the head has another tree (the base's): what passed is not
    // what GitHub's merge lands.
    const client = appClient();
    const where = { owner: "acme-gh", repo: "widgets" };
    const fake = await client.request("POST /repos/{owner}/{repo}/git/commits", {
      ...where,
      message: "a test branch with another tree",
      tree: await treeOf(base),
      parents: [base, pr.headSha],
    });
    errors.length = 0;
    const result = await host.merge({
      repo,
      targetBranch: "main",
      prNumber: pr.number,
      headSha: pr.headSha,
      expectedBaseSha: base,
      method: "merge_commit",
      title: "untested",
      testedSha: fake.data.sha,
    });
    expect(result).toMatchObject({ ok: false, reason: "rejected", pauseQueue: true });
    if (!result.ok) expect(result.message).toContain("landed tree differs from tested tree");
    expect(errors.some((line) => line.includes("landed tree differs from tested tree"))).toBe(true);
  });
});
