import { Octokit } from "@octokit/core";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub, type CreatedApp } from "../helpers/fake-github/index.js";

let gh: FakeGitHub;
let app: CreatedApp;
let octokit: Octokit;
const R = { owner: "acme", repo: "widgets" };

function plain(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
  }).trim();
}

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 3 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({
    owner: "acme",
    name: "widgets",
    files: { "README.md": "hello\n", "src/a.txt": "a\n" },
  });
  app = gh.createApp({ slug: "mainline" });
  const { id } = gh.installApp(app.id, { account: "acme" });
  octokit = new Octokit({ baseUrl: gh.url, auth: gh.installationToken(id) });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

async function main(): Promise<string> {
  const sha = await gh.readRef("acme/widgets", "heads/main");
  if (sha === null) throw new Error("no main");
  return sha;
}

describe("repository and branches", () => {
  it("reads the repository, its branches and one branch", async () => {
    const { data: repo } = await octokit.request("GET /repos/{owner}/{repo}", R);
    expect(repo).toMatchObject({
      full_name: "acme/widgets",
      default_branch: "main",
      allow_squash_merge: true,
      private: false,
    });
    const { data: branches } = await octokit.request("GET /repos/{owner}/{repo}/branches", R);
    expect(branches.map((b) => b.name)).toEqual(["main"]);
    const { data: branch } = await octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", {
      ...R,
      branch: "main",
    });
    expect(branch.commit.sha).toBe(await main());
    expect(branch.protected).toBe(false);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", { ...R, branch: "nope" }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(
      octokit.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "nope" }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe("refs", () => {
  it("creates, fast-forwards, refuses a non-fast-forward, forces and deletes, with GitHub's 422s", async () => {
    const base = await main();
    const { data: created } = await octokit.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/feature/x",
      sha: base,
    });
    expect(created).toMatchObject({
      ref: "refs/heads/feature/x",
      object: { sha: base, type: "commit" },
    });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        ...R,
        ref: "refs/heads/feature/x",
        sha: base,
      }),
    ).rejects.toThrow(/Reference already exists/);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/git/refs", {
        ...R,
        ref: "refs/heads/y",
        sha: "1".repeat(40),
      }),
    ).rejects.toThrow(/Object does not exist/);

    const ahead = await gh.commit("acme/widgets", {
      branch: "feature/x",
      files: { "b.txt": "b\n" },
    });
    const sideways = await gh.commit("acme/widgets", {
      branch: "side",
      from: base,
      files: { "c.txt": "c\n" },
    });
    const { data: read } = await octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      ...R,
      ref: "heads/feature/x",
    });
    expect(read.object.sha).toBe(ahead);

    await expect(
      octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...R,
        ref: "heads/feature/x",
        sha: sideways,
        force: false,
      }),
    ).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/Update is not a fast forward/) as unknown,
    });
    expect(await gh.readRef("acme/widgets", "heads/feature/x")).toBe(ahead);
    const { data: forced } = await octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/feature/x",
      sha: sideways,
      force: true,
    });
    expect(forced.object.sha).toBe(sideways);
    await expect(
      octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
        ...R,
        ref: "heads/gone",
        sha: base,
      }),
    ).rejects.toThrow(/Reference does not exist/);

    const { data: matching } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/matching-refs/{ref}",
      { ...R, ref: "heads/feature/" },
    );
    expect(matching.map((r) => r.ref)).toEqual(["refs/heads/feature/x"]);

    const deleted = await octokit.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/feature/x",
    });
    expect(deleted.status).toBe(204);
    await expect(
      octokit.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
        ...R,
        ref: "heads/feature/x",
      }),
    ).rejects.toThrow(/Reference does not exist/);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...R, ref: "heads/feature/x" }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("sends push webhooks with created, deleted, forced, before and after, as the App's bot", async () => {
    const base = await main();
    const mark = gh.deliveries().length;
    await octokit.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-merge/pr-1",
      sha: base,
    });
    const other = await gh.commit("acme/widgets", {
      branch: "other",
      from: base,
      files: { "o.txt": "o\n" },
    });
    await octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/trunk-merge/pr-1",
      sha: other,
      force: true,
    });
    await octokit.request("DELETE /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/trunk-merge/pr-1",
    });
    const pushes = gh
      .deliveries("push")
      .filter(
        (d) =>
          gh.deliveries().indexOf(d) >= mark && d.payload.ref === "refs/heads/trunk-merge/pr-1",
      );
    expect(pushes.map((d) => [d.payload.created, d.payload.deleted, d.payload.forced])).toEqual([
      [true, false, false],
      [false, false, false],
      [false, true, false],
    ]);
    expect(pushes[0]?.payload.before).toBe("0".repeat(40));
    expect(pushes[0]?.payload.after).toBe(base);
    expect(pushes[1]?.payload).toMatchObject({ before: base, after: other });
    expect(pushes[2]?.payload.after).toBe("0".repeat(40));
    expect(pushes[0]?.payload.sender).toMatchObject({ login: "mainline[bot]", type: "Bot" });
    expect(pushes[0]?.payload.installation).toMatchObject({ id: expect.any(Number) as unknown });
    const humans = gh.deliveries("push").filter((d) => d.payload.ref === "refs/heads/other");
    expect(humans[0]?.payload.sender).toMatchObject({ login: "alice", type: "User" });
    expect((humans[0]?.payload.head_commit as { added: string[] }).added).toEqual(["o.txt"]);
  });
});

