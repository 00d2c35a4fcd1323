/**
 * Test results from GitLab CI: a merge request's pipeline on the fake GitLab runs the project's
 * own `.gitlab-ci.yml`, whose job runs a test script that writes JUnit and fails, and whose
 * `after_script` runs `mainline upload` with nothing but GitLab CI's variables (and Mainline's
 * address and token as CI/CD variables). The upload lands in test health for the project's
 * repository, with the merge request's head commit, its source branch and its number.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startGitLabServer, startGitLabWorld, type GitLabWorld } from "../helpers/gitlab.js";
import { CLI_ANYWHERE } from "../helpers/process.js";
import type { TestServer } from "../helpers/server.js";
import { bundle, junit, putBundle } from "../helpers/uploads.js";

const PROJECT = "platform/web/shop";
const CI = `workflow:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
test:
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
  script:
    - sh run-tests.sh
  after_script:
    - '"$MAINLINE_NODE" $MAINLINE_CLI upload --junit junit.xml --wait'
`;
const RUN_TESTS = `cat > junit.xml <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="cart" file="test/cart.test.js">
    <testcase name="adds an item" classname="Cart" time="0.01"/>
    <testcase name="applies a coupon" classname="Cart" time="0.02">
      <failure message="expected 90, got 100">at cart.test.js:12</failure>
    </testcase>
  </testsuite>
</testsuites>
XML
exit 1
`;

let world: GitLabWorld;
let server: TestServer;

vi.setConfig({ testTimeout: 120_000 });

beforeAll(async () => {
  world = await startGitLabWorld();
  world.gl.createUser("alice");
  await world.gl.createProject({
    path: PROJECT,
    files: { "README.md": "shop\n", ".gitlab-ci.yml": CI, "run-tests.sh": RUN_TESTS },
  });
  world.gl.addMember(PROJECT, "alice", 30);
  server = await startGitLabServer(world);
  world.gl.setVariables(PROJECT, {
    MAINLINE_URL: server.url,
    MAINLINE_TOKEN: server.token,
    MAINLINE_NODE: process.execPath,
    MAINLINE_CLI: CLI_ANYWHERE.join(" "),
  });
}, 60_000);

afterAll(async () => {
  await server.close();
  await world.gl.close();
});

interface Upload {
  state: string;
  commit_sha: string | null;
  branch: string | null;
  pr_number: number | null;
  job_name: string | null;
  job_url: string | null;
  tests_passed: number;
  tests_failed: number;
}

describe("uploads from GitLab CI", () => {
  it("lands a merge request pipeline's upload with its head commit, branch and number", async () => {
    const { gl } = world;
    const head = await gl.commit(
      PROJECT,
      "feature/coupons",
      { "coupon.txt": "10%\n" },
      {
        author: "alice",
        from: "main",
      },
    );
    const { iid } = await gl.createMergeRequest({
      project: PROJECT,
      sourceBranch: "feature/coupons",
      title: "Coupons",
      author: "alice",
    });
    await gl.settle();
    const pipelines = gl.pipelines(PROJECT);
    expect(pipelines.map((p) => [p.source, p.status])).toEqual([["merge_request_event", "failed"]]);

    // The repository as GitLab CI names it: the instance's host (with its port) and the project.
    const host = new URL(gl.url).host;
    const repo = { host, owner: "platform/web", name: "shop" };
    const listed = await server.call<{ uploads: Upload[] }>("flaky-tests/list-uploads", {
      repo,
      org_url_slug: "acme",
      page_query: { page_size: 10 },
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.uploads).toHaveLength(1);
    const [upload] = listed.body.uploads;
    expect(upload).toMatchObject({
      state: "processed",
      commit_sha: head,
      branch: "feature/coupons",
      pr_number: iid,
      job_name: "test",
      tests_passed: 1,
      tests_failed: 1,
    });
    expect(upload?.job_url).toMatch(/\/platform\/web\/shop\/-\/jobs\/\d+$/);
  });

  it("takes a bundle as Trunk's uploader writes it in a GitLab job: MR, branch and job from its variables", async () => {
    // What Trunk's context parser captures of a GitLab merge request pipeline in meta.json.
    const repo = { host: "gitlab.example.com", owner: "platform/web", name: "shop" };
    const commit = "ab".repeat(20);
    const body = await bundle({
      repo,
      commit,
      branch: "feature/trunk",
      files: [junit([{ name: "pays", status: "failed" }, { name: "ships" }])],
      envs: {
        GITLAB_CI: "true",
        CI_MERGE_REQUEST_IID: "42",
        CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature/trunk",
        CI_COMMIT_REF_NAME: "feature/trunk",
        CI_JOB_NAME: "rspec",
        CI_JOB_URL: "https://gitlab.example.com/platform/web/shop/-/jobs/7",
      },
    });
    await putBundle(server, body, repo, "0.10.2");
    await server.services.worker.idle();
    const listed = await server.call<{ uploads: Upload[] }>("flaky-tests/list-uploads", {
      repo,
      org_url_slug: "acme",
      page_query: { page_size: 10 },
    });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.uploads[0]).toMatchObject({
      state: "processed",
      commit_sha: commit,
      branch: "feature/trunk",
      pr_number: 42,
      job_name: "rspec",
      job_url: "https://gitlab.example.com/platform/web/shop/-/jobs/7",
      tests_passed: 1,
      tests_failed: 1,
    });
  });
});
