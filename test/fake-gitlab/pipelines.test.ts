import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, type Api, type Json } from "../helpers/fake-gitlab/client.js";
import { FakeGitLab } from "../helpers/fake-gitlab/index.js";

let gl: FakeGitLab;
let bot: Api;
let out: string;
const P = "acme/ci";
const ID = encodeURIComponent(P);

const CI_YML = `
workflow:
  rules:
    - if: $CI_COMMIT_BRANCH =~ /^trunk-merge\\//
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $CI_PIPELINE_SOURCE != "push"
stages: [build, test]
variables:
  GREETING: hello
build:
  stage: build
  script:
    - env | grep -E '^(CI|GITLAB_CI|GREETING|OUT_DIR)' | sort > "$OUT_DIR/$CI_JOB_NAME-$CI_PIPELINE_ID.env"
    - sh ./check.sh
  after_script:
    - echo "$CI_JOB_STATUS" > "$OUT_DIR/after-$CI_PIPELINE_ID"
    - exit 3
unit:
  stage: test
  script: echo unit
lint:
  stage: test
  allow_failure: true
  script:
    - exit 1
mr-only:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  script:
    - env | grep -E '^CI_(MERGE_REQUEST|COMMIT_BRANCH|PIPELINE_SOURCE)' | sort > "$OUT_DIR/mr-$CI_PIPELINE_ID.env"
`;

beforeAll(async () => {
  gl = await FakeGitLab.start({ seed: 9 });
  out = mkdtempSync(join(tmpdir(), "fake-gitlab-ci-"));
  await gl.createProject({
    path: P,
    files: { ".gitlab-ci.yml": CI_YML, "check.sh": "#!/bin/sh\necho checking\ntest ! -f BROKEN\n" },
  });
  gl.setVariables(P, { OUT_DIR: out });
  bot = api(gl.apiUrl, gl.createToken({ user: "root" }));
});

afterAll(async () => {
  await gl.close();
  rmSync(out, { recursive: true, force: true });
});

