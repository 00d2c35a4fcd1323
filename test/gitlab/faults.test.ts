/**
 * The queue on GitLab when GitLab fails: a merge GitLab carried out but answered 502 is read back
 * and counted once, never redone; reads that answer 5xx or 429 are tried again (after the wait
 * GitLab names); a push of a test branch that fails is tried again by the queue; webhooks that are
 * lost, duplicated or late change nothing of the outcome (the CI reads the pipelines itself).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  GITLAB_HOST,
  connectProject,
  mergeRequestsOf,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  testBranchPipeline,
  FAILS_ON_BAD,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const PROJECT = "platform/api";
const REPO = { host: GITLAB_HOST, owner: "platform", name: "api" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CI = testBranchPipeline(FAILS_ON_BAD);

let world: GitLabWorld;
let server: TestServer;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  const { gl } = world;
  gl.createUser("alice");
  await gl.createProject({ path: PROJECT, files: { "README.md": "api\n", ".gitlab-ci.yml": CI } });
  gl.addMember(PROJECT, "alice", 30);
  const { token } = gl.createProjectToken(PROJECT, { accessLevel: 40 });
  server = await startGitLabServer(world);
  await connectProject(world, server, PROJECT, token);
  const created = await server.call("createQueue", QUEUE);
  expect(created.status, created.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

const mrs = mergeRequestsOf(() => ({ world, server }), PROJECT, QUEUE, "fault");
async function submitMr(files: Record<string, string>): Promise<number> {
  const iid = await mrs.open(files);
  await mrs.submit(iid);
  return iid;
}
const state = (number: number) => mrs.state(number);
const settled = async (number: number) => (await mrs.settled(number)).state;

const mergeCalls = (iid: number) =>
  world.gl.requestLog.filter(
    (request) =>
      request.method === "PUT" && request.path.endsWith(`/merge_requests/${String(iid)}/merge`),
  );

describe("the queue on GitLab, when GitLab fails", () => {
  it("reads back a merge GitLab did but answered 502, and merges it once", async () => {
    const { gl } = world;
    const rule = gl.faults.add(
      gl.fault.didThen5xx({ method: "PUT", path: "/projects/:id/merge_requests/:iid/merge" }),
    );
    const iid = await submitMr({ "once.txt": "once\n" });
    expect(await settled(iid)).toBe("merged");
    expect(gl.faults.fired(rule)).toBe(1);
    expect(gl.mergeRequest(PROJECT, iid).state).toBe("merged");
    // Answered 502, read back as merged: never sent again.
    expect(mergeCalls(iid)).toHaveLength(1);
    expect((await server.call<{ state: string }>("getQueue", QUEUE)).body.state).toBe("running");
  });

  it("tries reads again after 5xx and 429, and a push of a test branch that failed", async () => {
    const { gl } = world;
    const rules = [
      gl.faults.add(
        gl.fault.serverError(502, {
          method: "GET",
          path: "/projects/:id/merge_requests/:iid",
          times: 2,
        }),
      ),
      gl.faults.add(
        gl.fault.rateLimited({
          method: "GET",
          path: "/projects/:id/repository/commits/:sha/statuses",
          retryAfterSec: 1,
        }),
      ),
      gl.faults.add(
        gl.fault.serverError(503, { method: "POST", path: /git-receive-pack$/, times: 1 }),
      ),
    ];
    const iid = await submitMr({ "retried.txt": "retried\n" });
    expect(await settled(iid)).toBe("merged");
    for (const rule of rules) expect(gl.faults.fired(rule)).toBeGreaterThan(0);
    expect(mergeCalls(iid)).toHaveLength(1);
  });

  it("merges the same whatever happens to the webhooks (duplicated, late, lost)", async () => {
    const { gl } = world;
    gl.setWebhookChaos({ duplicate: 0.3, reorder: 0.3, lateMs: 500, drop: 0.3 });
    try {
      const good = await submitMr({ "chaos-good.txt": "good\n" });
      const bad = await submitMr({ "chaos-bad.txt": "bad\n" });
      expect(await settled(good)).toBe("merged");
      expect(await settled(bad)).toBe("failed");
      expect(gl.mergeRequest(PROJECT, good).state).toBe("merged");
      expect(gl.mergeRequest(PROJECT, bad).state).toBe("opened");
      expect(mergeCalls(good)).toHaveLength(1);
      expect(mergeCalls(bad)).toHaveLength(0);
    } finally {
      gl.setWebhookChaos({});
    }
  });

  it("finds what lost webhooks did not say in a reconcile pass: a closed MR, a moved main", async () => {
    const { gl } = world;
    const reconciler = server.services.gitlab?.reconciler;
    if (!reconciler) throw new Error("no GitLab provider");
    await reconciler.pass();
    gl.setWebhookChaos({ drop: 1 });
    gl.setJobOutcome(PROJECT, "test", "stuck");
    try {
      const iid = await submitMr({ "closed-later.txt": "closed later\n" });
      await expect.poll(() => state(iid), { timeout: 30_000, interval: 100 }).toBe("testing");
      await gl.closeMergeRequest(PROJECT, iid, { by: "alice" });
      await gl.commit(PROJECT, "main", { "moved.txt": "moved\n" }, { author: "alice" });
      // Nothing reached the server: the queue still tests it.
      expect(await state(iid)).toBe("testing");
      const report = await reconciler.pass();
      expect(report.failed).toBe(0);
      expect(report.changes.map((change) => change.type).sort()).toEqual([
        "branch_moved",
        "pull_request_changed",
      ]);
      expect(await settled(iid)).toBe("cancelled");
    } finally {
      gl.setWebhookChaos({});
      gl.setJobOutcome(PROJECT, "test", null);
    }
  });
});
