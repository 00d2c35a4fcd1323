/**
 * What the queue costs GitLab: every request Mainline makes to the fake GitLab (REST and git over
 * HTTP), counted from the first submission until the queue and its note are quiet, for merge
 * requests merged one at a time (concurrency 1) with the queue's note and commit status on.
 * The budget is 12 requests per merged merge request (bench/gitlab-queue.ts reports the figure).
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
  testBranchPipeline,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const PROJECT = "budget/app";
const REPO = { host: GITLAB_HOST, owner: "budget", name: "app" };
const QUEUE = { repo: REPO, targetBranch: "main" };
const CI = testBranchPipeline(`"true"`);
const MERGED = 4;

let world: GitLabWorld;
let server: TestServer;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  world.gl.createUser("alice");
  await world.gl.createProject({
    path: PROJECT,
    files: { "README.md": "app\n", ".gitlab-ci.yml": CI },
  });
  world.gl.addMember(PROJECT, "alice", 30);
  const { token } = world.gl.createProjectToken(PROJECT, { accessLevel: 40 });
  server = await startGitLabServer(world, { gitlabPresence: { pollIntervalMs: 50 } });
  await connectProject(world, server, PROJECT, token);
  const created = await server.call("createQueue", QUEUE);
  expect(created.status, created.text).toBe(200);
  const updated = await server.call("updateQueue", {
    ...QUEUE,
    mode: "single",
    concurrency: 1,
    batch: false,
    commentsEnabled: true,
    statusCheckEnabled: true,
  });
  expect(updated.status, updated.text).toBe(200);
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

/** Mainline's requests (the token's user), since `from` (a request log length). */
function requestsSince(from: number, bot: string) {
  return world.gl.requestLog.slice(from).filter((request) => request.user === bot);
}

describe("the queue's cost on GitLab", () => {
  it(`merges ${String(MERGED)} merge requests one at a time within 12 requests each`, async () => {
    const { gl } = world;
    const mrs = mergeRequestsOf(() => ({ world, server }), PROJECT, QUEUE, "budget");
    const numbers: number[] = [];
    for (let k = 0; k < MERGED; k++) numbers.push(await mrs.open({ [`b${String(k)}.txt`]: "b\n" }));
    await settleGitLab(world, server);
    const bot = gl.requestLog.find((request) => request.route === "/user")?.user ?? "";
    const from = gl.requestLog.length;
    for (const number of numbers) await mrs.submit(number);
    for (const number of numbers) expect((await mrs.settled(number)).state).toBe("merged");
    // Quiet: the last note edited, nothing more in flight.
    await settleGitLab(world, server);
    await server.services.gitlab?.presence.idle();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const made = requestsSince(from, bot);
    const byRoute = new Map<string, number>();
    for (const request of made) {
      const key = `${request.method} ${request.route}`;
      byRoute.set(key, (byRoute.get(key) ?? 0) + 1);
    }
    const perMerged = made.length / MERGED;
    expect(perMerged, JSON.stringify([...byRoute], null, 1)).toBeLessThanOrEqual(12);
  });
});
