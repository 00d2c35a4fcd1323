import { Octokit } from "@octokit/core";
import { RequestError } from "@octokit/request-error";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeGitHub } from "../helpers/fake-github/index.js";
import { git } from "../helpers/fake-github/git.js";

let gh: FakeGitHub;
let octokit: Octokit;
const NAME = "acme/widgets";
const R = { owner: "acme", repo: "widgets" };

beforeAll(async () => {
  gh = await FakeGitHub.start({ seed: 11 });
  gh.createOrganization("acme");
  gh.createUser("alice");
  gh.createUser("bob");
  gh.createUser("forker");
  gh.addOrgMember("acme", "alice", "admin");
  await gh.createRepository({
    owner: "acme",
    name: "widgets",
    files: { "README.md": "hello\n", "a.txt": "1\n2\n3\n" },
  });
  gh.setCollaborator(NAME, "bob", "write");
  await gh.createRepository({
    owner: "acme",
    name: "private-free",
    private: true,
    settings: { draftPullRequests: false },
  });
  const app = gh.createApp({ slug: "mainline" });
  const { id } = gh.installApp(app.id, { account: "acme" });
  octokit = new Octokit({ baseUrl: gh.url, auth: gh.installationToken(id) });
});

afterAll(async () => {
  await gh.close();
  gh.schema.assertValid();
});

async function tip(branch = "main"): Promise<string> {
  const sha = await gh.readRef(NAME, `heads/${branch}`);
  if (sha === null) throw new Error(`no ${branch}`);
  return sha;
}

async function treeOf(sha: string): Promise<string> {
  return (await git(gh.gitDir(NAME), ["rev-parse", `${sha}^{tree}`])).stdout.trim();
}

async function fileAt(sha: string, path: string): Promise<string> {
  return (await git(gh.gitDir(NAME), ["show", `${sha}:${path}`])).stdout;
}

/** A branch with `files` changed, by bob, and its PR. */
async function branchAndPr(
  branch: string,
  files: Record<string, string | null>,
  options: { draft?: boolean } = {},
): Promise<number> {
  await gh.commit(NAME, { branch, from: "main", files, by: "bob", message: `${branch}: change` });
  return gh.openPullRequest(NAME, { head: branch, title: `PR ${branch}`, by: "bob", ...options });
}

describe("creating and reading pull requests", () => {
  it("creates through the API, reads, lists with filters, and refuses a duplicate", async () => {
    await gh.commit(NAME, {
      branch: "feat-api",
      from: "main",
      files: { "api.txt": "x\n" },
      by: "bob",
    });
    const { data: created } = await octokit.request("POST /repos/{owner}/{repo}/pulls", {
      ...R,
      head: "feat-api",
      base: "main",
      title: "API PR",
      body: "body",
    });
    expect(created).toMatchObject({
      state: "open",
      draft: false,
      title: "API PR",
      user: { login: "mainline[bot]", type: "Bot" },
      head: { ref: "feat-api" },
      base: { ref: "main" },
    });
    const { data: got } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: created.number,
    });
    expect(got).toMatchObject({
      mergeable: true,
      mergeable_state: "clean",
      commits: 1,
      additions: 1,
      changed_files: 1,
      merged: false,
    });
    expect(await gh.readRef(NAME, `pull/${created.number}/head`)).toBe(got.head.sha);
    expect(await gh.readRef(NAME, `pull/${created.number}/merge`)).toBe(got.merge_commit_sha);
    const { data: listed } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
      ...R,
      head: "acme:feat-api",
    });
    expect(listed.map((p) => p.number)).toEqual([created.number]);
    const { data: none } = await octokit.request("GET /repos/{owner}/{repo}/pulls", {
      ...R,
      base: "other",
    });
    expect(none).toEqual([]);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/pulls", {
        ...R,
        head: "feat-api",
        base: "main",
        title: "again",
      }),
    ).rejects.toThrow(/A pull request already exists for acme:feat-api/);
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/pulls", {
        ...R,
        head: "nope",
        base: "main",
        title: "x",
      }),
    ).rejects.toMatchObject({ status: 422 });
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...R, pull_number: 999 }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("opens drafts, and answers 422 where drafts are not supported", async () => {
    const n = await branchAndPr("feat-draft", { "d.txt": "d\n" }, { draft: true });
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    expect(data).toMatchObject({ draft: true, mergeable_state: "draft" });
    await gh.commit("acme/private-free", {
      branch: "x",
      from: "main",
      files: { "x.txt": "x\n" },
      by: "alice",
    });
    await expect(
      octokit.request("POST /repos/{owner}/{repo}/pulls", {
        owner: "acme",
        repo: "private-free",
        head: "x",
        base: "main",
        title: "t",
        draft: true,
      }),
    ).rejects.toThrow(/Draft pull requests are not supported in this repository\./);
  });
});