function envFile(name: string): Record<string, string> {
  const text = readFileSync(join(out, name), "utf8");
  return Object.fromEntries(
    text
      .trim()
      .split("\n")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

async function jobsOf(pipelineId: number): Promise<Record<string, Json>> {
  const res = await bot("GET", `/projects/${ID}/pipelines/${pipelineId}/jobs`);
  return Object.fromEntries(res.items.map((j) => [j.name as string, j]));
}

describe("the pipeline runner", () => {
  it("runs the repository's scripts on a trunk-merge push, per stage, and reports jobs and statuses", async () => {
    const good = await gl.commit(P, "trunk-merge/main/1", { "a.txt": "a\n" }, { from: "main" });
    const bad = await gl.commit(P, "trunk-merge/main/2", { BROKEN: "1\n" }, { from: "main" });
    await gl.settle();
    const list = await bot("GET", `/projects/${ID}/pipelines`, { order_by: "id", sort: "desc" });
    const [second, first] = list.items;
    expect(first).toMatchObject({
      sha: good,
      ref: "trunk-merge/main/1",
      source: "push",
      status: "success",
    });
    expect(second).toMatchObject({
      sha: bad,
      ref: "trunk-merge/main/2",
      source: "push",
      status: "failed",
    });
    const okJobs = await jobsOf(first?.id as number);
    expect(okJobs.build).toMatchObject({ status: "success", stage: "build" });
    expect(okJobs.unit).toMatchObject({ status: "success" });
    expect(okJobs.lint).toMatchObject({
      status: "failed",
      allow_failure: true,
      failure_reason: "script_failure",
    });
    const badJobs = await jobsOf(second?.id as number);
    expect(badJobs.build).toMatchObject({ status: "failed", failure_reason: "script_failure" });
    expect(badJobs.unit?.status).toBe("skipped");
    expect(readFileSync(join(out, `after-${String(second?.id)}`), "utf8").trim()).toBe("failed");
    expect(readFileSync(join(out, `after-${String(first?.id)}`), "utf8").trim()).toBe("success");
    const env = envFile(`build-${String(first?.id)}.env`);
    expect(env).toMatchObject({
      CI: "true",
      GITLAB_CI: "true",
      CI_COMMIT_SHA: good,
      CI_COMMIT_SHORT_SHA: good.slice(0, 8),
      CI_COMMIT_BRANCH: "trunk-merge/main/1",
      CI_COMMIT_REF_NAME: "trunk-merge/main/1",
      CI_PIPELINE_SOURCE: "push",
      CI_PIPELINE_ID: String(first?.id),
      CI_PROJECT_PATH: P,
      CI_PROJECT_ID: String(gl.world.project(P).id),
      CI_SERVER_URL: gl.url,
      CI_API_V4_URL: gl.apiUrl,
      CI_DEFAULT_BRANCH: "main",
      CI_JOB_NAME: "build",
      CI_JOB_STAGE: "build",
      GREETING: "hello",
      OUT_DIR: out,
    });
    expect(env.CI_PROJECT_DIR).toBeTruthy();
    const statuses = await bot("GET", `/projects/${ID}/repository/commits/${bad}/statuses`);
    expect(statuses.items.map((s) => [s.name, s.status])).toEqual([
      ["build", "failed"],
      ["unit", "skipped"],
      ["lint", "skipped"],
    ]);
  });

  it("respects workflow rules: no pipeline for a branch they exclude, 400 from the API", async () => {
    const before = gl.pipelines(P).length;
    await gl.commit(P, "feature/x", { "x.txt": "x\n" }, { from: "main" });
    await gl.settle();
    expect(gl.pipelines(P).length).toBe(before);
    const refused = await bot("POST", `/projects/${ID}/pipeline`, { ref: "feature/x" });
    expect(refused).toMatchObject({
      status: 400,
      body: { message: { base: ["Pipeline filtered out by workflow rules."] } },
    });
    const viaApi = await bot("POST", `/projects/${ID}/pipeline?ref=main`);
    expect(viaApi).toMatchObject({ status: 201, body: { source: "api", ref: "main" } });
    await gl.settle();
  });

  it("runs merge request pipelines with the MR's variables, as its head pipeline", async () => {
    await gl.commit(P, "feature/mr", { "m.txt": "m\n" }, { from: "main" });
    const { iid } = await gl.createMergeRequest({
      project: P,
      sourceBranch: "feature/mr",
      title: "MR",
      author: "root",
    });
    await gl.settle();
    const mr = await bot("GET", `/projects/${ID}/merge_requests/${iid}`);
    const head = mr.body.head_pipeline as Json;
    expect(head).toMatchObject({
      source: "merge_request_event",
      ref: `refs/merge-requests/${iid}/head`,
      status: "success",
    });
    expect(Object.keys(await jobsOf(head.id as number))).toEqual(["mr-only"]);
    const env = envFile(`mr-${String(head.id)}.env`);
    expect(env).toMatchObject({
      CI_PIPELINE_SOURCE: "merge_request_event",
      CI_MERGE_REQUEST_IID: String(iid),
      CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature/mr",
      CI_MERGE_REQUEST_TARGET_BRANCH_NAME: "main",
      CI_MERGE_REQUEST_PROJECT_PATH: P,
    });
    expect(env.CI_COMMIT_BRANCH).toBeUndefined();
  });
});

describe("scripted outcomes and statuses", () => {
  it("follows scripted outcomes, and cancels a stuck pipeline's jobs", async () => {
    gl.setJobOutcome(P, "build", "fail");
    await gl.commit(P, "trunk-merge/main/3", { "c.txt": "c\n" }, { from: "main" });
    await gl.settle();
    expect(gl.pipelines(P).at(-1)?.status).toBe("failed");
    gl.setJobOutcome(P, "build", { slow: 300, then: "pass" });
    gl.setJobOutcome(P, "lint", "pass");
    await gl.commit(P, "trunk-merge/main/4", { "d.txt": "d\n" }, { from: "main" });
    const slow = gl.pipelines(P).at(-1);
    expect(slow?.status).toBe("running");
    await gl.settle();
    expect(slow?.status).toBe("success");
    gl.setJobOutcome(P, "build", "stuck");
    await gl.commit(P, "trunk-merge/main/5", { "e.txt": "e\n" }, { from: "main" });
    await gl.settle();
    const stuck = gl.pipelines(P).at(-1);
    expect(stuck?.status).toBe("pending");
    const canceled = await bot("POST", `/projects/${ID}/pipelines/${String(stuck?.id)}/cancel`);
    expect(canceled.body).toMatchObject({ status: "canceled" });
    expect(Object.values(await jobsOf(stuck?.id as number)).map((j) => j.status)).toEqual([
      "canceled",
      "canceled",
      "canceled",
    ]);
    gl.setJobOutcome(P, "build", null);
    gl.setJobOutcome(P, "lint", null);
  });

  it("attaches a posted status to the CI pipeline of the sha and ref", async () => {
    const sha = await gl.commit(P, "trunk-merge/main/6", { "f.txt": "f\n" }, { from: "main" });
    await gl.settle();
    const ci = gl.pipelines(P).at(-1);
    const posted = await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "failed",
      name: "mainline",
      ref: "trunk-merge/main/6",
    });
    expect(posted.body).toMatchObject({ pipeline_id: ci?.id, status: "failed" });
    expect(ci?.status).toBe("failed");
    // A status named like a job replaces it (GitLab marks the job retried).
    await bot("POST", `/projects/${ID}/statuses/${sha}`, {
      state: "success",
      name: "unit",
      ref: "trunk-merge/main/6",
    });
    const statuses = await bot("GET", `/projects/${ID}/repository/commits/${sha}/statuses`);
    const unit = statuses.items.filter((s) => s.name === "unit");
    expect(unit).toHaveLength(1);
    expect(unit[0]).toMatchObject({ status: "success", author: { username: "root" } });
    expect((await jobsOf(ci?.id as number)).unit).toBeUndefined();
  });
});
