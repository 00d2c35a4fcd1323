import { randomUUID } from "node:crypto";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  NO_GIT,
  githubMergeHead,
  withoutCredentials,
  metaEnvs,
  parseCommitArg,
  parsePrArg,
  parseVariantArg,
  resolveContext,
  type GitFacts,
} from "../../src/cli/upload/context.js";
import { CliError } from "../../src/cli/client.js";
import { repositoryPath } from "../../src/providers/local/git/layout.js";
import { prNumberFrom, jobNameFrom, jobUrlFrom } from "../../src/testhealth/bundle/ci-env.js";

const HEAD = "0123456789abcdef0123456789abcdef01234567";
const PR_HEAD = "89abcdef0123456789abcdef0123456789abcdef";
const BASE = "fedcba9876543210fedcba9876543210fedcba98";

const GIT: GitFacts = {
  topLevel: "/work/app",
  remoteUrl: "git@github.com:acme/app.git",
  headSha: HEAD,
  headBranch: "feature/login",
  headSubject: "Add login",
};

const ACME = { host: "github.com", owner: "acme", name: "app" };

describe("resolveContext", () => {
  it("outside CI: the repository from the remote, commit and branch from git", () => {
    expect(resolveContext({}, {}, GIT)).toEqual({
      repo: ACME,
      remoteUrl: "git@github.com:acme/app.git",
      commitSha: HEAD,
      branch: "feature/login",
      prNumber: null,
      jobName: null,
      jobUrl: null,
      variant: "",
    });
  });

  it("GitLab CI on a merge request: the target project, the MR's head and source branch, job", () => {
    // GitLab checks the commit out detached, from a clone whose remote carries the job token.
    const git = {
      ...GIT,
      remoteUrl: "https://gitlab-ci-token:glcbt-secret@gitlab.example.com/forker/app.git",
      headBranch: "HEAD",
    };
    const env = {
      GITLAB_CI: "true",
      CI_SERVER_HOST: "gitlab.example.com",
      CI_SERVER_PORT: "443",
      CI_SERVER_URL: "https://gitlab.example.com",
      // A fork's merge request: its pipeline runs in the fork, for the target project.
      CI_PROJECT_PATH: "forker/app",
      CI_MERGE_REQUEST_PROJECT_PATH: "platform/web/app",
      CI_MERGE_REQUEST_IID: "17",
      CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature/login",
      CI_COMMIT_REF_NAME: "feature/login",
      CI_COMMIT_SHA: HEAD,
      CI_JOB_NAME: "unit",
      CI_JOB_URL: "https://gitlab.example.com/forker/app/-/jobs/99",
    };
    expect(resolveContext({}, env, git)).toEqual({
      repo: { host: "gitlab.example.com", owner: "platform/web", name: "app" },
      remoteUrl: "https://gitlab.example.com/forker/app.git",
      commitSha: HEAD,
      branch: "feature/login",
      prNumber: 17,
      jobName: "unit",
      jobUrl: "https://gitlab.example.com/forker/app/-/jobs/99",
      variant: "",
    });
    // A merged results pipeline tests GitLab's merge commit: the results are the MR head's.
    const merged = resolveContext(
      {},
      {
        ...env,
        CI_MERGE_REQUEST_EVENT_TYPE: "merged_result",
        CI_MERGE_REQUEST_SOURCE_BRANCH_SHA: PR_HEAD,
      },
      git,
    );
    expect(merged.commitSha).toBe(PR_HEAD);
    // A self-managed instance on another port keeps it in the host; --repo still wins.
    expect(resolveContext({}, { ...env, CI_SERVER_PORT: "8443" }, git).repo.host).toBe(
      "gitlab.example.com:8443",
    );
    expect(resolveContext({ repo: ACME }, env, git).repo).toEqual(ACME);
  });

  it("GitHub Actions on a pull request: the PR's head commit and branch, PR number, job", () => {
    const env = {
      GITHUB_ACTIONS: "true",
      GITHUB_REF: "refs/pull/42/merge",
      GITHUB_HEAD_REF: "feature/login",
      GITHUB_JOB: "test",
      GITHUB_WORKFLOW: "CI",
      GITHUB_REPOSITORY: "acme/app",
      GITHUB_RUN_ID: "99",
      GITHUB_SERVER_URL: "https://github.com",
    };
    const git: GitFacts = {
      ...GIT,
      headBranch: "HEAD",
      headSubject: `Merge ${PR_HEAD} into ${BASE}`,
    };
    expect(resolveContext({}, env, git)).toMatchObject({
      commitSha: PR_HEAD,
      branch: "feature/login",
      prNumber: 42,
      jobName: "CI / test",
      jobUrl: "https://github.com/acme/app/actions/runs/99?pr=42",
    });
  });

  it("GitLab merge request pipeline", () => {
    const env = {
      CI_MERGE_REQUEST_IID: "7",
      CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "fix",
      CI_COMMIT_REF_NAME: "fix",
      CI_JOB_NAME: "rspec 1/2",
      CI_JOB_URL: "https://gitlab.com/g/app/-/jobs/1",
    };
    const git: GitFacts = { ...GIT, remoteUrl: "https://gitlab.com/g/sub/app.git" };
    expect(resolveContext({}, env, { ...git, headBranch: "HEAD" })).toMatchObject({
      repo: { host: "gitlab.com", owner: "g/sub", name: "app" },
      branch: "fix",
      prNumber: 7,
      jobName: "rspec 1/2",
      jobUrl: "https://gitlab.com/g/app/-/jobs/1",
    });
  });

  it("flags win over the environment and git", () => {
    const env = { GITHUB_HEAD_REF: "env-branch", GITHUB_REF: "refs/pull/42/merge", JOB_NAME: "j" };
    const flags = {
      repo: { host: "ghe.example.com", owner: "Acme", name: "App" },
      commit: "ABCDEF1",
      branch: "refs/heads/flag-branch",
      pr: 5,
      jobName: "flag job",
      jobUrl: "https://ci.example.com/5",
      variant: "linux",
    };
    expect(resolveContext(flags, env, GIT)).toEqual({
      repo: flags.repo,
      remoteUrl: GIT.remoteUrl,
      commitSha: "abcdef1",
      branch: "flag-branch",
      prNumber: 5,
      jobName: "flag job",
      jobUrl: "https://ci.example.com/5",
      variant: "linux",
    });
  });

  it("a detached HEAD without CI variables has no branch", () => {
    expect(resolveContext({}, {}, { ...GIT, headBranch: "HEAD" }).branch).toBeNull();
  });

  it("without git: --repo, --commit and --branch are required, the missing ones named at once", () => {
    expect(() => resolveContext({}, {}, NO_GIT)).toThrow(
      new CliError(
        "Cannot tell the repository, commit and branch: this is not a git checkout; pass --repo <host/owner/name>, --commit <sha> and --branch <name>.",
      ),
    );
    expect(() => resolveContext({ repo: ACME }, {}, NO_GIT)).toThrow(
      new CliError(
        "Cannot tell the commit and branch: this is not a git checkout; pass --commit <sha> and --branch <name>.",
      ),
    );
    // No branch is never taken for an empty one.
    expect(() => resolveContext({ repo: ACME, commit: HEAD }, {}, NO_GIT)).toThrow(
      new CliError("Cannot tell the branch: this is not a git checkout; pass --branch <name>."),
    );
    const context = resolveContext({ repo: ACME, commit: HEAD, branch: "main" }, {}, NO_GIT);
    expect(context).toMatchObject({ repo: ACME, commitSha: HEAD, branch: "main", remoteUrl: null });
    // Fail-first's lookup finds its run by id, without a branch.
    const lookup = resolveContext({ repo: ACME, commit: HEAD }, {}, NO_GIT, {
      branchOptional: true,
    });
    expect(lookup.branch).toBeNull();
    // A CI variable tells the branch as well as the flag does.
    const ci = resolveContext({ repo: ACME, commit: HEAD }, { CI_COMMIT_BRANCH: "dev" }, NO_GIT);
    expect(ci.branch).toBe("dev");
  });

  it("a clone of a repository on Mainline's own git host names local/owner/name", () => {
    // The path `mainline repo create` prints: the local git host's own layout.
    const remote = repositoryPath("/srv/mainline-data", {
      organizationId: randomUUID(),
      owner: "acme",
      name: "shop.v2",
    });
    const local = { host: "local", owner: "acme", name: "shop.v2" };
    for (const remoteUrl of [
      remote,
      `${remote}/`,
      `file://${remote}`,
      `ssh://ci@build-host${remote}`,
      `ci@build-host:${remote}`,
      path.relative("/srv/work/app", remote),
    ]) {
      expect(resolveContext({}, {}, { ...GIT, remoteUrl }).repo, remoteUrl).toEqual(local);
    }
    // The same path on a host that serves git over http(s) is that host's repository.
    const elsewhere = `https://git.example.com${remote}`;
    expect(resolveContext({}, {}, { ...GIT, remoteUrl: elsewhere }).repo.host).toBe(
      "git.example.com",
    );
    // Any other local path still names no repository.
    expect(() =>
      resolveContext({}, {}, { ...GIT, remoteUrl: "/srv/git/team/acme/shop.git" }),
    ).toThrow(/pass --repo/);
  });

  it.each(["/srv/git/app", "file:///srv/git/app.git", "../app", "https://github.com/acme"])(
    "a remote that names no repository (%s) asks for --repo",
    (remoteUrl) => {
      const git = { ...GIT, remoteUrl };
      expect(() => resolveContext({}, {}, git)).toThrow(CliError);
      expect(() => resolveContext({}, {}, git)).toThrow(/from the git remote .*pass --repo/);
    },
  );

  it.each([
    ["https://github.com/acme/app.git", ACME],
    ["https://x-access-token:secret@github.com/acme/app", ACME],
    [
      "ssh://git@gitlab.com/group/sub/app.git",
      { host: "gitlab.com", owner: "group/sub", name: "app" },
    ],
    ["git@ghe.example.com:Acme/App.git", { host: "ghe.example.com", owner: "Acme", name: "App" }],
  ])("the remote %s names %j", (remoteUrl, repo) => {
    expect(resolveContext({}, {}, { ...GIT, remoteUrl }).repo).toEqual(repo);
  });
});

