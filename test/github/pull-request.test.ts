/**
 * The queue on a GitHub pull request, through the fake GitHub's webhooks and API: comment
 * commands (a writer's `/trunk merge` submits, a reader's is refused with a reply, bad flags get
 * the usage), the enqueueing label (added: submit; removed: cancel), and what the App shows there,
 * followed from the queue's stored transitions: one sticky comment edited in place, the check run
 * in progress → success/failure, the state labels swapped; and no more GitHub requests per merged
 * pull request than the budget.
 *
 * The queue reads, tests and merges pull requests on the fake through the GitHub git host and
 * CI; the tests report the required check on the tested commits, as CI would.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";
import type { TestServer } from "../helpers/server.js";
import { MergeQueueStore } from "../../src/db/stores/merge-queues.js";
import { GITHUB_ACTIONS_APP_ID } from "../helpers/fake-github/index.js";
import { COMMENT_MARKER, checkRunName } from "../../src/providers/github/pull-request-presence.js";
import { bundle, junit, putBundle } from "../helpers/uploads.js";

const OWNER = "acme-gh";
const REPO_NAME = `${OWNER}/widgets`;
const WIDGETS = { host: "github.com", owner: OWNER, name: "widgets" };
const PUBLIC_URL = "https://mainline.example.test";
/** The queue merges through the fake GitHub: a few requests, some seconds on a busy machine. */
const LONG = { timeout: 20_000, interval: 100 };

let world: GitHubWorld;
let server: TestServer;
let branches = 0;

interface Item {
  id: string;
  state: string;
  prNumber: number;
  priorityValue: number;
}

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization(OWNER);
  for (const login of ["alice", "bob", "rita", "tess"]) gh.createUser(login);
  gh.addOrgMember(OWNER, "alice", "admin");
  await gh.createRepository({ owner: OWNER, name: "widgets" });
  gh.setCollaborator(REPO_NAME, "bob", "write");
  gh.setCollaborator(REPO_NAME, "rita", "read");
  gh.setCollaborator(REPO_NAME, "tess", "triage");
  server = await startGitHubServer(world, {
    githubGitHost: { retryDelayMs: () => 5, mergeabilityReads: 2 },
    publicUrl: PUBLIC_URL,
    githubPresence: { pollIntervalMs: 50 },
  });
  const installationId = gh.installApp(world.app.id, {
    account: OWNER,
    repositories: ["widgets"],
  }).id;
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installationId, "acme");
  const queue = { repo: WIDGETS, targetBranch: "main" };
  expect((await server.call("createQueue", queue)).status).toBe(200);
  expect((await server.call("updateQueue", { ...queue, requiredStatuses: ["test"] })).status).toBe(
    200,
  );
}, 60_000);

afterAll(async () => {
  await server.close();
  world.gh.schema.assertValid();
  await world.gh.close();
});

/** A pull request into main on the fake. */
async function openPr(by = "bob"): Promise<{ number: number; headSha: string }> {
  const { gh } = world;
  const branch = `feature-${++branches}`;
  await gh.commit(REPO_NAME, { branch, from: "main", files: { [`${branch}.txt`]: "x\n" }, by });
  const number = await gh.openPullRequest(REPO_NAME, { head: branch, by });
  return { number, headSha: gh.pullRequest(REPO_NAME, number).headSha };
}

/** Deliveries handled, and the presence caught up with every stored transition. */
async function settled(): Promise<void> {
  await settle(world, server);
  await server.services.github?.presence.idle();
}

async function item(number: number): Promise<Item | undefined> {
  const answer = await server.call<Item>("getSubmittedPullRequest", {
    repo: WIDGETS,
    targetBranch: "main",
    pr: { number },
  });
  return answer.status === 200 ? answer.body : undefined;
}

async function queuedNumbers(): Promise<number[]> {
  const answer = await server.call<{ enqueuedPullRequests: { prNumber: number }[] }>("getQueue", {
    repo: WIDGETS,
    targetBranch: "main",
  });
  expect(answer.status).toBe(200);
  return answer.body.enqueuedPullRequests.map((pr) => pr.prNumber);
}

/** Takes every pull request out of the queue (what another test left behind). */
async function emptyQueue(): Promise<void> {
  for (const number of await queuedNumbers()) {
    const answer = await server.call("cancelPullRequest", {
      repo: WIDGETS,
      targetBranch: "main",
      pr: { number },
    });
    // 404: it concluded meanwhile.
    expect([200, 404], answer.text).toContain(answer.status);
  }
}

