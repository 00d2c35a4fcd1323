/**
 * setImpactedTargets from a pull request from a fork (`x-forked-workflow-run-id` instead of an
 * API token), through a real server against the fake GitHub: accepted only once GitHub confirms
 * that the run is the repository's, in progress, started by a pull request event for the claimed
 * commit, and that the open pull request has that head in the run's fork. Every refusal is a 401
 * that changes nothing; no other route takes the header; an organization that does not own the
 * repository is never reached.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MergeQueueRuntimeStore } from "../../src/db/stores/merge-queue-runtime.js";
import { MemoryCi, MemoryGitHost } from "../../src/mergequeue/simulator/memory-host.js";
import { VERIFICATIONS_PER_MINUTE } from "../../src/providers/github/forked-runs.js";
import type { TestServer } from "../helpers/server.js";
import {
  settle,
  startGitHubServer,
  startGitHubWorld,
  type GitHubWorld,
} from "../helpers/github.js";

let world: GitHubWorld;
let server: TestServer;
let globexToken: string;
const NAME = "acme-gh/widgets";
const REPO = { host: "github.com", owner: "acme-gh", name: "widgets" };
const QUEUE = { repo: REPO, targetBranch: "main" };
/** A fork's pull request and its head commit. */
let forkPr: { number: number; sha: string };
/** A pull request from a branch of the repository itself. */
let insidePr: { number: number; sha: string };

interface ErrorBody {
  error: { code: string; message: string };
}

beforeAll(async () => {
  world = await startGitHubWorld();
  const { gh } = world;
  gh.createOrganization("acme-gh");
  gh.createOrganization("other-gh");
  gh.createUser("alice");
  gh.createUser("forker");
  gh.addOrgMember("acme-gh", "alice", "admin");
  await gh.createRepository({ owner: "acme-gh", name: "widgets" });
  await gh.createRepository({ owner: "other-gh", name: "widgets" });
  await gh.fork(NAME, { owner: "forker" });
  // The merge queue reaches GitHub repositories through a git host of its own (not this test's
  // subject): an in-memory one stands in for it.
  server = await startGitHubServer(world, { gitHost: new MemoryGitHost(), ci: new MemoryCi() });
  globexToken = (await server.services.organizations.createOrganizationWithToken("globex")).token;
  const installation = gh.installApp(world.app.id, { account: "acme-gh" }).id;
  // other-gh's installation is known but linked to no organization.
  gh.installApp(world.app.id, { account: "other-gh" });
  await settle(world, server);
  await server.services.github?.installations.linkAsOperator(installation, "acme");
  expect((await server.call("createQueue", { ...QUEUE, mode: "parallel" })).status).toBe(200);

  const sha = await gh.commit("forker/widgets", {
    branch: "feat",
    from: "main",
    files: { "feat.txt": "from a fork\n" },
    by: "forker",
  });
  forkPr = { number: await gh.openPullRequest(NAME, { head: "forker:feat", by: "forker" }), sha };
  const inside = await gh.commit(NAME, {
    branch: "inside",
    from: "main",
    files: { "inside.txt": "inside\n" },
  });
  insidePr = { number: await gh.openPullRequest(NAME, { head: "inside" }), sha: inside };
  await settle(world, server);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gh.settleCi();
  await world.gh.close();
  world.gh.schema.assertValid();
});

function upload(
  runId: number | string,
  pr: { number: number; sha: string },
  options: { targets?: string[]; repo?: typeof REPO; token?: string | null } = {},
) {
  return server.call<ErrorBody>(
    "setImpactedTargets",
    {
      repo: options.repo ?? REPO,
      targetBranch: "main",
      pr,
      impactedTargets: options.targets ?? ["//app:server"],
    },
    {
      token: options.token === undefined ? null : options.token,
      headers: { "x-forked-workflow-run-id": String(runId) },
    },
  );
}

/** The targets the queue keeps for a pull request that is not submitted yet. */
async function storedTargets(): Promise<Record<string, { headSha: string; targets: unknown }>> {
  const { db, dialect } = server.database.handle;
  const queues = await sql<{ id: string }>`select id from merge_queues`.execute(db);
  const runtime = new MergeQueueRuntimeStore(db, dialect);
  const all: Record<string, { headSha: string; targets: unknown }> = {};
  for (const { id } of queues.rows) {
    const stored = await runtime.loadSnapshot(id);
    const snapshot = stored?.snapshot as
      { uploadedTargets?: Record<string, { headSha: string; targets: unknown }> } | undefined;
    Object.assign(all, snapshot?.uploadedTargets ?? {});
  }
  return all;
}