describe("merging", () => {
  it("squash lands one commit with the merged tree on the base, authored by the PR's author", async () => {
    const n = await branchAndPr("feat-squash", { "a.txt": "1\n2\n3\nsquash\n" });
    await gh.pushToPullRequest(NAME, n, { "s2.txt": "second\n" });
    const base = await tip();
    const { data: pr } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    const expectedTree = await treeOf(pr.merge_commit_sha ?? "");
    const { data } = await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: n,
      sha: pr.head.sha,
      merge_method: "squash",
    });
    expect(data).toMatchObject({ merged: true, message: "Pull Request successfully merged" });
    expect(await tip()).toBe(data.sha);
    const { data: commit } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { ...R, commit_sha: data.sha },
    );
    expect(commit.parents.map((p) => p.sha)).toEqual([base]);
    expect(commit.author.name).toBe("bob");
    expect(commit.message).toMatch(
      new RegExp(`^PR feat-squash \\(#${n}\\)\\n\\n\\* feat-squash: change`),
    );
    expect(await treeOf(data.sha)).toBe(expectedTree);
    const { data: after } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    expect(after).toMatchObject({
      state: "closed",
      merged: true,
      merge_commit_sha: data.sha,
      merged_by: { login: "mainline[bot]" },
    });
    expect(
      (
        await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: n,
        })
      ).status,
    ).toBe(204);
    const closed = gh
      .deliveries("pull_request")
      .filter((d) => d.payload.number === n && d.payload.action === "closed");
    expect(closed).toHaveLength(1);
    expect((closed[0]?.payload.pull_request as { merged: boolean }).merged).toBe(true);
  });

  it("merge makes a two-parent commit; rebase replays each commit onto the base", async () => {
    const m = await branchAndPr("feat-merge", { "m.txt": "m\n" });
    const base = await tip();
    const head = (
      await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...R,
        pull_number: m,
      })
    ).data.head.sha;
    const merged = await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: m,
      merge_method: "merge",
    });
    const { data: mc } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { ...R, commit_sha: merged.data.sha },
    );
    expect(mc.parents.map((p) => p.sha)).toEqual([base, head]);
    expect(mc.message).toMatch(new RegExp(`^Merge pull request #${m} from acme/feat-merge`));

    const r = await branchAndPr("feat-rebase", { "r1.txt": "r1\n" });
    await gh.pushToPullRequest(NAME, r, { "r2.txt": "r2\n" }, { message: "second" });
    const before = await tip();
    const rebased = await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: r,
      merge_method: "rebase",
    });
    const { data: top } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { ...R, commit_sha: rebased.data.sha },
    );
    expect(top.message).toBe("second");
    const { data: below } = await octokit.request(
      "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
      { ...R, commit_sha: top.parents[0]?.sha ?? "" },
    );
    expect(below.message).toBe("feat-rebase: change");
    expect(below.parents.map((p) => p.sha)).toEqual([before]);
    expect(await fileAt(rebased.data.sha, "r2.txt")).toBe("r2\n");
    expect(await fileAt(rebased.data.sha, "m.txt")).toBe("m\n");
  });

  it("refuses a stale sha (409), a conflict (405, dirty), a draft (405) and a disabled method (405)", async () => {
    const n = await branchAndPr("feat-stale", { "stale.txt": "1\n" });
    const stale = (
      await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...R,
        pull_number: n,
      })
    ).data.head.sha;
    await gh.pushToPullRequest(NAME, n, { "stale.txt": "2\n" });
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
        sha: stale,
      }),
    ).rejects.toMatchObject({
      status: 409,
      message: expect.stringMatching(
        /^Head branch was modified\. Review and try the merge again\./,
      ) as unknown,
    });
    const sync = gh
      .deliveries("pull_request")
      .find((d) => d.payload.number === n && d.payload.action === "synchronize");
    expect(sync?.payload).toMatchObject({ before: stale });
    expect(await gh.readRef(NAME, `pull/${n}/head`)).toBe(sync?.payload.after);

    const c1 = await branchAndPr("conflict-1", { "a.txt": "1\none\n3\n" });
    const c2 = await branchAndPr("conflict-2", { "a.txt": "1\ntwo\n3\n" });
    await octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
      ...R,
      pull_number: c1,
      merge_method: "squash",
    });
    const { data: dirty } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: c2,
    });
    expect(dirty).toMatchObject({ mergeable: false, mergeable_state: "dirty" });
    const main = await tip();
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: c2,
      }),
    ).rejects.toMatchObject({
      status: 405,
      message: expect.stringMatching(/^Pull Request is not mergeable/) as unknown,
    });
    expect(await tip()).toBe(main);

    const d = await branchAndPr("feat-draft-merge", { "dm.txt": "x\n" }, { draft: true });
    await expect(
      octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: d,
      }),
    ).rejects.toThrow(/Pull Request is still a draft/);
    gh.repository(NAME).settings.allowRebaseMerge = false;
    try {
      await gh.markReady(NAME, d);
      await expect(
        octokit.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: d,
          merge_method: "rebase",
        }),
      ).rejects.toMatchObject({
        status: 405,
        message: expect.stringMatching(
          /^Rebase merges are not allowed on this repository\./,
        ) as unknown,
      });
    } finally {
      gh.repository(NAME).settings.allowRebaseMerge = true;
    }
  });

  it("two merges racing for one base: the compare-and-swap decides, the loser gets 405 base modified", async () => {
    const a = await branchAndPr("race-a", { "race-a.txt": "a\n" });
    const b = await branchAndPr("race-b", { "race-b.txt": "b\n" });
    for (const n of [a, b])
      await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...R,
        pull_number: n,
      });
    const before = await tip();
    // Hold both writers just before their swap until both got there: both computed on `before`.
    let arrived = 0;
    let release: () => void = () => undefined;
    const bothThere = new Promise<void>((resolve) => (release = resolve));
    const remove = gh.refs.onBeforeSwap(async (check) => {
      if (check.ref !== "refs/heads/main") return;
      arrived++;
      if (arrived === 2) release();
      await bothThere;
    });
    try {
      const results = await Promise.all(
        [a, b].map((n) =>
          octokit
            .request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
              ...R,
              pull_number: n,
              merge_method: "squash",
            })
            .then(
              (r) => ({ status: r.status, sha: r.data.sha, message: "" }),
              (e: unknown) => ({
                status: (e as RequestError).status,
                sha: "",
                message: (e as RequestError).message,
              }),
            ),
        ),
      );
      const won = results.filter((r) => r.status === 200);
      const lost = results.filter((r) => r.status === 405);
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]?.message).toMatch(
        /^Base branch was modified\. Review and try the merge again\./,
      );
      const main = await tip();
      expect(main).toBe(won[0]?.sha);
      const { data: landed } = await octokit.request(
        "GET /repos/{owner}/{repo}/git/commits/{commit_sha}",
        { ...R, commit_sha: main },
      );
      expect(landed.parents.map((p) => p.sha)).toEqual([before]);
    } finally {
      remove();
    }
  });
});

