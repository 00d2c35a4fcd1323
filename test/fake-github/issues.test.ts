import { Octokit } from "@octokit/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let app: CreatedApp;
let octokit: Octokit;
let n: number;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 9 });
  gh.createOrganization("acme");
  for (const login of ["alice", "bob", "maya", "tess", "rita", "outsider"]) gh.createUser(login);
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({ owner: "acme", name: "widgets" });
  gh.setCollaborator(NAME, "bob", "write");
  gh.setCollaborator(NAME, "maya", "maintain");
  gh.setCollaborator(NAME, "tess", "triage");
  gh.setCollaborator(NAME, "rita", "read");
  app = gh.createApp({ slug: "mainline" });
  octokit = new Octokit({
    baseUrl: gh.url,
    auth: gh.installationToken(gh.installApp(app.id, { account: "acme" }).id),
  });
  await gh.commit(NAME, { branch: "feat", from: "main", files: { "f.txt": "f\n" }, by: "bob" });
  n = await gh.openPullRequest(NAME, { head: "feat", by: "bob", title: "Feature" });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

describe("comments", () => {
  it("turns a person's comment and edit into issue_comment.created and .edited", () => {
    const id = gh.comment(NAME, n, "/trunk merge --priority=high", { by: "bob" });
    gh.editComment(NAME, id, "/trunk merge", { by: "bob" });
    const events = gh
      .deliveries("issue_comment")
      .filter((d) => (d.payload.comment as { id: number }).id === id);
    expect(events.map((d) => d.payload.action)).toEqual(["created", "edited"]);
    expect(events[0]?.payload).toMatchObject({
      issue: { number: n, pull_request: { url: `${gh.url}/repos/acme/widgets/pulls/${n}` } },
      comment: {
        body: "/trunk merge --priority=high",
        user: { login: "bob", type: "User" },
        author_association: "COLLABORATOR",
      },
      sender: { login: "bob" },
    });
    expect(events[1]?.payload.changes).toEqual({ body: { from: "/trunk merge --priority=high" } });
  });

  it("creates, lists, edits and deletes the App's own sticky comment, sent as its bot", async () => {
    const { data: created } = await octokit.request(
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      { ...R, issue_number: n, body: "<!-- mainline -->\nQueued" },
    );
    expect(created).toMatchObject({
      user: { login: "mainline[bot]", type: "Bot" },
      performed_via_github_app: { slug: "mainline" },
    });
    const { data: edited } = await octokit.request(
      "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
      { ...R, comment_id: created.id, body: "<!-- mainline -->\nTesting" },
    );
    expect(edited.body).toContain("Testing");
    const { data: listed } = await octokit.request(
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
      { ...R, issue_number: n },
    );
    expect(listed.map((c) => c.body)).toContain("<!-- mainline -->\nTesting");
    const bobsComment = listed.find((c) => c.user?.login === "bob");
    await expect(
      octokit.request("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", {
        ...R,
        comment_id: bobsComment?.id ?? 0,
        body: "hijack",
      }),
    ).rejects.toMatchObject({ status: 403 });
    const own = gh
      .deliveries("issue_comment")
      .filter((d) => (d.payload.comment as { id: number }).id === created.id);
    expect(
      own.map((d) => [d.payload.action, (d.payload.sender as { login: string }).login]),
    ).toEqual([
      ["created", "mainline[bot]"],
      ["edited", "mainline[bot]"],
    ]);
    expect(
      (
        await octokit.request("DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}", {
          ...R,
          comment_id: created.id,
        })
      ).status,
    ).toBe(204);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/issues/comments/{comment_id}", {
        ...R,
        comment_id: created.id,
      }),
    ).rejects.toMatchObject({ status: 404 });
    expect(gh.deliveries("issue_comment").at(-1)?.payload.action).toBe("deleted");
  });

  it("reacts to a comment: 201 the first time, 200 for the same reaction", async () => {
    const id = gh.comment(NAME, n, "/trunk stack", { by: "alice" });
    const first = await octokit.request(
      "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
      { ...R, comment_id: id, content: "+1" },
    );
    expect(first.status).toBe(201);
    const again = await octokit.request(
      "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
      { ...R, comment_id: id, content: "+1" },
    );
    expect(again.status).toBe(200);
    expect(again.data.id).toBe(first.data.id);
    const { data: comment } = await octokit.request(
      "GET /repos/{owner}/{repo}/issues/comments/{comment_id}",
      { ...R, comment_id: id },
    );
    expect(comment.reactions).toMatchObject({ total_count: 1, "+1": 1 });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", {
        ...R,
        comment_id: id,
        content: "nope" as "+1",
      }),
    ).rejects.toMatchObject({ status: 422 });
  });
});