describe("POST /merges", () => {
  it("merges for real (201), answers 204 when there is nothing to merge, 409 on a conflict", async () => {
    const base = await main();
    const left = await gh.commit("acme/widgets", {
      branch: "left",
      from: base,
      files: { "src/a.txt": "left\n" },
    });
    const right = await gh.commit("acme/widgets", {
      branch: "right",
      from: base,
      files: { "src/a.txt": "right\n" },
    });
    const extra = await gh.commit("acme/widgets", {
      branch: "extra",
      from: base,
      files: { "extra.txt": "x\n" },
    });
    await octokit.request("POST /repos/{owner}/{repo}/git/refs", {
      ...R,
      ref: "refs/heads/trunk-temp/1",
      sha: base,
    });

    const merged = await octokit.request("POST /repos/{owner}/{repo}/merges", {
      ...R,
      base: "trunk-temp/1",
      head: left,
      commit_message: "merge left",
    });
    expect(merged.status).toBe(201);
    expect(merged.data.parents.map((p) => p.sha)).toEqual([base, left]);
    expect(merged.data.commit.message).toBe("merge left");
    const second = await octokit.request("POST /repos/{owner}/{repo}/merges", {
      ...R,
      base: "trunk-temp/1",
      head: "extra",
    });
    expect(second.data.parents.map((p) => p.sha)).toEqual([merged.data.sha, extra]);
    const { data: file } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "src/a.txt",
      ref: "trunk-temp/1",
    });
    expect(Buffer.from((file as { content: string }).content, "base64").toString()).toBe("left\n");

    const nothing = await octokit.request("POST /repos/{owner}/{repo}/merges", {
      ...R,
      base: "trunk-temp/1",
      head: left,
    });
    expect(nothing.status).toBe(204);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/merges", {
        ...R,
        base: "trunk-temp/1",
        head: right,
      }),
    ).rejects.toMatchObject({ status: 409 });
    expect(await gh.readRef("acme/widgets", "heads/trunk-temp/1")).toBe(second.data.sha);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/merges", { ...R, base: "missing", head: right }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe("git commits, commits, compare, contents", () => {
  it("creates a commit from a tree and parents, and reads it back", async () => {
    const base = await main();
    const { data: baseCommit } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { ...R, commit_sha: base },
    );
    const { data: created } = await octokit.request("POST /repos/{owner}/{repo}/git/commits", {
      ...R,
      message: "octopus",
      tree: baseCommit.tree.sha,
      parents: [base],
      author: { name: "Queue", email: "queue@example.com", date: "2026-01-02T03:04:05Z" },
    });
    expect(created).toMatchObject({
      message: "octopus",
      tree: { sha: baseCommit.tree.sha },
      author: { name: "Queue", date: "2026-01-02T03:04:05Z" },
    });
    expect(created.parents.map((p) => p.sha)).toEqual([base]);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/git/commits", {
        ...R,
        message: "x",
        tree: "2".repeat(40),
        parents: [],
      }),
    ).rejects.toThrow(/Tree SHA does not exist/);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", {
        ...R,
        commit_sha: "3".repeat(40),
      }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("reads commits with files, compares, and serves contents as JSON and raw", async () => {
    const base = await main();
    const head = await gh.commit("acme/widgets", {
      branch: "cmp",
      from: base,
      files: { "src/a.txt": "a\nmore\n", "new.txt": "n\n", "README.md": null },
    });
    const { data: commit } = await octokit.request("GET /repos/{owner}/{repo}/commits/{ref}", {
      ...R,
      ref: "cmp",
    });
    expect(commit.sha).toBe(head);
    expect(commit.files?.map((f) => [f.filename, f.status]).sort()).toEqual([
      ["README.md", "removed"],
      ["new.txt", "added"],
      ["src/a.txt", "modified"],
    ]);
    expect(commit.commit.author?.name).toBe("alice");
    expect(commit.author?.login).toBe("alice");

    const { data: ahead } = await octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
      ...R,
      basehead: `main...cmp`,
    });
    expect(ahead).toMatchObject({
      status: "ahead",
      ahead_by: 1,
      behind_by: 0,
      total_commits: 1,
      merge_base_commit: { sha: base },
    });
    const { data: behind } = await octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
      ...R,
      basehead: `cmp...main`,
    });
    expect(behind).toMatchObject({ status: "behind", ahead_by: 0, behind_by: 1 });
    const side = await gh.commit("acme/widgets", {
      branch: "cmp2",
      from: base,
      files: { "z.txt": "z\n" },
    });
    const { data: diverged } = await octokit.request(
      "GET /repos/{owner}/{repo}/compare/{basehead}",
      { ...R, basehead: `${side}...${head}` },
    );
    expect(diverged).toMatchObject({ status: "diverged", ahead_by: 1, behind_by: 1 });
    const { data: same } = await octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
      ...R,
      basehead: "cmp...cmp",
    });
    expect(same.status).toBe("identical");

    const { data: json } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "src/a.txt",
      ref: head,
    });
    expect(json).toMatchObject({ type: "file", encoding: "base64", path: "src/a.txt" });
    expect(Buffer.from((json as { content: string }).content, "base64").toString()).toBe(
      "a\nmore\n",
    );
    const raw = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "src/a.txt",
      ref: head,
      mediaType: { format: "raw" },
    });
    expect(raw.data as unknown).toBe("a\nmore\n");
    const { data: dir } = await octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
      ...R,
      path: "src",
      ref: head,
    });
    expect((dir as { name: string }[]).map((e) => e.name)).toEqual(["a.txt"]);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/contents/{path}", {
        ...R,
        path: ".trunk/trunk.yaml",
        ref: head,
      }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe("pushing as a developer", () => {
  it("pushes a working clone's branch through the fake, with its events", async () => {
    const work = mkdtempSync(join(tmpdir(), "fake-github-clone-"));
    try {
      plain(work, "clone", "--quiet", gh.gitDir("acme/widgets"), "w");
      const dir = join(work, "w");
      plain(dir, "checkout", "--quiet", "-b", "from-clone");
      writeFileSync(join(dir, "cloned.txt"), "hi\n");
      plain(dir, "add", "cloned.txt");
      plain(
        dir,
        "-c",
        "user.name=Alice",
        "-c",
        "user.email=alice@example.com",
        "commit",
        "--quiet",
        "-m",
        "from a clone",
      );
      const sha = await gh.pushFrom("acme/widgets", dir, "from-clone", { by: "alice" });
      expect(sha).toBe(plain(dir, "rev-parse", "HEAD"));
      expect(await gh.readRef("acme/widgets", "heads/from-clone")).toBe(sha);
      const push = gh.deliveries("push").find((d) => d.payload.ref === "refs/heads/from-clone");
      expect(push?.payload).toMatchObject({
        created: true,
        after: sha,
        sender: { login: "alice" },
      });
      expect(await gh.readRef("acme/widgets", "refs/fake-incoming/x")).toBeNull();
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
