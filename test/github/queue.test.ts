/**
 * The merge queue on a GitHub repository, end to end: a real Mainline server in-process, the
 * fake GitHub with the App installed and linked, and the fake's CI testing every push to
 * `trunk-merge/**`. Pull requests submitted through Trunk's API are tested on test branches the
 * queue assembles on GitHub and merged by GitHub's merge API: a passing one lands (with the tree
 * that was tested), a failing one does not, one that conflicts with those ahead fails as a
 * conflict. Submissions GitHub cannot back (no such pull request, a closed one, a repository no
 * installation grants) are refused with a clear 4xx and change nothing.
 */
import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";

const NAME = "acme-q/widgets";
const WIDGETS = { host: "github.com", owner: "acme-q", name: "widgets" };
const QUEUE = { repo: WIDGETS, targetBranch: "main" };
let world: GitHubWorld;
let server: TestServer;
let token: () => string;

interface Item {
  state: string;
  readiness?: { gitHubMergeability: string };
  timeline?: { reason: string; toState?: string; detail?: string | null }[];
}

// Writes go one a second per installation (GitHub's advice, kept by the client): a test branch
// and a merge take several seconds, more on a busy machine.
vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-q");
  gh.createUser("alice");
  gh.createUser("carol");
  gh.addOrgMember("acme-q", "alice", "admin");
  await gh.createRepository({
    owner: "acme-q",
    name: "widgets",
    files: {
      "README.md": "widgets\n",
      // The check fails on any text file that says "bad".
      "check.sh": "! grep -l bad *.txt 2>/dev/null | grep -q .\n",
      ".trunk/trunk.yaml": "version: 0.1\nmerge:\n  required_statuses:\n    - test\n",
    },
  });
  await gh.createRepository({ owner: "acme-q", name: "gadgets" });
  gh.setCollaborator(NAME, "carol", "write");
  gh.configureCi(NAME, [
    {
      name: "ci",
      on: { push: { branches: ["trunk-merge/**"] } },
      checks: [{ name: "test", run: "sh check.sh" }],
    },
  ]);
  server = await startGitHubServer(world, {
    githubGitHost: { retryDelayMs: () => 10, mergeabilityReads: 3 },
    githubCiPollIntervalMs: 500,
  });
  const installationId = gh.installApp(world.app.id, {
    account: "acme-q",
    repositories: ["widgets"],
  }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
  token = () => gh.installationToken(installationId);
  const created = await server.call("createQueue", QUEUE);
  expect(created.status, created.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

let branches = 0;
async function openPr(files: Record<string, string>): Promise<{ number: number; head: string }> {
  const branch = `change-${String((branches += 1))}`;
  const head = await world.gh.commit(NAME, { branch, from: "main", files, by: "alice" });
  return { number: await world.gh.openPullRequest(NAME, { head: branch, by: "alice" }), head };
}

async function item(number: number): Promise<Item> {
  const answer = await server.call<Item>("getSubmittedPullRequest", {
    ...QUEUE,
    pr: { number },
    includeTimeline: true,
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function settled(number: number, timeout = 90_000): Promise<Item> {
  await expect
    .poll(async () => (await item(number)).state, { timeout, interval: 250 })
    .toMatch(/^(merged|failed|cancelled)$/);
  return item(number);
}

const main = async () => (await world.gh.readRef(NAME, "heads/main")) ?? "";

/** The queue's branches left on GitHub (test branches and scratch branches). */
async function queueBranches(): Promise<string[]> {
  const octokit = new Octokit({ baseUrl: world.gh.url, auth: token() });
  const names: string[] = [];
  for (const prefix of ["heads/trunk-merge/", "heads/trunk-temp/"]) {
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/git/matching-refs/{ref}", {
      owner: "acme-q",
      repo: "widgets",
      ref: prefix,
    });
    names.push(...data.map((ref) => ref.ref));
  }
  return names;
}

describe("submitting pull requests on GitHub", () => {
  it("refuses what GitHub cannot back with a clear 4xx, changing nothing", async () => {
    const before = await main();
    const missing = await server.call<{ error: { code: string; message: string } }>(
      "submitPullRequest",
      { ...QUEUE, pr: { number: 4242 } },
    );
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain("#4242 does not exist");

    const closed = await openPr({ "closed.txt": "closed\n" });
    await world.gh.closePullRequest(NAME, closed.number, { by: "alice" });
    const refused = await server.call("submitPullRequest", {
      ...QUEUE,
      pr: { number: closed.number },
    });
    expect(refused.status).toBe(409);

    // A repository of the account that no installation grants: no queue can exist there.
    const stranger = await server.call<{ error: { code: string } }>("submitPullRequest", {
      repo: { ...WIDGETS, name: "gadgets" },
      targetBranch: "main",
      pr: { number: 1 },
    });
    expect(stranger.status).toBe(404);
    expect(
      (await server.call("getSubmittedPullRequest", { ...QUEUE, pr: { number: closed.number } }))
        .status,
    ).toBe(404);
    expect(await main()).toBe(before);
  });
});

describe("the queue on GitHub", () => {
  it("tests on trunk-merge/ branches and merges what passed with the tree that was tested", async () => {
    const { gh } = world;
    const good = await openPr({ "good.txt": "good\n" });
    const bad = await openPr({ "bad.txt": "bad\n" });
    const marked = gh.requests.mark();
    for (const pr of [good, bad]) {
      const answer = await server.call("submitPullRequest", {
        ...QUEUE,
        pr: { number: pr.number },
      });
      expect(answer.status, answer.text).toBe(200);
    }
    const landed = await settled(good.number);
    expect(landed.state).toBe("merged");
    const failed = await settled(bad.number);
    expect(failed.state).toBe("failed");
    expect(failed.timeline?.at(-1)?.reason).toBe("failing_required_check");

    // GitHub merged the good one and not the bad one.
    expect(gh.pullRequest(NAME, good.number)).toMatchObject({ state: "closed" });
    expect(gh.pullRequest(NAME, good.number).mergedAt).toBeTruthy();
    expect(gh.pullRequest(NAME, bad.number)).toMatchObject({ state: "open" });
    const head = await main();
    const read = (path: string) =>
      server.services.gitHost.readFile(
        { organizationId: server.organizationId, ...WIDGETS },
        head,
        path,
      );
    expect(await read("good.txt")).toBe("good\n");
    expect(await read("bad.txt")).toBeUndefined();

    // CI ran on the queue's test branches only, never on the scratch branches.
    const refs = new Set(gh.ci.runs.filter((run) => run.repo === NAME).map((run) => run.ref));
    expect([...refs].length).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).toMatch(/^(refs\/heads\/)?trunk-merge\/main\//);
    // What landed is the tree that was tested (else the queue would have paused itself).
    const queue = await server.call<{ state: string }>("getQueue", QUEUE);
    expect(queue.body.state).toBe("running");
    // The merge went through GitHub's merge API, once.
    expect(gh.requests.count({ operationId: "pulls/merge", since: marked })).toBe(1);
    // No branch of a single run is left once the runs ended: the queue's scratch branch and its
    // slots' test branches (moved by the next run in the slot) stay.
    await expect
      .poll(
        async () =>
          (await queueBranches()).filter(
            (ref) => !/^refs\/heads\/trunk-merge\/main\/slot-\d+$/.test(ref),
          ),
        { timeout: 30_000, interval: 250 },
      )
      .toEqual(["refs/heads/trunk-temp/main/queue"]);
    expect(await queueBranches()).toContain("refs/heads/trunk-merge/main/slot-0");
  });

  it("fails a pull request that conflicts with one ahead of it as a merge conflict", async () => {
    const first = await openPr({ "same.txt": "first\n" });
    const second = await openPr({ "same.txt": "second\n" });
    for (const pr of [first, second]) {
      const answer = await server.call("submitPullRequest", {
        ...QUEUE,
        pr: { number: pr.number },
      });
      expect(answer.status, answer.text).toBe(200);
    }
    expect((await settled(first.number)).state).toBe("merged");
    const conflicted = await settled(second.number);
    expect(conflicted.state).toBe("failed");
    expect(conflicted.timeline?.map((t) => t.reason)).toContain("merge_conflict");
    expect(world.gh.pullRequest(NAME, second.number).state).toBe("open");
  });

  it("says GitHub's rate limit holds it, sends nothing meanwhile, and goes on after", async () => {
    const { gh } = world;
    const pr = await openPr({ "limited.txt": "limited\n" });
    const rule = gh.addFault(gh.fault.secondaryRateLimit("pulls/get", 3, { times: 1 }));
    const mark = gh.requests.mark();
    const submitting = server.call("submitPullRequest", { ...QUEUE, pr: { number: pr.number } });
    interface Host {
      state: string;
      since?: string;
      retryAt?: string;
      message?: string;
    }
    let host: Host = { state: "ok" };
    await expect
      .poll(
        async () => {
          host = (await server.call<{ host: Host }>("getQueue", QUEUE)).body.host;
          return host.state;
        },
        { timeout: 2_500, interval: 100 },
      )
      .toBe("rate_limited");
    const left = Date.parse(host.retryAt ?? "") - Date.now();
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(3_000);
    expect(host.message).toMatch(/secondary rate limit/);
    expect((await submitting).status).toBe(200);
    expect(gh.faults.fired(rule)).toBe(1);
    expect((await settled(pr.number)).state).toBe("merged");
    // Nothing of the installation went out while GitHub held it (a request sent before the
    // refusal came, in flight beside it, is not one).
    const made = gh.requests.filter({ since: mark }).filter((r) => r.installationId !== null);
    const refused = made.find((r) => r.status === 403);
    const answeredAt = (refused?.atMs ?? 0) + (refused?.durationMs ?? 0);
    const sentAfter = made.filter((r) => r.seq > (refused?.seq ?? 0) && r.atMs >= answeredAt);
    expect(sentAfter.length).toBeGreaterThan(0);
    for (const request of sentAfter) {
      expect(request.atMs - (refused?.atMs ?? 0)).toBeGreaterThanOrEqual(2_950);
    }
    expect((await server.call<{ host: Host }>("getQueue", QUEUE)).body.host).toEqual({
      state: "ok",
    });
  });

  it("takes a run's required checks from its tested commit, told by its test branch's merges", async () => {
    const { gh } = world;
    // The pull request empties the required checks of `.trunk/trunk.yaml` (main requires `test`):
    // at the tested commit there are none, and the run fails for it.
    const pr = await openPr({
      "no-checks.txt": "no checks\n",
      ".trunk/trunk.yaml": "version: 0.1\nmerge:\n  required_statuses: []\n",
    });
    const mark = gh.requests.mark();
    const answer = await server.call("submitPullRequest", { ...QUEUE, pr: { number: pr.number } });
    expect(answer.status, answer.text).toBe(200);
    const failed = await settled(pr.number);
    expect(failed.state).toBe("failed");
    expect(failed.timeline?.map((t) => t.reason)).toContain("no_required_statuses");
    // The merge onto the test branch listed its files: no compare was needed to know.
    expect(
      gh.requests.count({ operationId: "repos/compare-commits-with-basehead", since: mark }),
    ).toBe(0);
    expect(gh.requests.count({ operationId: "repos/get-content", since: mark })).toBeGreaterThan(0);
  });

  it("holds a pull request short of its required approvals until a review approves it", async () => {
    const { gh } = world;
    gh.protectBranch(NAME, "main", { requiredApprovingReviewCount: 1 });
    // GitHub's `branch_protection_rule` webhook (the fake sends none): protection is read again.
    server.services.github?.gitHost.forgetRequirements({ owner: "acme-q", name: "widgets" });
    try {
      const pr = await openPr({ "reviewed.txt": "reviewed\n" });
      const answer = await server.call("submitPullRequest", {
        ...QUEUE,
        pr: { number: pr.number },
      });
      expect(answer.status, answer.text).toBe(200);
      await expect
        .poll(async () => (await item(pr.number)).readiness?.gitHubMergeability, {
          timeout: 30_000,
          interval: 250,
        })
        .toBe("not_mergeable");
      // Not ready for its own reason, said once, on the API and on the pull request's comment.
      await expect
        .poll(async () => (await item(pr.number)).timeline?.map((t) => t.reason), {
          timeout: 30_000,
          interval: 250,
        })
        .toContain("review_required");
      const held = await item(pr.number);
      expect(held.state).toBe("not_ready");
      expect(held.timeline?.filter((t) => t.reason === "review_required")).toHaveLength(1);
      expect(held.timeline?.at(-1)).toMatchObject({
        toState: "not_ready",
        reason: "review_required",
      });
      expect(held.timeline?.at(-1)?.detail).toMatch(/approving reviews/);
      await expect
        .poll(
          () =>
            gh
              .comments(NAME, pr.number)
              .map((c) => c.body)
              .join("\n"),
          {
            timeout: 30_000,
            interval: 250,
          },
        )
        .toMatch(/review required/);
      // The review's webhook makes the queue read the pull request again.
      await gh.approve(NAME, pr.number, "carol");
      const landed = await settled(pr.number);
      expect(landed.state).toBe("merged");
      const reasons = landed.timeline?.map((t) => t.reason) ?? [];
      expect(reasons.indexOf("ready")).toBeGreaterThan(reasons.indexOf("review_required"));
      expect(gh.pullRequest(NAME, pr.number).mergedAt).toBeTruthy();
    } finally {
      gh.unprotectBranch(NAME, "main");
      server.services.github?.gitHost.forgetRequirements({ owner: "acme-q", name: "widgets" });
    }
  });

  it("costs at most 12 GitHub requests per merged pull request, serial, comment and check on", async () => {
    const { gh } = world;
    const updated = await server.call("updateQueue", {
      ...QUEUE,
      mode: "single",
      concurrency: 1,
      batch: false,
      commentsEnabled: true,
      statusCheckEnabled: true,
      requiredStatuses: ["test"],
    });
    expect(updated.status, updated.text).toBe(200);
    const prs: { number: number; head: string }[] = [];
    for (const k of [1, 2, 3])
      prs.push(await openPr({ [`budget-${String(k)}.txt`]: `${String(k)}\n` }));
    await settle(world, server);
    await server.services.github?.presence.idle();
    // The queue's scratch branch is made once (by the first run of the queue in this process).
    const scratchMade = (await gh.readRef(NAME, "heads/trunk-temp/main/queue")) === null ? 1 : 0;
    // So is the branch of the queue's one test slot, kept and moved from run to run.
    const slotMade = (await gh.readRef(NAME, "heads/trunk-merge/main/slot-0")) === null ? 1 : 0;
    const mark = gh.requests.mark();
    for (const pr of prs) {
      const answer = await server.call("submitPullRequest", {
        ...QUEUE,
        pr: { number: pr.number },
      });
      expect(answer.status, answer.text).toBe(200);
    }
    for (const pr of prs) expect((await settled(pr.number)).state).toBe("merged");
    // The last comment and check updates follow the last merge: until nothing more is sent.
    const made = () =>
      gh.requests.entries.filter((r) => r.seq >= mark && r.installationId !== null);
    let before = -1;
    while (made().length !== before) {
      before = made().length;
      await settle(world, server);
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    const sent = made();
    // Edits of other pull requests' comments and check runs (earlier tests') are not counted,
    // and of ours one each: a state shown on its own between queued and merged (as the presence
    // worker's passes fall) adds an edit of each, which the presence tests count.
    const octokit = new Octokit({ baseUrl: gh.url, auth: token() });
    const where = { owner: "acme-q", repo: "widgets" };
    const ours = new Set<string>();
    for (const pr of prs) {
      const comments = await octokit.request(
        "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
        { ...where, issue_number: pr.number },
      );
      for (const c of comments.data) ours.add(`comments/${String(c.id)}`);
      const runs = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
        ...where,
        ref: pr.head,
      });
      for (const r of runs.data.check_runs) ours.add(`check-runs/${String(r.id)}`);
      // Each shows its end: the comment says merged, the queue's check run is made completed.
      const queueRuns = runs.data.check_runs.filter((r) => r.name === "Trunk Merge Queue (main)");
      expect(queueRuns.map((r) => [r.status, r.conclusion])).toEqual([["completed", "success"]]);
      const sticky = comments.data.find((c) => c.body?.includes("<!-- mainline:queue -->"));
      expect(sticky?.body).toContain("**Merged**");
    }
    const edits = new Set(["issues/update-comment", "checks/update"]);
    const edited = new Set<string>();
    // A check run made is not named in its path: as many as ours count, the rest were others'.
    let checkRunsMade = [...ours].filter((id) => id.startsWith("check-runs/")).length;
    const counted = sent.filter((r) => {
      if (r.status === 304) return false;
      if (r.operationId === "checks/create") return checkRunsMade-- > 0;
      if (r.operationId === "issues/create-comment") {
        return prs.some((pr) => r.path.endsWith(`/issues/${String(pr.number)}/comments`));
      }
      if (!edits.has(r.operationId)) return true;
      const target = r.path.split("/").slice(-2).join("/");
      if (!ours.has(target) || edited.has(target)) return false;
      edited.add(target);
      return true;
    });
    const ops = counted.map((r) => r.operationId);
    // What the queue reads once a while whatever it merges (protection, rulesets, whether the
    // repository posts statuses) and its scratch branch are not the pull requests'.
    const perQueue = new Set([
      "repos/get-branch-protection",
      "repos/get-branch-rules",
      "repos/get-combined-status-for-ref",
    ]);
    const perPr =
      (counted.filter((r) => !perQueue.has(r.operationId)).length - scratchMade - slotMade) /
      prs.length;
    // Each pull request costs 11 (12 when CI's checks finish one by one: a read per completion).
    expect(perPr, ops.join(", ")).toBeLessThanOrEqual(12);
    // Test branches are kept per slot and moved: none created per run, none deleted.
    expect(ops.filter((op) => op === "git/create-ref").length).toBeLessThanOrEqual(
      scratchMade + slotMade,
    );
    expect(ops).not.toContain("git/delete-ref");
    expect(await gh.readRef(NAME, "heads/trunk-merge/main/slot-0")).not.toBeNull();
    // None of what a direct merge or a lost row needs; one pull request read per submission.
    expect(ops).not.toContain("repos/compare-commits-with-basehead");
    expect(ops).not.toContain("issues/list-comments");
    expect(ops.filter((op) => op === "pulls/get")).toHaveLength(prs.length);
    expect(ops.filter((op) => op === "pulls/merge")).toHaveLength(prs.length);
  });
});
