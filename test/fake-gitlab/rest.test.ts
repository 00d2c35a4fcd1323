import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, type Api } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";

let gl: FakeGitLab;
let bot: Api;
let alice: Api;
const P = "acme/app";
const ID = encodeURIComponent(P);

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 7 });
  gl.createUser("alice");
  await gl.createProject({ path: P, files: { "README.md": "line\n", "src/a.txt": "a\n" } });
  gl.addMember(P, "alice", 30);
  bot = api(gl.apiUrl, gl.createProjectToken(P, { accessLevel: 40, scopes: ["api"] }).token);
  alice = api(gl.apiUrl, gl.createToken({ user: "alice" }));
});

afterAll(async () => {
  await gl.settle();
  await gl.close();
});

let branches = 0;
async function openMr(
  files: Record<string, string>,
): Promise<{ iid: number; branch: string; sha: string }> {
  const branch = `feature/${++branches}`;
  const sha = await gl.commit(P, branch, files, { author: "alice", from: "main" });
  const { iid } = await gl.createMergeRequest({
    project: P,
    sourceBranch: branch,
    title: `Change ${branch}`,
    author: "alice",
  });
  return { iid, branch, sha };
}

describe("notes, emoji, labels", () => {
  it("creates, lists, edits and awards notes; quick actions run and leave the rest verbatim", async () => {
    const { iid } = await openMr({ "n.txt": "n\n" });
    const created = await alice("POST", `/projects/${ID}/merge_requests/${iid}/notes`, {
      body: "/label ~queued\n/trunk merge",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      body: "/trunk merge",
      system: false,
      noteable_type: "MergeRequest",
      noteable_iid: iid,
      author: { username: "alice" },
    });
    expect(gl.mergeRequest(P, iid).labels).toEqual(["queued"]);
    const onlyCommands = await alice("POST", `/projects/${ID}/merge_requests/${iid}/notes`, {
      body: "/draft",
    });
    expect(onlyCommands.status).toBe(202);
    expect(gl.mergeRequest(P, iid).title).toMatch(/^Draft: /);
    const noteId = created.body.id as number;
    const edited = await alice("PUT", `/projects/${ID}/merge_requests/${iid}/notes/${noteId}`, {
      body: "/trunk cancel",
    });
    expect(edited).toMatchObject({ status: 200, body: { id: noteId, body: "/trunk cancel" } });
    const award = await bot(
      "POST",
      `/projects/${ID}/merge_requests/${iid}/notes/${noteId}/award_emoji`,
      { name: "thumbsup" },
    );
    expect(award).toMatchObject({
      status: 201,
      body: { name: "thumbsup", awardable_id: noteId, awardable_type: "Note" },
    });
    expect(
      (
        await bot("POST", `/projects/${ID}/merge_requests/${iid}/notes/${noteId}/award_emoji`, {
          name: "thumbsup",
        })
      ).status,
    ).toBe(404);
    const listed = await bot("GET", `/projects/${ID}/merge_requests/${iid}/notes`, {
      sort: "asc",
      per_page: 100,
    });
    const notes = listed.items;
    expect(notes.filter((n) => n.system === false).map((n) => n.body)).toEqual(["/trunk cancel"]);
    expect(notes.some((n) => n.system === true && String(n.body).startsWith("added ~"))).toBe(true);
    expect(listed.headers.get("x-total")).toBe(String(notes.length));
  });

  it("adds and removes labels (unknown ones created) with a single update", async () => {
    const { iid } = await openMr({ "l.txt": "l\n" });
    const added = await bot("PUT", `/projects/${ID}/merge_requests/${iid}`, {
      add_labels: "merge-queue,blocked",
    });
    expect(added.body.labels).toEqual(["blocked", "merge-queue"]);
    const removed = await bot("PUT", `/projects/${ID}/merge_requests/${iid}`, {
      remove_labels: "blocked",
      add_labels: "ok",
    });
    expect(removed.body.labels).toEqual(["merge-queue", "ok"]);
    const none = await bot("PUT", `/projects/${ID}/merge_requests/${iid}`, {});
    expect(none.status).toBe(400);
  });
});

