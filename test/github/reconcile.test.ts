/**
 * The reconcile loop against the fake GitHub, with webhooks lost: what the queues hold is read
 * again after a start; pushes, closes, opens, drafts and a moved base that no webhook told of
 * become the changes a webhook would have made, once; a queued pull request closed while its
 * webhook was lost, or queued at an older head, is reported once; and a pass when nothing changed
 * is all 304s, which spend none of the installation's rate limit. Through the running server, the
 * changes reach the queue as commands.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import type { HostChange } from "../../src/mergequeue/host-changes.js";
import { GitHubReconciler } from "../../src/providers/github/reconcile.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";

let world: GitHubWorld;
let server: TestServer;
let installationId: number;
const REPO = "acme-gh/widgets";
const WIDGETS = { host: "github.com", owner: "acme-gh", name: "widgets" };
const warnings: string[] = [];

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  gh.createUser("alice");
  gh.addOrgMember("acme-gh", "alice", "admin");
  await gh.createRepository({ owner: "acme-gh", name: "widgets" });
  await gh.createRepository({ owner: "acme-gh", name: "gadgets" });
  server = await startGitHubServer(world, { org: "acme" });
  installationId = gh.installApp(world.app.id, {
    account: "acme-gh",
    repositories: ["widgets", "gadgets"],
  }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
  await settle(world, server);
  expect((await server.call("createQueue", { repo: WIDGETS, targetBranch: "main" })).status).toBe(
    200,
  );
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gh.close();
});

function stores() {
  const { db, dialect } = server.database.handle;
  return {
    queues: new MergeQueueStore(db, dialect),
    runtime: new MergeQueueRuntimeStore(db, dialect),
  };
}

async function queueId(repo = WIDGETS): Promise<string> {
  const queue = await stores().queues.find(server.organizationId, repo, "main");
  if (!queue) throw new Error("no queue");
  return queue.id;
}

/** A pull request as the queue holds it (submitted at `sha`): a row of the engine's own table. */
async function enqueue(queue: string, prNumber: number, sha: string): Promise<void> {
  const { db } = server.database.handle;
  const last = await db
    .selectFrom("mqEntries")
    .select((eb) => eb.fn.max("seq").as("seq"))
    .where("queueId", "=", queue)
    .executeTakeFirst();
  // PostgreSQL may answer max() of a bigint as text.
  const maxSeq: unknown = last?.seq;
  const now = Date.now();
  await db
    .insertInto("mqEntries")
    .values({
      id: randomUUID(),
      queueId: queue,
      seq: Number(maxSeq ?? 0) + 1,
      prNumber,
      prTitle: `PR ${prNumber}`,
      prSha: sha,
      prHeadBranch: `feature-${prNumber}`,
      prBaseBranch: "main",
      prAuthor: "alice",
      state: "pending",
      stateChangedAt: now,
      submittedAt: now,
      concludedAt: null,
      priorityValue: 100,
      usedDefaultPriority: 1,
      noBatch: 0,
      readiness: JSON.stringify({
        mergeability: "mergeable",
        baseBranchMatches: true,
        requiresImpactedTargets: false,
        impactedTargets: null,
      }),
      lastReason: "submitted",
    })
    .execute();
}

async function openPull(repo: string, name: string): Promise<number> {
  const { gh } = world;
  await gh.commit(repo, {
    branch: name,
    from: "main",
    files: { [`${name}.txt`]: "1\n" },
    by: "alice",
  });
  return gh.openPullRequest(repo, { head: name, by: "alice" });
}

