import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, type Api, type Json } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";

let gl: FakeGitLab;
let bot: Api;
let alice: Api;
let admin: Api;
const P = "acme/app";
const ID = encodeURIComponent(P);

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 5 });
  gl.createUser("alice");
  await gl.createProject({ path: P, files: { "README.md": "line\n", "src/a.txt": "a\n" } });
  gl.addMember(P, "alice", 30);
  bot = api(gl.apiUrl, gl.createProjectToken(P, { accessLevel: 40, scopes: ["api"] }).token);
  alice = api(gl.apiUrl, gl.createToken({ user: "alice" }));
  admin = api(gl.apiUrl, gl.createToken({ user: "root" }));
});

afterAll(async () => {
  await gl.settle();
  await gl.close();
});

let branches = 0;
async function openMr(
  files: Record<string, string>,
  options: { draft?: boolean; project?: string; title?: string } = {},
): Promise<{ iid: number; branch: string; sha: string }> {
  const project = options.project ?? P;
  const branch = `feature/${++branches}`;
  const sha = await gl.commit(project, branch, files, { author: "alice", from: "main" });
  const { iid } = await gl.createMergeRequest({
    project,
    sourceBranch: branch,
    title: options.title ?? `Change ${branch}`,
    author: "alice",
    ...(options.draft !== undefined ? { draft: options.draft } : {}),
  });
  return { iid, branch, sha };
}

const read = async (iid: number, id = ID): Promise<Json> =>
  (await (id === ID ? bot : admin)("GET", `/projects/${id}/merge_requests/${iid}`)).body;

/** Reads until GitLab has checked (the first read after a move answers `checking`). */
async function checked(iid: number, id = ID): Promise<Json> {
  const first = await read(iid, id);
  return first.detailed_merge_status === "checking" ? read(iid, id) : first;
}

describe("lazy mergeability", () => {
  it("answers unchecked in lists, checking on the first read, then the checked status", async () => {
    const { iid, sha } = await openMr({ "lazy.txt": "x\n" });
    const listed = await bot("GET", `/projects/${ID}/merge_requests`, { state: "opened" });
    const entry = listed.items.find((m) => m.iid === iid);
    expect(entry).toMatchObject({
      merge_status: "unchecked",
      detailed_merge_status: "unchecked",
      sha,
    });
    expect(entry).not.toHaveProperty("diff_refs");
    const first = await read(iid);
    expect(first).toMatchObject({
      merge_status: "checking",
      detailed_merge_status: "checking",
      diff_refs: null,
    });
    const second = await read(iid);
    const main = await gl.branchHead(P, "main");
    expect(second).toMatchObject({
      merge_status: "can_be_merged",
      detailed_merge_status: "mergeable",
      has_conflicts: false,
      diff_refs: { base_sha: main, head_sha: sha, start_sha: main },
      head_pipeline: null,
      user: { can_merge: true },
    });
    const moved = await gl.commit(
      P,
      `feature/${branches}`,
      { "lazy.txt": "y\n" },
      { author: "alice" },
    );
    expect(await read(iid)).toMatchObject({ detailed_merge_status: "checking", sha: moved });
    expect(await read(iid)).toMatchObject({ detailed_merge_status: "mergeable" });
  });

  it("reports draft_status for drafts and conflict for a conflicting head", async () => {
    const draft = await openMr({ "draft.txt": "d\n" }, { draft: true });
    expect(await checked(draft.iid)).toMatchObject({
      detailed_merge_status: "draft_status",
      draft: true,
      work_in_progress: true,
    });
    const a = await openMr({ "README.md": "from a\n" });
    const b = await openMr({ "README.md": "from b\n" });
    await checked(a.iid);
    expect(
      (await bot("PUT", `/projects/${ID}/merge_requests/${a.iid}/merge`, { sha: a.sha })).status,
    ).toBe(200);
    expect(await checked(b.iid)).toMatchObject({
      detailed_merge_status: "conflict",
      has_conflicts: true,
      merge_status: "cannot_be_merged",
    });
    const refused = await bot("PUT", `/projects/${ID}/merge_requests/${b.iid}/merge`, {
      sha: b.sha,
    });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: "Branch cannot be merged" });
  });
});