describe("mergeability is computed asynchronously", () => {
  it("is null/unknown after the base moves until the delay passes", async () => {
    const slow = await FakeGitHub.start({ seed: 2, mergeabilityDelayMs: 1500 });
    try {
      slow.createOrganization("acme");
      slow.createUser("alice");
      slow.addOrgMember("acme", "alice", "admin");
      await slow.createRepository({ owner: "acme", name: "widgets" });
      const app = slow.createApp({ slug: "q" });
      const client = new Octokit({
        baseUrl: slow.url,
        auth: slow.installationToken(slow.installApp(app.id, { account: "acme" }).id),
      });
      await slow.commit(NAME, { branch: "f", from: "main", files: { "f.txt": "f\n" } });
      const n = await slow.openPullRequest(NAME, { head: "f" });
      const read = async (): Promise<[boolean | null, string]> => {
        const { data } = await client.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
          ...R,
          pull_number: n,
        });
        return [data.mergeable, data.mergeable_state];
      };
      expect(await read()).toEqual([null, "unknown"]);
      await new Promise((r) => setTimeout(r, 1600));
      expect(await read()).toEqual([true, "clean"]);
      await slow.commit(NAME, { branch: "main", files: { "other.txt": "o\n" } });
      expect(await read()).toEqual([null, "unknown"]);
      await new Promise((r) => setTimeout(r, 1600));
      expect(await read()).toEqual([true, "clean"]);
      slow.holdMergeability(NAME, n, 60_000);
      await slow.commit(NAME, { branch: "main", files: { "other.txt": "o2\n" } });
      await new Promise((r) => setTimeout(r, 1600));
      expect(await read()).toEqual([null, "unknown"]);
      await expect(
        client.request("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
          ...R,
          pull_number: n,
        }),
      ).rejects.toThrow(/Pull Request is not mergeable/);
    } finally {
      await slow.close();
    }
  });
});