describe("withoutCredentials", () => {
  it.each([
    ["https://gitlab-ci-token:s3cret@gitlab.com/g/app.git", "https://gitlab.com/g/app.git"],
    ["https://x-access-token@github.com/acme/app", "https://github.com/acme/app"],
    ["ssh://git:pw@host.example.com/acme/app.git", "ssh://git@host.example.com/acme/app.git"],
    ["ssh://git@host.example.com/acme/app.git", "ssh://git@host.example.com/acme/app.git"],
    ["git@github.com:acme/app.git", "git@github.com:acme/app.git"],
    ["https://github.com/acme/app.git", "https://github.com/acme/app.git"],
  ])("%s → %s", (input, expected) => {
    expect(withoutCredentials(input)).toBe(expected);
  });

  it("the context never carries the token", () => {
    const remoteUrl = "https://gitlab-ci-token:s3cret@gitlab.com/g/app.git";
    const context = resolveContext({}, {}, { ...GIT, remoteUrl });
    expect(context.remoteUrl).toBe("https://gitlab.com/g/app.git");
    expect(context.repo).toEqual({ host: "gitlab.com", owner: "g", name: "app" });
  });
});

describe("githubMergeHead", () => {
  it("reads the PR head from GitHub's merge commit message only", () => {
    expect(githubMergeHead(`Merge ${PR_HEAD} into ${BASE}`)).toBe(PR_HEAD);
    expect(githubMergeHead("Merge branch 'main' into feature")).toBeNull();
    expect(githubMergeHead(`Merge pull request #4 from acme/${PR_HEAD}`)).toBeNull();
    expect(githubMergeHead(null)).toBeNull();
  });
});

