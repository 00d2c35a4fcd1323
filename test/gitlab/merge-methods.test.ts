/**
 * GitLab's merge methods: in a fast-forward or semi-linear project GitLab merges a merge request
 * only once it is on the target's head, so the queue has GitLab rebase it before merging (merge
 * requests opened on an older main here, as most are). What lands is what was tested: the
 * landed tree is compared with the tested one.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  GITLAB_HOST,
  mergeRequestsOf,
  startGitLabServer,
  startGitLabWorld,
  type GitLabWorld,
  testBranchPipeline,
  FAILS_ON_BAD,
} from "../helpers/gitlab.js";
import type { TestServer } from "../helpers/server.js";

const CI = testBranchPipeline(FAILS_ON_BAD);

let world: GitLabWorld;
let server: TestServer;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  const { gl } = world;
  gl.createUser("alice");
  gl.createUser("mainline-bot");
  for (const [path, method] of [
    ["linear/ff", "ff"],
    ["linear/semi", "rebase_merge"],
  ] as const) {
    await gl.createProject({
      path,
      files: { "README.md": "app\n", ".gitlab-ci.yml": CI },
      settings: { merge_method: method },
    });
    gl.addMember(path, "alice", 30);
    gl.addMember(path, "mainline-bot", 40);
  }
  server = await startGitLabServer(world);
  const token = gl.createToken({ user: "mainline-bot" });
  const connected = await server.call<{
    connection: { webhook: { path: string; secret: string } };
  }>("gitlab/connect", { token });
  expect(connected.status, connected.text).toBe(200);
  const { path, secret } = connected.body.connection.webhook;
  for (const project of ["linear/ff", "linear/semi"]) {
    gl.addHook(project, { url: `${server.url}${path}`, token: secret });
    const answer = await server.call("createQueue", {
      repo: { host: GITLAB_HOST, owner: "linear", name: project.slice("linear/".length) },
      targetBranch: "main",
    });
    expect(answer.status, answer.text).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

function history(project: string): { parents: number; subject: string }[] {
  const out = execFileSync(
    "git",
    ["--git-dir", world.gl.gitDir(project), "log", "--first-parent", "--format=%P|%s", "main"],
    { encoding: "utf8" },
  );
  return out
    .trim()
    .split("\n")
    .map((line) => {
      const [parents = "", subject = ""] = line.split("|");
      return { parents: parents.split(" ").filter(Boolean).length, subject };
    });
}

describe("GitLab's merge methods", () => {
  for (const [project, name] of [
    ["linear/ff", "fast-forward"],
    ["linear/semi", "semi-linear"],
  ] as const) {
    it(`${name}: rebased by GitLab, merged, and only what passed lands`, async () => {
      const { gl } = world;
      const queue = {
        repo: { host: GITLAB_HOST, owner: "linear", name: project.slice("linear/".length) },
        targetBranch: "main",
      };
      const mrs = mergeRequestsOf(() => ({ world, server }), project, queue, name.slice(0, 4));
      // All three branch off today's main: each one after the first is behind when it merges.
      const numbers = [
        await mrs.open({ "a.txt": "a\n" }),
        await mrs.open({ "b.txt": "bad\n" }),
        await mrs.open({ "c.txt": "c\n" }),
      ];
      const [a, bad, c] = numbers as [number, number, number];
      for (const number of numbers) await mrs.submit(number);
      const states = [];
      for (const number of numbers) states.push((await mrs.settled(number)).state);
      expect(states).toEqual(["merged", "failed", "merged"]);
      expect(gl.mergeRequest(project, a).state).toBe("merged");
      expect(gl.mergeRequest(project, c).state).toBe("merged");
      expect(gl.mergeRequest(project, bad).state).toBe("opened");
      const head = (await gl.branchHead(project, "main")) ?? "";
      const repo = { organizationId: server.organizationId, ...queue.repo };
      const read = (path: string) => server.services.gitHost.readFile(repo, head, path);
      expect(await read("a.txt")).toBe("a\n");
      expect(await read("c.txt")).toBe("c\n");
      expect(await read("b.txt")).toBeUndefined();
      const merges = history(project).filter((commit) => commit.parents > 1);
      // Fast-forward: no merge commit at all; semi-linear: one per merge request, on a line.
      expect(merges).toHaveLength(project === "linear/ff" ? 0 : 2);
      // GitLab rebased the one behind (c, after a merged), at the queue's asking.
      const rebases = gl.requestLog.filter(
        (request) =>
          request.method === "PUT" && request.path.endsWith(`/merge_requests/${String(c)}/rebase`),
      );
      expect(rebases.length).toBeGreaterThan(0);
      // Landed as tested: the queue did not pause itself.
      const state = await server.call<{ state: string }>("getQueue", queue);
      expect(state.body.state).toBe("running");
    });
  }
});