/** A reconciler of the server's GitHub connection whose changes are only recorded. */
function spyReconciler(seen: HostChange[], intervalMs = 0): GitHubReconciler {
  const github = server.services.github;
  if (!github) throw new Error("no GitHub");
  const { queues, runtime } = stores();
  return new GitHubReconciler({
    host: "github.com",
    app: github.app,
    repositories: github.repositories,
    queues,
    entries: runtime,
    changes: {
      apply: (change) => {
        seen.push(change);
        return Promise.resolve();
      },
    },
    logger: {
      info: () => undefined,
      warn: (fields, message) => warnings.push(`${message} ${JSON.stringify(fields)}`),
      error: (fields, message) => warnings.push(`${message} ${JSON.stringify(fields)}`),
    },
    intervalMs,
  });
}

/** The installation's primary rate limit spent so far (`GET /rate_limit` itself is free). */
async function rateLimitUsed(): Promise<number> {
  const client = server.services.github?.app.installation(installationId);
  if (!client) throw new Error("no GitHub");
  const { data } = await client.request("GET /rate_limit");
  return (data as { resources: { core: { used: number } } }).resources.core.used;
}

const pulls = (changes: HostChange[]) =>
  changes
    .flatMap((c) => (c.type === "pull_request_changed" ? [c.number] : []))
    .sort((a, b) => a - b);
const branches = (changes: HostChange[]) =>
  changes.flatMap((c) => (c.type === "branch_moved" ? [c.branch] : []));

describe("the reconcile pass", () => {
  it("re-reads what the queues hold first, then reports only what changed, and nothing costs when nothing did", async () => {
    const { gh } = world;
    const queue = await queueId();
    const first = await openPull(REPO, "one");
    const second = await openPull(REPO, "two");
    const third = await openPull(REPO, "three");
    const stale = await openPull(REPO, "four");
    await settle(world, server);
    await enqueue(queue, first, gh.pullRequest(REPO, first).headSha);
    await enqueue(queue, second, gh.pullRequest(REPO, second).headSha);
    // Queued at a head it has since left: worth a re-read, once.
    await enqueue(queue, stale, "0".repeat(40));

    const seen: HostChange[] = [];
    const reconciler = spyReconciler(seen);
    // First pass: nothing to compare with, so what the queues hold is read again.
    const start = await reconciler.pass();
    expect(start.failed).toBe(0);
    expect(pulls(seen)).toEqual([first, second, stale].sort((a, b) => a - b));
    expect(branches(seen)).toEqual(["main"]);
    expect(seen.every((c) => c.repo.organizationId === server.organizationId)).toBe(true);

    // Nothing changed: every request is a 304, and the rate limit did not move.
    seen.length = 0;
    const usedBefore = await rateLimitUsed();
    const mark = gh.requests.mark();
    const quiet = await reconciler.pass();
    expect(seen).toEqual([]);
    expect(quiet.requests).toBeGreaterThanOrEqual(2);
    expect(quiet.notModified).toBe(quiet.requests);
    const made = gh.requests.filter({ since: mark, installationId });
    expect(made.filter((r) => r.operationId !== "rate-limit/get").map((r) => r.status)).toEqual(
      Array.from({ length: quiet.requests }, () => 304),
    );
    expect(gh.requests.byOperation(mark)).toMatchObject({ "pulls/list": 1, "git/get-ref": 1 });
    expect(await rateLimitUsed()).toBe(usedBefore);

    // Webhooks lost: the first PR pushed to, the second closed, the third made a draft, a new
    // one opened, and the base moved.
    gh.webhooks.pause();
    await gh.pushToPullRequest(REPO, first, { "one.txt": "2\n" });
    await gh.closePullRequest(REPO, second, { by: "alice" });
    await gh.markDraft(REPO, third);
    const fifth = await openPull(REPO, "five");
    await gh.commit(REPO, { branch: "main", files: { "base.txt": "moved\n" }, by: "alice" });
    const changed = await reconciler.pass();
    expect(changed.failed).toBe(0);
    expect(pulls(seen)).toEqual([first, second, third, fifth]);
    expect(branches(seen)).toEqual(["main"]);

    // Told once: the next pass finds nothing new (the closed PR is still queued, the stale
    // entry still at its old head).
    seen.length = 0;
    await reconciler.pass();
    expect(seen).toEqual([]);
    expect(warnings).toEqual([]);
    gh.webhooks.resume();
    await settle(world, server);
  });

  it("reports a repository it cannot reach, without a secret, and reads it from scratch after", async () => {
    const { gh } = world;
    const gadgets = { ...WIDGETS, name: "gadgets" };
    expect((await server.call("createQueue", { repo: gadgets, targetBranch: "main" })).status).toBe(
      200,
    );
    const seen: HostChange[] = [];
    const reconciler = spyReconciler(seen);
    await reconciler.pass();
    // Taken from the installation: the queue stays, GitHub is not asked.
    gh.removeInstallationRepositories(installationId, ["gadgets"]);
    await settle(world, server);
    warnings.length = 0;
    const failing = await reconciler.pass();
    expect(failing.failed).toBe(1);
    expect(warnings.some((w) => w.includes("could not reconcile"))).toBe(true);
    expect(warnings.join("\n")).not.toMatch(/ghs_|Bearer|eyJ/);
    // Back: a first pass again for the repository that failed (its queue holds nothing).
    gh.addInstallationRepositories(installationId, ["gadgets"]);
    await settle(world, server);
    seen.length = 0;
    const back = await reconciler.pass();
    expect(back.failed).toBe(0);
    expect(seen).toEqual([]);
    warnings.length = 0;
  });
});

