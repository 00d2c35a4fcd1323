import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FakeGitHub,
  GITHUB_ACTIONS_APP_ID,
  type CreatedApp,
} from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let app: CreatedApp;
let installationId: number;
let octokit: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 5 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.createUser("carol");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  gh.setCollaborator(NAME, "bob", "write");
  gh.setCollaborator(NAME, "carol", "write");
  app = gh.createApp({ slug: "mainline" });
  installationId = gh.installApp(app.id, { account: "acme" }).id;
  octokit = new Octokit({ baseUrl: gh.url, auth: gh.installationToken(installationId) });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

async function pr(
  branch: string,
  files: Record<string, string> = { [`${branch}.txt`]: `${branch}\n` },
): Promise<{ n: number; head: string }> {
  const head = await gh.commit(NAME, { branch, from: "main", files, by: "bob" });
  return { n: await gh.openPullRequest(NAME, { head: branch, by: "bob" }), head };
}

async function state(n: number): Promise<string> {
  const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
    ...R,
    pull_number: n,
  });
  return data.mergeable_state;
}

describe("check runs and statuses", () => {
  it("creates and completes check runs, lists the latest per name, filters and pages", async () => {
    const sha = await gh.commit(NAME, {
      branch: "checks",
      from: "main",
      files: { "c.txt": "c\n" },
    });
    const mark = gh.deliveries().length;
    const { data: created } = await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...R,
      name: "Mainline Merge Queue (main)",
      head_sha: sha,
      status: "in_progress",
      output: { title: "Queued", summary: "position 1" },
    });
    expect(created).toMatchObject({
      status: "in_progress",
      conclusion: null,
      app: { id: app.id, slug: "mainline" },
      head_sha: sha,
    });
    const { data: done } = await octokit.request(
      "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}",
      {
        ...R,
        check_run_id: created.id,
        conclusion: "success",
        output: { title: "Merged", summary: "done" },
      },
    );
    expect(done).toMatchObject({
      status: "completed",
      conclusion: "success",
      output: { title: "Merged" },
    });
    const events = gh
      .deliveries()
      .slice(mark)
      .map((d) => `${d.event}.${d.action ?? ""}`);
    expect(events).toEqual(["check_run.created", "check_run.completed", "check_suite.completed"]);

    await gh.postCheckRun(NAME, { name: "ci", headSha: sha, conclusion: "failure" });
    await gh.postCheckRun(NAME, { name: "ci", headSha: sha, conclusion: "success" });
    await gh.postCheckRun(NAME, { name: "lint", headSha: sha, status: "queued" });
    const { data: latest } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
      { ...R, ref: sha },
    );
    expect(latest.total_count).toBe(3);
    expect(latest.check_runs.find((r) => r.name === "ci")?.conclusion).toBe("success");
    const { data: all } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
      { ...R, ref: sha, filter: "all" },
    );
    expect(all.total_count).toBe(4);
    const { data: byName } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
      { ...R, ref: "checks", check_name: "lint" },
    );
    expect(byName.check_runs.map((r) => r.status)).toEqual(["queued"]);
    const { data: byApp } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
      { ...R, ref: sha, app_id: GITHUB_ACTIONS_APP_ID },
    );
    expect(byApp.check_runs.map((r) => r.name).sort()).toEqual(["ci", "lint"]);
    const paged = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
      ...R,
      ref: sha,
      per_page: 2,
    });
    expect(paged.data.check_runs).toHaveLength(2);
    expect(paged.headers.link).toMatch(/rel="next"/);
    const { data: suites } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{ref}/check-suites",
      { ...R, ref: sha },
    );
    expect(suites.check_suites.map((s) => [s.app?.slug, s.status]).sort()).toEqual([
      ["github-actions", "queued"],
      ["mainline", "completed"],
    ]);
  });

  it("computes the combined status as GitHub does", async () => {
    const sha = await gh.commit(NAME, {
      branch: "statuses",
      from: "main",
      files: { "s.txt": "s\n" },
    });
    const combined = async (): Promise<string> =>
      (await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/status", { ...R, ref: sha }))
        .data.state;
    expect(await combined()).toBe("pending");
    const { data: posted } = await octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", {
      ...R,
      sha,
      state: "success",
      context: "mainline",
    });
    expect(posted).toMatchObject({
      state: "success",
      context: "mainline",
      creator: { login: "mainline[bot]" },
    });
    expect(await combined()).toBe("success");
    gh.postStatus(NAME, sha, { state: "pending", context: "jenkins", by: "alice" });
    expect(await combined()).toBe("pending");
    gh.postStatus(NAME, sha, { state: "error", context: "jenkins", by: "alice" });
    expect(await combined()).toBe("failure");
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}/status", {
      ...R,
      ref: sha,
    });
    expect(data.statuses.map((s) => [s.context, s.state]).sort()).toEqual([
      ["jenkins", "error"],
      ["mainline", "success"],
    ]);
    // Each status is delivered once its commit is read from git: after the answer, not with it.
    await expect
      .poll(() => gh.deliveries("status").filter((d) => d.payload.sha === sha).length)
      .toBe(3);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/statuses/{sha}", {
        ...R,
        sha,
        state: "bogus" as "success",
      }),
    ).rejects.toMatchObject({ status: 422 });
  });
});