function expectRefused(
  answer: { status: number; body: ErrorBody; text: string },
  message: string | RegExp,
): void {
  expect(answer.status, answer.text).toBe(401);
  expect(answer.body.error.code).toBe("unauthorized");
  expect(answer.body.error.message).toMatch(message);
}

describe("a fork's workflow run in place of a token", () => {
  it("accepts a run of the Actions-like CI for the fork's pull request, and stores the targets", async () => {
    const { gh } = world;
    gh.configureCi(NAME, [
      {
        name: "impacted",
        on: { pullRequest: { branches: ["main"] } },
        checks: [{ name: "upload", outcome: "stuck" }],
      },
    ]);
    await gh.pushToPullRequest(NAME, forkPr.number, { "feat.txt": "again\n" });
    forkPr.sha = gh.pullRequest(NAME, forkPr.number).headSha;
    await expect
      .poll(() => gh.ci.runs.find((r) => r.pullRequest === forkPr.number && r.sha === forkPr.sha))
      .toBeDefined();
    const runId =
      gh.ci.runs.find((r) => r.pullRequest === forkPr.number && r.sha === forkPr.sha)
        ?.workflowRunId ?? -1;
    expect(gh.workflowRun(runId).status).toBe("in_progress");
    const mark = gh.requests.mark();
    const answer = await upload(runId, forkPr, { targets: ["//app:server", "//lib:core"] });
    expect([answer.status, answer.body]).toEqual([200, {}]);
    await expect
      .poll(async () => (await storedTargets())[String(forkPr.number)])
      .toMatchObject({
        headSha: forkPr.sha,
        targets: ["//app:server", "//lib:core"],
      });
    // GitHub was asked about the run and the pull request.
    expect(gh.requests.byOperation(mark)).toMatchObject({
      "actions/get-workflow-run": 1,
      "pulls/get": 1,
    });
    // A second upload of the same run is verified from memory.
    const again = gh.requests.mark();
    expect((await upload(runId, forkPr, { targets: ["//app:server"] })).status).toBe(200);
    expect(gh.requests.count({ operationId: "actions/get-workflow-run", since: again })).toBe(0);
    await expect
      .poll(async () => (await storedTargets())[String(forkPr.number)]?.targets)
      .toEqual(["//app:server"]);
  });

  it("refuses a completed run, and changes nothing", async () => {
    const { gh } = world;
    const runId = gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    gh.completeWorkflowRun(runId, "success");
    const before = await storedTargets();
    expectRefused(await upload(runId, forkPr, { targets: ["//x"] }), /the run is completed/);
    expect(await storedTargets()).toEqual(before);
  });

  it("refuses a run for another commit, another pull request, another event or the repository itself", async () => {
    const { gh } = world;
    const before = await storedTargets();
    const running = gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    // The right run, a claim for another commit.
    expectRefused(
      await upload(running, { number: forkPr.number, sha: "a".repeat(40) }),
      /the run is for commit/,
    );
    // The right run and commit, another pull request of the repository.
    expectRefused(
      await upload(running, { number: insidePr.number, sha: forkPr.sha }),
      /does not come from forker\/widgets|the head of pull request/,
    );
    // A pull request that does not exist.
    expectRefused(await upload(running, { number: 999, sha: forkPr.sha }), /no pull request #999/);
    // A push run for the same commit.
    const push = gh.startWorkflowRun(NAME, {
      headSha: forkPr.sha,
      headRepository: "forker/widgets",
      event: "push",
    });
    expectRefused(await upload(push, forkPr), /started by "push"/);
    // A run of a pull request from the repository itself: that one has a token.
    const inside = gh.startWorkflowRun(NAME, { pullRequest: insidePr.number });
    expectRefused(await upload(inside, insidePr), /not for a pull request from a fork/);
    // A run GitHub does not have, and a run of another repository.
    expectRefused(await upload(987_654_321, forkPr), /no such workflow run/);
    const elsewhere = gh.startWorkflowRun("other-gh/widgets", {
      headSha: forkPr.sha,
      headRepository: "forker/widgets",
      event: "pull_request",
    });
    expectRefused(await upload(elsewhere, forkPr), /no such workflow run/);
    expect(await storedTargets()).toEqual(before);
  });

  it("refuses a run once the pull request's head moved past it", async () => {
    const { gh } = world;
    const runId = gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    const old = { ...forkPr };
    await gh.pushToPullRequest(NAME, forkPr.number, { "feat.txt": "moved\n" });
    forkPr.sha = gh.pullRequest(NAME, forkPr.number).headSha;
    expectRefused(await upload(runId, old), /the head of pull request/);
  });

  it("refuses a header that is not a run id, and a request with neither header nor token", async () => {
    for (const bad of ["abc", "12a", "-1", "1".repeat(16), "1 2"]) {
      const answer = await upload(bad, forkPr);
      expectRefused(answer, /x-forked-workflow-run-id must be a GitHub Actions run id/);
    }
    const none = await server.call<ErrorBody>(
      "setImpactedTargets",
      { ...QUEUE, pr: forkPr, impactedTargets: "ALL" },
      { token: null },
    );
    expectRefused(none, /Missing API token/);
  });

  it("is taken by setImpactedTargets only: every other route still wants a token", async () => {
    const runId = world.gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    const headers = { "x-forked-workflow-run-id": String(runId) };
    for (const [operation, body] of [
      ["submitPullRequest", { ...QUEUE, pr: { number: forkPr.number } }],
      ["cancelPullRequest", { ...QUEUE, pr: { number: forkPr.number } }],
      ["getQueue", QUEUE],
      ["getSubmittedPullRequest", { ...QUEUE, pr: { number: forkPr.number } }],
    ] as const) {
      const answer = await server.call<ErrorBody>(operation, body, { token: null, headers });
      expectRefused(answer, /accepted by setImpactedTargets only/);
    }
  });

  it("never reaches an organization that does not own the repository", async () => {
    const { gh } = world;
    // globex has a queue on a repository of the same name, on a host no installation grants it.
    const runId = gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    const before = await storedTargets();
    // other-gh/widgets: its installation is linked to no organization.
    const unlinked = gh.startWorkflowRun("other-gh/widgets", {
      headSha: forkPr.sha,
      headRepository: "forker/widgets",
      event: "pull_request",
    });
    const other = { host: "github.com", owner: "other-gh", name: "widgets" };
    const refused = await upload(unlinked, forkPr, { repo: other });
    expectRefused(refused, /no such workflow run/);
    // The same words as for a run that does not exist: nothing learnt of other organizations.
    const missing = await upload(987_654_322, forkPr, { repo: other });
    expect(missing.body.error.message.replace(/run \d+/, "run N")).toBe(
      refused.body.error.message.replace(/run \d+/, "run N"),
    );
    // Another host, or an unknown repository.
    expectRefused(
      await upload(runId, forkPr, { repo: { ...REPO, host: "gitlab.com" } }),
      /no such workflow run/,
    );
    expectRefused(
      await upload(runId, forkPr, { repo: { ...REPO, name: "nowhere" } }),
      /no such workflow run/,
    );
    expect(await storedTargets()).toEqual(before);
    // A token of another organization gets its own 404, never acme's queue.
    const globex = await server.call<ErrorBody>(
      "setImpactedTargets",
      { ...QUEUE, pr: forkPr, impactedTargets: "ALL" },
      { token: globexToken },
    );
    expect(globex.status).toBe(404);
  });
});

describe("what a caller without a token may cost", () => {
  // Last: it spends the repository's budget of verifications for this minute.
  it("asks GitHub about at most a minute's share of claims per repository; verified ones still pass", async () => {
    const { gh } = world;
    const runId = gh.startWorkflowRun(NAME, { pullRequest: forkPr.number });
    expect((await upload(runId, forkPr)).status).toBe(200);
    const mark = gh.requests.mark();
    const statuses: number[] = [];
    for (let i = 0; i < VERIFICATIONS_PER_MINUTE + 1; i++) {
      const answer = await upload(900_000_000 + i, forkPr);
      statuses.push(answer.status);
      if (answer.status === 429) {
        expect(answer.body.error.code).toBe("rate_limited");
        break;
      }
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 401)).toBe(true);
    // GitHub was asked once per refused claim before the limit, never after it.
    const asked = gh.requests.count({ operationId: "actions/get-workflow-run", since: mark });
    expect(asked).toBe(statuses.length - 1);
    expect((await upload(987_000_001, forkPr)).status).toBe(429);
    expect(gh.requests.count({ operationId: "actions/get-workflow-run", since: mark })).toBe(asked);
    // The claim verified before is kept, and needs no new question.
    expect((await upload(runId, forkPr)).status).toBe(200);
  });
});
