import { describe, expect, it } from "vitest";
import {
  BundleError,
  branchFromEnv,
  jobNameFrom,
  jobUrlFrom,
  parseBundleMeta,
  prNumberFrom,
  repoRefFromUrl,
} from "../../src/testhealth/bundle/index.js";

const SHA = "0123456789abcdef0123456789abcdef01234567";

function reason(json: unknown): string {
  try {
    parseBundleMeta(json);
  } catch (error) {
    if (error instanceof BundleError) return error.reason;
    throw error;
  }
  throw new Error("expected a BundleError");
}

/** Uploader 0.5.29's meta: the first with `bundle_upload_id`, no counts, no v2 id, no variant. */
const v0_5_29 = {
  version: "1",
  cli_version: "cargo=0.5.29 git=abc rustc=1.80",
  org: "acme",
  repo: {
    repo: { host: "github.com", owner: "acme", name: "widgets" },
    repo_root: "/home/runner/work/widgets",
    repo_url: "git@github.com:acme/widgets.git",
    repo_head_sha: SHA.toUpperCase(),
    repo_head_sha_short: "0123456",
    repo_head_branch: "refs/heads/main",
    repo_head_commit_epoch: 1_700_000_000,
    repo_head_commit_message: "",
    repo_head_author_name: "Ada",
    repo_head_author_email: "",
  },
  bundle_upload_id: "u-1",
  tags: [{ key: "team", value: "core" }, { key: "bad" }],
  file_sets: [
    {
      file_set_type: "Junit",
      files: [
        {
          original_path: "/home/runner/work/widgets/out/a.xml",
          path: "junit/0",
          owners: ["@acme/core"],
          team: null,
        },
      ],
      glob: "out/*.xml",
    },
  ],
  envs: { BUILDKITE: "true", BUILDKITE_PULL_REQUEST: "false", BUILDKITE_LABEL: ":test: unit" },
  upload_time_epoch: 1_700_000_100,
  test_command: null,
  os_info: "linux",
  quarantined_tests: [],
  codeowners: null,
};

/** Uploader 0.7.8's meta: flattened props plus counts, command line, v2 id, variant, failed tests. */
const v0_7_8 = {
  ...v0_5_29,
  cli_version: "0.7.8",
  use_uncloned_repo: false,
  num_files: 1,
  num_tests: 3,
  command_line: "trunk-analytics-cli upload --token ***",
  bundle_upload_id_v2: "u-1-v2",
  variant: "macos",
  internal_bundled_file: { original_path: "internal.bin", path: "internal.bin", owners: [] },
  failed_tests: [],
  envs: {
    GITHUB_ACTIONS: "true",
    GITHUB_REF: "refs/pull/42/merge",
    GITHUB_HEAD_REF: "feature/x",
    GITHUB_REPOSITORY: "acme/widgets",
    GITHUB_RUN_ID: "77",
    GITHUB_JOB: "test",
  },
  codeowners: { path: "/home/runner/work/widgets/CODEOWNERS" },
};

