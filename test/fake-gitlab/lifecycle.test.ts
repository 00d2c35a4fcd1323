import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, gitIn, type Api } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";
import { HookReceiver } from "../helpers/fake-gitlab/receiver.js";

let gl: FakeGitLab;
let receiver: HookReceiver;
let root: Api;
let work: string;
const P = "acme/life";
const ID = encodeURIComponent(P);

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 17, uncheckedReads: 2 });
  receiver = await HookReceiver.start();
  work = mkdtempSync(join(tmpdir(), "fake-gitlab-life-"));
  gl.createUser("alice");
  gl.createUser("maint");
  await gl.createProject({
    path: P,
    files: {
      "README.md": "r\n",
      ".gitlab-ci.yml":
        'test:\n  rules:\n    - if: $CI_PIPELINE_SOURCE == "merge_request_event"\n  script: sleep 1\n',
    },
    settings: {
      only_allow_merge_if_pipeline_succeeds: true,
      only_allow_merge_if_all_discussions_are_resolved: true,
    },
  });
  gl.addMember(P, "alice", 30);
  gl.addMember(P, "maint", 40);
  gl.addHook(P, { url: receiver.url, events: ["merge_requests"] });
  root = api(gl.apiUrl, gl.createToken({ user: "root" }));
});

afterAll(async () => {
  await gl.settle();
  await gl.close();
  await receiver.close();
  rmSync(work, { recursive: true, force: true });
});

const read = async (iid: number): Promise<Record<string, unknown>> =>
  (await root("GET", `/projects/${ID}/merge_requests/${iid}`)).body;

describe("a merge request's life", () => {
  it("answers checking for `uncheckedReads` reads, ci_still_running while its pipeline runs, then discussions", async () => {
    await gl.commit(P, "feature/a", { "a.txt": "a\n" }, { author: "alice" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/a",
      title: "A",
      author: "alice",
    });
    expect((await read(iid)).detailed_merge_status).toBe("checking");
    expect((await read(iid)).detailed_merge_status).toBe("checking");
    const running = await read(iid);
    expect(running).toMatchObject({
      detailed_merge_status: "ci_still_running",
      head_pipeline: { status: "running" },
    });
    const sha = running.sha as string;
    expect((await root("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha })).status).toBe(
      405,
    );
    const thread = await gl.addThread(P, iid, "maint", "Please rename this.");
    await gl.settle();
    expect(await read(iid)).toMatchObject({
      detailed_merge_status: "discussions_not_resolved",
      blocking_discussions_resolved: false,
    });
    gl.resolveThread(P, iid, thread.discussionId);
    expect(await read(iid)).toMatchObject({
      detailed_merge_status: "mergeable",
      head_pipeline: { status: "success" },
    });
  });

  it("merges on a `/merge` quick action by someone allowed to", async () => {
    await gl.commit(P, "feature/b", { "b.txt": "b\n" }, { author: "alice" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/b",
      title: "B",
      author: "alice",
    });
    await gl.settle();
    expect(await gl.addNote(P, iid, "alice", "/merge")).toBeNull();
    expect(gl.mergeRequest(P, iid).state).toBe("opened");
    expect(await gl.addNote(P, iid, "maint", "Thanks!\n/merge")).not.toBeNull();
    expect(gl.mergeRequest(P, iid).state).toBe("merged");
    expect(
      gl
        .notes(P, iid)
        .filter((n) => !n.system)
        .map((n) => n.body),
    ).toEqual(["Thanks!"]);
  });

  it("marks a merge request merged when a push brings its head into the target, and rechecks the others", async () => {
    await gl.commit(P, "feature/c", { "c.txt": "c\n" }, { author: "alice" });
    await gl.commit(P, "feature/d", { "d.txt": "d\n" }, { author: "alice" });
    const c = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/c",
      title: "C",
      author: "alice",
    });
    const d = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/d",
      title: "D",
      author: "alice",
    });
    await gl.settle();
    for (let i = 0; i < 3; i++) await read(d.iid);
    expect(gl.mergeRequest(P, d.iid).mergeStatus).toBe("can_be_merged");
    const dir = join(work, "c");
    expect(
      (
        await gitIn(work, [
          "clone",
          "--quiet",
          gl.gitUrl(P, gl.createToken({ user: "maint" })),
          dir,
        ])
      ).code,
    ).toBe(0);
    await gitIn(dir, ["merge", "--quiet", "--ff-only", "origin/feature/c"]);
    receiver.clear();
    expect((await gitIn(dir, ["push", "--quiet", "origin", "HEAD:main"])).code).toBe(0);
    await gl.settle();
    expect(gl.mergeRequest(P, c.iid)).toMatchObject({ state: "merged", mergeCommitSha: null });
    expect(
      receiver
        .events("Merge Request Hook")
        .map((h) => (h.payload.object_attributes as Record<string, unknown>).action),
    ).toEqual(["merge"]);
    expect(gl.mergeRequest(P, d.iid).mergeStatus).toBe("unchecked");
    const listed = await root("GET", `/projects/${ID}/merge_requests`, { state: "merged" });
    expect(listed.items.map((m) => m.iid)).toContain(c.iid);
  });

  it("opens merge requests over REST, refusing a second one for the same branches", async () => {
    await gl.commit(P, "feature/e", { "e.txt": "e\n" }, { author: "alice" });
    const alice = api(gl.apiUrl, gl.createToken({ user: "alice" }));
    const params = {
      source_branch: "feature/e",
      target_branch: "main",
      title: "Draft: E",
      labels: "a,b",
    };
    const created = await alice("POST", `/projects/${ID}/merge_requests`, params);
    expect(created).toMatchObject({
      status: 201,
      body: {
        draft: true,
        labels: ["a", "b"],
        detailed_merge_status: "checking",
        diff_refs: null,
      },
    });
    const again = await alice("POST", `/projects/${ID}/merge_requests`, params);
    expect(again.status).toBe(409);
    expect(again.body.message).toEqual([
      `Another open merge request already exists for this source branch: !${String(created.body.iid)}`,
    ]);
    expect((await alice("POST", `/projects/${ID}/merge_requests`, { title: "x" })).body).toEqual({
      error: "source_branch is missing, target_branch is missing",
    });
  });
});

describe("repository reads", () => {
  it("serves raw files, and deletes unprotected branches only", async () => {
    const raw = await root(
      "GET",
      `/projects/${ID}/repository/files/${encodeURIComponent(".gitlab-ci.yml")}/raw`,
      { ref: "main" },
    );
    expect(raw.text).toContain("merge_request_event");
    const missing = await root("GET", `/projects/${ID}/repository/files/nope.txt/raw`, {
      ref: "main",
    });
    expect(missing).toMatchObject({ status: 404, body: { message: "404 File Not Found" } });
    await gl.commit(P, "tmp/x", { "x.txt": "x\n" });
    expect(
      (await root("DELETE", `/projects/${ID}/repository/branches/${encodeURIComponent("tmp/x")}`))
        .status,
    ).toBe(204);
    expect(await gl.branchHead(P, "tmp/x")).toBeNull();
    expect((await root("DELETE", `/projects/${ID}/repository/branches/main`)).status).toBe(405);
    expect((await root("GET", `/projects/${ID}/repository/branches/nope`)).body).toEqual({
      message: "404 Branch Not Found",
    });
  });
});
