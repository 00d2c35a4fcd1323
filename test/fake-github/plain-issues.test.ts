import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let app: CreatedApp;
let octokit: Octokit;
let ritas: Octokit;
const NAME = "acme/tracker";
const R = { owner: "acme", repo: "tracker" };

async function status(request: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await request;
    return { status: 200, message: "" };
  } catch (error) {
    const e = error as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message ?? "" };
  }
}

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 21 });
  gh.createOrganization("acme");
  for (const login of ["alice", "bob", "rita", "outsider"]) gh.createUser(login);
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "tracker" });
  await gh.createRepository({ owner: "acme", name: "quiet", settings: { hasIssues: false } });
  gh.setCollaborator(NAME, "bob", "write");
  gh.setCollaborator(NAME, "rita", "read");
  app = gh.createApp({ slug: "mainline", events: ["issues", "pull_request"] });
  octokit = new Octokit({
    baseUrl: gh.url,
    auth: gh.installationToken(gh.installApp(app.id, { account: "acme" }).id),
  });
  ritas = new Octokit({ baseUrl: gh.url, auth: gh.createUserToken("rita") });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

describe("issues that are not pull requests", () => {
  it("creates an issue with labels and assignees, sent as the App, with issues.opened", async () => {
    const { data, status: code } = await octokit.request("POST /repos/{owner}/{repo}/issues", {
      ...R,
      title: "Flaky: checkout",
      body: "text\n<!-- mainline:ticket t1 -->",
      labels: ["flaky-test", "Flaky-Test"],
      assignees: ["bob"],
    });
    expect(code).toBe(201);
    expect(data).toMatchObject({
      title: "Flaky: checkout",
      state: "open",
      state_reason: null,
      html_url: `${gh.url}/html/acme/tracker/issues/${data.number}`,
      user: { login: "mainline[bot]", type: "Bot" },
      performed_via_github_app: { slug: "mainline" },
      labels: [{ name: "flaky-test" }],
      assignees: [{ login: "bob" }],
    });
    expect(data).not.toHaveProperty("pull_request");
    expect(gh.issue(NAME, data.number).body).toBe("text\n<!-- mainline:ticket t1 -->");
    const opened = gh.deliveries("issues").find((d) => d.payload.action === "opened");
    expect(opened?.payload).toMatchObject({ issue: { number: data.number } });
  });

  it("refuses the whole issue when an assignee cannot be assigned, as GitHub does", async () => {
    const before = gh.issuesOf(NAME).length;
    for (const login of ["rita", "outsider", "nobody-at-all"]) {
      const refused = await octokit
        .request("POST /repos/{owner}/{repo}/issues", { ...R, title: "x", assignees: [login] })
        .catch((error: unknown) => error as { status: number; response: { data: unknown } });
      expect(refused).toMatchObject({
        status: 422,
        response: {
          data: {
            message: "Validation Failed",
            errors: [{ value: login, resource: "Issue", field: "assignees", code: "invalid" }],
          },
        },
      });
    }
    expect(gh.issuesOf(NAME)).toHaveLength(before);
  });

  it("drops labels and assignees silently for someone without push access", async () => {
    const { data } = await ritas.request("POST /repos/{owner}/{repo}/issues", {
      ...R,
      title: "From a reader",
      labels: ["flaky-test"],
      assignees: ["outsider"],
    });
    expect(data).toMatchObject({ user: { login: "rita" }, labels: [], assignees: [] });
  });

  it("lists issues and pull requests together, newest first, filtered and paged", async () => {
    await gh.commit(NAME, { branch: "feat", from: "main", files: { "f.txt": "f\n" }, by: "bob" });
    const pr = await gh.openPullRequest(NAME, { head: "feat", by: "bob", title: "Feature" });
    await gh.addLabels(NAME, pr, ["flaky-test"], { by: "bob" });
    const closed = gh.createIssue(NAME, { title: "Old", labels: ["flaky-test"] });
    gh.closeIssue(NAME, closed, { reason: "not_planned" });

    const { data: open } = await octokit.request("GET /repos/{owner}/{repo}/issues", R);
    expect(open.map((i) => i.number)).not.toContain(closed);
    expect(open.find((i) => i.number === pr)?.pull_request?.url).toBe(
      `${gh.url}/repos/acme/tracker/pulls/${pr}`,
    );

    const { data: all } = await octokit.request("GET /repos/{owner}/{repo}/issues", {
      ...R,
      state: "all",
      labels: "flaky-test",
      per_page: 100,
    });
    const numbers = all.map((i) => i.number);
    expect(numbers).toEqual([...numbers].sort((a, b) => b - a));
    expect(numbers).toContain(closed);
    expect(numbers).toContain(pr);
    expect(numbers).not.toContain(
      gh.issuesOf(NAME).find((i) => i.title === "From a reader")?.number,
    );

    const first = await octokit.request("GET /repos/{owner}/{repo}/issues", {
      ...R,
      state: "all",
      per_page: 2,
    });
    expect(first.data).toHaveLength(2);
    expect(first.headers.link).toContain('rel="next"');
  });

  it("reads one issue, closed or reopened from the web page", async () => {
    const n = gh.createIssue(NAME, { title: "State" });
    const get = () =>
      octokit.request("GET /repos/{owner}/{repo}/issues/{issue_number}", { ...R, issue_number: n });
    expect((await get()).data).toMatchObject({ state: "open", state_reason: null });
    gh.closeIssue(NAME, n, { by: "alice" });
    expect((await get()).data).toMatchObject({
      state: "closed",
      state_reason: "completed",
      closed_by: { login: "alice" },
    });
    gh.reopenIssue(NAME, n);
    expect((await get()).data).toMatchObject({ state: "open", state_reason: "reopened" });
    expect(
      gh
        .deliveries("issues")
        .filter((d) => (d.payload.issue as { number: number }).number === n)
        .map((d) => d.payload.action),
    ).toEqual(["opened", "closed", "reopened"]);
  });

  it("answers 410 when the repository's issues are turned off", async () => {
    const Q = { owner: "acme", repo: "quiet" };
    for (const request of [
      octokit.request("POST /repos/{owner}/{repo}/issues", { ...Q, title: "x" }),
      octokit.request("GET /repos/{owner}/{repo}/issues", Q),
    ]) {
      expect(await status(request)).toEqual({
        status: 410,
        message: "Issues are disabled for this repo",
      });
    }
    gh.setIssuesEnabled("acme/quiet", true);
    const n = gh.createIssue("acme/quiet", { title: "made while on", by: "alice" });
    gh.setIssuesEnabled("acme/quiet", false);
    expect(
      await status(
        octokit.request("GET /repos/{owner}/{repo}/issues/{issue_number}", {
          ...Q,
          issue_number: n,
        }),
      ),
    ).toMatchObject({ status: 410 });
  });

  it("refuses a request GitHub's description refuses, and records it", async () => {
    const bad = await status(
      octokit.request("POST /repos/{owner}/{repo}/issues", {
        ...R,
        title: { nested: true } as unknown as string,
      }),
    );
    expect(bad.status).toBe(422);
    expect(bad.message).toContain("Invalid request.");
    const badState = await status(
      octokit.request("GET /repos/{owner}/{repo}/issues", { ...R, state: "everything" as "all" }),
    );
    expect(badState.status).toBe(422);
    const recorded = gh.schema.violations.filter((v) => v.kind === "request");
    expect(recorded.map((v) => v.name)).toEqual(["issues/create", "issues/list-for-repo"]);
    expect(recorded[1]?.errors.join(" ")).toContain("?state");
    // Deliberate: the guard caught them; the rest of the file must stay clean.
    gh.schema.violations.splice(0, gh.schema.violations.length);
  });

  it("can create an issue and answer 502 (the issue exists)", async () => {
    const before = gh.issuesOf(NAME).length;
    gh.addFault(gh.fault.succeedsButErrors("issues/create", 502));
    expect(
      await status(octokit.request("POST /repos/{owner}/{repo}/issues", { ...R, title: "Ghost" })),
    ).toMatchObject({ status: 502 });
    expect(gh.issuesOf(NAME)).toHaveLength(before + 1);
    expect(gh.issuesOf(NAME).at(-1)?.title).toBe("Ghost");
  });
});