describe("parseBundleMeta", () => {
  it("reads an old flat meta (0.5.29)", () => {
    const meta = parseBundleMeta(v0_5_29);
    expect(meta).toMatchObject({
      schema: null,
      version: "1",
      orgSlug: "acme",
      repo: { host: "github.com", owner: "acme", name: "widgets" },
      repoUrl: "git@github.com:acme/widgets.git",
      commitSha: SHA,
      branch: "main",
      commitEpochSeconds: 1_700_000_000,
      commitMessage: null,
      authorName: "Ada",
      authorEmail: null,
      prNumber: null,
      jobName: ":test: unit",
      variant: null,
      uploadTimeMs: 1_700_000_100_000,
      bundleUploadId: "u-1",
      bundleUploadIdV2: null,
      codeownersPath: null,
      tags: [{ key: "team", value: "core" }],
    });
    expect(meta.fileSets).toEqual([
      {
        type: "Junit",
        glob: "out/*.xml",
        files: [
          {
            bundlePath: "junit/0",
            originalPath: "/home/runner/work/widgets/out/a.xml",
            originalPathRelative: null,
            owners: ["@acme/core"],
          },
        ],
      },
    ]);
  });

  it("reads the newest meta (0.7.8) and its schema tag when re-serialized by Trunk", () => {
    const meta = parseBundleMeta({ schema: "V0_7_8", ...v0_7_8 });
    expect(meta).toMatchObject({
      schema: "V0_7_8",
      cliVersion: "0.7.8",
      prNumber: 42,
      jobName: "test",
      jobUrl: "https://github.com/acme/widgets/actions/runs/77?pr=42",
      variant: "macos",
      bundleUploadIdV2: "u-1-v2",
      codeownersPath: "/home/runner/work/widgets/CODEOWNERS",
    });
  });

  it("reads the nested form that Trunk's bindings expose (base_props, junit_props, debug_props)", () => {
    const {
      num_files: numFiles,
      num_tests: numTests,
      command_line: commandLine,
      bundle_upload_id_v2: idV2,
      variant,
      ...base
    } = v0_7_8;
    const nested = {
      base_props: base,
      junit_props: { num_files: numFiles, num_tests: numTests },
      debug_props: { command_line: commandLine },
      bundle_upload_id_v2: idV2,
      variant,
    };
    expect(parseBundleMeta(nested)).toEqual(parseBundleMeta(v0_7_8));
  });

  it("reads a minimal hand-made meta, with a bare repo and everything else missing", () => {
    const meta = parseBundleMeta({
      repo: { host: "gitlab.com", owner: "group/sub", name: "proj" },
      repo_head_sha: "abcdef1",
    });
    expect(meta).toMatchObject({
      orgSlug: null,
      repo: { host: "gitlab.com", owner: "group/sub", name: "proj" },
      commitSha: "abcdef1",
      branch: null,
      prNumber: null,
      jobName: null,
      jobUrl: null,
      uploadTimeMs: null,
      fileSets: [],
      envs: {},
    });
  });

  it("falls back to the repo URL when the parts are missing", () => {
    const meta = parseBundleMeta({
      repo: { repo_url: "https://github.com/acme/widgets.git", repo_head_sha: SHA },
    });
    expect(meta.repo).toEqual({ host: "github.com", owner: "acme", name: "widgets" });
  });

  it("rejects a meta without a usable commit or repository", () => {
    expect(reason({ repo: { repo: { host: "h", owner: "o", name: "n" } } })).toBe(
      "meta.json has no commit SHA (repo.repo_head_sha)",
    );
    expect(
      reason({ repo: { repo: { host: "h", owner: "o", name: "n" }, repo_head_sha: "   " } }),
    ).toMatch(/no commit SHA/);
    expect(
      reason({ repo: { repo: { host: "h", owner: "o", name: "n" }, repo_head_sha: "HEAD" } }),
    ).toMatch(/not a hexadecimal git SHA/);
    expect(reason({ repo: { repo_head_sha: SHA } })).toMatch(/names no repository/);
    expect(reason([1, 2])).toBe("meta.json is not a JSON object");
    expect(reason(null)).toBe("meta.json is not a JSON object");
  });

  it("ignores values of the wrong type instead of failing", () => {
    const meta = parseBundleMeta({
      ...v0_7_8,
      variant: 12,
      upload_time_epoch: "soon",
      tags: "none",
      file_sets: [null, { files: [{ path: 3 }, { path: "junit/0" }] }],
      envs: { GITHUB_REF: "refs/pull/5/merge", NUMBER: 5 },
    });
    expect(meta).toMatchObject({ variant: null, uploadTimeMs: null, tags: [], prNumber: 5 });
    expect(meta.envs).toEqual({ GITHUB_REF: "refs/pull/5/merge" });
    expect(meta.fileSets[0]?.files.map((file) => file.bundlePath)).toEqual(["junit/0"]);
  });
});