async function setQueue(settings: Record<string, unknown>): Promise<void> {
  const answer = await server.call("updateQueue", {
    repo: WIDGETS,
    targetBranch: "main",
    ...settings,
  });
  expect(answer.status, answer.text).toBe(200);
}

async function queueId(): Promise<string> {
  const queue = await new MergeQueueStore(
    server.database.handle.db,
    server.database.handle.dialect,
  ).find(server.organizationId, WIDGETS, "main");
  if (!queue) throw new Error("no queue");
  return queue.id;
}

const comments = (number: number) => world.gh.comments(REPO_NAME, number);
const botComments = (number: number) =>
  comments(number).filter((c) => c.user.login === `${world.app.slug}[bot]`);
const stickies = (number: number) =>
  botComments(number).filter((c) => c.body.startsWith(COMMENT_MARKER));
const replies = (number: number) =>
  botComments(number).filter((c) => !c.body.startsWith(COMMENT_MARKER));
const labels = (number: number) =>
  world.gh.pullRequest(REPO_NAME, number).labels.map((l) => l.name);
const checkRuns = (headSha: string) =>
  [...world.gh.repository(REPO_NAME).checkRuns.values()].filter(
    (run) => run.headSha === headSha && run.name === checkRunName("main"),
  );

/**
 * Concludes the pull request's run with the `test` check; `before` runs first with the tested
 * commit and its test branch (the CI job's upload of its reports).
 */
async function finishRun(
  number: number,
  conclusion: "success" | "failure",
  before?: (sha: string, testBranch: string) => Promise<void>,
): Promise<void> {
  let runId = "";
  await expect
    .poll(async () => {
      const answer = await server.call<{ timeline: { testRunId: string | null }[] }>(
        "getSubmittedPullRequest",
        { repo: WIDGETS, targetBranch: "main", pr: { number }, includeTimeline: true },
      );
      runId = answer.body.timeline.find((t) => t.testRunId)?.testRunId ?? "";
      return runId;
    }, LONG)
    .not.toBe("");
  const details = await server.call<{ testBranchSha: string | null; testBranch: string | null }>(
    "getMergeQueueTestingDetails",
    { repo: WIDGETS, targetBranch: "main", testRunId: runId },
  );
  const sha = details.body.testBranchSha;
  if (!sha) throw new Error(`no test branch: ${details.text}`);
  await before?.(sha, details.body.testBranch ?? "");
  await world.gh.postCheckRun(REPO_NAME, {
    name: "test",
    headSha: sha,
    status: "completed",
    conclusion,
    appId: GITHUB_ACTIONS_APP_ID,
  });
}