describe("commit statuses", () => {
  it("finds or creates: an external pipeline, updated in place by name, refusing a repeated state", async () => {
    const { sha, branch } = await openMr({ "st.txt": "s\n" });
    const first = await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "running",
      name: "mainline",
      target_url: "https://q/1",
    });
    expect(first).toMatchObject({
      status: 201,
      body: { status: "running", name: "mainline", ref: branch, sha },
    });
    const pipelines = await bot("GET", `/projects/${ID}/pipelines`, { sha });
    expect(pipelines.items).toEqual([
      expect.objectContaining({
        source: "external",
        status: "running",
        id: first.body.pipeline_id,
      }),
    ]);
    const again = await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "running",
      name: "mainline",
    });
    expect(again.status).toBe(400);
    expect(again.body).toEqual({
      message:
        'Cannot transition status via :run from :running (Reason(s): Status cannot transition via "run")',
    });
    const done = await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "success",
      context: "mainline",
    });
    expect(done.body).toMatchObject({
      id: first.body.id,
      status: "success",
      target_url: "https://q/1",
    });
    const reopened = await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "pending",
      name: "mainline",
    });
    expect(reopened.body.id).not.toBe(first.body.id);
    const latest = await bot("GET", `/projects/${ID}/repository/commits/${sha}/statuses`);
    expect(latest.items.map((s) => s.status)).toEqual(["pending"]);
    const all = await bot("GET", `/projects/${ID}/repository/commits/${sha}/statuses`, {
      all: true,
    });
    expect(all.items.length).toBe(2);
  });
});

describe("authentication and projects", () => {
  it("answers GitLab's 401, 403 insufficient_scope and 404 for a project the caller cannot see", async () => {
    const unknown = await api(gl.apiUrl, "glpat-nope")("GET", "/user");
    expect(unknown).toMatchObject({ status: 401, body: { message: "401 Unauthorized" } });
    const expired = await api(
      gl.apiUrl,
      gl.createToken({ user: "alice", expiresAt: "2020-01-01" }),
    )("GET", "/user");
    expect(expired).toMatchObject({
      status: 401,
      body: { error: "invalid_token", error_description: "Token has expired." },
    });
    const readOnly = api(gl.apiUrl, gl.createToken({ user: "alice", scopes: ["read_api"] }));
    expect((await readOnly("GET", `/projects/${ID}`)).status).toBe(200);
    const write = await readOnly("PUT", `/projects/${ID}/merge_requests/1`, { title: "x" });
    expect(write).toMatchObject({ status: 403, body: { error: "insufficient_scope" } });
    gl.createUser("eve");
    const eve = api(gl.apiUrl, gl.createToken({ user: "eve" }));
    expect(await eve("GET", `/projects/${ID}`)).toMatchObject({
      status: 404,
      body: { message: "404 Project Not Found" },
    });
    expect((await api(gl.apiUrl)("GET", `/projects/${ID}`)).status).toBe(404);
  });

  it("serves a project by id or path, the token's user and itself, and members", async () => {
    const byPath = await bot("GET", `/projects/${ID}`);
    const byId = await bot("GET", `/projects/${String(byPath.body.id)}`);
    expect(byId.body).toMatchObject({
      path_with_namespace: P,
      default_branch: "main",
      http_url_to_repo: `${gl.url}/${P}.git`,
      merge_method: "merge",
      squash_option: "default_off",
      namespace: { full_path: "acme" },
      permissions: { project_access: { access_level: 40 } },
    });
    const me = await bot("GET", "/user");
    expect(me.body).toMatchObject({
      bot: true,
      username: expect.stringMatching(/^project_\d+_bot_1$/) as string,
    });
    const self = await bot("GET", "/personal_access_tokens/self");
    expect(self.body).toMatchObject({ scopes: ["api"], active: true, revoked: false });
    const aliceId = (await alice("GET", "/user")).body.id as number;
    expect((await bot("GET", `/projects/${ID}/members/all/${aliceId}`)).body).toMatchObject({
      username: "alice",
      access_level: 30,
    });
    const version = await bot("GET", "/version");
    expect(version.body).toMatchObject({ version: "17.4.0" });
  });

  it("pages lists with GitLab's headers", async () => {
    const page = await bot("GET", `/projects/${ID}/merge_requests`, {
      per_page: 2,
      page: 1,
      state: "all",
    });
    const total = Number(page.headers.get("x-total"));
    expect(total).toBeGreaterThan(2);
    expect(page.items).toHaveLength(2);
    expect(page.headers.get("x-next-page")).toBe("2");
    expect(page.headers.get("x-per-page")).toBe("2");
    expect(page.headers.get("link")).toContain('rel="next"');
  });
});
