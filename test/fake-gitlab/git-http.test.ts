import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, gitIn, type Api } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";

let gl: FakeGitLab;
let work: string;
let devToken: string;
let maintainerToken: string;
let readOnlyToken: string;
let dev: Api;
const P = "acme/tools/app";

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 3 });
  work = mkdtempSync(join(tmpdir(), "fake-gitlab-git-"));
  gl.createUser("dev");
  gl.createUser("maint");
  gl.createUser("outsider");
  await gl.createProject({ path: P, files: { "README.md": "hello\n" } });
  gl.addMember(P, "dev", 30);
  gl.addMember(P, "maint", 40);
  devToken = gl.createToken({ user: "dev" });
  maintainerToken = gl.createToken({ user: "maint" });
  readOnlyToken = gl.createToken({ user: "dev", scopes: ["read_api", "read_repository"] });
  dev = api(gl.apiUrl, devToken);
});

afterAll(async () => {
  await gl.close();
  rmSync(work, { recursive: true, force: true });
});

async function clone(
  token: string | undefined,
  name: string,
): Promise<{ code: number; dir: string; stderr: string }> {
  const dir = join(work, name);
  const url = token === undefined ? `${gl.url}/${P}.git` : gl.gitUrl(P, token);
  const result = await gitIn(work, ["clone", "--quiet", url, dir]);
  return { code: result.code, dir, stderr: result.stderr };
}

async function commitFile(dir: string, file: string, text: string): Promise<string> {
  writeFileSync(join(dir, file), text);
  await gitIn(dir, ["add", file]);
  await gitIn(dir, ["commit", "--quiet", "-m", `change ${file}`]);
  return (await gitIn(dir, ["rev-parse", "HEAD"])).stdout.trim();
}

describe("git over HTTP", () => {
  it("clones and pushes with a token as the Basic password, and sends a Push Hook's effects", async () => {
    const { code, dir } = await clone(devToken, "dev-clone");
    expect(code).toBe(0);
    expect((await gitIn(dir, ["log", "--format=%s"])).stdout.trim()).toBe("Initial commit");
    const sha = await commitFile(dir, "a.txt", "a\n");
    const push = await gitIn(dir, ["push", "--quiet", "origin", "HEAD:refs/heads/feature/a"]);
    expect(push.code).toBe(0);
    expect(await gl.branchHead(P, "feature/a")).toBe(sha);
    const branch = await dev(
      "GET",
      `/projects/${encodeURIComponent(P)}/repository/branches/${encodeURIComponent("feature/a")}`,
    );
    expect(branch.status).toBe(200);
    expect(branch.body.commit).toMatchObject({ id: sha, title: "change a.txt" });
    expect(branch.body).toMatchObject({
      name: "feature/a",
      protected: false,
      default: false,
      merged: false,
    });
    const log = gl.requestLog.filter(
      (r) => r.route === "git" && r.path.endsWith("git-receive-pack"),
    );
    expect(log.at(-1)).toMatchObject({ method: "POST", status: 200, user: "dev" });
  });

  it("asks for credentials without a token, and refuses unknown tokens and outsiders", async () => {
    const anonymous = await fetch(`${gl.url}/${P}.git/info/refs?service=git-upload-pack`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe('Basic realm="GitLab"');
    expect((await clone("glpat-not-a-token", "bad")).code).not.toBe(0);
    const outsider = await clone(gl.createToken({ user: "outsider" }), "outsider");
    expect(outsider.code).not.toBe(0);
    expect(outsider.stderr).toMatch(/404|not found/i);
  });

  it("refuses a push with a token lacking write_repository (403), though it may clone", async () => {
    const { code, dir } = await clone(readOnlyToken, "read-only");
    expect(code).toBe(0);
    await commitFile(dir, "b.txt", "b\n");
    const push = await gitIn(dir, ["push", "origin", "HEAD:refs/heads/feature/b"]);
    expect(push.code).not.toBe(0);
    expect(push.stderr).toMatch(/403/);
    expect(await gl.branchHead(P, "feature/b")).toBeNull();
  });

  it("protects the default branch: no push by a Developer, no force-push by a Maintainer", async () => {
    const { dir } = await clone(devToken, "protected-dev");
    await commitFile(dir, "c.txt", "c\n");
    const byDev = await gitIn(dir, ["push", "origin", "HEAD:main"]);
    expect(byDev.code).not.toBe(0);
    expect(byDev.stderr).toContain(
      "You are not allowed to push code to protected branches on this project.",
    );
    const main = await gl.branchHead(P, "main");

    const maint = await clone(maintainerToken, "protected-maint");
    const ok = await commitFile(maint.dir, "d.txt", "d\n");
    expect((await gitIn(maint.dir, ["push", "--quiet", "origin", "HEAD:main"])).code).toBe(0);
    expect(await gl.branchHead(P, "main")).toBe(ok);
    await gitIn(maint.dir, ["reset", "--quiet", "--hard", "HEAD~1"]);
    await commitFile(maint.dir, "e.txt", "e\n");
    const force = await gitIn(maint.dir, ["push", "--force", "origin", "HEAD:main"]);
    expect(force.code).not.toBe(0);
    expect(force.stderr).toContain(
      "You are not allowed to force push code to a protected branch on this project.",
    );
    expect(await gl.branchHead(P, "main")).toBe(ok);
    expect(main).not.toBe(ok);
    await gl.settle();
  });

  it("keeps refs/merge-requests/:iid/head in step with the source, fetchable and not pushable", async () => {
    await gl.commit(P, "feature/mr", { "mr.txt": "1\n" }, { author: "dev" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/mr",
      title: "MR",
      author: "dev",
    });
    const { dir } = await clone(devToken, "mr-follow");
    const ref = `refs/merge-requests/${iid}/head`;
    expect((await gitIn(dir, ["fetch", "--quiet", "origin", ref])).code).toBe(0);
    const first = (await gitIn(dir, ["rev-parse", "FETCH_HEAD"])).stdout.trim();
    expect(first).toBe(await gl.branchHead(P, "feature/mr"));

    await gitIn(dir, ["checkout", "--quiet", "-b", "local", "origin/feature/mr"]);
    const next = await commitFile(dir, "mr.txt", "2\n");
    expect((await gitIn(dir, ["push", "--quiet", "origin", "HEAD:feature/mr"])).code).toBe(0);
    await gl.settle();
    expect(gl.mergeRequest(P, iid).sha).toBe(next);
    expect((await gitIn(dir, ["fetch", "--quiet", "origin", ref])).code).toBe(0);
    expect((await gitIn(dir, ["rev-parse", "FETCH_HEAD"])).stdout.trim()).toBe(next);
    const hidden = await gitIn(dir, ["push", "origin", `HEAD~1:${ref}`]);
    expect(hidden.code).not.toBe(0);
    expect(hidden.stderr).toMatch(/hidden ref/);
  });

  it("serves a gzip-compressed upload-pack request (Content-Encoding: gzip)", async () => {
    const main = (await gl.branchHead(P, "main")) ?? "";
    const request = `0032want ${main}\n00000009done\n`;
    const response = await fetch(`${gl.url}/${P}.git/git-upload-pack`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`x:${devToken}`).toString("base64")}`,
        "content-type": "application/x-git-upload-pack-request",
        "content-encoding": "gzip",
      },
      body: gzipSync(Buffer.from(request)),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-git-upload-pack-result");
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(bytes.subarray(0, 8).toString()).toBe("0008NAK\n");
    expect(bytes.includes(Buffer.from("PACK"))).toBe(true);
  });
});