describe("comment commands", () => {
  it("a writer's `/trunk merge` submits the pull request, acknowledged with a reaction", async () => {
    // With the queue's comment off, the reaction is the only answer a command gets.
    await setQueue({ state: "paused", commentsEnabled: false });
    const pr = await openPr();
    const id = world.gh.comment(REPO_NAME, pr.number, "/trunk merge --priority=high", {
      by: "bob",
    });
    await settled();
    await expect.poll(queuedNumbers, LONG).toContain(pr.number);
    expect(await item(pr.number)).toMatchObject({ state: "pending", priorityValue: 10 });
    const command = comments(pr.number).find((c) => c.id === id);
    expect(command?.reactions.map((r) => [r.content, r.user.login])).toEqual([
      ["+1", `${world.app.slug}[bot]`],
    ]);
    expect(replies(pr.number)).toEqual([]);

    // The same command delivered again (GitHub's "Redeliver"), or sent again in a new comment,
    // queues nothing twice.
    const before = await item(pr.number);
    const delivery = world.gh
      .deliveries("issue_comment")
      .find((d) => (d.payload as { comment: { id: number } }).comment.id === id);
    if (!delivery) throw new Error("no delivery");
    await world.gh.webhooks.redeliver(delivery.guid);
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge --priority=high", { by: "bob" });
    await settled();
    expect((await queuedNumbers()).filter((n) => n === pr.number)).toHaveLength(1);
    const after = await item(pr.number);
    expect([after?.id, after?.state, after?.priorityValue]).toEqual([before?.id, "pending", 10]);

    // `/mainline cancel` takes it out, with the commenter as the actor.
    world.gh.comment(REPO_NAME, pr.number, "/mainline cancel", { by: "bob" });
    await settled();
    expect(await item(pr.number)).toMatchObject({ state: "cancelled" });
    expect(await queuedNumbers()).not.toContain(pr.number);
    const timeline = await server.call<{ timeline: { actor: { name?: string } }[] }>(
      "getSubmittedPullRequest",
      { repo: WIDGETS, targetBranch: "main", pr: { number: pr.number }, includeTimeline: true },
    );
    expect(timeline.body.timeline.map((t) => t.actor.name)).toContain("github:bob");
    await setQueue({ commentsEnabled: true });
  });

  it("with the queue's comment on, that comment answers `/trunk merge`: no reaction", async () => {
    await setQueue({ state: "paused" });
    const pr = await openPr();
    const id = world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "bob" });
    await settled();
    await expect.poll(queuedNumbers, LONG).toContain(pr.number);
    await expect
      .poll(() => stickies(pr.number).map((c) => c.body), LONG)
      .toEqual([expect.stringContaining("**Queued**")]);
    expect(comments(pr.number).find((c) => c.id === id)?.reactions).toEqual([]);
  });

  it("refuses a reader's and a triager's command with a reply, changing nothing", async () => {
    await setQueue({ state: "paused" });
    const pr = await openPr();
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "rita" });
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "tess" });
    await settled();
    expect(await item(pr.number)).toBeUndefined();
    // The two deliveries may be handled in either order.
    const answers = replies(pr.number)
      .map((c) => c.body)
      .sort();
    expect(answers).toHaveLength(2);
    expect(answers[0]).toContain("@rita Only people with write access");
    expect(answers[0]).toContain("your access: read");
    expect(answers[1]).toContain("@tess Only people with write access");
  });

  it("answers unknown commands and flags with the usage, and ignores other comments", async () => {
    await setQueue({ state: "paused" });
    const pr = await openPr();
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge --bogus", { by: "bob" });
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge --priority=soon", { by: "bob" });
    world.gh.comment(REPO_NAME, pr.number, "/trunk frobnicate", { by: "bob" });
    world.gh.comment(REPO_NAME, pr.number, "Looks good to me. /trunk merge later?", { by: "bob" });
    world.gh.comment(REPO_NAME, pr.number, "/trunkated thoughts", { by: "bob" });
    await settled();
    expect(await item(pr.number)).toBeUndefined();
    // The deliveries may be handled in any order: one answer to each of the three commands.
    const answers = replies(pr.number).map((c) => c.body);
    expect(answers).toHaveLength(3);
    for (const expected of [
      "Unknown option `--bogus`",
      "`soon` is not a priority",
      "Unknown command `frobnicate`",
    ]) {
      expect(answers.filter((answer) => answer.includes(expected))).toHaveLength(1);
    }
    for (const answer of answers) expect(answer).toContain("Usage: `/trunk merge");
  });

  it("answers a command on a pull request whose base branch has no queue", async () => {
    const { gh } = world;
    await gh.commit(REPO_NAME, { branch: "release", from: "main", files: { "r.txt": "r\n" } });
    await gh.commit(REPO_NAME, { branch: "hotfix", from: "release", files: { "h.txt": "h\n" } });
    const number = await gh.openPullRequest(REPO_NAME, {
      head: "hotfix",
      base: "release",
      by: "bob",
    });
    gh.comment(REPO_NAME, number, "/trunk merge", { by: "bob" });
    await settled();
    expect(replies(number).map((c) => c.body)).toEqual([
      expect.stringContaining("There is no merge queue for `release`"),
    ]);
    expect(await queuedNumbers()).not.toContain(number);
  });

  it("does nothing for commands when the queue's commandsEnabled is off", async () => {
    await setQueue({ state: "paused", commandsEnabled: false });
    try {
      const pr = await openPr();
      world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "bob" });
      await settled();
      expect(await item(pr.number)).toBeUndefined();
      expect(replies(pr.number)).toEqual([]);
    } finally {
      await setQueue({ commandsEnabled: true });
    }
  });
});

describe("the enqueueing label", () => {
  it("submits when a writer adds it and cancels when it is removed", async () => {
    await setQueue({ state: "paused" });
    const pr = await openPr();
    await world.gh.addLabels(REPO_NAME, pr.number, ["merge-queue-submit"], { by: "bob" });
    await settled();
    expect(await item(pr.number)).toMatchObject({ state: "pending" });
    await world.gh.removeLabel(REPO_NAME, pr.number, "merge-queue-submit", { by: "bob" });
    await settled();
    expect(await item(pr.number)).toMatchObject({ state: "cancelled" });
    // Other labels mean nothing to the queue.
    await world.gh.addLabels(REPO_NAME, pr.number, ["documentation"], { by: "bob" });
    await settled();
    expect(await item(pr.number)).toMatchObject({ state: "cancelled" });
  });

  it("refuses a triager's label with a reply", async () => {
    await setQueue({ state: "paused" });
    const pr = await openPr();
    await world.gh.addLabels(REPO_NAME, pr.number, ["merge-queue-submit"], { by: "tess" });
    await settled();
    expect(await item(pr.number)).toBeUndefined();
    expect(replies(pr.number).map((c) => c.body)).toEqual([
      expect.stringContaining("@tess Only people with write access"),
    ]);
  });
});