describe("metaEnvs", () => {
  it("the server's reader gets back exactly what was resolved", () => {
    const env = {
      GITHUB_REF: "refs/pull/42/merge",
      GITHUB_HEAD_REF: "feature/login",
      GITHUB_JOB: "test",
      GITHUB_WORKFLOW: "CI",
      GITHUB_REPOSITORY: "acme/app",
      GITHUB_RUN_ID: "99",
      SECRET_TOKEN: "never sent",
    };
    const context = resolveContext({}, env, GIT);
    const envs = metaEnvs(context);
    expect(Object.values(envs)).not.toContain("never sent");
    expect(prNumberFrom(envs)).toBe(42);
    expect(jobNameFrom(envs)).toBe("CI / test");
    expect(jobUrlFrom(envs, prNumberFrom(envs))).toBe(context.jobUrl);
  });

  it("nothing known, nothing sent", () => {
    expect(metaEnvs(resolveContext({}, {}, { ...GIT, headBranch: null }))).toEqual({});
  });
});

describe("flag parsers", () => {
  it("--commit takes hexadecimal SHAs only", () => {
    expect(parseCommitArg(HEAD)).toBe(HEAD);
    expect(() => parseCommitArg("main")).toThrow(/commit SHA/);
    expect(() => parseCommitArg("abc")).toThrow(/commit SHA/);
  });

  it("--pr takes a positive number, with or without #", () => {
    expect(parsePrArg("42")).toBe(42);
    expect(parsePrArg("#42")).toBe(42);
    expect(() => parsePrArg("0")).toThrow(/pull request number/);
    expect(() => parsePrArg("false")).toThrow(/pull request number/);
  });

  it("--variant is at most 64 characters, like the server's", () => {
    expect(parseVariantArg("x".repeat(64))).toHaveLength(64);
    expect(() => parseVariantArg("x".repeat(65))).toThrow(/64/);
  });
});