describe("CI environment", () => {
  it.each([
    [{ GITHUB_REF: "refs/pull/42/merge" }, 42],
    [{ GITHUB_REF: "refs/heads/main" }, null],
    [{ CI_MERGE_REQUEST_IID: "7" }, 7],
    [{ CHANGE_ID: "19" }, 19],
    [{ BUILDKITE_PULL_REQUEST: "321" }, 321],
    [{ BUILDKITE_PULL_REQUEST: "false" }, null],
    [{ CIRCLE_PULL_REQUEST: "https://github.com/acme/widgets/pull/88" }, 88],
    [{ SEMAPHORE_GIT_PR_NUMBER: "3" }, 3],
    [{ DRONE_PULL_REQUEST: "4" }, 4],
    [{ TRAVIS_PULL_REQUEST: "false" }, null],
    [{ BITBUCKET_PR_ID: "11" }, 11],
    [{ SYSTEM_PULLREQUEST_PULLREQUESTNUMBER: "12" }, 12],
    [{ CODEBUILD_WEBHOOK_TRIGGER: "pr/13" }, 13],
    [{ PR_NUMBER: "99" }, 99],
    [{ PR_NUMBER: "" }, null],
    [{ TRUNK_PR_NUMBER: "5", GITHUB_REF: "refs/pull/42/merge" }, 5],
    [{ GITHUB_REF: "refs/pull/42/merge", PR_NUMBER: "1" }, 42],
  ] as const)("PR number from %o is %s", (env, expected) => {
    expect(prNumberFrom(env)).toBe(expected);
  });

  it("names the job and links to it", () => {
    expect(jobNameFrom({ GITHUB_JOB: "test", GITHUB_WORKFLOW: "CI" })).toBe("CI / test");
    expect(jobNameFrom({ JOB_NAME: "custom", CI_JOB_NAME: "gl" })).toBe("custom");
    expect(jobNameFrom({ CI_JOB_NAME: "rspec 1/4" })).toBe("rspec 1/4");
    expect(jobUrlFrom({ JOB_URL: "https://ci/1", CI_JOB_URL: "https://gl/2" }, null)).toBe(
      "https://ci/1",
    );
    expect(jobUrlFrom({ CI_JOB_URL: "https://gitlab.com/a/b/-/jobs/2" }, 3)).toBe(
      "https://gitlab.com/a/b/-/jobs/2",
    );
    expect(jobUrlFrom({ BUILDKITE_BUILD_URL: "https://buildkite.com/a/b/builds/9" }, null)).toBe(
      "https://buildkite.com/a/b/builds/9",
    );
    expect(
      jobUrlFrom(
        {
          SEMAPHORE_ORGANIZATION_URL: "https://acme.semaphoreci.com",
          SEMAPHORE_PROJECT_ID: "p",
          SEMAPHORE_JOB_ID: "j",
        },
        null,
      ),
    ).toBe("https://acme.semaphoreci.com/projects/p/jobs/j");
    expect(jobUrlFrom({}, null)).toBeNull();
  });

  it("takes the branch from the CI when the repo has none, cleaned like Trunk", () => {
    expect(branchFromEnv({ GITHUB_HEAD_REF: "feat/x", GITHUB_REF: "refs/pull/1/merge" })).toBe(
      "feat/x",
    );
    expect(branchFromEnv({ GITHUB_REF: "refs/heads/main" })).toBe("main");
    expect(branchFromEnv({ BUILDKITE_BRANCH: "origin/release" })).toBe("release");
    expect(branchFromEnv({})).toBeNull();
    const meta = parseBundleMeta({
      repo: { repo: { host: "h", owner: "o", name: "n" }, repo_head_sha: SHA },
      envs: { CI_COMMIT_REF_NAME: "remotes/origin/topic" },
    });
    expect(meta.branch).toBe("topic");
  });

  it("splits repository URLs like Trunk", () => {
    expect(repoRefFromUrl("https://github.com/acme/widgets.git")).toEqual({
      host: "github.com",
      owner: "acme",
      name: "widgets",
    });
    expect(repoRefFromUrl("git@gitlab.com:group/sub/proj.git")).toEqual({
      host: "gitlab.com",
      owner: "group/sub",
      name: "proj",
    });
    expect(repoRefFromUrl("ssh://git@example.com:22/o/n")).toEqual({
      host: "example.com:22",
      owner: "o",
      name: "n",
    });
    expect(repoRefFromUrl("not a url")).toBeNull();
  });
});