describe("updates, forks, and what lists a PR", () => {
  it("closes, reopens and changes the base with GitHub's webhooks", async () => {
    await gh.commit(NAME, {
      branch: "release",
      from: "main",
      files: { "rel.txt": "r\n" },
      by: "alice",
    });
    const n = await branchAndPr("feat-edit", { "e.txt": "e\n" });
    const oldBase = (
      await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...R,
        pull_number: n,
      })
    ).data.base.sha;
    await octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
      base: "release",
    });
    const edited = gh
      .deliveries("pull_request")
      .find((d) => d.payload.number === n && d.payload.action === "edited");
    expect(edited?.payload.changes).toEqual({
      base: { ref: { from: "main" }, sha: { from: oldBase } },
    });
    await octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
      state: "closed",
    });
    await gh.reopenPullRequest(NAME, n, { by: "bob" });
    const actions = gh
      .deliveries("pull_request")
      .filter((d) => d.payload.number === n)
      .map((d) => d.payload.action);
    expect(actions).toEqual(["opened", "edited", "closed", "reopened"]);
    await expect(
      octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}/merge", {
        ...R,
        pull_number: n,
      }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("opens a fork's PR, keeps refs/pull/N/head in the base repository, and merges it", async () => {
    await gh.fork(NAME, { owner: "forker" });
    await gh.commit("forker/widgets", {
      branch: "contrib",
      from: "main",
      files: { "fork.txt": "from a fork\n" },
      by: "forker",
    });
    const n = await gh.openPullRequest(NAME, {
      head: "forker:contrib",
      title: "fork PR",
      by: "forker",
    });
    const { data: pr } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    expect(pr).toMatchObject({
      head: { label: "forker:contrib", repo: { full_name: "forker/widgets" } },
      base: { repo: { full_name: "acme/widgets" } },
      mergeable: true,
    });
    expect(await gh.readRef(NAME, `pull/${n}/head`)).toBe(pr.head.sha);
    const pushed = await gh.pushToPullRequest(NAME, n, { "fork.txt": "updated\n" });
    expect(await gh.readRef(NAME, `pull/${n}/head`)).toBe(pushed);
    const { data: byCommit } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls",
      { ...R, commit_sha: pushed },
    );
    expect(byCommit.map((p) => p.number)).toEqual([n]);
    const { data: files } = await octokit.request(
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
      { ...R, pull_number: n },
    );
    expect(files.map((f) => [f.filename, f.status])).toEqual([["fork.txt", "added"]]);
    const { data: commits } = await octokit.request(
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/commits",
      { ...R, pull_number: n },
    );
    expect(commits.map((c) => c.sha).at(-1)).toBe(pushed);
    const { data: merged } = await octokit.request(
      "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge",
      { ...R, pull_number: n, sha: pushed, merge_method: "squash" },
    );
    expect(await fileAt(merged.sha, "fork.txt")).toBe("updated\n");
    const { data: assoc } = await octokit.request(
      "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls",
      { ...R, commit_sha: merged.sha },
    );
    expect(assoc.map((p) => p.number)).toEqual([n]);
  });

  it("marks a PR merged when its head is pushed to the base (a fast-forward)", async () => {
    const n = await branchAndPr("feat-ff", { "ff.txt": "ff\n" });
    const head = gh.pullRequest(NAME, n).headSha;
    await octokit.request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
      ...R,
      ref: "heads/main",
      sha: head,
      force: false,
    });
    const { data } = await octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
      ...R,
      pull_number: n,
    });
    expect(data).toMatchObject({ state: "closed", merged: true, merge_commit_sha: head });
  });
});