describe("what the App shows on the pull request", () => {
  beforeEach(emptyQueue);

  it("keeps one comment, a check run and a state label in step, within the request budget", async () => {
    await setQueue({ state: "running", stateLabelsEnabled: true });
    const pr = await openPr();
    const mark = world.gh.requests.mark();
    await server.call("submitPullRequest", {
      repo: WIDGETS,
      targetBranch: "main",
      pr: { number: pr.number },
    });
    // Testing: the run waits for CI.
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("testing");
    await settled();
    expect(stickies(pr.number)).toHaveLength(1);
    const [testing] = stickies(pr.number);
    expect(testing?.body).toContain("**Testing**");
    expect(testing?.body).toContain(`${PUBLIC_URL}/acme/merge-queue/pr/${pr.number}?`);
    // Beside the comment, the check run waits for the conclusion: one write, not two.
    expect(checkRuns(pr.headSha)).toEqual([]);
    expect(labels(pr.number)).toEqual(["trunk:testing"]);

    await finishRun(pr.number, "success");
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("merged");
    await settled();
    // The same comment, edited; the check run, made completed; no state label once merged.
    expect(stickies(pr.number).map((c) => c.id)).toEqual([testing?.id]);
    expect(stickies(pr.number)[0]?.body).toContain("**Merged**");
    expect(checkRuns(pr.headSha).map((r) => [r.status, r.conclusion])).toEqual([
      ["completed", "success"],
    ]);
    expect(labels(pr.number)).toEqual([]);

    // The presence's requests for the whole journey: a handful (the queue's own reads, test
    // branches and merge are the git host's, not counted here).
    const presence = world.gh.requests.entries.filter(
      (r) =>
        r.seq > mark &&
        (r.operationId.startsWith("issues/") ||
          r.operationId === "checks/create" ||
          r.operationId === "checks/update" ||
          (r.operationId === "checks/list-for-ref" && r.path.includes(pr.headSha))),
    );
    expect(presence.length, presence.map((r) => r.operationId).join(", ")).toBeLessThanOrEqual(12);
    // Shown for the first time: made at once, nothing looked for first.
    expect(presence.map((r) => r.operationId)).not.toContain("issues/list-comments");
    expect(presence.map((r) => r.operationId)).not.toContain("checks/list-for-ref");
    // Nothing more is sent when the transitions are read again.
    const again = world.gh.requests.mark();
    await server.services.github?.presence.present(await queueId(), pr.number);
    expect(world.gh.requests.count({ since: again })).toBe(0);
  });

  it("shows a failure: the check run fails with the reason, the label says failed", async () => {
    await setQueue({ state: "running", stateLabelsEnabled: true });
    const pr = await openPr();
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "alice" });
    await settled();
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("testing");
    await settled();
    expect(labels(pr.number)).toEqual(["trunk:testing"]);
    await finishRun(pr.number, "failure");
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("failed");
    await settled();
    const runs = checkRuns(pr.headSha);
    expect(runs.map((r) => [r.status, r.conclusion])).toEqual([["completed", "failure"]]);
    expect(runs[0]?.output.summary).toContain("failing required check");
    expect(labels(pr.number)).toEqual(["trunk:failed"]);
    expect(stickies(pr.number)).toHaveLength(1);
    expect(stickies(pr.number)[0]?.body).toContain("Reason: failing required check");
    // No test results were uploaded: no failing test is named.
    expect(stickies(pr.number)[0]?.body).not.toContain("Failing tests");
  });

  it("names a failed pull request's failing tests in its comment, with whose red each is", async () => {
    await setQueue({ state: "running", stateLabelsEnabled: false });
    const pr = await openPr();
    await server.call("submitPullRequest", {
      repo: WIDGETS,
      targetBranch: "main",
      pr: { number: pr.number },
    });
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("testing");
    // The CI job uploads its JUnit for the tested commit, then fails.
    await finishRun(pr.number, "failure", async (sha, testBranch) => {
      const report = junit([
        {
          name: "adds `items`",
          classname: "cart.Cart",
          status: "failed",
          message: "expected 3, got 4",
        },
        { name: "totals", classname: "cart.Cart" },
      ]);
      await putBundle(
        server,
        await bundle({ files: [report], commit: sha, branch: testBranch, repo: WIDGETS }),
        WIDGETS,
      );
      await server.services.worker.idle();
    });
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("failed");
    await settled();
    const body = stickies(pr.number)[0]?.body ?? "";
    expect(body).toContain("Reason: failing required check");
    expect(body).toContain(
      "Failing tests:\n- `` cart.Cart.adds `items` ``: new in this pull request — `expected 3, got 4`",
    );
    expect(body).not.toContain("totals");
  });

  it("finds its comment by the marker when it does not know its id; a new submission gets a new check", async () => {
    await setQueue({ state: "paused", stateLabelsEnabled: false });
    const pr = await openPr();
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "bob" });
    await settled();
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("pending");
    await settled();
    expect(stickies(pr.number)).toHaveLength(1);
    // Forget what was shown but not that something was (a crash after the comment was made,
    // before its id was stored; the row is written first): the comment is found, not made again.
    await server.database.handle.db
      .updateTable("prPresence")
      .set({ commentId: null, checkRunId: null, checkSha: null, presented: null })
      .execute();
    await server.services.github?.presence.present(await queueId(), pr.number);
    expect(stickies(pr.number)).toHaveLength(1);
    world.gh.comment(REPO_NAME, pr.number, "/trunk cancel", { by: "bob" });
    await settled();
    expect(stickies(pr.number)).toHaveLength(1);
    expect(stickies(pr.number)[0]?.body).toContain("**Cancelled**");
    expect(checkRuns(pr.headSha).map((r) => r.conclusion)).toEqual(["neutral"]);

    // Submitted again: the same comment; a check run of its own (the last one stays as it was).
    world.gh.comment(REPO_NAME, pr.number, "/trunk merge", { by: "bob" });
    await settled();
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("pending");
    await settled();
    expect(stickies(pr.number)).toHaveLength(1);
    expect(stickies(pr.number)[0]?.body).toContain("**Queued**");
    // Its check run comes when it concludes: a new one, the last one staying as it was.
    expect(checkRuns(pr.headSha).map((r) => [r.status, r.conclusion])).toEqual([
      ["completed", "neutral"],
    ]);
    world.gh.comment(REPO_NAME, pr.number, "/trunk cancel", { by: "bob" });
    await settled();
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("cancelled");
    await settled();
    expect(checkRuns(pr.headSha).map((r) => [r.status, r.conclusion])).toEqual([
      ["completed", "neutral"],
      ["completed", "neutral"],
    ]);
  });
  it("never makes its comment or check run twice when GitHub made them but answered a 5xx", async () => {
    await setQueue({ state: "paused", stateLabelsEnabled: false });
    const pr = await openPr();
    const ghost = world.gh.addFault(
      world.gh.fault.succeedsButErrors(["issues/create-comment", "checks/create"], 502, {
        times: 2,
      }),
    );
    const mark = world.gh.requests.mark();
    expect(
      (
        await server.call("submitPullRequest", {
          repo: WIDGETS,
          targetBranch: "main",
          pr: { number: pr.number },
        })
      ).status,
    ).toBe(200);
    await settled();
    await settled();
    expect(world.gh.faults.fired(ghost)).toBe(1);
    // The check run is made when the pull request concludes.
    world.gh.comment(REPO_NAME, pr.number, "/trunk cancel", { by: "bob" });
    await settled();
    await expect.poll(async () => (await item(pr.number))?.state, LONG).toBe("cancelled");
    await settled();
    await settled();
    expect(world.gh.faults.fired(ghost)).toBe(2);
    // One comment and one check run: each creation sent once (no retry after a 502), then
    // found (the comment by its marker, the check run on the head) and edited.
    expect(stickies(pr.number)).toHaveLength(1);
    expect(stickies(pr.number)[0]?.body).toContain("**Cancelled**");
    expect(checkRuns(pr.headSha).map((r) => [r.status, r.conclusion])).toEqual([
      ["completed", "neutral"],
    ]);
    const sent = world.gh.requests.filter({ since: mark }).map((r) => r.operationId);
    expect(sent.filter((op) => op === "issues/create-comment")).toHaveLength(1);
    expect(sent.filter((op) => op === "checks/create")).toHaveLength(1);
    expect(sent).toContain("issues/list-comments");
    expect(sent).toContain("checks/list-for-ref");
  });
});