describe("branch protection", () => {
  it("answers 404 for an unprotected branch and reports classic required checks with app pins", async () => {
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/branches/{branch}/protection", {
        ...R,
        branch: "main",
      }),
    ).rejects.toThrow(/Branch not protected/);
    await expect(
      octokit.request(
        "GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks",
        { ...R, branch: "main" },
      ),
    ).rejects.toMatchObject({ status: 404 });
    gh.protectBranch(NAME, "main", {
      requiredStatusChecks: {
        strict: false,
        contexts: ["ci"],
        checks: [{ context: "build", appId: GITHUB_ACTIONS_APP_ID }],
      },
    });
    const { data } = await octokit.request(
      "GET /repos/{owner}/{repo}/branches/{branch}/protection/required_status_checks",
      { ...R, branch: "main" },
    );
    expect(data).toMatchObject({
      strict: false,
      contexts: ["ci", "build"],
      checks: [
        { context: "ci", app_id: null },
        { context: "build", app_id: GITHUB_ACTIONS_APP_ID },
      ],
    });
    const { data: full } = await octokit.request(
      "GET /repos/{owner}/{repo}/branches/{branch}/protection",
      { ...R, branch: "main" },
    );
    expect(full.enforce_admins?.enabled).toBe(false);
    const { data: branch } = await octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", {
      ...R,
      branch: "main",
    });
    expect(branch.protected).toBe(true);
  });

  it("blocks a merge until the required checks pass, from the pinned App", async () => {
    const { n, head } = await pr("needs-checks");
    expect(await state(n)).toBe("blocked");
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toMatchObject({
      status: 405,
      message: expect.stringMatching(/^2 of 2 required status checks are expected\./) as unknown,
    });
    gh.postStatus(NAME, head, { state: "success", context: "ci", by: "alice" });
    // "build" from another App does not count: it is pinned to GitHub Actions.
    await octokit.request("POST /repos/{owner}/{repo}/check-runs", {
      ...R,
      name: "build",
      head_sha: head,
      conclusion: "success",
    });
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toThrow(/Required status check "build" is expected\./);
    const run = await gh.postCheckRun(NAME, {
      name: "build",
      headSha: head,
      status: "in_progress",
    });
    await gh.completeCheckRun(NAME, run.id, "failure");
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toThrow(/Required status check "build" is failing\./);
    await gh.postCheckRun(NAME, { name: "build", headSha: head, conclusion: "success" });
    expect(await state(n)).toBe("clean");
    const { data } = await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: n,
      merge_method: "squash",
    });
    expect(data.merged).toBe(true);
    gh.unprotectBranch(NAME, "main");
  });

  it("strict: behind the base is `behind` and refuses the merge", async () => {
    gh.protectBranch(NAME, "main", { requiredStatusChecks: { strict: true, contexts: ["ci"] } });
    try {
      const { n, head } = await pr("strict-one");
      gh.postStatus(NAME, head, { state: "success", context: "ci", by: "alice" });
      expect(await state(n)).toBe("clean");
      await gh.commit(NAME, {
        branch: "main",
        files: { "moved.txt": "m\n" },
        by: "alice",
        bypassProtection: true,
      });
      expect(await state(n)).toBe("behind");
      await expect(
        octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: n,
        }),
      ).rejects.toMatchObject({ status: 405 });
    } finally {
      gh.unprotectBranch(NAME, "main");
    }
  });

  it("optional failing checks make a mergeable PR `unstable`", async () => {
    const { n, head } = await pr("unstable-one");
    await gh.postCheckRun(NAME, { name: "optional", headSha: head, conclusion: "failure" });
    expect(await state(n)).toBe("unstable");
  });
});