describe("the reconcile loop's timer", () => {
  it("passes every interval once started, and not after it stopped", async () => {
    const { gh } = world;
    const seen: HostChange[] = [];
    const reconciler = spyReconciler(seen, 100);
    const mark = gh.requests.mark();
    reconciler.start();
    // Two passes at least: the open pull requests of both watched repositories, twice.
    await expect
      .poll(() => gh.requests.count({ operationId: "pulls/list", since: mark }), {
        timeout: 20_000,
      })
      .toBeGreaterThanOrEqual(4);
    // The first pass re-read what the queues hold.
    expect(pulls(seen).length).toBeGreaterThan(0);
    await reconciler.stop();
    const stopped = gh.requests.mark();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(gh.requests.count({ since: stopped, installationId })).toBe(0);
  });
});

describe("the server's reconcile loop", () => {
  it("turns what dropped webhooks did not tell into queue commands", async () => {
    const { gh } = world;
    const queue = await queueId();
    const github = server.services.github;
    if (!github) throw new Error("no GitHub");
    const number = await openPull(REPO, "six");
    await settle(world, server);
    await enqueue(queue, number, gh.pullRequest(REPO, number).headSha);
    await github.reconciler.pass();
    const commandsBefore = await commandsOf(queue);

    gh.setWebhookChaos({ drop: 1 });
    await gh.pushToPullRequest(REPO, number, { "six.txt": "2\n" });
    const mainHead = await gh.commit(REPO, {
      branch: "main",
      files: { "base.txt": "again\n" },
      by: "alice",
    });
    await settle(world, server);
    // Nothing arrived.
    expect(await commandsOf(queue)).toEqual(commandsBefore);

    const report = await github.reconciler.pass();
    expect(report.failed).toBe(0);
    const added = (await commandsOf(queue)).slice(commandsBefore.length);
    expect(added).toEqual(
      expect.arrayContaining([
        // Where the branch went, as the pass read it: a queue already there reads nothing more.
        { type: "branch_moved", headSha: mainHead },
        { type: "pr_changed", prNumber: number },
      ]),
    );
    expect(added).toHaveLength(2);
    gh.setWebhookChaos({});
  });
});

async function commandsOf(queue: string): Promise<{ type: string; prNumber?: number }[]> {
  const rows = await server.database.handle.db
    .selectFrom("mqCommands")
    .select("payload")
    .where("queueId", "=", queue)
    .orderBy("id")
    .execute();
  return rows.map((row) => JSON.parse(row.payload) as { type: string; prNumber?: number });
}
