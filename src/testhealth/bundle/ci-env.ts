/**
 * What the CI environment captured in `meta.json`'s `envs` tells about the run: PR number, job
 * name and URL, branch. Sources: Trunk's `context/src/env/parser.rs` (GitHub, GitLab, Jenkins,
 * Buildkite, Semaphore, Drone) and the providers' documented variables for the rest.
 * Pure: reads only the map it is given.
 */

export type CiEnv = Readonly<Record<string, string>>;

/** Non-empty value of a variable, else null (Trunk treats "" as absent too). */
function value(env: CiEnv, name: string): string | null {
  const found = env[name]?.trim();
  return found === undefined || found === "" ? null : found;
}

function firstValue(env: CiEnv, names: readonly string[]): string | null {
  for (const name of names) {
    const found = value(env, name);
    if (found !== null) return found;
  }
  return null;
}

/** A positive integer written alone ("42"); "false" (Buildkite, Travis) and the like are not PRs. */
export function parsePrNumber(text: string | null): number | null {
  if (text === null || !/^\d{1,9}$/.test(text)) return null;
  const number = Number(text);
  return number > 0 ? number : null;
}

/** Each PR source, in order; the first one that yields a number wins. */
const PR_NUMBER_SOURCES: ReadonlyArray<(env: CiEnv) => number | null> = [
  // `--pr-number` on the uploader lands here and overrides everything (Trunk: TRUNK_PR_NUMBER).
  (env) => parsePrNumber(value(env, "TRUNK_PR_NUMBER")),
  // GitHub Actions: refs/pull/<n>/merge (or /head).
  (env) => parsePrNumber(/^refs\/pull\/(\d+)\//.exec(value(env, "GITHUB_REF") ?? "")?.[1] ?? null),
  (env) => parsePrNumber(value(env, "CI_MERGE_REQUEST_IID")), // GitLab
  (env) => parsePrNumber(value(env, "CHANGE_ID")), // Jenkins multibranch
  (env) => parsePrNumber(value(env, "BUILDKITE_PULL_REQUEST")), // "false" when not a PR
  (env) => parsePrNumber(value(env, "SEMAPHORE_GIT_PR_NUMBER")),
  (env) => parsePrNumber(value(env, "DRONE_PULL_REQUEST")),
  (env) => parsePrNumber(value(env, "CIRCLE_PR_NUMBER")),
  // CircleCI: the PR's URL, https://github.com/o/r/pull/<n>.
  (env) =>
    parsePrNumber(/\/pull\/(\d+)\/?$/.exec(value(env, "CIRCLE_PULL_REQUEST") ?? "")?.[1] ?? null),
  (env) => parsePrNumber(value(env, "TRAVIS_PULL_REQUEST")), // "false" when not a PR
  (env) => parsePrNumber(value(env, "BITBUCKET_PR_ID")),
  (env) => parsePrNumber(value(env, "SYSTEM_PULLREQUEST_PULLREQUESTNUMBER")), // Azure Pipelines
  // AWS CodeBuild: webhook trigger "pr/<n>".
  (env) =>
    parsePrNumber(/^pr\/(\d+)$/.exec(value(env, "CODEBUILD_WEBHOOK_TRIGGER") ?? "")?.[1] ?? null),
  // Trunk's CUSTOM set, for CI systems it does not know.
  (env) => parsePrNumber(value(env, "PR_NUMBER")),
];

export function prNumberFrom(env: CiEnv): number | null {
  for (const source of PR_NUMBER_SOURCES) {
    const number = source(env);
    if (number !== null) return number;
  }
  return null;
}

/** `JOB_NAME` is both Trunk's custom override and Jenkins' own variable, so it comes first. */
const JOB_NAME_VARIABLES = [
  "JOB_NAME",
  "GITHUB_JOB",
  "CI_JOB_NAME", // GitLab
  "BUILDKITE_LABEL",
  "CIRCLE_JOB",
  "SEMAPHORE_JOB_NAME",
  "DRONE_STAGE_NAME",
  "TRAVIS_JOB_NAME",
  "BITBUCKET_STEP_UUID",
  "SYSTEM_JOBDISPLAYNAME", // Azure Pipelines
  "CODEBUILD_BUILD_ID",
] as const;

export function jobNameFrom(env: CiEnv): string | null {
  const job = firstValue(env, JOB_NAME_VARIABLES);
  // GitHub's job id alone ("test") is ambiguous across workflows; prefix the workflow when known.
  if (job !== null && job === value(env, "GITHUB_JOB")) {
    const workflow = value(env, "GITHUB_WORKFLOW");
    return workflow === null ? job : `${workflow} / ${job}`;
  }
  return job;
}

export function jobUrlFrom(env: CiEnv, prNumber: number | null): string | null {
  const custom = value(env, "JOB_URL");
  if (custom !== null) return custom;
  const github = githubJobUrl(env, prNumber);
  if (github !== null) return github;
  const semaphore = semaphoreJobUrl(env);
  if (semaphore !== null) return semaphore;
  return firstValue(env, [
    "CI_JOB_URL", // GitLab
    "BUILD_URL", // Jenkins
    "BUILDKITE_BUILD_URL",
    "CIRCLE_BUILD_URL",
    "DRONE_BUILD_LINK",
    "TRAVIS_JOB_WEB_URL",
    "CODEBUILD_BUILD_URL",
  ]);
}

/** Same shape as Trunk's: `https://github.com/{repo}/actions/runs/{run}?pr={n}`. */
function githubJobUrl(env: CiEnv, prNumber: number | null): string | null {
  const repository = value(env, "GITHUB_REPOSITORY");
  const runId = value(env, "GITHUB_RUN_ID");
  if (repository === null || runId === null) return null;
  const server = value(env, "GITHUB_SERVER_URL") ?? "https://github.com";
  const url = `${server}/${repository}/actions/runs/${runId}`;
  return prNumber === null ? url : `${url}?pr=${prNumber}`;
}

function semaphoreJobUrl(env: CiEnv): string | null {
  const org = value(env, "SEMAPHORE_ORGANIZATION_URL");
  const project = value(env, "SEMAPHORE_PROJECT_ID");
  const job = value(env, "SEMAPHORE_JOB_ID");
  if (org === null || project === null || job === null) return null;
  return `${org}/projects/${project}/jobs/${job}`;
}

/** Branch variables, PR source branches first (a PR's target branch is not what was tested). */
const BRANCH_VARIABLES = [
  "GITHUB_HEAD_REF",
  "GITHUB_REF",
  "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
  "CI_COMMIT_REF_NAME",
  "CI_COMMIT_BRANCH",
  "CHANGE_BRANCH",
  "BRANCH_NAME",
  "BUILDKITE_BRANCH",
  "SEMAPHORE_GIT_PR_BRANCH",
  "SEMAPHORE_GIT_BRANCH",
  "DRONE_SOURCE_BRANCH",
  "CIRCLE_BRANCH",
  "TRAVIS_PULL_REQUEST_BRANCH",
  "TRAVIS_BRANCH",
  "BITBUCKET_BRANCH",
  "SYSTEM_PULLREQUEST_SOURCEBRANCH",
  "BUILD_SOURCEBRANCH",
  "COMMIT_BRANCH", // Trunk's CUSTOM set
] as const;

export function branchFromEnv(env: CiEnv): string | null {
  return cleanBranch(firstValue(env, BRANCH_VARIABLES));
}

const BRANCH_NAME_LIMIT = 1_000;
const BRANCH_PREFIXES = /^(?:refs\/heads\/|refs\/remotes\/|refs\/|remotes\/|origin\/)+/;

/**
 * Trunk strips `refs/heads/`, `refs/` and `origin/` and cuts at 1,000 characters. We strip them
 * only as prefixes: Trunk's replace-anywhere would also mangle a branch like `fix/origin/x`.
 */
export function cleanBranch(branch: string | null): string | null {
  if (branch === null) return null;
  const cleaned = branch.trim().replace(BRANCH_PREFIXES, "").slice(0, BRANCH_NAME_LIMIT);
  return cleaned === "" ? null : cleaned;
}