describe("PUT …/merge", () => {
  it("merges with a merge commit: parents, message, merge_commit_sha is the target head, source removed", async () => {
    const { iid, sha, branch } = await openMr({ "m.txt": "m\n" }, { title: "Add m" });
    const before = await gl.branchHead(P, "main");
    const merged = await bot("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
    expect(merged.status).toBe(200);
    const head = await gl.branchHead(P, "main");
    expect(merged.body).toMatchObject({
      state: "merged",
      merge_commit_sha: head,
      squash_commit_sha: null,
    });
    const commit = await bot("GET", `/projects/${ID}/repository/commits/${head ?? ""}`);
    expect(commit.body.parent_ids).toEqual([before, sha]);
    expect(commit.body.message).toBe(
      `Merge branch '${branch}' into 'main'\n\nAdd m\n\nSee merge request ${P}!${iid}`,
    );
    expect(await gl.branchHead(P, branch)).toBeNull();
    expect((await checked(iid)).detailed_merge_status).toBe("not_open");
  });

  it("checks in GitLab's order: 401 without merge rights, 405 draft, 409 moved head", async () => {
    const { iid, sha } = await openMr({ "o.txt": "o\n" });
    const byDeveloper = await alice("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
    expect(byDeveloper).toMatchObject({ status: 401, body: { message: "401 Unauthorized" } });
    const draft = await openMr({ "p.txt": "p\n" }, { draft: true });
    const notAllowed = await bot("PUT", `/projects/${ID}/merge_requests/${draft.iid}/merge`, {
      sha: draft.sha,
    });
    expect(notAllowed).toMatchObject({ status: 405, body: { message: "405 Method Not Allowed" } });
    const moved = await gl.commit(
      P,
      `feature/${branches - 1}`,
      { "o.txt": "o2\n" },
      { author: "alice" },
    );
    const conflict = await bot("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({
      message: `SHA does not match HEAD of source branch: ${moved}`,
    });
    expect(gl.mergeRequest(P, iid).state).toBe("opened");
  });

  it("squashes: one commit with the head's tree on the merge base, then the merge commit", async () => {
    const { iid, sha } = await openMr({ "s1.txt": "1\n" });
    const head = await gl.commit(
      P,
      `feature/${branches}`,
      { "s2.txt": "2\n" },
      { author: "alice" },
    );
    const base = await gl.branchHead(P, "main");
    const res = await bot("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, {
      sha: head,
      squash: true,
    });
    expect(res.status).toBe(200);
    const squash = res.body.squash_commit_sha as string;
    expect(squash).toMatch(/^[0-9a-f]{40}$/);
    const squashed = await bot("GET", `/projects/${ID}/repository/commits/${squash}`);
    expect(squashed.body).toMatchObject({
      parent_ids: [base],
      title: gl.mergeRequest(P, iid).title,
    });
    const merge = await bot(
      "GET",
      `/projects/${ID}/repository/commits/${res.body.merge_commit_sha as string}`,
    );
    expect(merge.body.parent_ids).toEqual([base, squash]);
    expect(sha).not.toBe(head);
  });

  it("fast-forward and semi-linear projects refuse a head that is not rebased, then merge it once it is", async () => {
    for (const method of ["ff", "rebase_merge"] as const) {
      const path = `acme/${method.replace("_", "-")}`;
      await gl.createProject({ path, settings: { merge_method: method } });
      const id = encodeURIComponent(path);
      const stale = await openMr({ "x.txt": "x\n" }, { project: path });
      await gl.commit(path, "main", { "z.txt": "z\n" });
      expect(await checked(stale.iid, id)).toMatchObject({ detailed_merge_status: "need_rebase" });
      const refused = await admin("PUT", `/projects/${id}/merge_requests/${stale.iid}/merge`, {
        sha: stale.sha,
      });
      expect(refused).toMatchObject({ status: 422, body: { message: "Branch cannot be merged" } });
      const fresh = await openMr({ "y.txt": "y\n" }, { project: path });
      const before = await gl.branchHead(path, "main");
      const ok = await admin("PUT", `/projects/${id}/merge_requests/${fresh.iid}/merge`, {
        sha: fresh.sha,
      });
      expect(ok.status).toBe(200);
      const main = await gl.branchHead(path, "main");
      if (method === "ff") {
        expect(main).toBe(fresh.sha);
        expect(ok.body.merge_commit_sha).toBeNull();
      } else {
        expect(ok.body.merge_commit_sha).toBe(main);
        const commit = await admin("GET", `/projects/${id}/repository/commits/${main ?? ""}`);
        expect(commit.body.parent_ids).toEqual([before, fresh.sha]);
      }
    }
  });

  it("answers 406 for a conflict on a pre-16.0 profile", async () => {
    const old = await FakeGitLab.start({ seed: 6, version: "15.11.0" });
    try {
      old.createUser("alice");
      await old.createProject({ path: P, files: { "f.txt": "0\n" } });
      const token = old.createToken({ user: "root" });
      const a = await old.commit(P, "a", { "f.txt": "a\n" }, { from: "main" });
      await old.commit(P, "b", { "f.txt": "b\n" }, { from: "main" });
      const mrA = await old.createMergeRequest({
        project: P,
        sourceBranch: "a",
        title: "A",
        author: "root",
      });
      const mrB = await old.createMergeRequest({
        project: P,
        sourceBranch: "b",
        title: "B",
        author: "root",
      });
      const client = api(old.apiUrl, token);
      expect(
        (await client("PUT", `/projects/${ID}/merge_requests/${mrA.iid}/merge`, { sha: a })).status,
      ).toBe(200);
      const refused = await client("PUT", `/projects/${ID}/merge_requests/${mrB.iid}/merge`);
      expect(refused).toMatchObject({ status: 406, body: { message: "Branch cannot be merged" } });
    } finally {
      await old.close();
    }
  });

  it("refuses with 405 while CI must pass and no pipeline succeeded (ci_must_pass)", async () => {
    const path = "acme/strict";
    await gl.createProject({ path, settings: { only_allow_merge_if_pipeline_succeeds: true } });
    const { iid, sha } = await openMr({ "c.txt": "c\n" }, { project: path });
    expect(await checked(iid, encodeURIComponent(path))).toMatchObject({
      detailed_merge_status: "ci_must_pass",
    });
    const res = await admin(
      "PUT",
      `/projects/${encodeURIComponent(path)}/merge_requests/${iid}/merge`,
      { sha },
    );
    expect(res.status).toBe(405);
  });
});