describe("rulesets", () => {
  it("lists only active rules for the branch, with their ruleset", async () => {
    const active = gh.addRuleset(NAME, {
      name: "main",
      include: ["~DEFAULT_BRANCH"],
      rules: [
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [{ context: "ci", integration_id: GITHUB_ACTIONS_APP_ID }],
          },
        },
        {
          type: "pull_request",
          parameters: {
            required_approving_review_count: 1,
            dismiss_stale_reviews_on_push: false,
            require_code_owner_review: false,
            require_last_push_approval: false,
            required_review_thread_resolution: false,
          },
        },
        { type: "non_fast_forward" },
      ],
    });
    gh.addRuleset(NAME, {
      name: "trying",
      enforcement: "evaluate",
      include: ["~ALL"],
      rules: [{ type: "deletion" }],
    });
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/rules/branches/{branch}", {
      ...R,
      branch: "main",
    });
    expect(data.map((r) => r.type)).toEqual([
      "required_status_checks",
      "pull_request",
      "non_fast_forward",
    ]);
    expect(data[0]).toMatchObject({
      ruleset_id: active,
      ruleset_source_type: "Repository",
      ruleset_source: NAME,
    });
    const { data: other } = await octokit.request(
      "GET /repos/{owner}/{repo}/rules/branches/{branch}",
      { ...R, branch: "feature" },
    );
    expect(other).toEqual([]);
    // Only rulesets: the classic API still says 404.
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/branches/{branch}/protection", {
        ...R,
        branch: "main",
      }),
    ).rejects.toMatchObject({ status: 404 });

    const { n, head } = await pr("ruled");
    await gh.postCheckRun(NAME, { name: "ci", headSha: head, conclusion: "success" });
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toMatchObject({
      status: 405,
      message: expect.stringMatching(
        /^Repository rule violations found\n\nAt least 1 approving review is required by reviewers with write access\./,
      ) as unknown,
    });
    await expect(gh.approve(NAME, n, "bob")).rejects.toMatchObject({ status: 422 });
    await gh.approve(NAME, n, "carol");
    expect(gh.deliveries("pull_request_review").at(-1)?.payload).toMatchObject({
      action: "submitted",
      review: { state: "APPROVED", user: { login: "carol" } },
    });
    expect(await state(n)).toBe("clean");

    const base = (await gh.readRef(NAME, "heads/main")) ?? "";
    const side = await gh.commit(NAME, {
      branch: "side",
      from: `${base}~1`,
      files: { "side.txt": "x\n" },
    });
    await expect(
      octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...R,
        ref: "heads/main",
        sha: side,
        force: true,
      }),
    ).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/Cannot force-push to this branch/) as unknown,
    });
    expect(await gh.readRef(NAME, "heads/main")).toBe(base);

    await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: n,
      merge_method: "squash",
    });
    gh.removeRuleset(NAME, active);
  });

  it("lets an App on the bypass list as `exempt` through, and not as `always`", async () => {
    const id = gh.addRuleset(NAME, {
      name: "locked",
      include: ["refs/heads/main"],
      bypassActors: [{ actorId: app.id, actorType: "Integration", bypassMode: "always" }],
      rules: [
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: true,
            required_status_checks: [{ context: "never" }],
          },
        },
      ],
    });
    try {
      const { n } = await pr("bypass");
      await expect(
        octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: n,
        }),
      ).rejects.toThrow(/Required status check "never" is expected/);
      gh.repository(NAME)
        .rulesets.find((r) => r.id === id)
        ?.bypassActors.splice(0, 1, {
          actorId: app.id,
          actorType: "Integration",
          bypassMode: "exempt",
        });
      const { data } = await octokit.request(
        "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
        { ...R, pull_number: n },
      );
      expect(data.merged).toBe(true);
    } finally {
      gh.removeRuleset(NAME, id);
    }
  });

  it("refuses test branches that protection covers: 403 when the App may not push, 422 for a creation rule", async () => {
    const base = (await gh.readRef(NAME, "heads/main")) ?? "";
    gh.protectBranch(NAME, "trunk-merge/**", { restrictions: { users: ["alice"], apps: [] } });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        ...R,
        ref: "refs/heads/trunk-merge/main/1",
        sha: base,
      }),
    ).rejects.toMatchObject({
      status: 403,
      message: expect.stringMatching(/^Resource not accessible by integration/) as unknown,
    });
    gh.protectBranch(NAME, "trunk-merge/**", { restrictions: { users: [], apps: ["mainline"] } });
    await octokit.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-merge/main/1",
      sha: base,
    });
    gh.unprotectBranch(NAME, "trunk-merge/**");
    const id = gh.addRuleset(NAME, {
      name: "no temp",
      include: ["refs/heads/trunk-temp/**/*"],
      rules: [{ type: "creation" }],
    });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        ...R,
        ref: "refs/heads/trunk-temp/main/2",
        sha: base,
      }),
    ).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(
        /Cannot create ref due to creations being restricted/,
      ) as unknown,
    });
    expect(await gh.readRef(NAME, "heads/trunk-temp/main/2")).toBeNull();
    gh.removeRuleset(NAME, id);
  });

  it("refuses to merge workflow changes without the workflows permission", async () => {
    const { token } = gh.auth.mintToken(gh.world.installation(installationId), {
      permissions: { contents: "write", pull_requests: "write", metadata: "read" },
    });
    const narrow = new Octokit({ baseUrl: gh.url, auth: token });
    const { n } = await pr("touch-workflows", { ".github/workflows/ci.yml": "on: push\n" });
    await expect(
      narrow.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toMatchObject({
      status: 403,
      message: expect.stringMatching(/^Resource not accessible by integration/) as unknown,
    });
    const { data } = await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: n,
    });
    expect(data.merged).toBe(true);
  });
});
