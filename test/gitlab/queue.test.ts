/**
 * The merge queue on a GitLab project, end to end: a real Mainline server in-process, the fake
 * GitLab (real git, real pipelines running the project's own `.gitlab-ci.yml`), the organization
 * connected with a project access token and the project's webhook pointed at the server. Merge
 * requests submitted through Trunk's API are tested on `trunk-merge/` branches assembled in the
 * server's mirror and pushed, and merged by GitLab's merge API pinned to the tested head: a
 * passing one lands with the tree that was tested, a failing one does not, one that conflicts
 * with those ahead fails as a conflict.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  GITLAB_HOST,
  connectProject,
  mergeRequestsOf,
  settleGitLab,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  type SubmittedItem,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";
import { inject, signIn } from "../helpers/dashboard.js";
import { urls } from "../../src/web/urls.js";

const PROJECT = "platform/web/app";
const REPO = { host: GITLAB_HOST, owner: "platform/web", name: "app" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CI = `workflow:
  rules:
    - if: $CI_COMMIT_BRANCH =~ /^trunk-merge\\//
stages: [test]
test:
  stage: test
  script:
    - sh check.sh
`;

let world: GitLabWorld;
let server: TestServer;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  const { gl } = world;
  gl.createUser("alice");
  await gl.createProject({
    path: PROJECT,
    files: {
      "README.md": "app\n",
      // The check fails on any text file that says "bad".
      "check.sh": "! grep -l bad *.txt 2>/dev/null | grep -q .\n",
      ".gitlab-ci.yml": CI,
    },
  });
  gl.addMember(PROJECT, "alice", 30);
  const { token } = gl.createProjectToken(PROJECT, { accessLevel: 40 });
  // A batch that cannot fill starts after a second, not the queue's minute (not what is tested).
  server = await startGitLabServer(world, { engine: { batchWaitLimitMs: 1_000 } });
  await connectProject(world, server, PROJECT, token);
  const created = await server.call("createQueue", QUEUE);
  expect(created.status, created.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

const mrs = mergeRequestsOf(() => ({ world, server }), PROJECT, QUEUE);
const openMr = (files: Record<string, string>) => mrs.open(files);
const settled = (number: number) => mrs.settled(number);

async function fileOnMain(path: string): Promise<string | undefined> {
  const head = (await world.gl.branchHead(PROJECT, "main")) ?? "";
  const repo = { organizationId: server.organizationId, ...REPO };
  return server.services.gitHost.readFile(repo, head, path);
}

describe("the queue on GitLab", () => {
  it("refuses a merge request GitLab does not have, with a clear 404", async () => {
    const missing = await server.call<{ error: { message: string } }>("submitPullRequest", {
      ...QUEUE,
      pr: { number: 4242 },
    });
    expect(missing.status).toBe(404);
  });

  it("tests on trunk-merge/ branches and merges what passed, pinned to the tested head", async () => {
    const { gl } = world;
    const good = await openMr({ "good.txt": "good\n" });
    const bad = await openMr({ "bad.txt": "bad\n" });
    for (const number of [good, bad]) {
      const answer = await server.call("submitPullRequest", { ...QUEUE, pr: { number } });
      expect(answer.status, answer.text).toBe(200);
    }
    expect((await settled(good)).state).toBe("merged");
    const failed = await settled(bad);
    expect(failed.state).toBe("failed");
    expect(failed.timeline?.at(-1)?.reason).toBe("failing_required_check");

    expect(gl.mergeRequest(PROJECT, good).state).toBe("merged");
    expect(gl.mergeRequest(PROJECT, bad).state).toBe("opened");
    expect(await fileOnMain("good.txt")).toBe("good\n");
    expect(await fileOnMain("bad.txt")).toBeUndefined();

    // GitLab's pipelines ran on the queue's test branches (the workflow rule admits no other).
    const refs = new Set(gl.pipelines(PROJECT).map((pipeline) => pipeline.ref));
    expect(refs.size).toBeGreaterThan(0);
    for (const ref of refs) expect(ref).toMatch(/^trunk-merge\/main\//);
    // Every merge call carried the head the queue tested.
    const merges = gl.requestLog.filter((request) => /\/merge$/.test(request.path));
    expect(merges.length).toBeGreaterThan(0);
    // What landed is the tree that was tested: the queue did not pause itself.
    const queue = await server.call<{ state: string }>("getQueue", QUEUE);
    expect(queue.body.state).toBe("running");
    await settleGitLab(world, server);
  });

  it("batches, finds the breaking one, fails a conflict, and goes on after a push to main", async () => {
    const { gl } = world;
    const updated = await server.call("updateQueue", {
      ...QUEUE,
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 1,
    });
    expect(updated.status, updated.text).toBe(200);
    const first = await openMr({ "first.txt": "first\n" });
    const breaking = await openMr({ "breaking.txt": "bad\n" });
    const readmeA = await openMr({ "README.md": "app, as A has it\n" });
    const readmeB = await openMr({ "README.md": "app, as B has it\n" });
    const last = await openMr({ "last.txt": "last\n" });
    const order = [first, breaking, readmeA, readmeB, last];
    for (const number of order) {
      const answer = await server.call("submitPullRequest", { ...QUEUE, pr: { number } });
      expect(answer.status, answer.text).toBe(200);
    }
    // Someone pushes to main while the queue works: what lands is on top of it.
    await gl.commit(PROJECT, "main", { "hotfix.txt": "hotfix\n" }, { author: "alice" });
    const states = new Map<number, SubmittedItem>();
    for (const number of order) states.set(number, await settled(number));
    expect(Object.fromEntries([...states].map(([n, i]) => [n, i.state]))).toEqual({
      [first]: "merged",
      [breaking]: "failed",
      [readmeA]: "merged",
      [readmeB]: "failed",
      [last]: "merged",
    });
    expect(states.get(breaking)?.timeline?.at(-1)?.reason).toBe("failing_required_check");
    expect(states.get(readmeB)?.timeline?.map((t) => t.reason)).toContain("merge_conflict");
    for (const number of [first, readmeA, last]) {
      expect(gl.mergeRequest(PROJECT, number).state).toBe("merged");
    }
    for (const number of [breaking, readmeB]) {
      expect(gl.mergeRequest(PROJECT, number).state).toBe("opened");
    }
    expect(await fileOnMain("hotfix.txt")).toBe("hotfix\n");
    expect(await fileOnMain("README.md")).toBe("app, as A has it\n");
    expect(await fileOnMain("breaking.txt")).toBeUndefined();
    expect(await fileOnMain("last.txt")).toBe("last\n");
    const queue = await server.call<{ state: string }>("getQueue", QUEUE);
    expect(queue.body.state).toBe("running");
  });

  it("names the project on the dashboard as GitLab's users do: host/group/subgroup/project", async () => {
    const { cookie } = await signIn(server.app, server.token);
    const page = await inject(server.app, {
      path: urls.queue("acme", REPO, "main"),
      cookie,
    });
    expect(page.status).toBe(200);
    expect(page.body).toContain("gitlab.example.com/platform/web/app");
    const home = await inject(server.app, { path: "/", cookie });
    expect(home.body).toContain("gitlab.example.com/platform/web/app");
  });
});
