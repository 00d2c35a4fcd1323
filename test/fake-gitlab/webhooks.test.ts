import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { api, gitIn, type Api, type Json } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";
import { HookReceiver } from "../helpers/fake-gitlab/receiver.js";

let gl: FakeGitLab;
let receiver: HookReceiver;
let root: Api;
let hookId: number;
const P = "acme/hooks";
const ID = encodeURIComponent(P);
const TOKEN = "s3cr3t token/with=odd+chars!";

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 11 });
  receiver = await HookReceiver.start();
  gl.createUser("alice");
  await gl.createProject({
    path: P,
    files: { "README.md": "r\n", ".gitlab-ci.yml": "test:\n  script: echo ok\n" },
  });
  gl.addMember(P, "alice", 30);
  root = api(gl.apiUrl, gl.createToken({ user: "root" }));
  const created = await root("POST", `/projects/${ID}/hooks`, {
    url: receiver.url,
    token: TOKEN,
    push_events: true,
    merge_requests_events: true,
    note_events: true,
    pipeline_events: true,
    job_events: true,
  });
  expect(created.status).toBe(201);
  expect(created.body).not.toHaveProperty("token");
  hookId = created.body.id as number;
});

afterEach(() => {
  gl.setWebhookChaos({});
  receiver.statuses = [];
});

afterAll(async () => {
  await gl.settle();
  await gl.close();
  await receiver.close();
});

const payloads = (event: string): Json[] => receiver.events(event).map((r) => r.payload);

describe("deliveries", () => {
  it("carry GitLab's headers and documented payloads for push, merge request, note, pipeline and job events", async () => {
    receiver.clear();
    const sha = await gl.commit(
      P,
      "feature/a",
      { "a.txt": "a\n" },
      { author: "alice", message: "Add a\n\nbody" },
    );
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/a",
      title: "Add a",
      author: "alice",
      labels: ["x"],
    });
    const noteId = (await gl.addNote(P, iid, "alice", "/trunk merge")) ?? 0;
    await gl.editNote(P, iid, noteId, "/trunk cancel");
    await gl.settle();

    const [first] = receiver.received;
    expect(first?.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": "GitLab/17.4.0",
      "x-gitlab-event": "Push Hook",
      "x-gitlab-token": TOKEN,
      "x-gitlab-instance": gl.url,
      "x-gitlab-webhook-uuid": gl.hook(P, hookId).uuid,
    });
    const eventUuids = new Set(receiver.received.map((r) => r.headers["x-gitlab-event-uuid"]));
    const keys = new Set(receiver.received.map((r) => r.headers["idempotency-key"]));
    expect(eventUuids.size).toBe(receiver.received.length);
    expect(keys.size).toBe(receiver.received.length);

    const push = payloads("Push Hook")[0];
    expect(push).toMatchObject({
      object_kind: "push",
      event_name: "push",
      before: "0".repeat(40),
      after: sha,
      ref: "refs/heads/feature/a",
      checkout_sha: sha,
      user_username: "alice",
      project_id: gl.world.project(P).id,
      project: {
        path_with_namespace: P,
        default_branch: "main",
        web_url: `${gl.url}/${P}`,
        git_http_url: `${gl.url}/${P}.git`,
      },
      total_commits_count: 1,
    });
    expect((push?.commits as Json[])[0]).toMatchObject({
      id: sha,
      title: "Add a",
      message: "Add a\n\nbody",
      added: ["a.txt"],
      modified: [],
      removed: [],
    });

    const open = payloads("Merge Request Hook")[0];
    expect(open).toMatchObject({
      object_kind: "merge_request",
      event_type: "merge_request",
      user: { username: "alice" },
      object_attributes: {
        iid,
        action: "open",
        state: "opened",
        source_branch: "feature/a",
        target_branch: "main",
        last_commit: { id: sha },
        draft: false,
        detailed_merge_status: "unchecked",
      },
      labels: [expect.objectContaining({ title: "x" })],
    });

    const notes = payloads("Note Hook");
    expect(notes.map((n) => (n.object_attributes as Json).action)).toEqual(["create", "update"]);
    expect(notes[0]).toMatchObject({
      object_kind: "note",
      user: { username: "alice" },
      object_attributes: {
        id: noteId,
        note: "/trunk merge",
        noteable_type: "MergeRequest",
        system: false,
        internal: false,
      },
      merge_request: {
        iid,
        source_branch: "feature/a",
        target_branch: "main",
        state: "opened",
        last_commit: { id: sha },
      },
    });
    expect(notes[1]).toMatchObject({ object_attributes: { note: "/trunk cancel" } });

    const pipelineHooks = payloads("Pipeline Hook").filter(
      (p) => (p.object_attributes as Json).sha === sha,
    );
    expect(pipelineHooks.map((p) => (p.object_attributes as Json).status)).toEqual([
      "pending",
      "running",
      "success",
    ]);
    expect(pipelineHooks.at(-1)).toMatchObject({
      object_kind: "pipeline",
      object_attributes: {
        ref: "feature/a",
        source: "push",
        tag: false,
        detailed_status: "passed",
        stages: ["test"],
      },
      merge_request: null,
      builds: [
        expect.objectContaining({
          name: "test",
          stage: "test",
          status: "success",
          allow_failure: false,
          when: "on_success",
        }),
      ],
      commit: { id: sha },
    });
    const jobs = payloads("Job Hook").filter((j) => j.sha === sha);
    expect(jobs.map((j) => j.build_status)).toEqual(["pending", "running", "success"]);
    expect(jobs[0]).toMatchObject({ object_kind: "build", build_name: "test", ref: "feature/a" });
  });
});

