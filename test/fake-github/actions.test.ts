import { Octokit } from "@octokit/core";
import { RequestError } from "@octokit/request-error";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let octokit: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 31 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.createUser("forker");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  await gh.createRepository({ owner: "acme", name: "gadgets" });
  await gh.fork(NAME, { owner: "forker" });
  const app = gh.createApp({ slug: "mainline" });
  octokit = new Octokit({
    baseUrl: gh.url,
    auth: gh.installationToken(gh.installApp(app.id, { account: "acme" }).id),
  });
});

afterAll(async () => {
  await gh.settleCi();
  await gh.close();
  gh.schema.assertValid();
  // The answers above were checked against GitHub's workflow-run schema (GitHub documents no
  // other status for this operation).
  expect([...(gh.schema.covered.get("actions/get-workflow-run") ?? [])]).toEqual([200]);
});

async function getRun(runId: number, repo = R) {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
    ...repo,
    run_id: runId,
  });
  return data;
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof RequestError) return error.status;
    throw error;
  }
}

describe("workflow runs (actions/get-workflow-run)", () => {
  it("runs the base repository's workflow for a fork's pull request, with the fork as head and no pull_requests", async () => {
    gh.configureCi(NAME, [
      {
        name: "impacted",
        on: { pullRequest: { branches: ["main"] } },
        checks: [{ name: "upload", outcome: { slow: 300 } }],
      },
    ]);
    const sha = await gh.commit("forker/widgets", {
      branch: "feat",
      from: "main",
      files: { "f.txt": "fork\n" },
      by: "forker",
    });
    const number = await gh.openPullRequest(NAME, { head: "forker:feat", by: "forker" });
    await expect.poll(() => gh.ci.runs.filter((r) => r.pullRequest === number).length).toBe(1);
    const ciRun = gh.ci.runs.find((r) => r.pullRequest === number);
    const runId = ciRun?.workflowRunId ?? -1;
    const during = await getRun(runId);
    expect(during).toMatchObject({
      id: runId,
      status: "in_progress",
      conclusion: null,
      event: "pull_request",
      head_sha: sha,
      head_branch: "feat",
      name: "impacted",
      repository: { full_name: NAME },
      head_repository: { full_name: "forker/widgets", fork: true },
      head_commit: { id: sha },
    });
    expect(during.pull_requests).toEqual([]);
    await gh.settleCi();
    const after = await getRun(runId);
    expect(after).toMatchObject({ status: "completed", conclusion: "success" });
  });

  it("lists a same-repository pull request in pull_requests and concludes failure when a check fails", async () => {
    gh.configureCi(NAME, [
      {
        name: "ci",
        on: { pullRequest: { branches: ["main"] } },
        checks: [
          { name: "ok", outcome: "pass" },
          { name: "bad", outcome: "fail" },
        ],
      },
    ]);
    const sha = await gh.commit(NAME, {
      branch: "inside",
      from: "main",
      files: { "i.txt": "i\n" },
    });
    const number = await gh.openPullRequest(NAME, { head: "inside" });
    await gh.settleCi();
    const runIds = new Set(
      gh.ci.runs.filter((r) => r.pullRequest === number).map((r) => r.workflowRunId),
    );
    expect(runIds.size).toBe(1);
    const [runId] = [...runIds];
    const run = await getRun(runId ?? -1);
    expect(run).toMatchObject({ status: "completed", conclusion: "failure", head_sha: sha });
    expect(run.pull_requests?.map((p) => p.number)).toEqual([number]);
  });

  it("keeps a run with a stuck check in progress", async () => {
    gh.configureCi(NAME, [
      {
        name: "stuck",
        on: { push: { branches: ["stuck/**"] } },
        checks: [{ name: "never", outcome: "stuck" }],
      },
    ]);
    const sha = await gh.commit(NAME, { branch: "stuck/a", from: "main", files: { s: "s\n" } });
    await gh.settleCi();
    const runId = gh.ci.runs.find((r) => r.sha === sha)?.workflowRunId ?? -1;
    expect(await getRun(runId)).toMatchObject({
      status: "in_progress",
      event: "push",
      head_branch: "stuck/a",
      head_repository: { full_name: NAME },
    });
  });

  it("makes runs directly and completes them; another repository's run is 404", async () => {
    const sha = await gh.commit("forker/widgets", {
      branch: "direct",
      from: "main",
      files: { "d.txt": "d\n" },
      by: "forker",
    });
    const runId = gh.startWorkflowRun(NAME, {
      headSha: sha,
      headRepository: "forker/widgets",
      headBranch: "direct",
      event: "pull_request_target",
    });
    expect(await getRun(runId)).toMatchObject({
      status: "in_progress",
      event: "pull_request_target",
      head_repository: { full_name: "forker/widgets" },
    });
    gh.completeWorkflowRun(runId, "cancelled");
    expect(gh.workflowRun(runId)).toMatchObject({ status: "completed", conclusion: "cancelled" });
    expect(await getRun(runId)).toMatchObject({ status: "completed", conclusion: "cancelled" });
    expect(await statusOf(getRun(runId, { owner: "acme", repo: "gadgets" }))).toBe(404);
    expect(await statusOf(getRun(999, R))).toBe(404);
  });

  it("fills the head in from a pull request", async () => {
    const number = gh.pullRequest(NAME, 1).number;
    const runId = gh.startWorkflowRun(NAME, { pullRequest: number });
    const run = await getRun(runId);
    expect(run).toMatchObject({
      event: "pull_request",
      head_sha: gh.pullRequest(NAME, number).headSha,
      head_repository: { full_name: "forker/widgets" },
    });
  });

  it("needs the actions permission", async () => {
    const app = gh.createApp({ slug: "no-actions", permissions: { metadata: "read" } });
    const narrow = new Octokit({
      baseUrl: gh.url,
      auth: gh.installationToken(gh.installApp(app.id, { account: "acme" }).id),
    });
    const runId = gh.startWorkflowRun(NAME, { headSha: gh.pullRequest(NAME, 1).headSha });
    const answer = narrow.request("GET /repos/{owner}/{repo}/actions/runs/{run_id}", {
      ...R,
      run_id: runId,
    });
    expect(await statusOf(answer)).toBe(403);
  });
});
