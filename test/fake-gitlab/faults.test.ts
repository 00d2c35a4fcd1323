import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { api, gitIn, type Api } from "../helpers/fake-gitlab/client.js";
import { fault, FakeGitLab } from "../helpers/fake-gitlab/index.js";

let gl: FakeGitLab;
let root: Api;
let token: string;
const P = "acme/faulty";
const ID = encodeURIComponent(P);
const MERGE = "/projects/:id/merge_requests/:iid/merge";

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 13 });
  await gl.createProject({ path: P });
  token = gl.createToken({ user: "root" });
  root = api(gl.apiUrl, token);
});

afterEach(() => {
  gl.faults.clear();
});

afterAll(async () => {
  await gl.close();
});

describe("faults", () => {
  it("answers 429 with GitLab's RateLimit headers and Retry-After, or bare plain text", async () => {
    gl.faults.add(
      fault.rateLimited({ method: "GET", path: "/projects/:id", retryAfterSec: 7, limit: 300 }),
    );
    const limited = await root("GET", `/projects/${ID}`);
    expect(limited.status).toBe(429);
    expect(limited.text).toBe("Retry later\n");
    expect(limited.headers.get("content-type")).toBe("text/plain");
    expect(limited.headers.get("retry-after")).toBe("7");
    expect(limited.headers.get("ratelimit-limit")).toBe("300");
    expect(limited.headers.get("ratelimit-remaining")).toBe("0");
    const reset = Number(limited.headers.get("ratelimit-reset"));
    expect(reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 5);
    expect((await root("GET", `/projects/${ID}`)).status).toBe(200);
    gl.faults.add(fault.rateLimited({ path: "/projects/:id", bare: true }));
    const bare = await root("GET", `/projects/${ID}`);
    expect(bare.status).toBe(429);
    expect(bare.headers.get("retry-after")).toBeNull();
    expect(bare.headers.get("ratelimit-reset")).toBeNull();
  });

  it("carries a merge out and then answers 502 (did-then-5xx); a retry meets the merged request", async () => {
    const sha = await gl.commit(P, "feature/x", { "x.txt": "x\n" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/x",
      title: "X",
      author: "root",
    });
    const rule = gl.faults.add(fault.didThen5xx({ method: "PUT", path: MERGE }));
    const answer = await root("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
    expect(answer.status).toBe(502);
    expect(answer.headers.get("content-type")).toContain("text/html");
    expect(answer.text).toContain("<html>");
    expect(gl.faults.fired(rule)).toBe(1);
    const mr = await root("GET", `/projects/${ID}/merge_requests/${iid}`);
    expect(mr.body).toMatchObject({
      state: "merged",
      merge_commit_sha: await gl.branchHead(P, "main"),
    });
    const retry = await root("PUT", `/projects/${ID}/merge_requests/${iid}/merge`, { sha });
    expect(retry).toMatchObject({ status: 405, body: { message: "405 Method Not Allowed" } });
    expect(gl.requestLog.filter((r) => r.route === MERGE).map((r) => [r.status, r.fault])).toEqual([
      [502, "502 after success"],
      [405, null],
    ]);
  });

  it("answers 503 with an HTML page instead of handling, the given number of times", async () => {
    gl.faults.add(fault.serverError(503, { path: "/projects/:id/merge_requests", times: 2 }));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await root("GET", `/projects/${ID}/merge_requests`)).status);
    expect(statuses).toEqual([503, 503, 200]);
  });

  it("answers GitLab-shaped errors by status and delays requests", async () => {
    gl.faults.add(
      fault.status(409, {
        method: "PUT",
        path: MERGE,
        message: "SHA does not match HEAD of source branch: abc",
      }),
    );
    const conflict = await root("PUT", `/projects/${ID}/merge_requests/999/merge`);
    expect(conflict).toMatchObject({
      status: 409,
      body: { message: "SHA does not match HEAD of source branch: abc" },
    });
    gl.faults.add(fault.delay(250, { path: "/version" }));
    const started = Date.now();
    expect((await root("GET", "/version")).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it("fails git's smart HTTP too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fake-gitlab-faults-"));
    try {
      gl.faults.add(fault.serverError(503, { path: /\.git\/info\/refs$/ }));
      const failed = await gitIn(dir, ["clone", "--quiet", gl.gitUrl(P, token), "a"]);
      expect(failed.code).not.toBe(0);
      expect(failed.stderr).toMatch(/503/);
      expect((await gitIn(dir, ["clone", "--quiet", gl.gitUrl(P, token), "b"])).code).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