describe("merge request updates and merges", () => {
  it("send update (with oldrev and label changes) and merge events, and the target's push", async () => {
    await gl.commit(P, "feature/b", { "b.txt": "b\n" }, { author: "alice" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/b",
      title: "B",
      author: "alice",
    });
    const old = gl.mergeRequest(P, iid).sha;
    await gl.settle();
    receiver.clear();
    const next = await gl.commit(P, "feature/b", { "b.txt": "b2\n" }, { author: "alice" });
    await root("PUT", `/projects/${ID}/merge_requests/${iid}`, { add_labels: "queued" });
    await root("GET", `/projects/${ID}/merge_requests/${iid}`);
    await root("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha: next });
    await gl.settle();
    const mrHooks = payloads("Merge Request Hook");
    expect(mrHooks.map((h) => (h.object_attributes as Json).action)).toEqual([
      "update",
      "update",
      "merge",
    ]);
    expect(mrHooks[0]).toMatchObject({
      object_attributes: { oldrev: old, last_commit: { id: next } },
    });
    expect(mrHooks[1]?.object_attributes).not.toHaveProperty("oldrev");
    expect(mrHooks[1]?.changes).toMatchObject({
      labels: { previous: [], current: [expect.objectContaining({ title: "queued" })] },
    });
    expect(mrHooks[2]).toMatchObject({
      object_attributes: { state: "merged", merge_commit_sha: await gl.branchHead(P, "main") },
    });
    const pushes = payloads("Push Hook").map((p) => [
      p.ref,
      p.after === "0".repeat(40) ? "deleted" : "moved",
    ]);
    expect(pushes).toEqual([
      ["refs/heads/feature/b", "moved"],
      ["refs/heads/main", "moved"],
      ["refs/heads/feature/b", "deleted"],
    ]);
  });
});

describe("failed deliveries", () => {
  it("keep the Idempotency-Key and event UUID when a delivery the receiver failed is resent", async () => {
    receiver.clear();
    receiver.statuses = [500];
    await gl.commit(P, "feature/c", { "c.txt": "c\n" }, { author: "alice" });
    await gl.settle();
    const failed = gl.deliveries.find((d) => d.status === 500);
    expect(failed).toMatchObject({ outcome: "failed", event: "Push Hook" });
    const events = await root("GET", `/projects/${ID}/hooks/${hookId}/events`, { status: 500 });
    expect(events.items).toEqual([
      expect.objectContaining({ id: failed?.id, response_status: "500", trigger: "push_hooks" }),
    ]);
    const resent = await root(
      "POST",
      `/projects/${ID}/hooks/${hookId}/events/${String(failed?.id)}/resend`,
    );
    expect(resent).toMatchObject({ status: 201, body: { response_status: 200 } });
    const [a, b] = receiver.events("Push Hook");
    expect(b?.headers["idempotency-key"]).toBe(a?.headers["idempotency-key"]);
    expect(b?.headers["x-gitlab-event-uuid"]).toBe(a?.headers["x-gitlab-event-uuid"]);
    expect(b?.body).toBe(a?.body);
  });

  it("disable a hook after four failures: for a while after 5xx, for good after 4xx", async () => {
    for (const [status, alert] of [
      [503, "temporarily_disabled"],
      [404, "disabled"],
    ] as const) {
      gl.enableHook(P, hookId);
      receiver.clear();
      receiver.statuses = [status, status, status, status];
      const since = gl.deliveries.length;
      for (let i = 0; i < 3; i++) {
        await gl.commit(P, `feature/d${status}`, { [`d${i}.txt`]: "d\n" }, { author: "alice" });
      }
      await gl.settle();
      // Pushes, pipelines and jobs all count: the first four fail, the rest are not sent.
      expect(receiver.received).toHaveLength(4);
      const hook = await root("GET", `/projects/${ID}/hooks/${hookId}`);
      expect(hook.body.alert_status).toBe(alert);
      if (alert === "disabled") expect(hook.body.disabled_until).toBeNull();
      else expect(Date.parse(hook.body.disabled_until as string)).toBeGreaterThan(Date.now());
      const outcomes = gl.deliveries.slice(since).map((d) => d.outcome);
      expect(outcomes.slice(0, 4)).toEqual(["failed", "failed", "failed", "failed"]);
      expect(outcomes.slice(4).every((o) => o === "hook-disabled")).toBe(true);
      expect(outcomes.length).toBeGreaterThan(4);
    }
    gl.enableHook(P, hookId);
  });
});

describe("limits and chaos", () => {
  it("skip Push Hooks for a push of more than three refs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fake-gitlab-hooks-"));
    try {
      const token = gl.createToken({ user: "alice" });
      expect((await gitIn(dir, ["clone", "--quiet", gl.gitUrl(P, token), "w"])).code).toBe(0);
      const w = join(dir, "w");
      receiver.clear();
      const three = ["e1", "e2", "e3"].map((b) => `HEAD:refs/heads/${b}`);
      expect((await gitIn(w, ["push", "--quiet", "origin", ...three])).code).toBe(0);
      await gl.settle();
      expect(receiver.events("Push Hook")).toHaveLength(3);
      const four = ["f1", "f2", "f3", "f4"].map((b) => `HEAD:refs/heads/${b}`);
      expect((await gitIn(w, ["push", "--quiet", "origin", ...four])).code).toBe(0);
      await gl.settle();
      expect(receiver.events("Push Hook")).toHaveLength(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("under chaos, duplicate (same Idempotency-Key) and drop deliveries", async () => {
    receiver.clear();
    gl.setWebhookChaos({ duplicate: 1 });
    await gl.commit(P, "feature/g", { "g.txt": "g\n" }, { author: "alice" });
    await gl.settle();
    const [a, b] = receiver.events("Push Hook");
    expect(b?.headers["idempotency-key"]).toBe(a?.headers["idempotency-key"]);
    gl.setWebhookChaos({ drop: 1 });
    receiver.clear();
    await gl.commit(P, "feature/g", { "g.txt": "g2\n" }, { author: "alice" });
    await gl.settle();
    expect(receiver.received).toHaveLength(0);
    expect(gl.deliveries.at(-1)?.outcome).toBe("dropped");
  });

  it("under chaos, holds a delivery back so that a later one arrives first", async () => {
    receiver.clear();
    gl.setWebhookChaos({ reorder: 1, lateMs: 1_000 });
    const first = await gl.commit(P, "feature/h", { "h.txt": "1\n" }, { author: "alice" });
    gl.setWebhookChaos({});
    const second = await gl.commit(P, "feature/i", { "i.txt": "2\n" }, { author: "alice" });
    await gl.settle();
    const order = receiver.events("Push Hook").map((r) => r.payload.after);
    expect(order).toEqual([second, first]);
    expect(
      gl.deliveries.find((d) => d.payload.after === first && d.event === "Push Hook")?.chaos,
    ).toBe("late");
  });
});

describe("version profiles", () => {
  it("sends no Idempotency-Key before 17.4, no webhook UUID before 16.2, no note edits before 16.11", async () => {
    const old = await FakeGitLab.start({ seed: 12, version: "16.0.5" });
    const r = await HookReceiver.start();
    try {
      await old.createProject({ path: P });
      old.addHook(P, { url: r.url, token: "t", events: ["push", "note", "merge_requests"] });
      await old.commit(P, "x", { "x.txt": "x\n" });
      const { iid } = await old.createMergeRequest({
        project: P,
        sourceBranch: "x",
        title: "X",
        author: "root",
      });
      const note = (await old.addNote(P, iid, "root", "hi")) ?? 0;
      await old.editNote(P, iid, note, "edited");
      await old.settle();
      expect(r.received[0]?.headers["user-agent"]).toBe("GitLab/16.0.5");
      expect(r.received.every((d) => !("idempotency-key" in d.headers))).toBe(true);
      expect(r.received.every((d) => !("x-gitlab-webhook-uuid" in d.headers))).toBe(true);
      const notes = r.events("Note Hook");
      expect(notes).toHaveLength(1);
      expect(notes[0]?.payload.object_attributes).not.toHaveProperty("action");
    } finally {
      await old.close();
      await r.close();
    }
  });
});