describe("labels", () => {
  it("adds labels (creating unknown ones) and removes them, with labeled/unlabeled events", async () => {
    const { data } = await octokit.request(
      "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
      { ...R, issue_number: n, labels: ["trunk:queued", "bug"] },
    );
    expect(data.map((l) => l.name)).toEqual(["trunk:queued", "bug"]);
    await gh.addLabels(NAME, n, ["merge"], { by: "bob" });
    const { data: left } = await octokit.request(
      "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
      { ...R, issue_number: n, name: "trunk:queued" },
    );
    expect(left.map((l) => l.name)).toEqual(["bug", "merge"]);
    await expect(
      octokit.request("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", {
        ...R,
        issue_number: n,
        name: "trunk:queued",
      }),
    ).rejects.toThrow(/Label does not exist/);
    await gh.removeLabel(NAME, n, "merge", { by: "bob" });
    const labelEvents = gh
      .deliveries("pull_request")
      .filter((d) => d.payload.action === "labeled" || d.payload.action === "unlabeled");
    expect(
      labelEvents.map((d) => [
        d.payload.action,
        (d.payload.label as { name: string }).name,
        (d.payload.sender as { login: string }).login,
      ]),
    ).toEqual([
      ["labeled", "trunk:queued", "mainline[bot]"],
      ["labeled", "bug", "mainline[bot]"],
      ["labeled", "merge", "bob"],
      ["unlabeled", "trunk:queued", "mainline[bot]"],
      ["unlabeled", "merge", "bob"],
    ]);
    const { data: onIssue } = await octokit.request(
      "GET /repos/{owner}/{repo}/issues/{issue_number}/labels",
      { ...R, issue_number: n },
    );
    expect(onIssue.map((l) => l.name)).toEqual(["bug"]);
    const { data: pr } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    expect(pr.labels.map((l) => l.name)).toEqual(["bug"]);
  });
});

describe("collaborator permission", () => {
  it("reports admin, write, read and none with GitHub's role names", async () => {
    const level = async (username: string): Promise<[string, string]> => {
      const { data } = await octokit.request(
        "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
        { ...R, username },
      );
      return [data.permission, data.role_name];
    };
    expect(await level("alice")).toEqual(["admin", "admin"]);
    expect(await level("bob")).toEqual(["write", "write"]);
    expect(await level("maya")).toEqual(["write", "maintain"]);
    expect(await level("tess")).toEqual(["read", "triage"]);
    expect(await level("rita")).toEqual(["read", "read"]);
    expect(await level("outsider")).toEqual(["read", "read"]);
    await gh.createRepository({ owner: "acme", name: "private", private: true });
    const { data } = await octokit.request(
      "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
      { owner: "acme", repo: "private", username: "outsider" },
    );
    expect(data.permission).toBe("none");
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/collaborators/{username}/permission", {
        ...R,
        username: "ghost",
      }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe("a person acting on a pull request", () => {
  it("pushes (synchronize), closes, reopens, changes the base, toggles draft, with full payloads", async () => {
    await gh.commit(NAME, {
      branch: "release",
      from: "main",
      files: { "r.txt": "r\n" },
      by: "alice",
    });
    await gh.commit(NAME, { branch: "person", from: "main", files: { "p.txt": "p\n" }, by: "bob" });
    const m = await gh.openPullRequest(NAME, { head: "person", by: "bob" });
    await gh.pushToPullRequest(NAME, m, { "p.txt": "p2\n" });
    await gh.markDraft(NAME, m);
    await gh.markReady(NAME, m);
    await gh.changeBase(NAME, m, "release");
    await gh.closePullRequest(NAME, m, { by: "alice" });
    await gh.reopenPullRequest(NAME, m);
    const events = gh.deliveries("pull_request").filter((d) => d.payload.number === m);
    expect(events.map((d) => d.payload.action)).toEqual([
      "opened",
      "synchronize",
      "converted_to_draft",
      "ready_for_review",
      "edited",
      "closed",
      "reopened",
    ]);
    expect(events.every((d) => (d.payload.installation as { id: number }).id > 0)).toBe(true);
    expect((events[5]?.payload.sender as { login: string }).login).toBe("alice");
    expect((events[4]?.payload.changes as { base: { ref: { from: string } } }).base.ref.from).toBe(
      "main",
    );
  });
});
