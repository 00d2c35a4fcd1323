import { Octokit } from "@octokit/core";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, GITHUB_ACTIONS_APP_ID, type Outcome } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let octokit: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 21 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.createUser("jenkins");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({
    owner: "acme",
    name: "widgets",
    files: {
      "check.sh": "#!/bin/sh\necho checking $GITHUB_SHA\ntest ! -f BROKEN\n",
      "README.md": "w\n",
    },
  });
  await gh.commit(NAME, { branch: "main", files: {}, message: "noop" });
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
});

async function runsOn(sha: string): Promise<
  {
    name: string;
    status: string;
    conclusion: string | null;
    app: string | undefined;
    details: string | null;
  }[]
> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
    ...R,
    ref: sha,
  });
  return data.check_runs
    .map((r) => ({
      name: r.name,
      status: r.status,
      conclusion: r.conclusion,
      app: r.app?.slug,
      details: r.details_url,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

describe("push-triggered workflows", () => {
  it("checks out the pushed commit and runs the script there, reporting as GitHub Actions", async () => {
    gh.configureCi(NAME, [
      {
        name: "test",
        on: { push: { branches: ["trunk-merge/**"] } },
        checks: [{ name: "unit", run: "sh ./check.sh" }],
      },
    ]);
    const good = await gh.commit(NAME, {
      branch: "trunk-merge/main/pr-1",
      from: "main",
      files: { "ok.txt": "ok\n" },
    });
    const bad = await gh.commit(NAME, {
      branch: "trunk-merge/main/pr-2",
      from: "main",
      files: { BROKEN: "yes\n" },
    });
    const ignored = await gh.commit(NAME, {
      branch: "trunk-temp/main/pr-3",
      from: "main",
      files: { "t.txt": "t\n" },
    });
    await gh.settleCi();
    expect(await runsOn(good)).toEqual([
      {
        name: "unit",
        status: "completed",
        conclusion: "success",
        app: "github-actions",
        details: expect.stringContaining("/actions/runs/") as unknown,
      },
    ]);
    expect((await runsOn(bad))[0]?.conclusion).toBe("failure");
    expect(await runsOn(ignored)).toEqual([]);
    const run = gh.ci.runs.find((r) => r.sha === good);
    expect(run?.output).toContain(`checking ${good}`);
    const created = gh
      .deliveries("check_run")
      .find(
        (d) =>
          (d.payload.check_run as { head_sha: string }).head_sha === good &&
          d.payload.action === "created",
      );
    expect(created?.payload.check_run).toMatchObject({
      status: "queued",
      app: { id: GITHUB_ACTIONS_APP_ID },
    });
    expect(created?.payload.sender).toMatchObject({ login: "github-actions[bot]", type: "Bot" });
    const completed = gh
      .deliveries("check_suite")
      .find((d) => (d.payload.check_suite as { head_sha: string }).head_sha === bad);
    expect(completed?.payload).toMatchObject({
      action: "completed",
      check_suite: { conclusion: "failure" },
    });
  });

  it("shows in_progress while a check runs, and runs a function of the checkout", async () => {
    gh.configureCi(NAME, [
      {
        name: "fn",
        on: { push: { branches: ["trunk-merge/**"] } },
        checks: [
          {
            name: "readme",
            outcome: { slow: 1500 },
            run: (c) => readFileSync(join(c.dir, "README.md"), "utf8") === "w\n",
          },
        ],
      },
    ]);
    const sha = await gh.commit(NAME, {
      branch: "trunk-merge/main/pr-4",
      from: "main",
      files: { "x.txt": "x\n" },
    });
    // Poll: the check is queued, then in progress for 1.5 s.
    let seen = "";
    for (let i = 0; i < 50 && seen !== "in_progress"; i++) {
      seen = (await runsOn(sha))[0]?.status ?? "";
      if (seen !== "in_progress") await new Promise((r) => setTimeout(r, 25));
    }
    expect(seen).toBe("in_progress");
    await gh.settleCi();
    expect((await runsOn(sha))[0]).toMatchObject({ status: "completed", conclusion: "success" });
  });

  it("follows scripted outcomes: fail, cancelled, skipped, never-start, stuck", async () => {
    const outcomes: Record<string, Outcome> = {
      a: "fail",
      b: "cancelled",
      c: "skipped",
      d: "never-start",
      e: "stuck",
      f: "pass",
    };
    gh.configureCi(NAME, [
      {
        name: "scripted",
        on: { push: { branches: ["trunk-merge/**"] } },
        checks: Object.entries(outcomes).map(([name, outcome]) => ({ name, outcome })),
      },
    ]);
    const sha = await gh.commit(NAME, {
      branch: "trunk-merge/main/pr-5",
      from: "main",
      files: { "y.txt": "y\n" },
    });
    await gh.settleCi();
    expect((await runsOn(sha)).map((r) => [r.name, r.status, r.conclusion])).toEqual([
      ["a", "completed", "failure"],
      ["b", "completed", "cancelled"],
      ["c", "completed", "skipped"],
      ["e", "queued", null],
      ["f", "completed", "success"],
    ]);
  });

  it("makes flaky checks fail with the given probability, the same way under the same seed", async () => {
    const sequence = async (seed: number): Promise<(string | null)[]> => {
      const fake = await FakeGitHub.start({ seed });
      try {
        fake.createOrganization("acme");
        fake.createUser("alice");
        fake.addOrgMember("acme", "alice", "admin");
        await fake.createRepository({ owner: "acme", name: "widgets" });
        fake.configureCi(NAME, [
          {
            name: "flaky",
            on: { push: { branches: ["trunk-merge/**"] } },
            checks: [{ name: "flaky", outcome: { flaky: 0.5 } }],
          },
        ]);
        for (let i = 0; i < 8; i++) {
          await fake.commit(NAME, {
            branch: `trunk-merge/main/f${i}`,
            from: "main",
            files: { [`f${i}`]: "f\n" },
          });
          await fake.settleCi();
        }
        return fake.ci.runs.map((r) => r.conclusion);
      } finally {
        await fake.close();
      }
    };
    const first = await sequence(42);
    expect(await sequence(42)).toEqual(first);
    expect(first).toContain("failure");
    expect(first).toContain("success");
  });
});

describe("pull request workflows and third-party statuses", () => {
  it("tests draft pull requests (draft-PR mode) and reports commit statuses as another CI", async () => {
    gh.configureCi(NAME, [
      {
        name: "pr",
        on: { pullRequest: { branches: ["main"], includeDrafts: true } },
        checks: [{ name: "pr-check", run: "sh ./check.sh" }],
      },
      {
        name: "jenkins",
        on: { push: { branches: ["trunk-merge/**"] } },
        checks: [{ name: "jenkins/build", outcome: "pass" }],
        reportAs: { statusesBy: "jenkins" },
      },
    ]);
    await gh.commit(NAME, {
      branch: "trunk-merge/main/pr-9",
      from: "main",
      files: { BROKEN: "b\n" },
    });
    const n = await gh.openPullRequest(NAME, {
      head: "trunk-merge/main/pr-9",
      draft: true,
      title: "trunk-merge/main/pr-9",
    });
    await gh.settleCi();
    const head = gh.pullRequest(NAME, n).headSha;
    expect(await runsOn(head)).toMatchObject([{ name: "pr-check", conclusion: "failure" }]);
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/status", {
      ...R,
      ref: head,
    });
    expect(data.statuses.map((s) => [s.context, s.state])).toEqual([["jenkins/build", "success"]]);
    expect(data.state).toBe("success");
    const statuses = gh.deliveries("status").filter((d) => d.payload.sha === head);
    expect(statuses.map((d) => d.payload.state)).toEqual(["pending", "success"]);
  });
});
